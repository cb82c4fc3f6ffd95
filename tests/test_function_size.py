"""The size guard (tools/check_function_size.py, run by `make lint`): a function over 100 lines shows,
in Python and in C++, unless tools/function_sizes.toml names it; a name there that is no longer long
shows too, so the list only shrinks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.paths import ROOT
from tests.scripts import load_script


def _tool() -> Any:
    return load_script("tools/check_function_size.py")


def _write(tmp: Path, name: str, text: str) -> Path:
    """A source file under the folder the test makes the tool's ROOT."""
    path = tmp / name
    path.write_text(text)
    return path


def test_the_repository_passes_with_its_exceptions() -> None:
    tool = _tool()
    assert tool.problems(tool.all_functions(), tool.read_exceptions()) == []


def test_a_long_python_function_shows_with_its_length(tmp_path: Path, monkeypatch: Any) -> None:
    tool = _tool()
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    body = "".join(f"    x{i} = {i}\n" for i in range(100))
    path = _write(tmp_path, "long.py", f"class A:\n    @staticmethod\n    def short() -> None:\n        pass\n\n"
                                       f"def long() -> None:\n{body}")
    found = {f.name: f.lines for f in tool.python_functions(path)}
    assert found == {"A.short": 3, "long": 101}
    (problem,) = tool.problems(tool.python_functions(path), {})
    assert problem.startswith("long.py:6: long is 101 lines, over the limit of 100")


def test_a_long_cpp_function_shows_with_its_class(tmp_path: Path, monkeypatch: Any) -> None:
    tool = _tool()
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    body = "".join(f"    x += {i};  // }} a brace in a comment\n" for i in range(97))
    text = ('#include "x.hpp"\nnamespace fatpte {\nnamespace {\nstruct Fat final : Base {\n'
            '  int init(const char* s = "{") const override {\n    int x = 0;\n'
            f'{body}    return x;\n  }}\n  int small() {{ return [] {{ return 1; }}(); }}\n}};\n'
            'int Fat2::run(int a) noexcept {\n  return a;\n}\n}  // namespace\n}  // namespace fatpte\n')
    path = _write(tmp_path, "fat.cpp", text)
    found = {f.name: f.lines for f in tool.cpp_functions(path)}
    assert found == {"Fat::init": 101, "Fat::small": 1, "Fat2::run": 3}
    (problem,) = tool.problems(tool.cpp_functions(path), {})
    assert "Fat::init is 101 lines" in problem


def test_an_exception_no_longer_over_the_limit_shows(tmp_path: Path, monkeypatch: Any) -> None:
    tool = _tool()
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    path = _write(tmp_path, "short.py", "def f() -> None:\n    pass\n")
    (problem,) = tool.problems(tool.python_functions(path), {"short.py::f": "was long"})
    assert problem == "tools/function_sizes.toml: short.py::f is not over 100 lines any more (or is gone): remove it"


def test_the_exceptions_file_gives_a_reason_for_each() -> None:
    assert all(reason.strip() for reason in _tool().read_exceptions(ROOT / "tools" / "function_sizes.toml").values())
