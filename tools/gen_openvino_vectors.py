"""Conformance vectors for vendor devices (issue 40): specs/vectors/openvino/.

- `profile-*.json`: device profiles whose accelerators carry the optional `device` and
  `capabilities` (specs/device-profile.md 4, 4.1), each accepted or refused for the one property
  its name says; both profile readers must give the index's outcome (Python's
  `DeviceProfile.load`, C++'s `fatpte-run --check-profile`): `accepted`, or E0702 and the field.
- `openvino-entries.nfat`: a manifest of revision 4 whose entries require OpenVINO devices
  (`AcceleratorRequirement.device`, `.capabilities`: specs/nfat-manifest.md 4.1), with an XNNPACK
  and a portable entry beside them; for every accepted profile the index holds the selection
  (`fatpte select --json`, or the report of E0901 when none fits) and its explanation
  (`--explain`, or the error's message), which `fatpte.select` and `fatpte-run --select-only`
  must both give.

Recorded from fatpte (Python): the test (tests/conformance/test_openvino_vectors.py) holds the C++
loader to the same outcomes, and a changed outcome shows up as a diff to review. Written by
tools/gen_vectors.py with the other vectors (or `python tools/gen_openvino_vectors.py`); do not
edit by hand.
"""

from __future__ import annotations

import json
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any, Final

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "specs" / "vectors" / "openvino"
CONTAINER = "openvino-entries.nfat"
E = "E0702"
VERSION = "2026.4.0"


def _ov(device: str, caps: list[str], name: str = "Intel(R) Core(TM) Ultra 7 155H", memory: int = 0,
        **more: Any) -> dict[str, Any]:
    acc: dict[str, Any] = {"kind": "openvino", "name": name, "version": VERSION, "memory_bytes": memory,
                           "device": device, "capabilities": caps}
    acc.update(more)
    return acc


def _profile(name: str, accelerators: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": name, "os": "linux", "arch": "x86_64",
                           "cpu_features": ["avx", "avx2", "f16c", "fma", "sse4_2"], "accelerators": accelerators,
                           "memory_bytes": 32 << 30, "backends": {}}
    doc.update(more)
    return doc


XEON_CPU = _ov("CPU", ["bf16", "bin", "export_import", "fp16", "fp32", "int8", "winograd"],
               name="Intel(R) Xeon(R) Processor")
ULTRA = [_ov("CPU", ["bin", "export_import", "fp32", "int8"]),
         _ov("GPU", ["bin", "export_import", "fp16", "fp32", "int8"], name="Intel(R) Arc(TM) Graphics (iGPU)",
             memory=32 << 30),
         _ov("NPU", ["export_import", "fp16", "int8"], name="Intel(R) AI Boost")]


def profiles() -> list[tuple[str, Any, str, str | None]]:
    """(file, document, description, field of the E0702 refusal or None when accepted)."""
    cuda = {"kind": "cuda", "name": "NVIDIA A100-SXM4-80GB", "version": "8.0", "memory_bytes": 80 << 30}
    return [
        ("profile-openvino-cpu-only.json", _profile("openvino-cpu-only", [XEON_CPU]),
         "this machine's kind: OpenVINO lists one CPU (fp32, int8, bf16, ...), no GPU, no NPU", None),
        ("profile-core-ultra.json", _profile("core-ultra", ULTRA),
         "CPU, GPU and NPU as OpenVINO lists them on a Core Ultra 7 155H", None),
        ("profile-two-gpus.json", _profile("two-gpus", [cuda, XEON_CPU, _ov("GPU.0", ["fp16", "fp32", "int8"],
                                                                           name="Intel(R) Arc(TM) A770"),
                                                      _ov("GPU.1", ["fp32"], name="Intel(R) UHD Graphics 770")]),
         "a CUDA GPU first, then OpenVINO's CPU and two indexed GPUs, only one with fp16", None),
        ("profile-near-device-names.json", _profile("near-device-names", [
            _ov(name, ["fp16", "int8"], name=f"device {name}") for name in ("GPU.", "GPU.x", "GPUX", "NPU.1a", "cpu")]),
         "device names that are not GPU, NPU or CPU, nor one of them with an index: no device entry is met", None),
        ("profile-no-openvino.json", _profile("no-openvino", []),
         "no OpenVINO runtime found: no openvino accelerator", None),
        ("profile-openvino-no-device-key.json", _profile("openvino-no-device-key", [
            {"kind": "openvino", "name": "Intel(R) Xeon(R) Processor", "version": VERSION, "memory_bytes": 0}]),
         "an openvino accelerator without `device` or `capabilities` (both optional)", None),
        ("profile-capabilities-empty.json", _profile("capabilities-empty", [_ov("CPU", [])]),
         "an empty `capabilities`: the same fact as none (the canonical form leaves it out)", None),
        ("refused-device-empty.json", _profile("x", [_ov("", ["fp32"])]),
         "`device` given empty", "accelerators[0].device"),
        ("refused-device-space.json", _profile("x", [_ov("GPU 0", ["fp32"])]),
         "`device` with a space", "accelerators[0].device"),
        ("refused-device-65.json", _profile("x", [_ov("G" * 65, ["fp32"])]),
         "`device` of 65 characters", "accelerators[0].device"),
        ("refused-device-number.json", _profile("x", [_ov(0, ["fp32"])]),  # type: ignore[arg-type]
         "`device` a number", "accelerators[0].device"),
        ("refused-capability-upper-case.json", _profile("x", [_ov("CPU", ["fp32", "FP16"])]),
         "a capability not lower-cased as the runtime's word must be", "accelerators[0].capabilities[1]"),
        ("refused-capability-twice.json", _profile("x", [_ov("CPU", ["int8", "fp32", "int8"])]),
         "a capability listed twice", "accelerators[0].capabilities[2]"),
        ("refused-capability-33-characters.json", _profile("x", [_ov("CPU", ["a" * 33])]),
         "a capability of 33 characters", "accelerators[0].capabilities[0]"),
        ("refused-capabilities-33.json", _profile("x", [_ov("CPU", [f"c{i}" for i in range(33)])]),
         "33 capabilities, one past the limit", "accelerators[0].capabilities"),
        ("refused-capabilities-string.json", _profile("x", [_ov("CPU", "fp32")]),  # type: ignore[arg-type]
         "`capabilities` a string, not an array", "accelerators[0].capabilities"),
        ("refused-unknown-accelerator-key.json", _profile("x", [_ov("CPU", [], devices=["CPU"])]),
         "an accelerator key neither required nor optional", "accelerators[0].devices"),
        ("refused-kind-after-device.json", _profile("x", [_ov("", [], kind="OpenVINO")]),
         "a kind outside the vocabulary and an empty device: the kind is named first",
         "accelerators[0].kind"),
        ("refused-memory-bytes-401-digits.json", _profile("x", [_ov("CPU", ["fp32"], memory=10**400)]),
         ("an accelerator's memory_bytes of 401 digits: the message quotes it as written, not as the 2^64 a "
          "64-bit reader could clamp it to"), "accelerators[0].memory_bytes"),
    ]


