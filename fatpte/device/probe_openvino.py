"""Probe OpenVINO's devices through its C runtime (libopenvino_c), the library
fatpte.device.vendor_runtimes found, opened with ctypes: the same file and the same calls as the
C++ probe (loader/src/vendor/openvino.cpp), so `fatpte device` and `fatpte-run --device-json`
list the same devices byte for byte. Not the `openvino` package's Python `Core`: the library found
may not be that package's (OPENVINO_LIB_PATH, a system install, the caller's path), and importing
the bindings costs more than the calls themselves.

ov_get_openvino_version, ov_core_create, ov_core_get_available_devices, then per device
ov_core_get_property for FULL_DEVICE_NAME, OPTIMIZATION_CAPABILITIES and, for a GPU,
GPU_DEVICE_TOTAL_MEM_SIZE; everything freed. A runtime that cannot be loaded or does not answer
lists no device, with the reason; probing never raises. `devices(api)` takes the loaded library,
so tests pass a fake with the same functions.
"""

from __future__ import annotations

import ctypes
import re
from typing import Any, Final, NamedTuple

from fatpte.device.vendor_runtimes import printable_name
from fatpte.format.vocabulary import CAPABILITY_PATTERN, MAX_CAPABILITIES

OV_STATUS_OK: Final = 0
MAX_DEVICES: Final = 64  # the profile's accelerator limit
MAX_PROPERTY_BYTES: Final = 4096  # a property's text is read no further
DEVICE_PATTERN: Final = re.compile(r"[A-Za-z0-9_.-]{1,64}")
CAPABILITY: Final = re.compile(CAPABILITY_PATTERN)
VERSION_PATTERN: Final = re.compile(r"(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})(?![0-9])")


class VendorDevice(NamedTuple):
    device: str  # as OpenVINO lists it: "CPU", "GPU.0", "NPU"
    name: str  # FULL_DEVICE_NAME, printable
    version: str  # the runtime's MAJOR.MINOR.PATCH
    memory_bytes: int  # a GPU's GPU_DEVICE_TOTAL_MEM_SIZE; else 0
    capabilities: tuple[str, ...]  # lower-cased, sorted, each once


class _Version(ctypes.Structure):
    _fields_ = [("buildNumber", ctypes.c_char_p), ("description", ctypes.c_char_p)]


class _Devices(ctypes.Structure):
    _fields_ = [("devices", ctypes.POINTER(ctypes.c_char_p)), ("size", ctypes.c_size_t)]


def load(path: str) -> tuple[Any | None, str]:
    """The library at `path` with its signatures set, or None and why."""
    try:
        lib = ctypes.CDLL(path)
        lib.ov_core_get_property.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                             ctypes.POINTER(ctypes.c_void_p)]
        lib.ov_free.argtypes = [ctypes.c_void_p]
        lib.ov_core_get_available_devices.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Devices)]
        lib.ov_core_free.argtypes = [ctypes.c_void_p]
        for name in ("ov_get_openvino_version", "ov_version_free", "ov_core_create", "ov_available_devices_free"):
            getattr(lib, name)
    except OSError as exc:
        return None, f"cannot load it: {exc}"
    except AttributeError:
        return None, "it lacks an entry point of OpenVINO's C API"
    return lib, ""


def probe(path: str) -> tuple[tuple[VendorDevice, ...], str]:
    """The devices the runtime at `path` lists, in its order; () and why when there are none."""
    lib, why = load(path)
    if lib is None:
        return (), why
    try:
        return devices(lib)
    except Exception:  # noqa: BLE001 - a foreign library: any failure means no usable device
        return (), "it did not answer"


def devices(api: Any) -> tuple[tuple[VendorDevice, ...], str]:
    ver = _Version()
    if api.ov_get_openvino_version(ctypes.byref(ver)) != OV_STATUS_OK:
        return (), "ov_get_openvino_version failed"
    version = openvino_version(ver.buildNumber or b"")
    api.ov_version_free(ctypes.byref(ver))
    if not version:
        return (), "its version is not MAJOR.MINOR.PATCH"
    core = ctypes.c_void_p()
    if api.ov_core_create(ctypes.byref(core)) != OV_STATUS_OK or not core.value:
        return (), "ov_core_create failed"
    found: list[VendorDevice] = []
    why = ""
    try:
        listed = _Devices()
        if api.ov_core_get_available_devices(core, ctypes.byref(listed)) != OV_STATUS_OK:
            return (), "ov_core_get_available_devices failed"
        try:
            for i in range(listed.size if listed.devices else 0):
                if len(found) >= MAX_DEVICES:
                    break
                device = _one_device(api, core, listed.devices[i], i, version)
                if device is not None:
                    found.append(device)
        finally:
            if listed.devices:
                api.ov_available_devices_free(ctypes.byref(listed))
        why = "" if found else "it lists no device"
    finally:
        api.ov_core_free(core)
    return tuple(found), why


def openvino_version(build_number: bytes) -> str:
    """"2026.4.0" from "2026.4.0-22959-99c81491cc3-releases/2026/4"; "" otherwise."""
    match = VERSION_PATTERN.match(build_number[:256].decode("ascii", errors="replace"))
    return ".".join(match.groups()) if match else ""


def capabilities(listed: str) -> tuple[str, ...]:
    """OPTIMIZATION_CAPABILITIES ("BF16 FP32 INT8 EXPORT_IMPORT") as the profile's words: each
    lower-cased, words outside [a-z0-9_]{1,32} left out, sorted, each once, at most 32."""
    words = {w.lower() for w in listed.split(" ") if w}
    kept = sorted((w for w in words if CAPABILITY.fullmatch(w)), key=lambda w: w.encode())
    return tuple(kept[:MAX_CAPABILITIES])


def _property(api: Any, core: ctypes.c_void_p, device: bytes, key: bytes) -> bytes | None:
    value = ctypes.c_void_p()
    if api.ov_core_get_property(core, device, key, ctypes.byref(value)) != OV_STATUS_OK or not value.value:
        return None
    try:
        raw = ctypes.string_at(value.value, _strnlen(value.value, MAX_PROPERTY_BYTES))
    finally:
        api.ov_free(value)
    return raw


def _strnlen(address: int, limit: int) -> int:
    chunk = ctypes.string_at(address, 1)
    n = 0
    while n < limit and chunk != b"\0":
        n += 1
        chunk = ctypes.string_at(address + n, 1) if n < limit else b"\0"
    return n


def _one_device(api: Any, core: ctypes.c_void_p, listed: bytes | None, place: int,
                version: str) -> VendorDevice | None:
    if listed is None:
        return None
    device = listed[:65].decode("ascii", errors="replace")
    if not DEVICE_PATTERN.fullmatch(device):
        return None
    full = _property(api, core, listed, b"FULL_DEVICE_NAME")
    if full is None:
        return None
    caps = _property(api, core, listed, b"OPTIMIZATION_CAPABILITIES")
    memory = 0
    if device == "GPU" or device.startswith("GPU."):
        raw = _property(api, core, listed, b"GPU_DEVICE_TOTAL_MEM_SIZE")
        memory = _decimal(raw or b"")
    return VendorDevice(device=device, name=printable_name(full, f"OpenVINO device {place}"), version=version, memory_bytes=memory,
                        capabilities=capabilities(caps.decode("latin-1")) if caps is not None else ())


def _decimal(raw: bytes) -> int:
    if not raw or len(raw) > 19 or not all(0x30 <= b <= 0x39 for b in raw):
        return 0
    value = int(raw)
    return value if value < 1 << 63 else 0
