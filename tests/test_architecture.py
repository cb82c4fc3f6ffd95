"""The package's floors hold: the import-linter contracts of pyproject.toml pass, and fail naming
the chain when a module imports up a floor or two modules import each other; no module takes a
private name of another; every package says what it owns and what it may use."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT
from tests.support.editable import WITHOUT_EDITABLE_FINDER

PACKAGE = ROOT / "fatpte"


# lint-imports run so that the package grimp reads is the one PYTHONPATH names (the copy), not the
# checkout the editable install points at (tests/support/editable.py).
_LINT = (WITHOUT_EDITABLE_FINDER +
         "from importlinter.cli import lint_imports_command\n"
         "sys.argv[0] = 'lint-imports'\n"
         "sys.exit(lint_imports_command())\n")


def _lint(package_parent: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(package_parent), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-c", _LINT, "--no-cache", "--config", str(cwd / "pyproject.toml")],
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


PACKAGES = sorted(p.parent for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE and "_generated" not in p.parts)


def _may_use(doc: str) -> set[str]:
    """The fatpte packages and modules the "May use:" paragraph names, up to its first `;` (what
    follows says what the package may not use) or the paragraph's end; `fatpte` alone is the
    public API."""
    paragraph = doc.split("May use:", 1)[1].split("\n\n", 1)[0].split(";", 1)[0]
    return set(re.findall(r"\bfatpte(?:\.[a-z_]+)?\b", paragraph))


def _imported(package: Path) -> tuple[set[str], set[str]]:
    """What the modules of `package` (its subpackages included) import from outside it: the fatpte
    units (`fatpte.container`, `fatpte.errors`, `fatpte` for the public API, `fatpte.ops.x` for
    a sibling module of a subpackage) and the third-party distributions' top-level names. Every
    import counts: at module level, inside functions, under TYPE_CHECKING, and
    importlib.import_module of a constant name."""
    parts = package.parts
    own = ".".join(parts[len(parts) - 1 - parts[::-1].index("fatpte"):])
    parent = own.rsplit(".", 1)[0] if own.count(".") > 1 else None
    units: set[str] = set()
    third: set[str] = set()
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
                  and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                names = [node.args[0].value]
            for name in names:
                parts = name.split(".")
                if parts[0] == "__future__" or parts[0] in sys.stdlib_module_names:
                    continue
                if parts[0] != "fatpte":
                    third.add(parts[0])
                elif name == own or name.startswith(own + "."):
                    continue
                elif parent is not None and name.startswith(parent + "."):
                    units.add(".".join(parts[:3]))
                else:
                    units.add(".".join(parts[:2]))
    return units, third


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: ".".join(p.relative_to(PACKAGE).parts))
def test_every_package_says_what_it_owns_and_may_use(package: Path) -> None:
    """A package's docstring is its map: it names each of its modules and subpackages (in
    backticks), its "May use:" paragraph names exactly the fatpte packages its modules import,
    and it names every third-party package they import."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
    assert doc and "May use:" in doc, f"{package.name}/__init__.py must open with what it owns and may use"
    rooms = sorted([p.stem for p in package.glob("*.py") if p.stem != "__init__"]
                   + [p.name for p in package.iterdir() if (p / "__init__.py").is_file()])
    unnamed = [r for r in rooms if f"`{r}`" not in doc]
    assert not unnamed, f"{package.name}/__init__.py does not name its modules {unnamed}"
    units, third = _imported(package)
    said = _may_use(doc)
    assert said == units, (f"{package.name}/__init__.py says it may use {sorted(said)}; its modules import "
                           f"{sorted(units)} (missing: {sorted(units - said)}, not used: {sorted(said - units)})")
    unsaid = sorted(t for t in third if not re.search(rf"\b{t}\b", doc))
    assert not unsaid, f"{package.name}/__init__.py does not say its modules import {unsaid}"


def test_the_package_check_catches_an_unnamed_module_and_an_unsaid_import(tmp_path: Path) -> None:
    """The check above on a package whose docstring is stale: a module it does not name, a floor its
    modules import that it does not list, and one it lists that none imports."""
    pkg = tmp_path / "fatpte" / "demo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""`a` and nothing else.\n\nMay use: fatpte.errors, fatpte.format.\n"""\n')
    (pkg / "a.py").write_text("from fatpte.errors import FatpteError\n")
    (pkg / "b.py").write_text("def f() -> None:\n    from fatpte.fileio import url  # noqa: F401\n    import click\n")
    units, third = _imported(pkg)
    assert units == {"fatpte.errors", "fatpte.fileio"} and third == {"click"}
    assert _may_use(ast.get_docstring(ast.parse((pkg / "__init__.py").read_text())) or "") == {
        "fatpte.errors", "fatpte.format"}
    assert _may_use("May use: fatpte.ops and the public fatpte API; not fatpte.cli.") == {"fatpte.ops", "fatpte"}
