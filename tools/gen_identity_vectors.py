"""Conformance vectors for device identity (specs/device-profile.md 2.1, 3.6; specs/nfat-manifest.md
4.4 and 6.3): specs/vectors/identity/, written by `python tools/gen_identity_vectors.py` (also part
of tools/gen_vectors.py); do not edit them by hand.

- `*.nfat`: containers whose entries require cores, a minimum core, SoCs and memory, beside
  entries graded `compatible` and `fallback`;
- `device-*.json`: device profiles with identity (and one without), which both readers accept;
- `refused-*.json`: profiles each with one identity defect, which both readers refuse with E0702
  at the field the index names;
- `index.json`: `profiles`, each profile file's outcome (`accepted`, or `code` and `field`); and
  `selections`, for each container and device profile, the entry chosen (null when none fits) and
  per entry, in table order, `eligible`, `grade` and the failed requirements' names.

Python runs them in tests/conformance/test_identity_vectors.py, C++ (`fatpte-run --select-only
--json`, `--check-profile`) in tests/loader/test_cpp_identity.py.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

OUT = Path(__file__).resolve().parent.parent / "specs" / "vectors" / "identity"
GIB = 1 << 30
ARM_DOT = ["asimd", "asimddp", "asimdhp", "fphp"]

DEVICES: dict[str, dict[str, Any]] = {
    "device-cortex-a53": {"arch": "aarch64", "cpu_features": ["asimd"], "memory_bytes": 1 * GIB,
                          "cpu_cores": ["cortex-a53"], "kernel": "6.1.0-rpi7-rpi-v8", "os_release": "debian 12",
                          "machine": "Raspberry Pi 3 Model B Plus Rev 1.3", "soc": ["brcm,bcm2837", "raspberrypi,3-model-b-plus"]},
    "device-raspberry-pi-5": {"arch": "aarch64", "cpu_features": ARM_DOT, "memory_bytes": 8 * GIB,
                              "cpu_cores": ["cortex-a76"], "machine": "Raspberry Pi 5 Model B Rev 1.0",
                              "soc": ["brcm,bcm2712", "raspberrypi,5-model-b"]},
    "device-snapdragon-855": {"os": "android", "arch": "aarch64", "cpu_features": ARM_DOT, "memory_bytes": 8 * GIB,
                              "cpu_cores": ["cortex-a55", "cortex-a76"], "soc": ["SM8150", "Snapdragon", "qcom,sm8150"]},
    "device-jetson-orin": {"arch": "aarch64", "cpu_features": ARM_DOT, "memory_bytes": 64 * GIB,
                           "cpu_cores": ["cortex-a78ae"], "machine": "Jetson AGX Orin",
                           "soc": ["nvidia,p3737-0000", "nvidia,tegra234"]},
    "device-graviton3": {"arch": "aarch64", "cpu_features": [*ARM_DOT, "bf16", "i8mm", "sve"], "memory_bytes": 32 * GIB,
                         "cpu_cores": ["neoverse-v1"], "os_release": "amzn 2023"},
    "device-a64fx": {"arch": "aarch64", "cpu_features": ["asimd", "asimdhp", "fphp", "sve"], "memory_bytes": 32 * GIB,
                     "cpu_cores": ["a64fx"]},
    "device-unnamed-core": {"arch": "aarch64", "cpu_features": ARM_DOT, "memory_bytes": 8 * GIB,
                            "cpu_cores": ["0x41:0xd99"]},
    "device-no-identity": {"arch": "aarch64", "cpu_features": ARM_DOT, "memory_bytes": 8 * GIB},
    "device-sapphire-rapids": {"arch": "x86_64", "cpu_features": ["avx", "avx2", "avx512f", "f16c", "fma", "sse4_2"],
                               "memory_bytes": 64 * GIB, "cpu_cores": ["sapphirerapids"], "kernel": "6.8.0-45-generic",
                               "os_release": "ubuntu 24.04"},
    "device-zen3": {"arch": "x86_64", "cpu_features": ["avx", "avx2", "f16c", "fma", "sse4_2"], "memory_bytes": 16 * GIB,
                    "cpu_cores": ["znver3"]},
}

# (file, the defect's field, the profile's keys changed)
REFUSED: list[tuple[str, str, dict[str, Any]]] = [
    ("refused-core-by-id.json", "cpu_cores[0]", {"cpu_cores": ["0x41:0xd0b"]}),
    ("refused-core-other-arch.json", "cpu_cores[0]", {"cpu_cores": ["znver4"]}),
    ("refused-core-unknown-word.json", "cpu_cores[0]", {"cpu_cores": ["cortex-a99"]}),
    ("refused-core-id-uppercase.json", "cpu_cores[0]", {"cpu_cores": ["0x41:0xD99"]}),
    ("refused-core-twice.json", "cpu_cores[1]", {"cpu_cores": ["cortex-a76", "cortex-a76"]}),
    ("refused-cores-empty-word.json", "cpu_cores[0]", {"cpu_cores": [""]}),
    ("refused-cores-not-array.json", "cpu_cores", {"cpu_cores": "cortex-a76"}),
    ("refused-cores-65.json", "cpu_cores", {"cpu_cores": [f"0x41:0x{0xe00 + i:03x}" for i in range(65)]}),
    ("refused-kernel-control.json", "kernel", {"kernel": "6.1\n"}),
    ("refused-kernel-empty.json", "kernel", {"kernel": ""}),
    ("refused-os-release-number.json", "os_release", {"os_release": 12}),
    ("refused-machine-257.json", "machine", {"machine": "M" * 257}),
    ("refused-soc-twice.json", "soc[1]", {"soc": ["brcm,bcm2712", "brcm,bcm2712"]}),
    ("refused-soc-non-ascii.json", "soc[0]", {"soc": ["brcm,bcm2712\u00e9"]}),
]

# (entry name, backend id, requires)
ENTRIES: list[tuple[str, str, dict[str, Any]]] = [
    ("portable", "portable", {}),
    ("a53_tuned", "xnnpack", {"arch": ["aarch64"], "cpu_cores": ["cortex-a53"]}),
    ("a76_or_later", "xnnpack", {"arch": ["aarch64"], "cpu_features": ["asimddp"], "min_core": "cortex-a76"}),
    ("big_little", "xnnpack", {"arch": ["aarch64"], "cpu_cores": ["cortex-a76", "cortex-a55"]}),
    ("pi5", "xnnpack", {"soc": ["brcm,bcm2712"], "min_memory_bytes": 4 * GIB}),
    ("orin_by_model", "xnnpack", {"soc": ["Jetson AGX Orin"]}),
    ("dotprod", "xnnpack", {"arch": ["aarch64"], "cpu_features": ["asimddp"]}),
    ("sve_v1", "xnnpack", {"arch": ["aarch64"], "cpu_features": ["sve"], "min_core": "neoverse-v1"}),
    ("unnamed", "xnnpack", {"arch": ["aarch64"], "cpu_cores": ["0x41:0xd99"]}),
    ("x86_v4", "xnnpack", {"arch": ["x86_64"], "min_core": "skylake-avx512"}),
    ("x86_avx2", "xnnpack", {"arch": ["x86_64"], "cpu_features": ["avx2"]}),
]


def _profile(name: str, keys: dict[str, Any]) -> dict[str, Any]:
    base: dict[str, Any] = {"name": name, "os": "linux", "arch": "aarch64", "cpu_features": [], "accelerators": [],
                            "memory_bytes": 0, "backends": {}}
    return {**base, **keys}


def containers() -> dict[str, bytes]:
    """The containers, packed by fatpte (each entry a distinct few bytes)."""
    from fatpte.ops.packing import pack
    from fatpte.ops.specialization import Specialization

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        specs = [Specialization(b, name.encode() * 2, name=name, requires=r) for name, b, r in ENTRIES]
        path = Path(tmp) / "identity.nfat"
        pack(specs, path)
        out["identity.nfat"] = path.read_bytes()
        # Three entries delegate to XNNPACK, which no profile here lists: one note, said once.
        notes = [Specialization("xnnpack", name.encode() * 2, name=name, requires=r,
                                executorch_backends=["XnnpackBackend"]) for name, _, r in ENTRIES[2:7:2]]
        notes.append(Specialization("portable", b"portable", name="portable", executorch_backends=[]))
        path = Path(tmp) / "shared-note.nfat"
        pack(notes, path)
        out["shared-note.nfat"] = path.read_bytes()
    return out


def outcome(container: Path, device: Path) -> dict[str, Any]:
    """What fatpte's selection makes of the pair (what every reader must make of it)."""
    import fatpte
    from fatpte.device.profile import DeviceProfile
    from fatpte.device.selection import rank, select  # noqa: F401  (select raises when none fits)
    from fatpte.errors import SelectionError

    with fatpte.open(container) as c:
        try:
            report = select(c, DeviceProfile.load(str(device))).to_json()
        except SelectionError as exc:
            report = exc.report
    return {"chosen": report["chosen"],
            "verdicts": [{"entry": v["entry"], "eligible": v["eligible"], "grade": v["grade"],
                          "failures": [f["requirement"] for f in v["failures"]]} for v in report["verdicts"]]}


def write(out: Path = OUT) -> None:
    import warnings

    import fatpte

    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("*.json"), *out.glob("*.nfat")]:
        old.unlink()
    profiles: dict[str, Any] = {}
    from fatpte.device.profile import DeviceProfile

    for name, keys in DEVICES.items():  # in canonical form
        (out / f"{name}.json").write_text(DeviceProfile.from_json(_profile(name, keys)).to_json_text())
        profiles[f"{name}.json"] = {"accepted": True}
    good = DEVICES["device-raspberry-pi-5"]
    for file, field, keys in REFUSED:
        (out / file).write_text(json.dumps(_profile(file[:-5], {**good, **keys}), indent=2) + "\n")
        profiles[file] = {"accepted": False, "code": "E0702", "field": field}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fatpte.FatpteWarning)
        made = containers()
    selections: dict[str, Any] = {}
    for file, data in made.items():
        (out / file).write_bytes(data)
        selections[file] = {f"{d}.json": outcome(out / file, out / f"{d}.json") for d in DEVICES}
    index = {"profiles": profiles, "selections": selections}
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n")


if __name__ == "__main__":
    write()
    print(f"wrote {OUT}")
