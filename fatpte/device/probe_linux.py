"""Probe a Linux (or Android) host: CPU features from the kernel, total memory, Android or not.

Each parser takes the text or numbers it reads, so tests feed recorded samples; only `probe`
touches the machine. The kernel's names are the vocabulary's names for every word fatpte uses
(x86 `flags`, arm64 `Features`), so parsing is an intersection with the vocabulary, not a
translation table.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Mapping
from typing import Final

from fatpte.format.vocabulary import ARM_FEATURES, X86_FEATURES

# The /proc/cpuinfo key that lists the CPU features the kernel enabled, per architecture.
CPUINFO_KEY: Final = {"x86_64": "flags", "aarch64": "Features"}

# arm64 ELF hwcaps (arch/arm64/include/uapi/asm/hwcap.h), for when /proc/cpuinfo is unreadable
# (some Android sandboxes): feature -> (auxv entry, bit).
AT_HWCAP: Final = 16
AT_HWCAP2: Final = 26
ARM_HWCAP_BITS: Final = {
    "asimd": (AT_HWCAP, 1),
    "fphp": (AT_HWCAP, 9),
    "asimdhp": (AT_HWCAP, 10),
    "asimddp": (AT_HWCAP, 20),
    "sve": (AT_HWCAP, 22),
    "sve2": (AT_HWCAP2, 1),
    "i8mm": (AT_HWCAP2, 13),
    "bf16": (AT_HWCAP2, 14),
    "sme": (AT_HWCAP2, 23),
}


def cpuinfo_features(cpuinfo: str, arch: str) -> frozenset[str] | None:
    """The vocabulary's features that every processor in `cpuinfo` lists; None when the text has
    no feature line for `arch` (an unreadable or unusual /proc/cpuinfo)."""
    key = CPUINFO_KEY[arch]
    vocabulary = frozenset(X86_FEATURES if arch == "x86_64" else ARM_FEATURES)
    common: frozenset[str] | None = None
    for line in cpuinfo.splitlines():
        name, sep, value = line.partition(":")
        if not sep or name.strip() != key:
            continue
        words = vocabulary.intersection(value.split())
        # Intersect over processors: a feature only some cores have (a heterogeneous part)
        # cannot be relied on by a thread the scheduler may move.
        common = words if common is None else common & words
    return common


def hwcap_features(hwcap: int, hwcap2: int) -> frozenset[str]:
    """arm64 features from the AT_HWCAP and AT_HWCAP2 auxiliary-vector words."""
    words = {AT_HWCAP: hwcap, AT_HWCAP2: hwcap2}
    return frozenset(f for f, (entry, bit) in ARM_HWCAP_BITS.items() if words[entry] >> bit & 1)


def meminfo_total(meminfo: str) -> int | None:
    """MemTotal from /proc/meminfo text, in bytes; None when absent or malformed."""
    for line in meminfo.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() == "MemTotal":
            parts = value.split()
            if len(parts) == 2 and parts[0].isdigit() and parts[1] == "kB":
                return int(parts[0]) * 1024
            return None
    return None


def is_android(root: str | os.PathLike[str], environ: Mapping[str, str]) -> bool:
    """Android runs a Linux kernel; its userland is told by /system/build.prop or ANDROID_ROOT."""
    return "ANDROID_ROOT" in environ or os.path.isfile(os.path.join(root, "system", "build.prop"))


def read_hwcaps() -> tuple[int, int] | None:
    """getauxval(AT_HWCAP), getauxval(AT_HWCAP2) from the C library; None when unavailable."""
    try:
        libc = ctypes.CDLL(None)
        getauxval = libc.getauxval
    except (OSError, AttributeError):
        return None
    getauxval.restype = ctypes.c_ulong
    getauxval.argtypes = [ctypes.c_ulong]
    return int(getauxval(AT_HWCAP)), int(getauxval(AT_HWCAP2))


def _read_text(path: str) -> str | None:
    try:
        # /proc files report size 0; a bounded read keeps a strange file from costing much.
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read(4 << 20)
    except OSError:
        return None


def _sysconf_memory() -> int | None:
    with contextlib.suppress(ValueError, OSError, AttributeError):
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        if pages > 0 and size > 0:
            return pages * size
    return None


# `root` is joined with os.path, not pathlib: the probe runs on `fatpte select`'s start-up path,
# where `import pathlib` would cost ~9 ms.
def read_cpuinfo(root: str | os.PathLike[str] = "/") -> str | None:
    """/proc/cpuinfo's text (bounded), None when unreadable: read once, for the features and the
    cores (fatpte.device.probe_identity); the kernel makes it anew at each read."""
    return _read_text(os.path.join(root, "proc", "cpuinfo"))


def probe(arch: str, *, root: str | os.PathLike[str] = "/", environ: Mapping[str, str] = os.environ,
          hwcaps: tuple[int, int] | None = None, cpuinfo: str | None = None) -> tuple[str, frozenset[str], int]:
    """(os, cpu_features, memory_bytes) of a Linux host; `root` and `hwcaps` are for tests,
    `cpuinfo` the text of read_cpuinfo when the caller has it.

    Never raises for a missing or odd /proc: features fall back to the hwcaps (arm64) or to none,
    which only makes selection more conservative; memory falls back to sysconf, then 0 (unknown)."""
    if cpuinfo is None:
        cpuinfo = read_cpuinfo(root)
    features = None if cpuinfo is None else cpuinfo_features(cpuinfo, arch)
    if features is None and arch == "aarch64":
        caps = hwcaps if hwcaps is not None else read_hwcaps()
        features = None if caps is None else hwcap_features(*caps)
    meminfo = _read_text(os.path.join(root, "proc", "meminfo"))
    memory = None if meminfo is None else meminfo_total(meminfo)
    if memory is None:
        memory = _sysconf_memory() if os.path.realpath(root) == "/" else None
    os_name = "android" if is_android(root, environ) else "linux"
    return os_name, features or frozenset(), memory or 0
