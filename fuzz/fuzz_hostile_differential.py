"""Fuzz target, hostile structure, differential: the inputs of fuzz_hostile.py that the C++ loader
reads too (containers with hostile manifests, thousands of entries sharing a payload, hostile
device profiles) through Python and through build/loader/libfatpte.so (ctypes), which must agree:

- validate and open: the same code, offset and field (fuzz_differential.py's comparison);
- selection on the named profiles x86-64-v3 and jetson-orin: the same chosen entry, or the same
  error code, and for a choice the same explanation text, escapes included;
- a profile: accepted by both, or refused by both with the same code and field.

Each input must also stay within fuzz_hostile.py's budgets on the Python side; the C++ side is
held to libFuzzer's -rss_limit_mb and -timeout (it runs in the same process).
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from typing import Any

import _harness
from fuzz_differential import _Error, _lib, cpp_verdicts, python_verdicts
from fuzz_hostile import run

DEVICES = ("x86-64-v3", "jetson-orin")


def _c_select(data: bytes, profile_json: bytes) -> tuple[int, int | None, str, str]:
    """(status, chosen index or None, field, explanation) of fatpte_select on `data`."""
    lib = _lib()
    buf = ctypes.create_string_buffer(data, len(data))
    handle = ctypes.c_void_p()
    err = _Error()
    status = lib.fatpte_open_memory(buf, ctypes.c_size_t(len(data)), ctypes.byref(handle), ctypes.byref(err))
    if status:
        return status, None, err.field.decode("utf-8", "replace"), ""
    try:
        sel = ctypes.c_void_p()
        status = lib.fatpte_select(handle, profile_json, None, ctypes.c_size_t(0), None, ctypes.c_size_t(0),
                                   ctypes.byref(sel), ctypes.byref(err))
        if status:
            return status, None, err.field.decode("utf-8", "replace"), ""
        try:
            index = ctypes.c_uint32()
            lib.fatpte_selection_chosen(sel, ctypes.byref(index))
            lib.fatpte_selection_explain.restype = ctypes.c_char_p
            text = lib.fatpte_selection_explain(sel).decode("utf-8")
            return 0, int(index.value), "", text
        finally:
            lib.fatpte_selection_free(sel)
    finally:
        lib.fatpte_close(handle)


def _py_select(data: bytes, device: Any) -> tuple[int, int | None, str, str]:
    from fatpte.container.reader import Container
    from fatpte.device.selection import select
    from fatpte.errors import FatpteError

    try:
        with Container.from_buffer(data) as c:
            chosen = select(c, device)
            return 0, chosen.chosen.index, "", chosen.explain()
    except FatpteError as exc:
        return int(exc.code), None, exc.field or "", ""


@functools.cache
def _profiles() -> tuple[tuple[Any, bytes], ...]:
    from fatpte.device.profile import DeviceProfile, devices_dir

    return tuple((DeviceProfile.load(n), (devices_dir() / f"{n}.json").read_bytes()) for n in DEVICES)


def compare_container(data: bytes) -> None:
    py, cpp = python_verdicts(data), cpp_verdicts(data)
    if py != cpp:
        raise AssertionError(f"validate/open disagree: Python {py}, C++ {cpp}")
    if py[1] != 0:
        return
    for device, text in _profiles():
        p, c = _py_select(data, device), _c_select(data, text)
        # The C API names a manifest error's field; NO_SPECIALIZATION_FITS carries no field in
        # either. A choice is compared with its whole explanation.
        if p[:3] != c[:3] or (p[0] == 0 and p[3] != c[3]):
            raise AssertionError(f"select on {device.name} disagrees: Python {p[:3]}, C++ {c[:3]}\n{p[3]}\n--\n{c[3]}")


@functools.cache
def _plain_container() -> bytes:
    from tests.support.hostile import shared_payload

    return shared_payload(1, requires=False)


def compare_profile(data: bytes) -> None:
    from fatpte.device.profile import DeviceProfile, parse_json
    from fatpte.errors import FatpteError

    text = data.split(b"\0", 1)[0]  # the C API takes a C string
    try:
        DeviceProfile.from_json(parse_json(text))
        py: tuple[int, str] = (0, "")
    except FatpteError as exc:
        py = (int(exc.code), exc.field or "")
    status, _, field, _ = _c_select(_plain_container(), text)
    cpp = (status, field if status else "")
    if py != cpp:
        raise AssertionError(f"the profile is read differently: Python {py}, C++ {cpp}")


@functools.cache
def _property() -> Callable[[bytes], Any]:
    from hypothesis import strategies as st

    from tests.strategies import hostile_entry_containers, hostile_manifest_containers, hostile_profiles

    @_harness.driven(st.one_of(st.tuples(st.just("container"), hostile_manifest_containers()),
                               st.tuples(st.just("entries"), hostile_entry_containers(max_entries=500)),
                               st.tuples(st.just("profile"), hostile_profiles())))
    def prop(case: tuple[str, bytes]) -> None:
        kind, data = case
        run(kind, data)
        (compare_profile if kind == "profile" else compare_container)(data)

    return prop


def test_one_input(data: bytes) -> None:
    _property()(data)


if __name__ == "__main__":
    _harness.fuzz(test_one_input)
