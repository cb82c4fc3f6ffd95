"""Vendor runtimes (fatpte/device/vendor_runtimes.py) and OpenVINO's probe (probe_openvino.py):
the search order, every place looked named when none holds it, and the decoding of what
OpenVINO's C API answers, against a fake library (loader/tests/vendor_test.cpp holds the C++ side
to the same cases)."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import pytest

from fatpte.device import probe_openvino as P
from fatpte.device.vendor_runtimes import VENDOR_RUNTIMES, locate, parse_assignment, printable_name

OV = VENDOR_RUNTIMES[0]


def wheel(prefix: Path, python: str = "python3.11", version: str = "2640") -> Path:
    folder = prefix / "lib" / python / "site-packages" / "openvino" / "libs"
    folder.mkdir(parents=True, exist_ok=True)
    lib = folder / f"libopenvino_c.so.{version}"
    lib.write_bytes(b"")
    return lib


def test_search_order(tmp_path: Path) -> None:
    venv, conda, given, var = (wheel(tmp_path / d) for d in ("venv", "conda", "given", "var"))
    env = {"VIRTUAL_ENV": str(tmp_path / "venv"), "CONDA_PREFIX": str(tmp_path / "conda"),
           "OPENVINO_LIB_PATH": str(var)}
    assert locate(OV, {"openvino": str(given)}, env).path == str(given)
    assert locate(OV, {}, env).path == str(var)
    assert locate(OV, {}, {**env, "OPENVINO_LIB_PATH": ""}).path == str(venv)
    found = locate(OV, {}, {"CONDA_PREFIX": str(tmp_path / "conda")})
    assert (found.path, found.source) == (str(conda), "the openvino package of $CONDA_PREFIX")
    assert locate(OV, {"openvino": ""}, env).withheld


def test_the_last_version_of_the_first_python_folder(tmp_path: Path) -> None:
    wheel(tmp_path, "python3.10", "2530")
    wheel(tmp_path, "python3.10", "2640")
    wheel(tmp_path, "python3.12", "2700")
    assert locate(OV, {}, {"VIRTUAL_ENV": str(tmp_path)}).path.endswith("python3.10/site-packages/openvino/libs/"
                                                                         "libopenvino_c.so.2640")


def test_not_found_names_every_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("fatpte.device.vendor_runtimes._own_site_packages", lambda: [str(tmp_path)])
    monkeypatch.setattr("fatpte.device.vendor_runtimes.ctypes.CDLL", _no_library)
    where = locate(OV, {"openvino": str(tmp_path / "none.so")},
                   {"OPENVINO_LIB_PATH": str(tmp_path), "VIRTUAL_ENV": str(tmp_path)})
    assert not where.path and not where.withheld
    assert where.text() == (
        f"not found; looked: 1. the caller's path {tmp_path}/none.so (not a file), 2. OPENVINO_LIB_PATH={tmp_path} "
        f"(not a file), 3. $VIRTUAL_ENV: no {tmp_path}/lib/python3.*/site-packages/openvino/libs/libopenvino_c.so.*, "
        "4. $CONDA_PREFIX (not set), 5. this Python's site-packages (no openvino/libs/libopenvino_c.so.*), "
        "6. the system's library search for libopenvino_c.so (dlopen: libopenvino_c.so: no such file)")


def _no_library(name: str) -> Any:
    raise OSError(f"{name}: no such file")


def test_probing_the_host_searches_each_runtime_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Python's probe of this machine looks for each vendor runtime once (the C++ load's second
    search, for its explanation line, is what loader/tests/vendor_test.cpp OneLoadSearchesOnce
    rules out); a runtime found is asked for its devices at the path that search found."""
    from fatpte.device import host, probe_executorch
    from fatpte.device.profile import DeviceProfile
    from fatpte.device.vendor_runtimes import Located

    searched: list[str] = []
    given = tmp_path / "libopenvino_c.so.2640"
    given.write_bytes(b"")

    def counting(runtime: Any, explicit: Any = None, environ: Any = None) -> Located:
        searched.append(runtime.name)
        return locate(runtime, explicit, environ)

    asked: list[str] = []

    def devices(path: str) -> tuple[tuple[Any, ...], str]:
        asked.append(path)
        return (), "a fake runtime lists none"

    monkeypatch.setattr(host, "locate", counting)
    monkeypatch.setitem(host.VENDOR_PROBES, "openvino", devices)
    monkeypatch.setattr(probe_executorch, "runtime_backends", lambda vendor_runtimes=None: ())
    DeviceProfile.host(vendor_runtimes={"openvino": str(given)})
    assert searched == [r.name for r in VENDOR_RUNTIMES] and asked == [str(given)]


def test_assignments() -> None:
    assert parse_assignment("openvino=/x/libopenvino_c.so") == ("openvino", "/x/libopenvino_c.so")
    assert parse_assignment("openvino=") == ("openvino", "")
    assert parse_assignment("cuda=/x") is None and parse_assignment("openvino") is None


# The same cases as loader/tests/vendor_test.cpp.
VERSIONS = [(b"2026.4.0-22959-99c81491cc3-releases/2026/4", "2026.4.0"), (b"2025.1.0", "2025.1.0"),
            (b"2026.4", ""), (b"02026.4.0", ""), (b"2026.4.01", ""), (b"2026.4.12345", ""), (b"x2026.4.0", ""),
            (b"", "")]
CAPABILITIES = [("BF16 WINOGRAD FP32 FP16 INT8 BIN EXPORT_IMPORT",
                 ("bf16", "bin", "export_import", "fp16", "fp32", "int8", "winograd")),
                ("FP32  FP32 fp32", ("fp32",)), ("FP-16 \xc9 " + "A" * 33, ()), ("", ())]


