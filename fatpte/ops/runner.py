"""Placing one entry of a container on fatpte's C++ runner (`fatpte-run`, loader/), natively or,
for an entry made for another architecture, under qemu-user with the CPU model its requirements
name. The runner itself (finding it, running it, reading its report) is the one room
fatpte.device.fatpte_run; this module chooses which runner an entry gets. What `fatpte check` and `fatpte pack --golden-from` run programs with: one process per entry
and method, which reads the golden tensors from the container itself; Python never loads a
payload.

Which runner: the one the caller names, else `$FATPTE_RUN`, else the one the platform wheel
installed in the package, else `fatpte-run` on PATH or beside this Python
(fatpte.device.fatpte_run.find_runtime). For aarch64: the one the caller names, else
`$FATPTE_RUN_AARCH64` (an aarch64 build of fatpte-run, `make test-aarch64` builds one), else the
one `fatpte runtime unpack` took from fatpte's aarch64 wheel (fatpte.device.runtime_wheel), run by
`qemu-aarch64` (on PATH) with the sysroot `$FATPTE_QEMU_SYSROOT` (default /usr/aarch64-linux-gnu).
Each runner is asked for the device it sees (`fatpte-run --device-json --with-executorch`): under
qemu that is the emulated CPU, which the entry's requirements are then checked against, by the
same rules as every selection (fatpte.device.selection).
"""

from __future__ import annotations

import os
import platform
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from fatpte.device.fatpte_run import Runtime, find_runtime
from fatpte.device.profile import DeviceProfile
from fatpte.device.runtime_wheel import cached_runtime
from fatpte.device.selection import evaluate, runtime_check
from fatpte.format.model import Entry
from fatpte.manifest.model import Requirements

AARCH64_RUNTIME_ENV: Final = "FATPTE_RUN_AARCH64"
SYSROOT_ENV: Final = "FATPTE_QEMU_SYSROOT"
DEFAULT_SYSROOT: Final = "/usr/aarch64-linux-gnu"
# qemu-user 7.2's CPU models, weakest first, with the ARM features of the device-profile vocabulary
# each exposes (measured with getauxval; /work/shared/arm-emulation-notes.md): an entry runs under
# the first that has every feature it requires. `max` with SME off: qemu 7.2 computes SME's SMOPA
# wrongly, which would fail every int8 entry's golden calls for the emulator's sake; an entry that
# requires sme gets `max` itself.
QEMU_AARCH64_MODELS: Final[tuple[tuple[str, frozenset[str]], ...]] = (
    ("cortex-a53", frozenset({"asimd"})),
    ("cortex-a76", frozenset({"asimd", "fphp", "asimdhp", "asimddp"})),
    ("a64fx", frozenset({"asimd", "fphp", "asimdhp", "sve"})),
    ("max,sme=off", frozenset({"asimd", "fphp", "asimdhp", "asimddp", "i8mm", "bf16", "sve", "sve2"})),
    ("max", frozenset({"asimd", "fphp", "asimdhp", "asimddp", "i8mm", "bf16", "sve", "sve2", "sme"})),
)
# The models `--cpus` also takes: every aarch64 model of qemu 7.2, the ones above included
# (cortex-a35/a57/a72 expose what cortex-a53 does, neoverse-n1 what cortex-a76 does; qemu 7.2 has
# no cortex-a55). Not used for the default choice: the weakest of each group above stands for it.
QEMU_AARCH64_MORE: Final[tuple[tuple[str, frozenset[str]], ...]] = (
    ("cortex-a35", frozenset({"asimd"})),
    ("cortex-a57", frozenset({"asimd"})),
    ("cortex-a72", frozenset({"asimd"})),
    ("neoverse-n1", frozenset({"asimd", "fphp", "asimdhp", "asimddp"})),
)
# qemu-x86_64 7.2's CPU models by x86-64 level, weakest first, with the x86 features of the
# device-profile vocabulary (specs/device-profile.md 3.3) each exposes to a program's cpuid (what
# fatpte-run's probe reports under it): qemu64 is x86-64-v1 (SSE2), Nehalem and Westmere v2
# (SSE4.2), SandyBridge and IvyBridge add AVX (and F16C), Haswell and later v3 (AVX2, FMA). qemu
# 7.2's TCG has no AVX-512: Skylake-Server and Icelake-Server run as v3, and an entry that
# requires an AVX-512 feature can only be checked natively, on a host that has it.
QEMU_X86_64_MODELS: Final[tuple[tuple[str, frozenset[str]], ...]] = (
    ("qemu64", frozenset()),
    ("Nehalem", frozenset({"sse4_2"})),
    ("Westmere", frozenset({"sse4_2"})),
    ("SandyBridge", frozenset({"sse4_2", "avx"})),
    ("IvyBridge", frozenset({"sse4_2", "avx", "f16c"})),
    ("Haswell", frozenset({"sse4_2", "avx", "avx2", "fma", "f16c"})),
    ("Broadwell", frozenset({"sse4_2", "avx", "avx2", "fma", "f16c"})),
    ("Skylake-Client", frozenset({"sse4_2", "avx", "avx2", "fma", "f16c"})),
    ("Skylake-Server", frozenset({"sse4_2", "avx", "avx2", "fma", "f16c"})),
    ("EPYC", frozenset({"sse4_2", "avx", "avx2", "fma", "f16c"})),
)
QEMU_MODELS: Final = {"aarch64": QEMU_AARCH64_MODELS + QEMU_AARCH64_MORE, "x86_64": QEMU_X86_64_MODELS}
QEMU_BINARY: Final = {"aarch64": "qemu-aarch64", "x86_64": "qemu-x86_64"}
NATIVE_ONLY_PREFIX: Final = "avx512"  # no qemu 7.2 model has a feature whose name starts so


