"""The words device profiles and manifest requirements share (specs/device-profile.md,
"Vocabulary"): operating systems, CPU architectures, CPU features per architecture, accelerator
kinds. specs/device_profile.schema.json and the C++ loader use the same words; tests keep them in
step. Standard library only, so probing a bare machine needs nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

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
