"""The platform wheel as a CI job gets it: `pip install dist/fatpte-*.whl` into a fresh venv, run
with no build tree, no PYTHONPATH, no $FATPTE_RUN and no compiler on PATH (PATH is the venv's bin
folder and a folder holding qemu-aarch64 alone). The installed `fatpte` finds the installed
fatpte-run by itself: `pack --golden-from`, `check`, `device` and `thin --device host` use it;
the aarch64 wheel's fatpte-run, unpacked by `fatpte runtime unpack`, checks the aarch64 entry
under qemu. `find_package(fatpte)` against the installed loader builds and runs a consumer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.paths import ET_FIXTURES, ROOT
from tests.scripts import load_script
from tests.wheel.wheels import wheel_of

pytestmark = pytest.mark.slow  # a venv and an install, then runs under qemu: `make check` leaves it out

PACK_TOML = """\
golden = "calls.json"
golden_from = "portable"

[[specialization]]
name = "portable"
backend_id = "portable"
payload = "mlp_portable.pte"

[[specialization]]
name = "portable-aarch64"
backend_id = "portable"
payload = "mlp_portable.pte"
priority = 10
requires = { arch = ["aarch64"] }
golden_tolerance = { atol = 1e-5, rtol = 1e-4 }
"""


class Installed:
    """The venv with the wheel installed, a work folder, and the environment the tools run in."""

    def __init__(self, root: Path) -> None:
        self.venv = root / "venv"
        self.work = root / "work"
        self.cache = root / "runtimes"
        tools = root / "path"
        tools.mkdir()
        qemu = shutil.which("qemu-aarch64")
        if qemu is not None:
            (tools / "qemu-aarch64").symlink_to(qemu)
        keep = ("LANG", "LC_ALL", "TMPDIR")
        self.env = {k: v for k, v in os.environ.items() if k in keep}
        self.env.update(PATH=f"{self.venv / 'bin'}{os.pathsep}{tools}", HOME=str(root / "home"),
                        FATPTE_RUNTIME_CACHE=str(self.cache))

    def run(self, *args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
        argv = [str(a) for a in args]
        argv[0] = str(self.venv / "bin" / argv[0])
        done = subprocess.run(argv, cwd=self.work, env=self.env, capture_output=True, text=True, timeout=900,
                              check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {done.returncode}\n{done.stdout}\n{done.stderr}")
        return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    wheel = wheel_of("x86_64")
    at = Installed(tmp_path_factory.mktemp("wheel"))
    subprocess.run([sys.executable, "-m", "venv", str(at.venv)], check=True, capture_output=True)
    pip = [str(at.venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, str(wheel)], check=True, capture_output=True, text=True)
    at.work.mkdir()
    shutil.copy(ET_FIXTURES / "mlp_portable.pte", at.work)
    calls = json.loads((ET_FIXTURES / "fixtures.json").read_text())["tiers"]["models"]["mlp"]["calls"]
    (at.work / "calls.json").write_text(json.dumps(calls))
    (at.work / "inputs.json").write_text(json.dumps([{"inputs": c["inputs"]} for c in calls]))
    (at.work / "pack.toml").write_text(PACK_TOML)
    return at


@pytest.fixture(scope="module")
def container(installed: Installed) -> Path:
    """mlp's portable program twice, once for aarch64 only; its golden outputs recorded by the
    installed fatpte-run, which `pack --golden-from` found by itself."""
    installed.run("fatpte", "pack", "-q", "-o", "m.nfat", "--from", "pack.toml")
    return installed.work / "m.nfat"


def test_fatpte_finds_the_runner_inside_the_package(installed: Installed) -> None:
    code = "from fatpte.device.fatpte_run import find_runtime; print(find_runtime()[0])"
    found = Path(installed.run("python", "-c", code).stdout.strip())
    assert found.parts[-3:] == ("_loader", "bin", "fatpte-run")
    assert found.is_relative_to(installed.venv) and not found.is_relative_to(ROOT)
    for tool in ("gcc", "cc", "c++", "cmake"):  # what the Done-when asks: no compiler on PATH
        assert shutil.which(tool, path=installed.env["PATH"]) is None


def test_the_installed_fatpte_run_runs_and_explains(installed: Installed, container: Path) -> None:
    done = installed.run("fatpte-run", container, "--inputs", "inputs.json", "--explain")
    said = done.stdout + done.stderr
    assert "ran: portable [portable]" in said, said
    # ExecuTorch's kernels come from the wheel, never from the build tree on this machine.
    loaded = [line for line in said.splitlines() if "loaded /" in line]
    assert loaded and all(f"{installed.venv}/lib/" in line for line in loaded), loaded
    assert str(ROOT) not in said
    listed = installed.run("fatpte-validate", container)
    assert listed.returncode == 0


def test_check_runs_x86_natively_and_aarch64_under_qemu(installed: Installed, container: Path) -> None:
    if shutil.which("qemu-aarch64") is None:
        pytest.fail("qemu-aarch64 (Debian's qemu-user) is not installed: `make aarch64-toolchain`")
    unpacked = json.loads(installed.run("fatpte", "runtime", "unpack", wheel_of("aarch64"), "--json").stdout)
    assert unpacked["arch"] == "aarch64" and Path(unpacked["fatpte_run"]).is_relative_to(installed.cache)
    report = json.loads(installed.run("fatpte", "check", container, "--json").stdout)
    states = {e["name"]: e for e in report["entries"]}
    assert states["portable"]["state"] == "agrees", states
    assert states["portable-aarch64"]["state"] == "agrees", states
    text = installed.run("fatpte", "check", container).stdout
    assert "qemu" in text and "native x86_64" in text, text


def test_device_and_thin_for_the_host(installed: Installed, container: Path) -> None:
    device = json.loads(installed.run("fatpte", "device", "--json").stdout)
    assert "XnnpackBackend" in device["executorch_backends"]  # asked of the installed fatpte-run
    installed.run("fatpte", "thin", container, "--device", "host", "-o", "host.nfat")
    info = json.loads(installed.run("fatpte", "info", "--json", "host.nfat").stdout)
    assert [e["name"] for e in info["entries"]] == ["portable"]


def test_find_package_builds_a_consumer_against_the_installed_loader(installed: Installed,
                                                                     tmp_path: Path) -> None:
    prefix = installed.run("python", "-c", "import fatpte, os; print(os.path.join(os.path.dirname("
                           "fatpte.__file__), '_loader'))").stdout.strip()
    build = tmp_path / "consumer"
    subprocess.run(["cmake", "-S", str(ROOT / "loader" / "tests" / "consumer"), "-B", str(build),
                    f"-DCMAKE_PREFIX_PATH={prefix}"], check=True, capture_output=True, text=True)
    subprocess.run(["cmake", "--build", str(build), "-j1"], check=True, capture_output=True, text=True)
    example: ModuleType = load_script("loader/examples/executorch_example.py")
    packed = example.pack("mlp", tmp_path / "mlp.nfat")
    call = example.fixture("mlp_portable.pte")["calls"][0]
    (tensor,) = call["inputs"]
    done = subprocess.run([str(build / "consumer_shared"), str(packed), *map(str, tensor["shape"]),
                           *(repr(v) for v in tensor["values"])], capture_output=True, text=True, timeout=120,
                          check=False, env=installed.env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "entry xnnpack"
