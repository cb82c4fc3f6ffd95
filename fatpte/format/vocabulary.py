"""The words device profiles and manifest requirements share (specs/device-profile.md,
"Vocabulary"): operating systems, CPU architectures, CPU features per architecture, accelerator
kinds. specs/device_profile.schema.json and the C++ loader use the same words; tests keep them in
step. Standard library only, so probing a bare machine needs nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, NamedTuple

OS_NAMES: Final = ("linux", "android", "macos", "ios", "windows")
ARCHES: Final = ("x86_64", "aarch64")
X86_FEATURES: Final = (
    "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
    "avx512_bf16", "avx512_fp16", "amx_tile", "amx_int8", "amx_bf16",
)  # fmt: skip
ARM_FEATURES: Final = ("asimd", "fphp", "asimdhp", "asimddp", "i8mm", "bf16", "sve", "sve2", "sme")
# The features each architecture may list: a word of the other architecture is a mistake, not a
# feature the device lacks, so a profile that mixes them is rejected.
CPU_FEATURES: Final[Mapping[str, frozenset[str]]] = MappingProxyType(
    {"x86_64": frozenset(X86_FEATURES), "aarch64": frozenset(ARM_FEATURES)}
)
# `openvino`: a device OpenVINO's runtime lists (CPU, GPU.0, NPU), with its `device` and
# `capabilities` (specs/device-profile.md 4.1).
ACCELERATOR_KINDS: Final = ("cuda", "metal", "vulkan", "opencl", "npu", "openvino")
# A vendor runtime's name of one of its devices, as it lists them (OpenVINO's "CPU", "GPU.0", "NPU"),
# and the capabilities it reports of it, lower-cased (OpenVINO's OPTIMIZATION_CAPABILITIES: "fp16",
# "int8", "export_import"); specs/device-profile.md 4.1. A requirement's `device` and
# `capabilities` are written with the same patterns (a reader takes any string).
DEVICE_NAME_PATTERN: Final = r"[A-Za-z0-9_.-]{1,64}"
CAPABILITY_PATTERN: Final = r"[a-z0-9_]{1,32}"
MAX_CAPABILITIES: Final = 32


class Core(NamedTuple):
    """A CPU core design a profile's `cpu_cores` and a requirement's `cpu_cores` and `min_core`
    name: its word (GCC's `-mcpu`/`-march` name), its architecture, its generation (the order of
    `min_core`, specs/device-profile.md section 3.6) and the ids the probe reads for it (aarch64:
    MIDR `implementer:part`; x86_64: `vendor:family:model` of /proc/cpuinfo)."""

    name: str
    arch: str
    generation: int
    ids: tuple[str, ...]


def _arm(name: str, generation: int, *parts: str) -> Core:
    return Core(name, "aarch64", generation, tuple(p if ":" in p else f"0x41:{p}" for p in parts))


def _x86(name: str, generation: int, vendor: str, family: int, *models: int) -> Core:
    return Core(name, "x86_64", generation, tuple(f"{vendor}:{family}:{m}" for m in models))


# The generation's tens digit is the instruction-set level (aarch64: 1 Armv8.0, 2 Armv8.2, 3 Armv8.4,
# 4 Armv9.0, 5 Armv9.2; x86_64: 1 x86-64-v2, 2 v3, 3 v4), its units the design's place within it.
# Ids from Arm's Technical Reference Manuals (MIDR_EL1), Fujitsu's A64FX datasheet, Qualcomm's
# Kryo parts as Linux's arch/arm64/include/asm/cputype.h names them, Intel's SDM volume 4 and AMD's
# Processor Programming References (family and model as /proc/cpuinfo prints them, in decimal).
CORES: Final = (
    _arm("cortex-a53", 10, "0xd03"), _arm("cortex-a57", 11, "0xd07"), _arm("cortex-a72", 12, "0xd08"),
    _arm("cortex-a73", 13, "0xd09"),
    _arm("cortex-a55", 20, "0xd05", "0x51:0x803", "0x51:0x805"), _arm("cortex-a75", 21, "0xd0a", "0x51:0x802"),
    _arm("cortex-a76", 22, "0xd0b", "0x51:0x804"), _arm("neoverse-n1", 22, "0xd0c"),
    _arm("cortex-a77", 23, "0xd0d"), _arm("cortex-a78", 24, "0xd41"), _arm("cortex-a78ae", 24, "0xd42"),
    _arm("cortex-a78c", 24, "0xd4b"), _arm("cortex-x1", 25, "0xd44"), _arm("cortex-x1c", 25, "0xd4c"),
    _arm("a64fx", 26, "0x46:0x001"),
    _arm("neoverse-v1", 30, "0xd40"),
    _arm("cortex-a510", 40, "0xd46"), _arm("cortex-a710", 41, "0xd47"), _arm("neoverse-n2", 41, "0xd49"),
    _arm("cortex-x2", 42, "0xd48"), _arm("cortex-a715", 43, "0xd4d"), _arm("cortex-x3", 44, "0xd4e"),
    _arm("neoverse-v2", 44, "0xd4f"),
    _arm("cortex-a520", 50, "0xd80"), _arm("cortex-a720", 51, "0xd81"), _arm("cortex-x4", 52, "0xd82"),
    _x86("nehalem", 10, "GenuineIntel", 6, 26, 30, 31, 46), _x86("westmere", 11, "GenuineIntel", 6, 37, 44, 47),
    _x86("sandybridge", 12, "GenuineIntel", 6, 42, 45), _x86("ivybridge", 13, "GenuineIntel", 6, 58, 62),
    _x86("haswell", 20, "GenuineIntel", 6, 60, 63, 69, 70), _x86("znver1", 20, "AuthenticAMD", 23, 1, 8, 17, 24),
    _x86("broadwell", 21, "GenuineIntel", 6, 61, 71, 79, 86), _x86("skylake", 22, "GenuineIntel", 6, 78, 94, 142, 158),
    _x86("znver2", 23, "AuthenticAMD", 23, 49, 96, 113), _x86("znver3", 24, "AuthenticAMD", 25, 1, 33, 80),
    _x86("skylake-avx512", 30, "GenuineIntel", 6, 85), _x86("icelake-server", 31, "GenuineIntel", 6, 106, 108),
    _x86("sapphirerapids", 32, "GenuineIntel", 6, 143), _x86("emeraldrapids", 33, "GenuineIntel", 6, 207),
    _x86("znver4", 34, "AuthenticAMD", 25, 17, 97, 116, 160),
)  # fmt: skip
CORE_BY_NAME: Final[Mapping[str, Core]] = MappingProxyType({c.name: c for c in CORES})
CORE_BY_ID: Final[Mapping[str, Core]] = MappingProxyType({i: c for c in CORES for i in c.ids})
# A core the table does not name is written by its id: aarch64 `0xII:0xPPP` (MIDR implementer and
# part, lowercase hex), x86_64 `VENDOR:FAMILY:MODEL` (vendor_id, decimal family and model).
CORE_ID_PATTERNS: Final[Mapping[str, str]] = MappingProxyType({
    "aarch64": r"0x[0-9a-f]{2}:0x[0-9a-f]{3}",
    "x86_64": r"[A-Za-z0-9]{1,16}:(?:0|[1-9][0-9]{0,5}):(?:0|[1-9][0-9]{0,5})",
})


def is_core_word(word: str, arch: str) -> bool:
    """Whether a profile of `arch` may list `word` in its `cpu_cores` (specs/device-profile.md
    2.1): a table name of that architecture, or the id of a core of its form that the table does
    not name (an id the table names is written by its name)."""
    import re  # compiled on first use: probing a bare machine reads no core word

    core = CORE_BY_NAME.get(word)
    if core is not None:
        return core.arch == arch
    return word not in CORE_BY_ID and re.fullmatch(CORE_ID_PATTERNS[arch], word) is not None


def meets_min_core(word: str, floor: str) -> bool:
    """Whether the core `word` meets `min_core` `floor` (specs/device-profile.md 3.6): a core of the
    table, of the floor's architecture, its generation at least the floor's."""
    core, least = CORE_BY_NAME.get(word), CORE_BY_NAME.get(floor)
    return core is not None and least is not None and core.arch == least.arch and core.generation >= least.generation
