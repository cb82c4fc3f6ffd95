"""A test that needs a build fails under `make test` when the build is missing, and skips only in
the fast subset (tests/builds.py)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

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
    recipe = re.search(r"^test-py: \$\(STAMP\)\n((?:\t.*\n)+)", makefile, re.M)
    assert recipe is not None
    assert re.search(rf"^\t{REQUIRE_ENV}=1 \$\(BIN\)/pytest\b", recipe.group(1), re.M), recipe.group(1)
    assert re.search(r"^test-py: loader loader-asan$", makefile, re.M)


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
