"""Fuzz target, signed containers (issue 33): libFuzzer's bytes drive the generator
tests/strategies.hostile_signed_cases (a container packed and signed with a conformance test key,
then entries added after signing, a hostile manifest under the signature, a payload changed,
thinned; its statement changed and signed again; its bundle changed without a key, up to and past
MAX_BUNDLE_VALUES values; embedded or detached), verified by Python (`verify_buffer`, with the
downgrade check now and then) and by the C++ loader (build/loader/libfatpte.so through ctypes:
fatpte_verify_signature, fatpte_signature_verify_all, fatpte_signature_check_downgrade, as
fatpte-verify runs them). Fails when:

- anything but FatpteError escapes Python;
- they disagree on the first error (code, offset, field), or on a verified container, on the key
  that verified it and the entries thinned away;
- Python's work leaves fuzz_hostile.py's budgets (peak memory, text of the error).
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from typing import Any

import _harness
from fuzz_differential import _Error, _lib
from fuzz_hostile import run_within, safe_text

Verdict = tuple[tuple[int, int | None, str | None], str, tuple[str, ...]]  # first error, key id, thinned


@functools.cache
def _keys() -> tuple[Any, Any]:
    """The trusted keys of the signing vectors, in both: Python's and the C API's."""
    from fatpte.ops.signing import load_trusted_keys
    from tests.support.vectors import TRUSTED_KEY_FILES, VECTORS

    paths = [str(VECTORS / name) for name in TRUSTED_KEY_FILES]
    lib = _lib()
    trust = ctypes.c_void_p()
    array = (ctypes.c_char_p * len(paths))(*[p.encode() for p in paths])
    if lib.fatpte_trust_load(array, ctypes.c_size_t(len(paths)), ctypes.byref(trust), None):
        raise SystemExit("the loader cannot load the vector keys: is it built with signatures?")
    return load_trusted_keys(paths), trust


def _first(code: int, err: _Error) -> tuple[int, int | None, str | None]:
    offset = None if err.offset == (1 << 64) - 1 else int(err.offset)
    return code, offset, err.field.decode("utf-8", "replace") or None


def cpp_verify(data: bytes, detached: bytes | None, device: str | None) -> Verdict:
    lib = _lib()
    lib.fatpte_signature_key_id.restype = ctypes.c_char_p
    _, trust = _keys()
    buf = ctypes.create_string_buffer(data, len(data))
    err = _Error()
    c = ctypes.c_void_p()
    code = lib.fatpte_open_memory(buf, ctypes.c_size_t(len(data)), ctypes.byref(c), ctypes.byref(err))
    if code:
        return _first(code, err), "", ()
    report = ctypes.c_void_p()
    dev = ctypes.c_void_p()
    try:
        sig = None if detached is None else ctypes.create_string_buffer(detached, len(detached))
        code = lib.fatpte_verify_signature(c, trust, sig, ctypes.c_size_t(0 if detached is None else len(detached)),
                                           ctypes.byref(report), ctypes.byref(err))
        if report:
            more = _Error()
            step = lib.fatpte_signature_verify_all(c, report, ctypes.byref(more))
            if code == 0 and step:
                code, err = step, more
            if code == 0 and device is not None:
                if lib.fatpte_device_load(device.encode(), ctypes.byref(dev), ctypes.byref(more)):
                    raise AssertionError(f"the loader cannot read the profile {device}")
                code = lib.fatpte_signature_check_downgrade(c, report, dev, ctypes.byref(err))
        if code:
            return _first(code, err), "", ()
        count = ctypes.c_uint32()
        lib.fatpte_signature_thinned_count(report, ctypes.byref(count))
        thinned = []
        for i in range(count.value):
            name = ctypes.c_char_p()
            lib.fatpte_signature_thinned_name(report, ctypes.c_uint32(i), ctypes.byref(name))
            thinned.append((name.value or b"").decode())
        return (0, None, None), (lib.fatpte_signature_key_id(report) or b"").decode(), tuple(thinned)
    finally:
        lib.fatpte_signature_report_free(report)
        lib.fatpte_device_free(dev)
        lib.fatpte_close(c)


def python_verify(data: bytes, detached: bytes | None, device: str | None) -> Verdict:
    from fatpte.device.profile import DeviceProfile
    from fatpte.errors import FatpteError
    from fatpte.ops.signing import verify_buffer

    keys, _ = _keys()
    try:
        report = verify_buffer(data, keys, signature=detached,
                               downgrade=None if device is None else DeviceProfile.load(device))
    except FatpteError as exc:
        safe_text("the error", str(exc), len(data))
        return (int(exc.code), exc.offset, exc.field), "", ()
    first = report.first_error
    if first is not None:
        safe_text("the finding", first.describe(), len(data))
        return (int(first.code), first.offset, first.field), "", ()
    return (0, None, None), report.key_id or "", report.thinned


def compare(case: tuple[bytes, bytes | None, str | None]) -> None:
    data, detached, device = case
    size = len(data) + len(detached or b"")
    py = run_within(lambda: python_verify(data, detached, device), size)
    cpp = cpp_verify(data, detached, device)
    if py != cpp:
        raise AssertionError(f"verify disagrees ({'detached' if detached is not None else 'embedded'}, "
                             f"downgrade {device}): Python {py}, C++ {cpp}")


@functools.cache
def _property() -> Callable[[bytes], Any]:
    from tests.strategies import hostile_signed_cases

    @_harness.driven(hostile_signed_cases())
    def prop(case: tuple[bytes, bytes | None, str | None]) -> None:
        compare(case)

    return prop


def test_one_input(data: bytes) -> None:
    _property()(data)


if __name__ == "__main__":
    _harness.fuzz(test_one_input)