# The refusals whose message both readers give word for word, recorded in the index
# (`error.message`, after the file's name in either reader's line): a number out of range is quoted
# as the file writes it (clipped like any quoted value), however many digits it has.
WORDED: Final = ("refused-memory-bytes-401-digits.json",)


def _message(path: Path) -> str:
    from fatpte.device.profile import DeviceProfile
    from fatpte.errors import FatpteError

    try:
        DeviceProfile.load(str(path))
    except FatpteError as exc:
        return exc.message
    raise AssertionError(f"{path.name} was accepted")


def specializations() -> list[Any]:
    """The entries of CONTAINER, highest priority first: each OpenVINO entry needs a device
    (and capabilities), then XNNPACK on AVX2 and the portable program."""
    from fatpte.ops.specialization import Specialization as S

    def ov(device: str, caps: list[str] | None = None) -> Any:
        acc: dict[str, Any] = {"kind": "openvino", "device": device}
        if caps:
            acc["capabilities"] = caps
        return {"accelerators": [acc]}

    avx2: Any = {"arch": ["x86_64"], "cpu_features": ["avx2"]}
    any_fp16: Any = {"accelerators": [{"kind": "openvino", "capabilities": ["fp16"]}]}
    return [
        S("openvino", b"ov-gpu-bf16" * 4, name="ov-gpu-bf16", priority=5, requires=ov("GPU", ["bf16"])),
        S("openvino", b"ov-gpu" * 4, name="ov-gpu", priority=4, requires=ov("GPU")),
        S("openvino", b"ov-npu" * 4, name="ov-npu-int8", priority=3, requires=ov("NPU", ["int8"])),
        S("openvino", b"ov-any" * 4, name="ov-any-fp16", priority=2, requires=any_fp16),
        S("openvino", b"ov-cpu" * 4, name="ov-cpu", priority=1, requires=ov("CPU")),
        S("xnnpack", b"xnnpack" * 4, name="xnnpack", requires=avx2),
        S("portable", b"portable" * 4, name="portable", priority=-1),
    ]


def container() -> bytes:
    import fatpte

    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) / CONTAINER
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fatpte.FatpteWarning)
            fatpte.pack(specializations(), dest)
        return dest.read_bytes()


def selection(data: bytes, profile: Any) -> dict[str, Any]:
    """What fatpte.select says of CONTAINER on `profile`: its JSON and explanation, or the report
    and message of E0901 when no entry fits."""
    import fatpte
    from fatpte.device.profile import DeviceProfile
    from fatpte.errors import SelectionError

    device = DeviceProfile.from_json(profile)
    with fatpte.Container.from_buffer(data) as c:
        try:
            chosen = fatpte.select(c, device)
        except SelectionError as exc:
            return {"code": exc.code.tag, "report": exc.report, "message": exc.message}
        return {"code": None, "report": chosen.to_json(), "message": chosen.explain()}


def write(out: Path = OUT) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        old.unlink()
    data = container()
    (out / CONTAINER).write_bytes(data)
    rows: dict[str, Any] = {}
    for file, doc, description, field in profiles():
        (out / file).write_text(json.dumps(doc, indent=2) + "\n")
        row: dict[str, Any] = {"description": description, "accepted": field is None}
        if field is None:
            row["selection"] = selection(data, doc)
        else:
            row["error"] = {"code": E, "field": field}
            if file in WORDED:
                row["error"]["message"] = _message(out / file)
        rows[file] = row
    (out / "index.json").write_text(json.dumps({
        "generator": "tools/gen_openvino_vectors.py",
        "about": "vendor-device vectors: per profile file, accepted (with the selection both fatpte.select and "
                 f"fatpte-run --select-only make over {CONTAINER}: its --json report and --explain text, or E0901's "
                 "report and message) or the error both profile readers give (code and field, and the message where "
                 "it is given)",
        "container": CONTAINER,
        "vectors": rows}, indent=2) + "\n")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    write()
