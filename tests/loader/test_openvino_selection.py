"""An OpenVINO entry is required as its program was compiled (issue 40, point 3): packing reads the
OpenvinoBackend delegate's compile spec `device` and records {kind openvino, device}; an entry
compiled for `GPU` is refused at selection on this host, whose OpenVINO (when found at all) lists
only a CPU, with the reason, before a byte of it is read: by `fatpte select` and by `fatpte-run`,
which then runs the XNNPACK entry with the eager outputs.

The GPU program is the CPU fixture (tests/fixtures/executorch/mlp_openvino_default.pte) with its
compile spec rewritten from `CPU` to `GPU` in place (fatpte.executorch.rewrite.set_compile_spec):
a program no machine here could export, since the partitioner refuses a device OpenVINO does not
list. It is refused before it is read, never run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import fatpte
from fatpte.executorch.pte import read_program
from fatpte.executorch.rewrite import set_compile_spec
from fatpte.executorch.vendor_devices import compiled_devices
from tests.paths import ROOT
from tests.scripts import load_script

pytestmark = pytest.mark.loader_build("fatpte-run", sdk=True)  # `exe`: tests/loader/conftest.py
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
FATPTE = [sys.executable, "-m", "fatpte"]
NEEDS_GPU = "accelerators[0]: needs openvino GPU; the device has "


def _example() -> ModuleType:
    return load_script("loader/examples/executorch_example.py")


def gpu_program(tmp_path: Path) -> Path:
    """The OpenVINO CPU fixture restated as compiled for GPU (labelled: a rewritten fixture)."""
    cpu = (FIXTURES / "mlp_openvino_default.pte").read_bytes()
    gpu = set_compile_spec(cpu, "OpenvinoBackend", "device", b"GPU", source="mlp_openvino_default.pte")
    assert compiled_devices(read_program(gpu)) == (("openvino", "GPU"),)
    assert len(gpu) == len(cpu) and sum(a != b for a, b in zip(gpu, cpu, strict=True)) == 1  # C -> G
    path = tmp_path / "mlp_openvino_gpu_rewritten.pte"
    path.write_bytes(gpu)
    return path


def packed(tmp_path: Path) -> Path:
    """openvino (the GPU program), xnnpack and portable lowerings of the MLP, in that order."""
    dest = tmp_path / "mlp.nfat"
    subprocess.run([*FATPTE, "pack", "-o", str(dest), str(gpu_program(tmp_path)),
                    str(FIXTURES / "mlp_xnnpack.pte"), str(FIXTURES / "mlp_portable.pte")],
                   check=True, capture_output=True, text=True)
    return dest


def test_pack_records_the_device_the_program_was_compiled_for(tmp_path: Path) -> None:
    for pte, device in ((FIXTURES / "mlp_openvino_default.pte", "CPU"), (gpu_program(tmp_path), "GPU")):
        dest = tmp_path / f"{device}.nfat"
        fatpte.pack([fatpte.Specialization("openvino", pte)], dest)
        with fatpte.open(dest) as c:
            assert c.manifest is not None and c.manifest.revision == 4
            [acc] = c.manifest.entries[0].requires.accelerators
            assert (acc.kind, acc.device, acc.capabilities) == ("openvino", device, ())
            assert c.manifest.entries[0].requires.text() == f"openvino {device}"
    # A requirement the packer states already is not added twice; one for another device is kept.
    stated = {"accelerators": [{"kind": "openvino", "device": "GPU", "capabilities": ["fp16"]}]}
    dest = tmp_path / "stated.nfat"
    fatpte.pack([fatpte.Specialization("openvino", gpu_program(tmp_path), requires=stated)], dest)
    with fatpte.open(dest) as c:
        assert c.manifest is not None
        assert [(a.device, a.capabilities) for a in c.manifest.entries[0].requires.accelerators] == [
            ("GPU", ("fp16",))]


def test_the_compile_spec_writer_refuses_what_it_cannot_patch_in_place() -> None:
    cpu = (FIXTURES / "mlp_openvino_default.pte").read_bytes()
    with pytest.raises(fatpte.FatpteError, match="no compile spec 'device' of 4 bytes"):
        set_compile_spec(cpu, "OpenvinoBackend", "device", b"GPU0")
    with pytest.raises(fatpte.FatpteError, match="no XnnpackBackend delegate"):
        set_compile_spec(cpu, "XnnpackBackend", "device", b"GPU")


def test_fatpte_select_refuses_the_gpu_entry_here_with_the_reason(tmp_path: Path) -> None:
    container = packed(tmp_path)
    explained = subprocess.run([*FATPTE, "select", str(container), "--device", "host", "--explain"],
                               capture_output=True, text=True, check=False)
    assert explained.returncode == 0, explained.stderr
    lines = explained.stdout.splitlines()
    assert "chosen: xnnpack [xnnpack]" in lines
    [gpu] = [line for line in lines if "openvino [openvino]" in line]
    assert gpu.startswith("  -  openvino [openvino]: rejected: " + NEEDS_GPU), gpu
    # This host's OpenVINO lists no GPU: either no openvino accelerator, or only its CPU.
    assert gpu.endswith("no openvino accelerator") or "openvino CPU " in gpu, gpu
    assert "openvino GPU" not in gpu.split("the device has ")[1]


def _report(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def test_fatpte_run_refuses_the_gpu_entry_before_reading_it_and_runs_xnnpack(exe: Path, tmp_path: Path) -> None:
    ex = _example()
    container = packed(tmp_path)
    calls = ex.write_calls("mlp", tmp_path / "calls.json")
    # The GPU entry's payload is damaged in its middle: reading it would fail its CRC32C (E0208), so
    # a run that succeeds never read it.
    doc = json.loads(subprocess.run([*FATPTE, "info", str(container), "--json"], check=True, capture_output=True,
                                    text=True).stdout)
    entry = doc["entries"][0]
    assert entry["name"] == "openvino"
    damaged = tmp_path / "damaged.nfat"
    shutil.copy(container, damaged)
    data = bytearray(damaged.read_bytes())
    data[entry["offset"] + entry["size"] // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    for path in (container, damaged):
        explained = ex.run(exe, path, calls, "--explain")
        assert explained.returncode == 0, explained.stderr
        [gpu] = [line for line in explained.stdout.splitlines() if "openvino [openvino]" in line]
        assert "rejected: " + NEEDS_GPU in gpu, explained.stdout
        assert "dispatch: openvino" not in explained.stdout  # never tried: refused at selection
        report = _report(ex.run(exe, path, calls, "--json"))
        assert report["chosen"] == "xnnpack"
        assert ex.mismatches([c["outputs"] for c in report["calls"]], ex.recorded_outputs("mlp")) == []


def test_pack_flag_states_a_device_and_capabilities(tmp_path: Path) -> None:
    dest = tmp_path / "flag.nfat"
    done = subprocess.run([*FATPTE, "pack", "-q", "-o", str(dest), str(gpu_program(tmp_path)),
                           str(FIXTURES / "mlp_xnnpack.pte"), "--accelerator", "openvino=openvino:GPU+fp16+int8",
                           "--accelerator", "xnnpack=openvino"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    with fatpte.open(dest) as c:
        assert c.manifest is not None
        ov, xnn = (e.requires.accelerators for e in c.manifest.entries)
        assert [(a.kind, a.device, a.capabilities) for a in ov] == [("openvino", "GPU", ("fp16", "int8"))]
        assert [(a.kind, a.device, a.capabilities) for a in xnn] == [("openvino", "", ())]
    bad = subprocess.run([*FATPTE, "pack", "-q", "-o", str(tmp_path / "bad.nfat"), str(gpu_program(tmp_path)),
                          "--accelerator", "openvino=openvino:GPU+FP16"], capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and "'FP16' is not a capability" in bad.stderr, bad.stderr
