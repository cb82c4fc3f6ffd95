"""What the wheel tests (tests/wheel/) need: fatpte's platform wheels in dist/ (`make wheel`,
`make wheel-aarch64`) and the wheel tools' venv (build/wheel-tools: auditwheel). `make test-wheel`,
part of `make test`, builds them and sets FATPTE_REQUIRE_WHEELS=1: a missing one then fails the
test; elsewhere (a plain `pytest`) the test is skipped with the reason.
"""

from __future__ import annotations

import os
import re
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.paths import ROOT

REQUIRED = os.environ.get("FATPTE_REQUIRE_WHEELS") == "1"
DIST = ROOT / "dist"
TOOLS_PYTHON = ROOT / "build" / "wheel-tools" / "bin" / "python"
ARCHES = ("x86_64", "aarch64")
LOADER = "fatpte/_loader/"
TOOLS = ("fatpte-run", "fatpte-validate", "fatpte-verify")
WHEEL_NAME = re.compile(r"fatpte-[^-]+-py3-none-(manylinux_(\d+)_(\d+)_(x86_64|aarch64))\.whl")


def missing(what: str) -> None:
    """Fail (under make test) or skip (elsewhere): `what` is not there."""
    message = f"{what}: run `make test-wheel` (part of `make test`)"
    if REQUIRED:
        pytest.fail(message)
    pytest.skip(message)


def wheel_of(arch: str) -> Path:
    """dist/'s one platform wheel for `arch`."""
    found = [p for p in DIST.glob(f"fatpte-*_{arch}.whl") if WHEEL_NAME.fullmatch(p.name)]
    if len(found) != 1:
        missing(f"dist/ holds {len(found)} manylinux {arch} wheels of fatpte, not 1")
    return found[0]


def tags_in(wheel: Path) -> list[str]:
    """The Tag lines of the wheel's WHEEL file."""
    with zipfile.ZipFile(wheel) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".dist-info/WHEEL")]
        text = z.read(name).decode()
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Tag:")]


def auditwheel_tag(wheel: Path) -> str:
    """The platform tag `auditwheel show` says the wheel is consistent with."""
    if not TOOLS_PYTHON.exists():
        missing("build/wheel-tools (auditwheel) is not installed")
    env = dict(os.environ, PATH=f"{TOOLS_PYTHON.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    shown = subprocess.run([str(TOOLS_PYTHON), "-m", "auditwheel", "show", str(wheel)], capture_output=True,
                           text=True, timeout=300, check=True, env=env).stdout
    found = re.search(r'consistent\s+with\s+the\s+following\s+platform\s+tag:\s+"([^"]+)"', shown)
    assert found, shown
    return found.group(1)


def readelf(*args: str) -> str:
    return subprocess.run(["readelf", *args], capture_output=True, text=True, check=True).stdout


def run_paths(binary: Path) -> list[str]:
    """The RUNPATH entries of an ELF file."""
    for line in readelf("-d", str(binary)).splitlines():
        if "(RUNPATH)" in line or "(RPATH)" in line:
            return line.split("[", 1)[1].rstrip("]").split(":")
    return []