@pytest.mark.parametrize(("build", "version"), VERSIONS)
def test_version(build: bytes, version: str) -> None:
    assert P.openvino_version(build) == version


@pytest.mark.parametrize(("listed", "words"), CAPABILITIES)
def test_capabilities(listed: str, words: tuple[str, ...]) -> None:
    assert P.capabilities(listed) == words


def test_at_most_32_capabilities() -> None:
    assert P.capabilities(" ".join(f"W{i:02d}" for i in range(40))) == tuple(f"w{i:02d}" for i in range(32))


def test_printable_name() -> None:
    assert printable_name("  Intel\u00ae Arc\u2122 \xff ".encode() + b"\xff", "x") == "Intel? Arc? ? ?"
    assert printable_name(b"   ", "OpenVINO device 2") == "OpenVINO device 2"
    assert printable_name(b"A" * 300, "x") == "A" * 256


class FakeOpenvino:
    """OpenVINO's C API over a dict of devices -> properties; `fail` names calls that fail."""

    def __init__(self, devices: dict[bytes, dict[bytes, bytes]], *, build: bytes = b"2026.4.0-1-abc",
                 fail: tuple[str, ...] = ()) -> None:
        self.devices, self.build, self.fail = devices, build, fail
        self.freed: list[str] = []
        self._keep: list[Any] = []

    def ov_get_openvino_version(self, ref: Any) -> int:
        ref._obj.buildNumber = self.build
        return -1 if "version" in self.fail else 0

    def ov_version_free(self, ref: Any) -> None:
        self.freed.append("version")

    def ov_core_create(self, ref: Any) -> int:
        if "core" in self.fail:
            return -1
        ref._obj.value = 1
        return 0

    def ov_core_free(self, core: Any) -> None:
        self.freed.append("core")

    def ov_core_get_available_devices(self, core: Any, ref: Any) -> int:
        if "devices" in self.fail:
            return -1
        names = (ctypes.c_char_p * len(self.devices))(*self.devices)
        self._keep.append(names)
        ref._obj.devices = ctypes.cast(names, ctypes.POINTER(ctypes.c_char_p))
        ref._obj.size = len(self.devices)
        return 0

    def ov_available_devices_free(self, ref: Any) -> None:
        self.freed.append("devices")

    def ov_core_get_property(self, core: Any, device: bytes, key: bytes, ref: Any) -> int:
        value = self.devices[device].get(key)
        if value is None:
            return -1
        buffer = ctypes.create_string_buffer(value)
        self._keep.append(buffer)
        ref._obj.value = ctypes.addressof(buffer)
        return 0

    def ov_free(self, value: Any) -> None:
        self.freed.append("property")


CPU = {b"FULL_DEVICE_NAME": b"Intel(R) Core(TM) Ultra 7 155H", b"OPTIMIZATION_CAPABILITIES": b"FP32 INT8 FP16 BIN"}
GPU = {b"FULL_DEVICE_NAME": b"Intel(R) Arc(TM) Graphics (iGPU)", b"OPTIMIZATION_CAPABILITIES": b"FP32 FP16 INT8",
       b"GPU_DEVICE_TOTAL_MEM_SIZE": b"30749147136"}


def test_devices_in_the_runtime_s_order_with_their_properties() -> None:
    api = FakeOpenvino({b"CPU": CPU, b"GPU.0": GPU, b"NPU": {b"FULL_DEVICE_NAME": b"Intel(R) AI Boost"},
                        b"bad name": CPU, b"GPU.1": {}})
    devices, why = P.devices(api)
    assert why == ""
    assert devices == (
        P.VendorDevice("CPU", "Intel(R) Core(TM) Ultra 7 155H", "2026.4.0", 0, ("bin", "fp16", "fp32", "int8")),
        P.VendorDevice("GPU.0", "Intel(R) Arc(TM) Graphics (iGPU)", "2026.4.0", 30749147136, ("fp16", "fp32", "int8")),
        P.VendorDevice("NPU", "Intel(R) AI Boost", "2026.4.0", 0, ()),
    )
    assert api.freed.count("devices") == 1 and api.freed.count("core") == 1 and api.freed.count("version") == 1
    assert api.freed.count("property") == 6  # every answer freed: 2 of the CPU, 3 of GPU.0, 1 of the NPU


@pytest.mark.parametrize(("fail", "why"), [(("version",), "ov_get_openvino_version failed"),
                                           (("core",), "ov_core_create failed"),
                                           (("devices",), "ov_core_get_available_devices failed")])
def test_a_runtime_that_does_not_answer_lists_nothing(fail: tuple[str, ...], why: str) -> None:
    assert P.devices(FakeOpenvino({b"CPU": CPU}, fail=fail)) == ((), why)


def test_a_memory_that_is_not_a_number_is_0() -> None:
    devices, _ = P.devices(FakeOpenvino({b"GPU": {**GPU, b"GPU_DEVICE_TOTAL_MEM_SIZE": b"-1"}}))
    assert devices[0].memory_bytes == 0
    devices, _ = P.devices(FakeOpenvino({b"GPU": {**GPU, b"GPU_DEVICE_TOTAL_MEM_SIZE": b"9223372036854775808"}}))
    assert devices[0].memory_bytes == 0


def test_a_library_that_is_not_openvino(tmp_path: Path) -> None:
    assert P.probe(str(tmp_path / "missing.so"))[1].startswith("cannot load it: ")
    assert P.probe("libc.so.6") == ((), "it lacks an entry point of OpenVINO's C API")
