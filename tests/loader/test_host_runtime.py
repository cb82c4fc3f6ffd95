"""A host that knows its runtime without torch (issue 32, item 4): `fatpte device` and `--device host`
list the ExecuTorch backends of the C++ runtime fatpte-run answers for (`fatpte-run --device-json
--with-executorch`), so `fatpte thin --device host` of a container packed native + xnnpack +
portable, in that order, keeps an entry this runtime can run. torch is not installed in .venv."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fatpte.device.fatpte_run import environment
from tests.builds import loader_build
from tests.loader.test_fat_delegate_runtime import _example
from tests.paths import ET_FIXTURES, ROOT

BUILD = ROOT / "build" / "loader"
RUNTIME = BUILD / "fatpte-run"
FATPTE = [sys.executable, "-m", "fatpte"]


@pytest.fixture(autouse=True)
def runtime() -> Path:
    loader_build("release", "fatpte-run", sdk=True)
    return RUNTIME


def fatpte(*args: object, runtime: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "FATPTE_RUN"}
    if runtime is not None:
        env["FATPTE_RUN"] = runtime
    return subprocess.run([*FATPTE, *map(str, args)], capture_output=True, text=True, timeout=300, check=False,
                          env=env)


def device_json(*args: str) -> subprocess.CompletedProcess[str]:
    # In the environment fatpte gives the fatpte-runs it starts (fatpte_run.environment): both
    # find the same vendor runtimes.
    return subprocess.run([str(RUNTIME), "--device-json", *args], capture_output=True, text=True, timeout=300,
                          check=False, env=environment())


def test_no_torch_here() -> None:
    assert importlib.util.find_spec("torch") is None


def test_fatpte_run_lists_the_backends_its_runtime_registered() -> None:
    plain = json.loads(device_json().stdout)
    assert "executorch_backends" not in plain  # not asked: not known
    sdk = json.loads(device_json("--with-executorch").stdout)
    assert "XnnpackBackend" in sdk["executorch_backends"]
    assert "FatpteBackend" in sdk["executorch_backends"]  # the fat delegate library, found beside libfatpte
    assert {k: v for k, v in sdk.items() if k != "executorch_backends"} == plain
    with_fat = json.loads(device_json("--with-executorch", "--backend-path", str(BUILD)).stdout)
    assert set(with_fat["executorch_backends"]) == set(sdk["executorch_backends"])
    for args in (["--backend-path", str(BUILD)], ["--with-executorch", "--bogus"]):
        proc = device_json(*args)
        assert proc.returncode == 2 and proc.stdout == "" and "fatpte-run: " in proc.stderr


def test_fatpte_device_reports_the_runtime_byte_for_byte() -> None:
    # The same facts give the same canonical bytes: Python's probe with the runtime's backends is
    # what the runtime prints itself.
    by_runtime = device_json("--with-executorch").stdout
    assert fatpte("device", "--json", runtime=str(RUNTIME)).stdout == by_runtime
    assert fatpte("--runtime", RUNTIME, "device", "--json", runtime="").stdout == by_runtime
    text = fatpte("--runtime", RUNTIME, "device").stdout
    assert f"executorch:   {', '.join(json.loads(by_runtime)['executorch_backends'])}\n" in text
    assert "executorch:   not known (no fatpte-run found" in fatpte("device", runtime="").stdout


@pytest.fixture
def three(tmp_path: Path) -> Path:
    """native (a .ptn) + xnnpack + portable, in that order: table order alone would give native."""
    out = tmp_path / "mlp3.nfat"
    proc = fatpte("pack", "-q", "-o", out, ET_FIXTURES / "mlp.ptn", ET_FIXTURES / "mlp_xnnpack.pte",
                  ET_FIXTURES / "mlp_portable.pte")
    assert proc.returncode == 0, proc.stderr
    return out


def test_thin_for_the_host_keeps_an_entry_its_runtime_can_run(three: Path, tmp_path: Path) -> None:
    thin = tmp_path / "host.nfat"
    proc = fatpte("thin", three, "--device", "host", "-o", thin, runtime=str(RUNTIME))
    assert proc.returncode == 0, proc.stderr
    # The entry the host gets and the one it falls back to; native, which this runtime cannot run, not.
    assert proc.stdout.startswith(f"wrote {thin}: kept 'xnnpack', 'portable';")
    calls = _example().write_calls("mlp", tmp_path / "calls.json")
    ran = subprocess.run([str(RUNTIME), str(thin), "--inputs", str(calls), "--json"], capture_output=True, text=True,
                         timeout=300, check=False)
    assert ran.returncode == 0, ran.stderr
    got = json.loads(ran.stdout)
    assert got["chosen"] == "xnnpack"
    assert _example().mismatches([c["outputs"] for c in got["calls"]], _example().recorded_outputs("mlp")) == []
    # Without a runtime to ask, the host's backends are not known and table order gives native,
    # which this runtime cannot run: the trap the runtime's answer removes (--only-chosen: kept
    # alone, with nothing to fall back to).
    blind = tmp_path / "blind.nfat"
    assert fatpte("thin", three, "--device", "host", "--only-chosen", "-o", blind, runtime="").stdout.startswith(
        f"wrote {blind}: kept 'native';")
    assert subprocess.run([str(RUNTIME), str(blind), "--inputs", str(calls)], capture_output=True, text=True,
                          timeout=300, check=False).returncode == 3


def test_a_native_entry_is_said_to_need_what_this_runtime_lacks(three: Path) -> None:
    proc = fatpte("select", three, "--device", "host", "--explain", runtime=str(RUNTIME))
    assert proc.returncode == 0, proc.stderr
    # No entry needs a vendor runtime, so the runtime is asked with every one withheld
    # (specs/device-profile.md 9.1): OpenvinoBackend, whose runtime is OpenVINO's, is not among them.
    has = ", ".join(json.loads(device_json("--with-executorch", "--vendor-runtime", "openvino=").stdout)[
        "executorch_backends"])
    assert proc.stdout.splitlines()[1:3] == [
        "chosen: xnnpack [xnnpack]",
        (f"  -  native [native]: rejected: executorch_backends: needs NativeBackend; the device has no "
         f"NativeBackend (its runtime has {has})")]


def test_select_only_with_the_runtime_chooses_what_python_does(three: Path) -> None:
    """Parity: `fatpte-run --select-only --with-executorch` selects for this machine with the
    backends its runtime provides, as Python's `--device host` does when it finds that fatpte-run."""
    python = fatpte("select", three, "--device", "host", "--json", runtime=str(RUNTIME))
    cpp = subprocess.run([str(RUNTIME), str(three), "--select-only", "--with-executorch", "--json"],
                         capture_output=True, text=True, timeout=300, check=False)
    assert python.returncode == cpp.returncode == 0, (python.stderr, cpp.stderr)
    assert json.loads(cpp.stdout)["chosen"] == json.loads(python.stdout)["chosen"] == "xnnpack"
    blind = subprocess.run([str(RUNTIME), str(three), "--select-only", "--json"], capture_output=True, text=True,
                           timeout=300, check=False)
    assert json.loads(blind.stdout)["chosen"] == "native"  # without the runtime's backends, as Python's


def test_fatpte_run_says_this_runtime_has_no_native_backend(three: Path, tmp_path: Path) -> None:
    """A .ptn entry is a native package for ExecuTorch's NativeBackend, not a payload of fatpte's
    example backend ABI: the reason says so, and never asks for libfatpte_backend_native.so."""
    calls = _example().write_calls("mlp", tmp_path / "calls.json")
    proc = subprocess.run([str(RUNTIME), str(three), "--inputs", str(calls), "--explain"], capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert ("dispatch: native [native]: a native package (.ptn) for ExecuTorch backend NativeBackend: this runtime "
            "has no NativeBackend") in proc.stdout
    assert "libfatpte_backend_native" not in proc.stdout
