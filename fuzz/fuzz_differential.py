"""Fuzz target, differential: the same bytes through Python (`fatpte.validate_buffer`,
`Container.from_buffer`) and the C++ loader (`fatpte_validate_memory`, `fatpte_open_memory` of
build/loader/libfatpte.so, called through ctypes). Fails when they disagree on accept or reject,
on the error code, or on its byte offset and field path.

Needs the loader built (`make loader`); FATPTE_LIB overrides the library's path.
"""

from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path

import _harness

FIELD_SIZE, MESSAGE_SIZE = 96, 512  # fatpte_error in loader/include/fatpte/fatpte.h


class _Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("offset", ctypes.c_uint64), ("field", ctypes.c_char * FIELD_SIZE),
                ("message", ctypes.c_char * MESSAGE_SIZE)]


@functools.cache
def _lib() -> ctypes.CDLL:
    path = os.environ.get("FATPTE_LIB") or str(_harness.ROOT / "build" / "loader" / "libfatpte.so")
    if not Path(path).exists():
        raise SystemExit(f"{path} is missing: build the loader first (make loader)")
    lib = ctypes.CDLL(path)
    for name in ("fatpte_validate_memory", "fatpte_open_memory"):
        getattr(lib, name).restype = ctypes.c_int
    lib.fatpte_close.restype = None
    return lib


def cpp_verdicts(data: bytes) -> tuple[tuple[int, int | None, str | None], int]:
    """(validate's (code, offset, field), open's code); code 0 is OK."""
    lib = _lib()
    buf = ctypes.create_string_buffer(data, len(data))
    err = _Error()
    code = lib.fatpte_validate_memory(buf, ctypes.c_size_t(len(data)), ctypes.byref(err))
    offset = None if err.offset == (1 << 64) - 1 else int(err.offset)
    validate = (code, offset if code else None, (err.field.decode() or None) if code else None)
    handle = ctypes.c_void_p()
    open_code = lib.fatpte_open_memory(buf, ctypes.c_size_t(len(data)), ctypes.byref(handle), None)
    if handle:
        lib.fatpte_close(handle)
    return validate, open_code


def python_verdicts(data: bytes) -> tuple[tuple[int, int | None, str | None], int]:
    from fatpte.container.reader import Container
    from fatpte.errors import FatpteError
    from fatpte.ops.validation import validate_buffer

    first = validate_buffer(data).first_error
    # fatpte_error holds FIELD_SIZE - 1 bytes of the field path: a longer one (fat delegates nested
    # past the limit) is compared as far as C can say it.
    validate = (0, None, None) if first is None else (
        int(first.code), first.offset, first.field[: FIELD_SIZE - 1] if first.field else first.field)
    try:
        with Container.from_buffer(data):
            open_code = 0
    except FatpteError as exc:
        open_code = int(exc.code)
    return validate, open_code


def test_one_input(data: bytes) -> None:
    py, cpp = python_verdicts(data), cpp_verdicts(data)
    if py != cpp:
        raise AssertionError(f"Python and C++ disagree: Python validate {py[0]} open {py[1]}, "
                             f"C++ validate {cpp[0]} open {cpp[1]}")


if __name__ == "__main__":
    _harness.fuzz(test_one_input)
