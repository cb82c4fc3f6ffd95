"""Fuzz target, trusted-key files (issue 33, S4): libFuzzer's bytes drive the generator
tests/strategies.hostile_key_files (a real key's DER, sometimes damaged, as PEM under some label,
in lines of any width and end, with padding dropped or doubled, characters no base64 has, text,
other blocks or whitespace around it, grown to about the 64 KiB limit), written to a file and
read by Python (`load_public_key`, as `--key` and `--trust` read it) and by the C++ loader
(build/loader/libfatpte.so through ctypes: fatpte_trust_load, fatpte_trust_key_id). Fails when:

- anything but FatpteError escapes Python;
- one accepts the file and the other refuses it, or they accept it with different key ids, or
  refuse it with different codes or fields;
- Python's work leaves fuzz_hostile.py's budgets.
"""

from __future__ import annotations

import ctypes
import functools
import os
import tempfile
from collections.abc import Callable
from typing import Any

import _harness
from fuzz_differential import _Error, _lib
from fuzz_hostile import run_within, safe_text

Verdict = tuple[int, str]  # (0, key id) when accepted, else (code, field)


def cpp_load(path: str) -> Verdict:
    lib = _lib()
    lib.fatpte_trust_key_id.restype = ctypes.c_char_p
    trust = ctypes.c_void_p()
    err = _Error()
    paths = (ctypes.c_char_p * 1)(path.encode())
    code = lib.fatpte_trust_load(paths, ctypes.c_size_t(1), ctypes.byref(trust), ctypes.byref(err))
    try:
        if code:
            return code, err.field.decode("utf-8", "replace")
        if lib.fatpte_trust_count(trust) != 1:
            raise AssertionError("the loader holds another number of keys than the one file")
        return 0, (lib.fatpte_trust_key_id(trust, ctypes.c_size_t(0)) or b"").decode()
    finally:
        lib.fatpte_trust_free(trust)


def python_load(path: str, size: int) -> Verdict:
    from fatpte.errors import FatpteError
    from fatpte.ops.signing import load_public_key

    try:
        return 0, load_public_key(path).key_id
    except FatpteError as exc:
        safe_text("the error", str(exc), size)
        return int(exc.code), exc.field or ""


@functools.cache
def _folder() -> str:
    return tempfile.mkdtemp(prefix="fatpte-fuzz-keys.")


def compare(data: bytes) -> None:
    path = os.path.join(_folder(), "key.pem")
    with open(path, "wb") as f:
        f.write(data)
    py = run_within(lambda: python_load(path, len(data)), len(data))
    cpp = cpp_load(path)
    if py != cpp:
        raise AssertionError(f"the key file is read differently: Python {py}, C++ {cpp}\n{data[:400]!r}")


@functools.cache
def _property() -> Callable[[bytes], Any]:
    from tests.strategies import hostile_key_files

    @_harness.driven(hostile_key_files())
    def prop(data: bytes) -> None:
        compare(data)

    return prop


def test_one_input(data: bytes) -> None:
    _property()(data)


if __name__ == "__main__":
    _harness.fuzz(test_one_input)
