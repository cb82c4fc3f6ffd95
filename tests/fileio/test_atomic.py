"""fatpte.fileio.atomic: outputs appear whole or not at all."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.atomic import atomic_output


def test_success_replaces_the_destination(tmp_path: Path) -> None:
    dest = tmp_path / "f"
    dest.write_bytes(b"old")
    with atomic_output(dest) as out:
        out.write(b"new")
        assert dest.read_bytes() == b"old"  # nothing visible until the rename
    assert dest.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["f"]


def test_exception_removes_the_temporary_and_keeps_the_original(tmp_path: Path) -> None:
    dest = tmp_path / "f"
    dest.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_output(dest) as out:
        out.write(b"partial")
        raise RuntimeError("boom")
    assert dest.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f"]


def test_refuses_to_overwrite_when_asked(tmp_path: Path) -> None:
    dest = tmp_path / "f"
    dest.write_bytes(b"old")
    with pytest.raises(FatpteError) as info, atomic_output(dest, overwrite=False):
        pass
    assert info.value.code is ErrorCode.INVALID_ARGUMENT and "refusing to overwrite" in str(info.value)


def test_unwritable_folder_is_an_io_error(tmp_path: Path) -> None:
    with pytest.raises(FatpteError) as info, atomic_output(tmp_path / "missing" / "f"):
        pass
    assert info.value.code is ErrorCode.IO_ERROR
    assert "missing" in str(info.value)


def test_temporary_file_is_beside_the_destination_private_and_exclusive(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Path] = []
    with atomic_output(tmp_path / "out.bin") as f:
        seen = [p for p in tmp_path.iterdir() if p.name.startswith(".out.bin.") and p.name.endswith(".partial")]
        assert len(seen) == 1 and stat.S_IMODE(seen[0].stat().st_mode) == 0o600
        f.write(b"x")
    assert not seen[0].exists() and (tmp_path / "out.bin").read_bytes() == b"x"
    # A name already taken is drawn again, never opened.
    draws = iter([bytes(6), bytes(6), b"\x01" * 6])
    monkeypatch.setattr(os, "urandom", lambda n: next(draws))
    taken = tmp_path / f".again.p{os.getpid()}.{bytes(6).hex()}.partial"
    taken.write_bytes(b"someone else's")
    with atomic_output(tmp_path / "again") as f:
        f.write(b"mine")
    assert taken.read_bytes() == b"someone else's"
    assert (tmp_path / "again").read_bytes() == b"mine"


def test_writing_many_outputs_into_one_folder_lists_it_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The leftovers of killed writers are older than this process, so one listing of a folder
    finds them all: n outputs written into one folder list it once, not n times (n^2 work)."""
    from fatpte.fileio import atomic

    listed: list[str] = []
    real = os.scandir

    def counting(path: Any) -> Any:
        listed.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(atomic.os, "scandir", counting)
    for i in range(50):
        with atomic.atomic_output(tmp_path / f"out-{i}.bin") as f:
            f.write(b"x")
    assert listed.count(str(tmp_path)) == 1
