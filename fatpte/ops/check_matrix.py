"""The CPU matrix of `fatpte check --cpus` (issue 36): which CPUs a check runs each entry on, and
the runner of one (entry, CPU) pair.

A CPU is asked for by a qemu-user 7.2 model name (aarch64: cortex-a53, cortex-a76, a64fx, max,
...; x86_64: Nehalem, Haswell, ...; the tables of fatpte.ops.runner), by the name of a device
profile (fatpte/device/profiles/*.json), mapped to the closest qemu model by PROFILE_MODELS, or
`native`: this machine, unemulated. The closest model of a profile is the weakest model that has
every CPU feature the profile states, so an entry eligible on the device is eligible on the model;
a profile with an AVX-512 feature has none (qemu 7.2 emulates no AVX-512) and maps to `native`.

An entry is eligible on a CPU of its architecture (any, when its requirements name none) whose
features hold every feature it requires, by the table; the pair then runs under that model (or
natively), and the runner's own probe of the emulated CPU is checked again by the rules of every
selection (fatpte.ops.runner.fits). A pair where the entry is not eligible is reported as such, a
fact of the matrix, never a failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from fatpte.errors import ErrorCode, FatpteError, clipped
from fatpte.format.model import Entry
from fatpte.manifest.model import Requirements
from fatpte.ops import runner

NATIVE: Final = "native"
# Each named device profile's closest qemu 7.2 model (docs/golden.md, "The CPU matrix"); `native`
# for a profile whose features no model emulates. tests/ops/test_check_matrix.py holds each to the
# rule of the module docstring.
PROFILE_MODELS: Final[dict[str, str]] = {
    "android-arm64-dotprod": "cortex-a76",
    "apple-m1": "cortex-a76",
    "apple-m3": "max,sme=off",
    "arm64-i8mm-sve2": "max,sme=off",
    "jetson-orin": "cortex-a76",
    "raspberry-pi-5": "cortex-a76",
    "nvidia-sm80-server": "Haswell",
    "intel-core-ultra-7-155h": "Haswell",
    "nvidia-sm90-server": NATIVE,
    "sapphire-rapids-amx": NATIVE,
    "x86-64-v2": "Nehalem",
    "x86-64-v3": "Haswell",
    "x86-64-v4": NATIVE,
    # The fleet's cores (specs/device-profile.md section 8): qemu 7.2 has no A55, A78, X1 or V1.
    "cortex-a53": "cortex-a53",
    "cortex-a55": "cortex-a76",
    "cortex-a76": "cortex-a76",
    "cortex-a78": "cortex-a76",
    "cortex-x1": "cortex-a76",
    "neoverse-n1": "cortex-a76",
    "neoverse-v1": "max,sme=off",
    "a64fx": "a64fx",
    "raspberry-pi-4": "cortex-a53",
}
# Names people reach for that are neither a qemu 7.2 model nor a profile, with the one to use.
MISSING_MODELS: Final = {"graviton2": "neoverse-n1, the profile of its cores",
                         "graviton3": "neoverse-v1, the profile of its cores"}


@dataclass(frozen=True, slots=True)
class Cpu:
    """One CPU of the matrix: the name asked for, its architecture and qemu model (None: native)."""

    asked: str
    arch: str
    model: str | None

    @property
    def features(self) -> frozenset[str] | None:
        """What the model exposes (None for native: the probe says)."""
        return None if self.model is None else runner.model_features(self.arch, self.model)


def known_models() -> list[str]:
    return [m for arch in runner.QEMU_MODELS for m, _ in runner.QEMU_MODELS[arch]]


def resolve(name: str, host_arch: str) -> Cpu:
    """The CPU `name` stands for; E0702 naming the known ones when it is none."""
    model = PROFILE_MODELS.get(name, name)
    if model == NATIVE:
        return Cpu(name, host_arch, None)
    for arch, table in runner.QEMU_MODELS.items():
        if model in dict(table):
            return Cpu(name, arch, model)
    hint = f" (use {MISSING_MODELS[name]})" if name in MISSING_MODELS else ""
    raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"--cpus: unknown CPU {clipped(name)!r}{hint}: give a qemu model "
                      f"({', '.join(known_models())}), a device profile ({', '.join(PROFILE_MODELS)}) or "
                      f"{NATIVE!r}", field="cpus", actual=name)


def parse_cpus(text: str, host_arch: str) -> list[Cpu]:
    """`MODEL[,MODEL]` as CPUs, in the order given, each once; E0702 for an empty list or name. A
    qemu property (`max,sme=off`: a part with `=`) belongs to the model before it."""
    names: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if "=" in part and names and names[-1]:
            names[-1] += "," + part
        else:
            names.append(part)
    if not text.strip() or any(not n for n in names):
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"--cpus {text!r}: give CPU names separated by commas",
                          field="cpus", actual=text)
    return [resolve(n, host_arch) for n in dict.fromkeys(names)]


def ineligible(requires: Requirements, cpu: Cpu) -> str:
    """"" when an entry requiring `requires` is eligible on `cpu` by the model's table, else why not
    (native: decided by the probe, in place_on)."""
    if requires.arch and cpu.arch not in requires.arch:
        return f"arch: needs one of {', '.join(requires.arch)}, {cpu.asked} is {cpu.arch}"
    features = cpu.features
    if features is None:
        return ""
    lacking = [f for f in requires.cpu_features if f not in features]
    if not lacking:
        return ""
    why = f"cpu_features: {cpu.model} lacks {', '.join(lacking)}"
    if runner.native_only(requires):
        why += " (qemu 7.2 emulates no AVX-512: such an entry is checked natively only; add `native` to --cpus)"
    return why


def place_on(entry: Entry, record: Any, cpu: Cpu, *, runtime: str | None, aarch64_runtime: str | None,
             qemu: str | None) -> tuple[runner.Placement, bool]:
    """The runner of `entry` on `cpu`, and whether the entry is eligible there: (placement, False)
    when it is not (the placement's reason says why), (no runner and why, True) when it is but no
    runner here can emulate that CPU or the runner's probe refuses it."""
    requires = Requirements() if record is None else record.requires
    backends = None if record is None else record.executorch_backends
    why = ineligible(requires, cpu)
    if why:
        return runner.Placement(None, why), False
    native = runner.native_runtime(runtime)
    if native is None:
        return runner.Placement(None, "no fatpte-run to run it (set $FATPTE_RUN, `fatpte --runtime PATH`, or put "
                                      "fatpte-run on PATH)"), True
    if cpu.model is None:
        why = runner.fits(entry, requires, backends, runner.device_of(native))
        return runner.Placement(None if why else native, why), not why
    if cpu.arch == "x86_64":
        path = native.command[-1] if native.arch == "x86_64" else None
        emulated, missing = runner.emulated_runtime(requires, path, arch="x86_64", model=cpu.model)
    else:
        emulated, missing = runner.emulated_runtime(requires, aarch64_runtime, qemu, model=cpu.model)
    if emulated is None:
        return runner.Placement(None, missing), True
    why = runner.fits(entry, requires, backends, runner.device_of(emulated))
    return runner.Placement(None if why else emulated, f"under {emulated.describe()}: {why}" if why else ""), True


def names(cpus: Sequence[Cpu]) -> list[str]:
    return [c.asked for c in cpus]
