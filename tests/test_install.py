"""The pure-Python wheel as users get it where no loader can be built: built with `python -m build
-C wheel.cmake=false` (build pinned in the dev extras, in an isolated environment holding the
scikit-build-core of [build-system]; docs/wheels.md, "The pure-Python wheel"), installed with pip,
not editable, into a fresh venv outside the repository, and run there with no path back to the
source tree. The platform wheels, with the loader inside, are tests/wheel/'s.

What it catches: anything the package reads at run time that the wheel does not ship (the named
device profiles were once found only next to the source tree, so `fatpte device list` failed
after `pip install .`), a console script that does not start, a dependency the metadata forgets.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT

pytestmark = pytest.mark.slow  # builds the wheel and installs it into a new venv: `make check` leaves it out

# What the build reads: the package and the two files pyproject.toml names. Copied, so that the
# build writes its build/ and *.egg-info folders outside the repository (whose build/ is the C++
# loader's).
SOURCES = ("fatpte", "pyproject.toml", "README.md")

PACK_TOML = """\
[[specialization]]
name = "avx512"
backend_id = "xnnpack"
payload = "avx512.bin"
requires = { arch = ["x86_64"], cpu_features = ["avx512f"] }

[[specialization]]
name = "portable"
backend_id = "portable"
payload = "portable.bin"
"""


def _run(args: list[str], cwd: Path, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """(the venv's bin folder, a work folder, the environment to run in)."""
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(path, src / name)
    # Neither the repository nor the checkout's own settings may leak into the installed tool.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FATPTE_DEVICES_DIR", "VIRTUAL_ENV")}
    _run([sys.executable, "-m", "build", "--wheel", "-C", "wheel.cmake=false", "--outdir", str(tmp / "dist"),
          str(src)], tmp, env)
    wheels = sorted((tmp / "dist").glob("fatpte-*.whl"))
    assert [w.name for w in wheels] == ["fatpte-0.1.0-py3-none-any.whl"]
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp, env)
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
          str(wheels[0])], tmp, env)
    work = tmp / "work"
    work.mkdir()
    return venv / "bin", work, env


def test_the_pure_wheel_has_no_loader_and_no_runner(installed: tuple[Path, Path, dict[str, str]]) -> None:
    bin_dir, work, env = installed
    code = "from fatpte.device.fatpte_run import packaged_runtime; print(packaged_runtime())"
    assert _run([str(bin_dir / "python"), "-c", code], work, env).stdout == "None\n"
    assert not (bin_dir / "fatpte-run").exists()


def test_the_installed_package_comes_from_the_venv(installed: tuple[Path, Path, dict[str, str]]) -> None:
    bin_dir, work, env = installed
    code = "import fatpte, fatpte.device.profile as p; print(fatpte.__file__); print(p.devices_dir())"
    done = _run([str(bin_dir / "python"), "-c", code], work, env)
    package, profiles = done.stdout.splitlines()
    venv = bin_dir.parent
    assert Path(package).is_relative_to(venv / "lib"), package
    assert Path(profiles) == Path(package).parent / "device" / "profiles"
    assert not Path(package).is_relative_to(ROOT)


def test_device_list_shows_every_named_profile(installed: tuple[Path, Path, dict[str, str]]) -> None:
    bin_dir, work, env = installed
    done = _run([str(bin_dir / "fatpte"), "device", "list", "--json"], work, env)
    names = [p["name"] for p in json.loads(done.stdout)]
    assert names == sorted(p.stem for p in (ROOT / "specs" / "devices").glob("*.json"))
    assert "x86-64-v3" in names


def test_pack_info_validate_select_by_name_and_help(installed: tuple[Path, Path, dict[str, str]]) -> None:
    bin_dir, work, env = installed
    fatpte = str(bin_dir / "fatpte")
    (work / "avx512.bin").write_bytes(b"A" * 100)
    (work / "portable.bin").write_bytes(b"P" * 80)
    (work / "pack.toml").write_text(PACK_TOML)
    packed = _run([fatpte, "pack", "-o", "m.nfat", "--from", "pack.toml"], work, env)
    assert packed.stdout.startswith("wrote m.nfat: version 2, 2 entries, ")
    info = json.loads(_run([fatpte, "info", "--json", "m.nfat"], work, env).stdout)
    assert [e["name"] for e in info["entries"]] == ["avx512", "portable"]
    text = _run([fatpte, "info", "m.nfat"], work, env).stdout
    assert text.startswith("m.nfat: NFAT version 2, 2 entries")
    validated = _run([fatpte, "validate", "m.nfat"], work, env)
    assert validated.stdout == "checked 1 file: 1 valid, 0 invalid; 0 errors, 0 warnings\n"
    # Named profiles from the wheel's package data: v4 has AVX-512, v3 does not.
    assert _run([fatpte, "select", "m.nfat", "--device", "x86-64-v4"], work, env).stdout == "avx512\n"
    assert _run([fatpte, "select", "m.nfat", "--device", "x86-64-v3"], work, env).stdout == "portable\n"
    # Both routes to the help: the launcher's generated text and click's.
    for args in (["--help"], ["pack", "--help"]):
        helped = _run([fatpte, *args], work, env)
        assert helped.stdout.startswith("Usage: fatpte"), helped.stdout


def test_executorch_files_in_the_installed_tool(installed: tuple[Path, Path, dict[str, str]]) -> None:
    """A .ptn packs, validates and extracts byte for byte with the installed tool (its readers
    need nothing but the wheel's dependencies)."""
    from tests.paths import ET_FIXTURES

    bin_dir, work, env = installed
    fatpte = str(bin_dir / "fatpte")
    shutil.copy(ET_FIXTURES / "mlp.ptn", work / "mlp.ptn")
    assert _run([fatpte, "info", "mlp.ptn"], work, env).stdout.startswith("mlp.ptn: ExecuTorch ptn (")
    _run([fatpte, "pack", "-o", "p.nfat", "mlp.ptn"], work, env)
    assert _run([fatpte, "validate", "p.nfat"], work, env).stdout.startswith("checked 1 file: 1 valid")
    _run([fatpte, "extract", "p.nfat", "--device", "x86-64-v3", "-o", "x.ptn"], work, env)
    assert (work / "x.ptn").read_bytes() == (ET_FIXTURES / "mlp.ptn").read_bytes()
    (work / "empty").mkdir()
    empty = _run([fatpte, "validate", "empty"], work, env, check=False)
    assert empty.returncode == 1 and "no container in this directory" in empty.stderr
