"""The C API's reader (fatpte_reader, loader/src/capi/reader.cpp) over HTTP: a callback that makes
range requests to nginx, as a device's own HTTP client would. Counted from nginx's access log:
opening and selecting transfer the prefix only; fetching the chosen entry adds its payload and
named data, nothing else (`make loader` builds build/loader/libfatpte.so first)."""

from __future__ import annotations

import ctypes
import re
import urllib.request
from pathlib import Path

import pytest

import fatpte
from fatpte.fileio.remote import PREFIX_SIZE
from tests.paths import ROOT
from tests.remote.conftest import Served
from tests.remote.servers import Nginx

LIBRARY = ROOT / "build" / "loader" / "libfatpte.so"
READ_AT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t)


class Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("offset", ctypes.c_uint64), ("field", ctypes.c_char * 96),
                ("message", ctypes.c_char * 512)]


def test_the_header_states_the_prefix_python_reads() -> None:
    header = (ROOT / "loader" / "include" / "fatpte" / "fatpte.h").read_text()
    found = re.search(r"#define FATPTE_PREFIX_SIZE (\d+)", header)
    assert found is not None and int(found.group(1)) == PREFIX_SIZE


def test_a_device_selects_from_the_prefix_then_fetches_its_slice(nginx: Nginx, big: Served) -> None:
    if not LIBRARY.exists():
        pytest.fail(f"{LIBRARY} is missing: run `make loader`")
    lib = ctypes.CDLL(str(LIBRARY))
    url = nginx.url(big.name)
    size = big.path.stat().st_size  # a device learns it from Content-Range or a HEAD

    @READ_AT
    def read_at(user: int, offset: int, buffer: int, count: int) -> int:
        request = urllib.request.Request(url, headers={"Range": f"bytes={offset}-{offset + count - 1}"})
        with urllib.request.urlopen(request) as response:  # 127.0.0.1: the test's own nginx
            if response.status != 206:
                return 801
            data = response.read()
        if len(data) != count:
            return 805
        ctypes.memmove(buffer, data, count)
        return 0

    reader = ctypes.c_void_p()
    err = Error()
    mark = nginx.mark()
    assert lib.fatpte_reader_open(read_at, None, ctypes.c_uint64(size), ctypes.byref(reader), ctypes.byref(err)) == 0, \
        err.message
    lib.fatpte_reader_container.restype = ctypes.c_void_p
    container = ctypes.c_void_p(lib.fatpte_reader_container(reader))
    selection = ctypes.c_void_p()
    assert lib.fatpte_select(container, None, None, 0, None, 0, ctypes.byref(selection), ctypes.byref(err)) == 0
    chosen = ctypes.c_uint32()
    assert lib.fatpte_selection_chosen(selection, ctypes.byref(chosen)) == 0
    lib.fatpte_selection_free(selection)
    assert [r.body_bytes for r in nginx.requests(mark)] == [PREFIX_SIZE]

    assert lib.fatpte_reader_fetch_entry(reader, chosen, ctypes.byref(err)) == 0, err.message
    with fatpte.open(big.path) as local:
        entry = local.entries[chosen.value]
        assert entry.name == "portable"
        manifest = local.manifest
        assert manifest is not None
        segments = [local.segments[manifest.keys[k]] for k in manifest.entry(entry.name).named_data]
        data = ctypes.c_void_p()
        length = ctypes.c_uint64()
        assert lib.fatpte_entry_payload(container, chosen, ctypes.byref(data), ctypes.byref(length)) == 0
        assert ctypes.string_at(data, length.value) == bytes(local.payload(entry))
    log = nginx.requests(mark)
    assert [r.body_bytes for r in log] == [PREFIX_SIZE, entry.size, *[s.size for s in segments]]
    lib.fatpte_reader_close(reader)


def test_reading_a_payload_never_fetched_is_refused_by_the_mapping() -> None:
    # Documented in fatpte.h: bytes never fetched are unreadable. A child process proves it.
    import subprocess
    import sys

    code = f"""
import ctypes, fatpte, os, sys
lib = ctypes.CDLL({str(LIBRARY)!r})
data = open(sys.argv[1], 'rb').read()
READ_AT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t)
@READ_AT
def read_at(user, offset, buffer, count):
    ctypes.memmove(buffer, data[offset:offset + count], count)
    return 0
reader = ctypes.c_void_p()
assert lib.fatpte_reader_open(read_at, None, ctypes.c_uint64(len(data)), ctypes.byref(reader), None) == 0
lib.fatpte_reader_container.restype = ctypes.c_void_p
c = ctypes.c_void_p(lib.fatpte_reader_container(reader))
p, n = ctypes.c_void_p(), ctypes.c_uint64()
assert lib.fatpte_entry_payload(c, 1, ctypes.byref(p), ctypes.byref(n)) == 0
print('read', ctypes.string_at(p.value + n.value - 1, 1), flush=True)
"""
    path = Path(ROOT / "build" / "remote-unfetched.nfat")
    fatpte.pack([fatpte.Specialization("a", b"a" * 10), fatpte.Specialization("b", b"b" * 300_000)], path)
    try:
        done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=False)
    finally:
        path.unlink()
    assert done.returncode < 0 and "read" not in done.stdout  # SIGSEGV, not a byte of zeros
