"""The package's floors hold: the import-linter contracts of pyproject.toml pass, and fail naming
the chain when a module imports up a floor or two modules import each other; no module takes a
private name of another; every package says what it owns and what it may use."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT

PACKAGE = ROOT / "fatpte"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(package_parent: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    # PYTHONPATH comes before the editable install's path entry, so the copy is what grimp reads.
    env = {**os.environ, "PYTHONPATH": str(package_parent), "NO_COLOR": "1"}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--config", str(cwd / "pyproject.toml")],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(PACKAGE, tmp_path / "fatpte", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_contracts_hold() -> None:
    done = _lint(ROOT, ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_an_upward_import_breaks_the_floors_contract_naming_the_chain(tmp_path: Path) -> None:
    tree = _copy(tmp_path)
    codec = tree / "fatpte" / "format" / "codec.py"
    codec.write_text(codec.read_text() + "\n\ndef _up() -> None:\n    from fatpte.ops import info  # noqa: F401\n")
    done = _lint(tree, tree)
    assert done.returncode == 1, done.stdout
    assert "fatpte's floors: no import runs up BROKEN" in done.stdout
    assert "fatpte.format.codec -> fatpte.ops.info" in done.stdout


def test_a_circle_breaks_the_no_circles_contract(tmp_path: Path) -> None:
    tree = _copy(tmp_path)
    atomic = tree / "fatpte" / "fileio" / "atomic.py"  # mapping imports atomic; now atomic imports mapping
    atomic.write_text(atomic.read_text() + "\n\nfrom fatpte.fileio import mapping  # noqa: E402, F401\n")
    done = _lint(tree, tree)
    assert done.returncode == 1, done.stdout
    assert "no two modules or packages of fatpte import each other BROKEN" in done.stdout
    assert "- .mapping -> .atomic (1 import)" in done.stdout


def test_an_upward_import_breaks_the_signing_rooms(tmp_path: Path) -> None:
    tree = _copy(tmp_path)
    keys = tree / "fatpte" / "ops" / "signing" / "keys.py"
    keys.write_text(keys.read_text() + "\n\ndef _up() -> None:\n    from fatpte.ops.signing import verification  # noqa: F401\n")
    done = _lint(tree, tree)
    assert done.returncode == 1, done.stdout
    assert "fatpte.ops.signing: keys under the bundle under the statement" in done.stdout
    assert "fatpte.ops.signing.keys -> fatpte.ops.signing.verification" in done.stdout


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "_generated" not in p.parts)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_imports_a_private_name_of_another(path: Path) -> None:
    taken = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fatpte"):
            parts = (node.module or "").split(".")
            private_module = any(p.startswith("_") and p != "_generated" for p in parts)
            names = [a.name for a in node.names if a.name.startswith("_") and a.name != "__version__"]
            if private_module or names:
                taken.append(f"line {node.lineno}: from {node.module} import {', '.join(a.name for a in node.names)}")
    assert not taken, taken


@pytest.mark.parametrize("package", sorted(p.parent for p in PACKAGE.glob("*/__init__.py")
                                           if p.parent.name != "_generated"), ids=lambda p: p.name)
def test_every_package_says_what_it_owns_and_may_use(package: Path) -> None:
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
    assert doc and "May use:" in doc, f"{package.name}/__init__.py must open with what it owns and may use"
