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


def qemu_model(requires: Requirements) -> str | None:
    """The weakest qemu CPU model with every ARM feature `requires` states (None: none has them)."""
    needed = set(requires.cpu_features)
    return next((model for model, features in QEMU_AARCH64_MODELS if needed <= features), None)


def emulated_runtime(requires: Requirements, path: str | None = None,
                     qemu: str | None = None) -> tuple[Runtime | None, str]:
    """A runner for an aarch64 entry on this non-aarch64 machine, or None and why there is none."""
    path = path if path is not None else (os.environ.get(AARCH64_RUNTIME_ENV) or cached_runtime("aarch64"))
    if not path:
        return None, (f"no aarch64 fatpte-run to emulate (set {AARCH64_RUNTIME_ENV}, `fatpte check "
                      "--aarch64-runtime PATH`, or `fatpte runtime unpack` fatpte's aarch64 wheel)")
    if not os.path.isfile(path):
        return None, f"the aarch64 fatpte-run {path} does not exist"
    emulator = qemu if qemu is not None else shutil.which("qemu-aarch64")
    if not emulator:
        return None, "no qemu-aarch64 on PATH (Debian's qemu-user) to emulate an aarch64 CPU"
    model = qemu_model(requires)
    if model is None:
        return None, f"no qemu CPU model has every feature it requires ({', '.join(requires.cpu_features)})"
    sysroot = os.environ.get(SYSROOT_ENV, DEFAULT_SYSROOT)
    return Runtime((emulator, "-L", sysroot, "-cpu", model, path), "aarch64", model), ""


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
    one with the CPU model its requirements name; else none, with every requirement that fails
    (or why no runner is there)."""
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
        emulated, missing = emulated_runtime(requires, aarch64_runtime, qemu)
        if emulated is None:
            return Placement(None, f"{why} (and {missing})")
        why_there = fits(entry, requires, backends, device_of(emulated))
        if not why_there:
            return Placement(emulated, "")
        return Placement(None, f"under {emulated.describe()}: {why_there}")
    return Placement(None, why)