def host_arch() -> str:
    """This machine's architecture in the device-profile vocabulary."""
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def native_runtime(path: str | None = None) -> Runtime | None:
    """The fatpte-run of this machine: `path`, else the one fatpte.device.probe_executorch finds."""
    if path is None:
        path, _ = find_runtime()
    if not path:
        return None
    return Runtime((path,), host_arch())


def qemu_model(requires: Requirements, arch: str = "aarch64") -> str | None:
    """The weakest qemu CPU model of `arch` (its default-choice table) with every feature
    `requires` states (None: none has them)."""
    needed = set(requires.cpu_features)
    table = QEMU_AARCH64_MODELS if arch == "aarch64" else QEMU_X86_64_MODELS
    return next((model for model, features in table if needed <= features), None)


def model_features(arch: str, model: str) -> frozenset[str]:
    """The features qemu's `model` of `arch` exposes (KeyError for a model not in the tables)."""
    return dict(QEMU_MODELS[arch])[model]


def native_only(requires: Requirements) -> list[str]:
    """The features `requires` states that no qemu 7.2 model emulates (AVX-512)."""
    return [f for f in requires.cpu_features if f.startswith(NATIVE_ONLY_PREFIX)]


def emulated_runtime(requires: Requirements, path: str | None = None, qemu: str | None = None,
                     arch: str = "aarch64", model: str | None = None) -> tuple[Runtime | None, str]:
    """A runner for an entry of `arch` under qemu-user with CPU `model` (default: the weakest
    model with every feature `requires` states), or None and why there is none. aarch64: the
    aarch64 fatpte-run `path` (default `$FATPTE_RUN_AARCH64`) with the sysroot; x86_64: this
    machine's own fatpte-run `path`, under qemu-x86_64 (it needs no sysroot: the libraries are
    this machine's)."""
    if arch == "aarch64":
        path = path if path is not None else (os.environ.get(AARCH64_RUNTIME_ENV) or cached_runtime("aarch64"))
        if not path:
            return None, (f"no aarch64 fatpte-run to emulate (set ${AARCH64_RUNTIME_ENV}, give --aarch64-runtime "
                          "PATH to `fatpte check` or `fatpte pack`, or `fatpte runtime unpack` fatpte's aarch64 "
                          "wheel)")
        if not os.path.isfile(path):
            return None, f"the aarch64 fatpte-run {path} does not exist"
    elif not path:
        return None, "no x86_64 fatpte-run to emulate (an x86_64 machine's own)"
    emulator = qemu if qemu is not None else shutil.which(QEMU_BINARY[arch])
    if not emulator:
        return None, f"no {QEMU_BINARY[arch]} on PATH (Debian's qemu-user) to emulate an {arch} CPU"
    model = model if model is not None else qemu_model(requires, arch)
    if model is None:
        return None, f"no qemu CPU model has every feature it requires ({', '.join(requires.cpu_features)})"
    if arch == "x86_64":
        return Runtime((emulator, "-cpu", model, path), arch, model), ""
    sysroot = os.environ.get(SYSROOT_ENV, DEFAULT_SYSROOT)
    return Runtime((emulator, "-L", sysroot, "-cpu", model, path), arch, model), ""


