# fatpte: `make demo` and `make test` from a fresh clone. Everything is installed into .venv
# from the pins in pyproject.toml; the C++ loader is built into build/.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
STAMP  := $(VENV)/.installed
BUILD  := build
JOBS   ?= 2

.PHONY: all venv demo test test-py lint loader test-cpp bench fuzz docs clean

all: test

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@

demo: $(STAMP)
	$(PY) examples/demo.py

test: test-py lint

test-py: $(STAMP)
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/mypy
	$(BIN)/ruff check fatpte

clean:
	rm -rf $(BUILD) .pytest_cache .mypy_cache .hypothesis
