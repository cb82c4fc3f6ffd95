"""How many requests and bytes a remote read costs, counted from nginx's access log (issue 32,
"Why 5"): near ranges wanted together come in one request (`coalesce`, the gap rule of
specs/remote.md section 2), and bytes the first request already brought are never asked again."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fatpte
from fatpte.fileio.remote import GAP, PREFIX_SIZE, coalesce
from tests.remote.servers import Nginx


def fatpte_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fatpte", *args], capture_output=True, text=True, check=False)


@pytest.mark.parametrize(("ranges", "limit", "groups"), [
    ([], 100, []),
    ([(0, 64), (64, 128), (128, 192)], 1 << 20, [[0, 1, 2]]),  # adjacent
    ([(128, 192), (0, 64), (64, 128)], 1 << 20, [[1, 2, 0]]),  # in file order, whatever the order asked
    ([(0, 64), (64 + GAP, 200 + GAP)], 1 << 20, [[0, 1]]),  # a gap of GAP bytes: still one request
    ([(0, 64), (65 + GAP, 200 + GAP)], 1 << 20, [[0], [1]]),  # one byte more: two
    ([(0, 64), (64, 128), (128, 192)], 128, [[0, 1], [2]]),  # a request spans at most `limit`
    ([(0, 1000), (1000, 1064)], 100, [[0], [1]]),  # a range longer than the limit stays alone
    ([(0, 100), (50, 80), (90, 300)], 1 << 20, [[0, 1, 2]]),  # overlapping (two entries sharing bytes)
])
def test_coalesce(ranges: list[tuple[int, int]], limit: int, groups: list[list[int]]) -> None:
    assert coalesce(ranges, limit) == groups


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[Nginx, Path]:
    """A container whose first entry starts in the first 64 KiB and uses three adjacent 64-byte
    segments, which lie after a 300,000-byte entry, past the first 64 KiB."""
    www = tmp_path_factory.mktemp("www")
    keys = {f"w{i}": os.urandom(64) for i in range(3)}
    path = fatpte.pack([fatpte.Specialization("portable", os.urandom(100_000), named_data=list(keys)),
                        fatpte.Specialization("xnnpack", os.urandom(300_000), priority=1)],
                       www / "c.nfat", named_data=keys)
    server = Nginx(www, tmp_path_factory.mktemp("nginx"))
    yield server, path  # type: ignore[misc]
    server.close()


def test_thin_asks_for_adjacent_segments_in_one_request(served: tuple[Nginx, Path], tmp_path: Path) -> None:
    """Three adjacent 64-byte segments took three requests (issue 32): now one."""
    nginx, path = served
    with fatpte.open(path) as c:
        portable = c.entry("portable")
        segments = [(s.offset, s.end) for s in c.segments]
    assert len(segments) == 3 and segments[0][0] > PREFIX_SIZE
    assert all(a[1] == b[0] for a, b in itertools.pairwise(segments))  # adjacent
    mark = nginx.mark()
    done = fatpte_cli("thin", nginx.url(path.name), "--name", "portable", "-q", "-o", str(tmp_path / "t.nfat"))
    assert done.returncode == 0, done.stderr
    assert [(r.range, r.body_bytes) for r in nginx.requests(mark)] == [
        (f"bytes=0-{PREFIX_SIZE - 1}", PREFIX_SIZE),
        (f"bytes={PREFIX_SIZE}-{portable.end - 1}", portable.end - PREFIX_SIZE),  # the rest of the payload
        (f"bytes={segments[0][0]}-{segments[-1][1] - 1}", 3 * 64)]  # the three segments, once
    fatpte.thin(path, tmp_path / "local.nfat", names=["portable"])
    assert (tmp_path / "t.nfat").read_bytes() == (tmp_path / "local.nfat").read_bytes()


def test_extract_does_not_ask_again_for_what_the_prefix_holds(served: tuple[Nginx, Path], tmp_path: Path) -> None:
    """An entry that starts in the first 64 KiB: its first bytes came with the prefix; they were
    fetched a second time (issue 32)."""
    nginx, path = served
    with fatpte.open(path) as c:
        portable = c.entry("portable")
        payload = bytes(c.payload(portable))
    assert portable.offset < PREFIX_SIZE < portable.end
    mark = nginx.mark()
    done = fatpte_cli("extract", nginx.url(path.name), "--name", "portable", "-q", "-o", str(tmp_path / "p.bin"))
    assert done.returncode == 0, done.stderr
    log = nginx.requests(mark)
    assert [(r.range, r.body_bytes) for r in log] == [
        (f"bytes=0-{PREFIX_SIZE - 1}", PREFIX_SIZE),
        (f"bytes={PREFIX_SIZE}-{portable.end - 1}", portable.end - PREFIX_SIZE)]
    assert sum(r.body_bytes for r in log) == portable.end  # every byte up to the payload's end, once
    assert (tmp_path / "p.bin").read_bytes() == payload


def test_the_library_reuses_the_prefix_too(served: tuple[Nginx, Path]) -> None:
    nginx, path = served
    with fatpte.open(nginx.url(path.name)) as c, fatpte.open(path) as local:
        portable = c.entry("portable")
        assert bytes(c.payload(portable, verify=True)) == bytes(local.payload(portable))
        assert bytes(c.read(portable.offset, 100)) == bytes(local.read(portable.offset, 100))  # held: no request
        assert b"".join(c.stream(0, PREFIX_SIZE + 10, step=4096)) == bytes(local.read(0, PREFIX_SIZE + 10))
        assert (c.stats.requests, c.stats.received) == (1 + 1 + 1, PREFIX_SIZE + (portable.end - PREFIX_SIZE) + 10)