def fits(entry: Entry, requires: Requirements, backends: Sequence[str] | None, device: DeviceProfile) -> str:
    """"" when `entry` is eligible on `device`, else every requirement it fails, as selection says."""
    failures, _ = evaluate(entry, requires, device)
    more, _ = runtime_check(backends, device)
    return "; ".join(f.text() for f in [*failures, *more])


@dataclass(frozen=True, slots=True)
class Placement:
    """Where an entry runs: a runner, or None and why no runner here can run it."""

    runtime: Runtime | None
    reason: str


_DEVICES: dict[Runtime, DeviceProfile] = {}


def device_of(runtime: Runtime) -> DeviceProfile:
    """The device `runtime` sees (its probe; under qemu, the emulated CPU), with the ExecuTorch
    backends its runtime provides: asked once per runner."""
    if runtime not in _DEVICES:
        _DEVICES[runtime] = DeviceProfile.from_json(runtime.device_json(), source=runtime.describe())
    return _DEVICES[runtime]


def placement(entry: Entry, record: Any, *, runtime: str | None = None,
              aarch64_runtime: str | None = None, qemu: str | None = None) -> Placement:
    """The runner for `entry` (its manifest record `record`, or None): this machine's when the
    entry is eligible on the device it sees; for an aarch64 entry on another machine, an emulated
    one with the CPU model its requirements name; for an x86_64 entry whose CPU features this
    x86_64 machine lacks, this machine's fatpte-run under qemu-x86_64 with the weakest model that
    has them (none for AVX-512: natively only); else none, with every requirement that fails (or
    why no runner is there)."""
    requires = Requirements() if record is None else record.requires
    backends = None if record is None else record.executorch_backends
    native = native_runtime(runtime)
    if native is None:
        return Placement(None, "no fatpte-run to run it (set $FATPTE_RUN, `fatpte --runtime PATH`, or put "
                               "fatpte-run on PATH, or install fatpte's platform wheel)")
    why = fits(entry, requires, backends, device_of(native))
    if not why:
        return Placement(native, "")
    if "aarch64" in requires.arch and native.arch != "aarch64":
        return _emulated(entry, requires, backends, why, emulated_runtime(requires, aarch64_runtime, qemu))
    lacking = set(requires.cpu_features) - device_of(native).cpu_features
    if native.arch == "x86_64" and "x86_64" in requires.arch and lacking:
        avx512 = native_only(requires)
        if avx512:
            return Placement(None, f"{why} (qemu 7.2 emulates no AVX-512 ({', '.join(avx512)}): such an entry "
                                   "is checked natively only, on a host that has it)")
        return _emulated(entry, requires, backends, why,
                         emulated_runtime(requires, native.command[-1], arch="x86_64"))
    return Placement(None, why)


def _emulated(entry: Entry, requires: Requirements, backends: Sequence[str] | None, why: str,
              emulated: tuple[Runtime | None, str]) -> Placement:
    """The emulated runner `emulated` when the entry is eligible on the CPU it emulates."""
    runtime, missing = emulated
    if runtime is None:
        return Placement(None, f"{why} (and {missing})")
    why_there = fits(entry, requires, backends, device_of(runtime))
    if not why_there:
        return Placement(runtime, "")
    return Placement(None, f"under {runtime.describe()}: {why_there}")
