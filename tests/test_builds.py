"""A test that needs a build fails under `make test` when the build is missing, and skips only in
the fast subset (tests/builds.py)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.builds import REQUIRE_ENV
from tests.paths import ROOT

# Run by their own make target (`make test-aarch64`), which `make test` does not build.
OWN_TARGET = {"tests/loader/test_aarch64.py"}


def _outcome(tmp_path: Path, require: bool) -> str:
    test = tmp_path / "test_needs_build.py"
    test.write_text("from tests.builds import missing_build\n\n\ndef test_it() -> None:\n"
                    "    missing_build('build/nothing is not built: run `make nothing`')\n")
    env = {k: v for k, v in os.environ.items() if k != REQUIRE_ENV}
    if require:
        env[REQUIRE_ENV] = "1"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(test)],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=120)
    return done.stdout


def test_a_missing_build_skips_in_the_fast_subset_and_fails_under_make_test(tmp_path: Path) -> None:
    skipped = _outcome(tmp_path, require=False)
    assert "1 skipped" in skipped and "build/nothing is not built" in skipped, skipped
    failed = _outcome(tmp_path, require=True)
    assert "1 failed" in failed and "build/nothing is not built" in failed, failed


def test_make_test_requires_the_builds() -> None:
    """The pytest line of the Makefile's test-py target, the one `make test` and CI run, sets the
    variable, and the same target builds the loader and its ASan twin first."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^test-py: \$\(STAMP\)\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe is not None
    assert re.search(rf"^\t{REQUIRE_ENV}=1 \$\(BIN\)/pytest\b", recipe.group(1), re.MULTILINE), recipe.group(1)
    assert re.search(r"^test-py: loader loader-asan$", makefile, re.MULTILINE)


def test_no_test_skips_a_missing_build_by_itself() -> None:
    """Every skip whose reason is a build that is not there goes through missing_build."""
    found = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        rel = str(path.relative_to(ROOT))
        if rel in OWN_TARGET or "fixtures" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "skip"
                    and "not built" in ast.unparse(node)):
                found.append(f"{rel}:{node.lineno}")
    assert not found, found


def _wheel(path: Path, members: dict[str, bytes]) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_the_sdk_is_replaced_only_once_the_new_one_is_complete(tmp_path: Path) -> None:
    """tools/unpack_executorch_sdk.py (make executorch-sdk): a wheel that fails half-way (a member
    outside the SDK folders, after good ones; a damaged file) leaves the SDK that was there, whole,
    and no partial folder beside it; a good one replaces it."""
    import pytest

    from tests.scripts import load_script

    unpack = load_script("tools/unpack_executorch_sdk.py").unpack
    config = "executorch/share/cmake/executorch-config.cmake"
    dest = tmp_path / "sdk"
    assert unpack(_wheel(tmp_path / "a.whl", {config: b"# a", "executorch/lib/libone.so": b"1",
                                              "executorch/torch_part.py": b""}), dest) == 2
    assert (dest / "executorch" / "lib" / "libone.so").read_bytes() == b"1"
    assert not (dest / "executorch" / "torch_part.py").exists()

    bad = _wheel(tmp_path / "b.whl", {config: b"# b", "executorch/lib/libtwo.so": b"2",
                                      "executorch/lib/../../../escape.so": b"x"})
    with pytest.raises(SystemExit, match="refusing the member"):
        unpack(bad, dest)
    (tmp_path / "c.whl").write_bytes(b"not a zip")
    with pytest.raises(SystemExit, match="cannot be read as a wheel"):
        unpack(tmp_path / "c.whl", dest)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.whl", "b.whl", "c.whl", "sdk"]
    assert (dest / "executorch" / "share" / "cmake" / "executorch-config.cmake").read_bytes() == b"# a"
    assert not (tmp_path / "escape.so").exists()

    assert unpack(_wheel(tmp_path / "d.whl", {config: b"# d", "executorch/lib/libtwo.so": b"2"}), dest) == 2
    assert sorted(p.name for p in (dest / "executorch" / "lib").iterdir()) == ["libtwo.so"]


def test_a_target_make_demo_does_not_build_is_a_missing_build_not_a_missing_file(tmp_path: Path,
                                                                                   monkeypatch: Any) -> None:
    """After `make demo` build/loader holds fatpte-run and not fatpte-validate: the one loader-build
    fixture (tests/loader/conftest.py, through tests.builds.loader_build) skips a test that needs
    the second, naming it, in the fast subset, and fails it under `make test`."""
    import pytest

    from tests import builds

    (tmp_path / "fatpte-run").write_bytes(b"")
    monkeypatch.setitem(builds.LOADER_BUILDS, "release", tmp_path)
    monkeypatch.setattr(builds, "ROOT", tmp_path.parent)
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    assert builds.loader_build("release", "fatpte-run") == tmp_path
    with pytest.raises(pytest.skip.Exception, match=rf"{tmp_path.name}/fatpte-validate not built: run `make loader`"):
        builds.loader_build("release", "fatpte-run", "fatpte-validate")
    monkeypatch.setenv(REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="fatpte-validate not built"):
        builds.loader_build("release", "fatpte-validate")
