"""What the running machine is, for `DeviceProfile.host()`: name its OS and CPU architecture in the
profile vocabulary and ask the probe for that platform (probe_linux, probe_macos) and the CUDA
probe (probe_cuda), and the devices of each vendor runtime found (fatpte.device.vendor_runtimes; OpenVINO's
by probe_openvino). `probe` returns the facts; fatpte.device.profile builds the profile from them.

Everything the probes cannot read becomes "absent" (no feature, memory 0, no accelerator): a
profile that says too little only makes selection more conservative, while one that says too
much would load a binary that crashes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Final, NamedTuple

from fatpte.device import probe_cuda, probe_identity, probe_linux, probe_openvino
from fatpte.device.accelerator import Accelerator
from fatpte.device.vendor_runtimes import VENDOR_RUNTIMES, Located, VendorRuntime, locate
from fatpte.errors import ErrorCode, FatpteError
from fatpte.format.vocabulary import ARCHES

# platform.machine() spellings -> the vocabulary. armv7l/armv8l (32-bit userlands) and others
# are deliberately absent: no specialization in the vocabulary runs there.
ARCH_ALIASES: Final = {"x86_64": "x86_64", "amd64": "x86_64", "x64": "x86_64",
                       "aarch64": "aarch64", "arm64": "aarch64"}
# platform.system() -> the vocabulary (Android and iOS Pythons report their own names since 3.13).
SYSTEM_ALIASES: Final = {"Linux": "linux", "Android": "android", "Darwin": "macos", "iOS": "ios",
                         "iPadOS": "ios", "Windows": "windows"}


def normalize_arch(machine: str) -> str | None:
    return ARCH_ALIASES.get(machine.lower())


def normalize_os(system: str) -> str | None:
    return SYSTEM_ALIASES.get(system)


def machine_and_system() -> tuple[str, str]:
    """platform.machine() and platform.system(): on POSIX both come from uname(2), so the
    `platform` module (~3 ms of `fatpte select --device host`) is imported only elsewhere."""
    if hasattr(os, "uname"):
        uname = os.uname()
        return uname.machine, uname.sysname
    import platform

    return platform.machine(), platform.system()


class HostFacts(NamedTuple):
    """What the probes found; anything unreadable is absent (no feature, memory 0)."""

    os: str
    arch: str
    cpu_features: frozenset[str]
    accelerators: tuple[Accelerator, ...]
    memory_bytes: int
    identity: probe_identity.Identity = probe_identity.Identity()
    kernel: str | None = None


# Each vendor runtime's probe of its devices, by the runtime's name (its row in VENDOR_RUNTIMES).
VENDOR_PROBES: Final = {"openvino": probe_openvino.probe}


def probe(vendor_runtimes: Mapping[str, str] | None = None, *, vendor: bool = True) -> HostFacts:
    """What this machine offers, in the profile vocabulary; `vendor_runtimes` are the caller's
    paths of vendor runtimes by name ("" withholds one); without `vendor`, no vendor runtime is
    looked for (its devices are not listed)."""
    machine, system = machine_and_system()
    arch = normalize_arch(machine)
    os_name = normalize_os(system)
    if arch is None or os_name is None:
        what = (f"CPU architecture {machine!r} is not one of {', '.join(ARCHES)}" if arch is None
                else f"operating system {system!r} ({sys.platform}) is not one fatpte can probe")
        raise FatpteError(ErrorCode.INVALID_ARGUMENT,
                          f"cannot describe this machine as a device profile: its {what}; NFAT device "
                          "profiles cover linux, android, macos, ios and windows on x86_64 and aarch64",
                          field="host", actual=machine if arch is None else system)
    features: frozenset[str] = frozenset()
    memory = 0
    accelerators: tuple[Accelerator, ...] = ()
    identity = probe_identity.Identity()
    if os_name in ("linux", "android"):
        cpuinfo = probe_linux.read_cpuinfo()
        probed_os, features, memory = probe_linux.probe(arch, cpuinfo=cpuinfo)
        identity = probe_identity.identity(arch, cpuinfo=cpuinfo or "")
        # Python on Termux reports "Linux"; the Android userland is told apart by its files.
        os_name = "android" if os_name == "android" else probed_os
    elif os_name in ("macos", "ios"):
        from fatpte.device import probe_macos

        features, memory, accelerators = probe_macos.probe(arch)
    # windows: CPU features and memory are not probed (no cpuinfo or sysctl there); the profile
    # says none, which selects only entries that need none.
    accelerators += probe_cuda.probe()
    if vendor:
        accelerators += vendor_accelerators(vendor_runtimes)
    return HostFacts(os=os_name, arch=arch, cpu_features=features, accelerators=accelerators,
                     memory_bytes=memory, identity=identity, kernel=probe_identity.kernel_release())


def vendor_accelerators(vendor_runtimes: Mapping[str, str] | None = None) -> tuple[Accelerator, ...]:
    """The devices each vendor runtime found lists, in its order (specs/device-profile.md 9.1)."""
    found: list[Accelerator] = []
    for runtime, where in located_runtimes(vendor_runtimes):
        if not where.path:
            continue
        devices, _why = VENDOR_PROBES[runtime.name](where.path)
        found.extend(Accelerator(kind=runtime.name, name=d.name, version=d.version, memory_bytes=d.memory_bytes,
                                 device=d.device, capabilities=d.capabilities)
                     for d in devices)
    return tuple(found)


def located_runtimes(vendor_runtimes: Mapping[str, str] | None = None) -> list[tuple[VendorRuntime, Located]]:
    """Each vendor runtime of the table and where it was found (or every place looked)."""
    return [(r, locate(r, vendor_runtimes)) for r in VENDOR_RUNTIMES]
