"""Progress callbacks of pack, extract and validate: monotonic, ending at (total, total), total
being the bytes each one moves or hashes. The command line draws its bars from them."""

from __future__ import annotations

import io
import os
from pathlib import Path

import fatpte
from fatpte.cli.progress import Progress
from fatpte.fileio.streams import copy_range
from fatpte.ops.specialization import Specialization


def _recorder() -> tuple[list[tuple[int, int]], object]:
    calls: list[tuple[int, int]] = []
    return calls, lambda done, total: calls.append((done, total))


def _check(calls: list[tuple[int, int]], total: int) -> None:
    assert calls, "progress was never reported"
    assert calls[0] == (0, total) and calls[-1] == (total, total)
    assert all(t == total for _, t in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def _payloads(tmp_path: Path) -> list[Specialization]:
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(3 << 20))
    return [Specialization("a", big), Specialization("b", b"x" * 1000), Specialization("c", big, name="c2")]


def test_pack_reports_every_payload_byte_it_writes(tmp_path: Path) -> None:
    calls, cb = _recorder()
    fatpte.pack(_payloads(tmp_path), tmp_path / "c.nfat", progress=cb)  # type: ignore[arg-type]
    _check(calls, (3 << 20) + 1000)  # the two identical payloads are written once


def test_extract_reports_the_payload_size(tmp_path: Path) -> None:
    out = fatpte.pack(_payloads(tmp_path), tmp_path / "c.nfat")
    calls, cb = _recorder()
    fatpte.extract(out, "a", tmp_path / "a.bin", progress=cb)  # type: ignore[arg-type]
    _check(calls, 3 << 20)


def test_validate_reports_the_bytes_it_hashes(tmp_path: Path) -> None:
    out = fatpte.pack(_payloads(tmp_path), tmp_path / "c.nfat")
    calls, cb = _recorder()
    assert fatpte.validate(out, progress=cb).ok  # type: ignore[arg-type]
    _check(calls, (3 << 20) + 1000)


def test_copy_range_counts_skipped_holes(tmp_path: Path) -> None:
    src = tmp_path / "sparse"
    with open(src, "wb") as f:
        f.write(b"head")
        f.truncate(8 << 20)
        f.seek((8 << 20) - 4)
        f.write(b"tail")
    seen: list[int] = []
    with open(src, "rb") as s, open(tmp_path / "dst", "wb") as d:
        copy_range(s.fileno(), 0, d.fileno(), 0, 8 << 20, advance=seen.append)
    assert sum(seen) == 8 << 20
    assert (tmp_path / "dst").read_bytes() == src.read_bytes()


def test_progress_display_draws_a_bar_from_updates() -> None:
    p = Progress(io.StringIO(), "packing", enabled=False)
    p.update(512, 2048)
    assert "[#######" in p.line(3.0) and "25%" in p.line(3.0)
