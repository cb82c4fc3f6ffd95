"""Probe CUDA GPUs through the driver library alone (libcuda.so.1 / nvcuda.dll), loaded at run
time with ctypes: no CUDA toolkit, no Python CUDA package.

The driver API's compute-capability query is the fact selection needs (a binary built for sm_XY
runs on X.Z with Z >= Y). Absent library, no GPU, an old driver, or any failure means "no CUDA
device": probing never raises. `accelerators(driver)` takes the loaded library, so tests pass a
fake driver object with the same functions.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any, Final

from fatpte.device.accelerator import Accelerator
from fatpte.device.vendor_runtimes import printable_name

CUDA_SUCCESS: Final = 0
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: Final = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: Final = 76
NAME_BUFFER_SIZE: Final = 256
MAX_DEVICES: Final = 64  # the profile's accelerator limit; a driver reporting more is broken

LIBRARY_NAMES: Final = {"win32": ("nvcuda.dll",)}
DEFAULT_LIBRARY_NAMES: Final = ("libcuda.so.1",)


def load_driver() -> Any | None:
    """The CUDA driver library, or None when this machine has none."""
    for name in LIBRARY_NAMES.get(sys.platform, DEFAULT_LIBRARY_NAMES):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def accelerators(driver: Any) -> tuple[Accelerator, ...]:
    """One Accelerator per CUDA device the driver reports, in ordinal order; () on any failure."""
    try:
        return _query(driver)
    except Exception:  # noqa: BLE001 - a foreign library: any failure means no usable device
        return ()


def probe() -> tuple[Accelerator, ...]:
    driver = load_driver()
    return () if driver is None else accelerators(driver)


def _query(driver: Any) -> tuple[Accelerator, ...]:
    if driver.cuInit(0) != CUDA_SUCCESS:
        return ()
    count = ctypes.c_int(0)
    if driver.cuDeviceGetCount(ctypes.pointer(count)) != CUDA_SUCCESS:
        return ()
    found = []
    for ordinal in range(min(count.value, MAX_DEVICES)):
        acc = _device(driver, ordinal)
        if acc is not None:
            found.append(acc)
    return tuple(found)


def _device(driver: Any, ordinal: int) -> Accelerator | None:
    # A device whose queries fail (lost, or hidden by a driver mismatch) is left out; the
    # others are still usable.
    device = ctypes.c_int(0)
    if driver.cuDeviceGet(ctypes.pointer(device), ordinal) != CUDA_SUCCESS:
        return None
    major, minor = ctypes.c_int(-1), ctypes.c_int(-1)
    for value, attribute in ((major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                             (minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)):
        if driver.cuDeviceGetAttribute(ctypes.pointer(value), attribute, device.value) != CUDA_SUCCESS:
            return None
    if major.value < 0 or minor.value < 0:
        return None
    memory = ctypes.c_size_t(0)
    if driver.cuDeviceTotalMem_v2(ctypes.pointer(memory), device.value) != CUDA_SUCCESS:
        return None
    name_buffer = ctypes.create_string_buffer(NAME_BUFFER_SIZE)
    if driver.cuDeviceGetName(name_buffer, NAME_BUFFER_SIZE, device.value) != CUDA_SUCCESS:
        return None
    return Accelerator(kind="cuda", name=_printable(name_buffer.value, ordinal),
                       version=f"{major.value}.{minor.value}", memory_bytes=int(memory.value))


def _printable(raw: bytes, ordinal: int) -> str:
    """The device name as printable ASCII (the profile's rule); a placeholder when empty."""
    return printable_name(raw, f"CUDA device {ordinal}")
