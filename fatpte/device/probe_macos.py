"""Probe a macOS (or iOS) host through sysctl: CPU features (hw.optional.*), memory (hw.memsize),
and the Metal GPU that every Apple-silicon Mac has.

The parsers take a `read` function (sysctl name -> int, str or None), so tests feed a recorded
table; only `sysctl` touches the machine, through libc's sysctlbyname via ctypes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable
from typing import Final

from fatpte.device.accelerator import Accelerator

Read = Callable[[str], "int | str | None"]

# Each vocabulary feature and the sysctls that report it, any one of which suffices: Apple
# renamed the arm64 keys (hw.optional.neon_fp16 -> hw.optional.arm.FEAT_FP16) in macOS 12.
ARM_SYSCTLS: Final = {
    "asimd": ("hw.optional.AdvSIMD", "hw.optional.neon"),
    "fphp": ("hw.optional.arm.FEAT_FP16", "hw.optional.neon_fp16"),
    "asimdhp": ("hw.optional.arm.FEAT_FP16", "hw.optional.neon_fp16"),
    "asimddp": ("hw.optional.arm.FEAT_DotProd",),
    "i8mm": ("hw.optional.arm.FEAT_I8MM",),
    "bf16": ("hw.optional.arm.FEAT_BF16",),
    "sme": ("hw.optional.arm.FEAT_SME",),
}
X86_SYSCTLS: Final = {
    "sse4_2": ("hw.optional.sse4_2",),
    "avx": ("hw.optional.avx1_0",),
    "avx2": ("hw.optional.avx2_0",),
    "fma": ("hw.optional.fma",),
    "f16c": ("hw.optional.f16c",),
    "avx512f": ("hw.optional.avx512f",),
    "avx512bw": ("hw.optional.avx512bw",),
    "avx512vl": ("hw.optional.avx512vl",),
}
# Features with no hw.optional key, read from the CPUID leaf-7 word list the kernel prints.
X86_LEAF7_WORDS: Final = {"avx512_vnni": "AVX512VNNI", "avx512_bf16": "AVX512BF16",
                          "avx512_fp16": "AVX512FP16", "amx_tile": "AMX-TILE", "amx_int8": "AMX-INT8",
                          "amx_bf16": "AMX-BF16"}

# The Metal Shading Language version each macOS release provides; every Apple-silicon GPU
# supports the newest language of the OS it runs (M1 and later are Metal 3 GPUs).
METAL_VERSION_BY_MACOS: Final = {11: "2.3", 12: "2.4", 13: "3.0", 14: "3.1", 15: "3.2", 26: "4.0"}


def cpu_features(arch: str, read: Read) -> frozenset[str]:
    table = X86_SYSCTLS if arch == "x86_64" else ARM_SYSCTLS
    found = {f for f, names in table.items() if any(_flag(read, n) for n in names)}
    if arch == "x86_64":
        leaf7 = read("machdep.cpu.leaf7_features")
        words = set(leaf7.upper().split()) if isinstance(leaf7, str) else set()
        found |= {f for f, word in X86_LEAF7_WORDS.items() if word in words}
    return frozenset(found)


def memory_bytes(read: Read) -> int:
    value = read("hw.memsize")
    return value if isinstance(value, int) and value > 0 else 0


def metal(arch: str, read: Read) -> tuple[Accelerator, ...]:
    """The Apple-silicon GPU; () on Intel Macs, whose GPUs vary and are not probed."""
    if arch != "aarch64":
        return ()
    release = read("kern.osproductversion")
    try:
        major = int(str(release).split(".")[0])
    except ValueError:
        return ()
    known = [v for m, v in sorted(METAL_VERSION_BY_MACOS.items()) if m <= major]
    if not known:
        return ()
    brand = read("machdep.cpu.brand_string")  # "Apple M1": the GPU is part of that chip
    text = brand if isinstance(brand, str) else ""
    name = "".join(c for c in text if " " <= c <= "~").strip()[:256] or "Apple GPU"
    # Apple-silicon memory is unified: the GPU addresses the same RAM as the CPU.
    return (Accelerator(kind="metal", name=name, version=known[-1], memory_bytes=memory_bytes(read)),)


def _flag(read: Read, name: str) -> bool:
    value = read(name)
    return isinstance(value, int) and value != 0


# The sysctls read as text; every other one read here is an integer. sysctlbyname returns bytes
# without a type, so the caller has to know which.
STRING_SYSCTLS: Final = frozenset({"machdep.cpu.leaf7_features", "machdep.cpu.brand_string",
                                   "kern.osproductversion"})


def sysctl(name: str) -> int | str | None:
    """One sysctl value (text for STRING_SYSCTLS, else an integer), or None when it does not exist."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        sysctlbyname = libc.sysctlbyname
    except (OSError, AttributeError):
        return None
    size = ctypes.c_size_t(0)
    key = name.encode("ascii")
    if sysctlbyname(key, None, ctypes.byref(size), None, ctypes.c_size_t(0)) != 0 or not 0 < size.value <= 4096:
        return None
    buffer = ctypes.create_string_buffer(size.value)
    if sysctlbyname(key, buffer, ctypes.byref(size), None, ctypes.c_size_t(0)) != 0:
        return None
    raw = buffer.raw[: size.value]
    if name in STRING_SYSCTLS:
        return raw.split(b"\0", 1)[0].decode("utf-8", errors="replace")
    if size.value not in (4, 8):
        return None
    return int.from_bytes(raw, sys.byteorder, signed=False)


def probe(arch: str, read: Read = sysctl) -> tuple[frozenset[str], int, tuple[Accelerator, ...]]:
    """(cpu_features, memory_bytes, accelerators) of a macOS host."""
    return cpu_features(arch, read), memory_bytes(read), metal(arch, read)
