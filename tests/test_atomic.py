"""fatpte.atomic: outputs appear whole or not at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from fatpte.atomic import atomic_output
from fatpte.errors import ErrorCode, FatpteError


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
