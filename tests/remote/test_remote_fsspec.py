"""Any scheme fsspec reads works through its own filesystem (here file:// and memory://, which
need no server): the same metadata, payloads and validation as the local file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import fatpte
from fatpte.errors import ErrorCode, FatpteError


@pytest.fixture
def container(tmp_path: Path) -> Path:
    return fatpte.pack([fatpte.Specialization("portable", os.urandom(1000)),
                        fatpte.Specialization("xnnpack", os.urandom(200_000), priority=1)], tmp_path / "c.nfat")


def test_file_and_memory_urls(container: Path) -> None:
    import fsspec

    fsspec.filesystem("memory").pipe("/fatpte-test/c.nfat", container.read_bytes())
    for url in (container.as_uri(), "memory://fatpte-test/c.nfat"):
        with fatpte.open(url) as c, fatpte.open(container) as local:
            assert isinstance(c, fatpte.RemoteContainer)
            assert c.entries == local.entries
            assert bytes(c.payload("xnnpack", verify=True)) == bytes(local.payload("xnnpack"))
            # the file's metadata, the prefix, the payload's bytes past it (its first came with it)
            entry = c.entry("xnnpack")
            assert entry.offset < 65536 < entry.end
            assert (c.stats.requests, c.stats.received) == (3, entry.end)
        assert fatpte.validate(url).to_json()["findings"] == []


def test_a_missing_file_and_storage_options_on_a_path(container: Path) -> None:
    with pytest.raises(FatpteError) as info:
        fatpte.open(container.with_name("missing.nfat").as_uri())
    assert info.value.code is ErrorCode.REMOTE_NOT_FOUND
    with pytest.raises(FatpteError) as info:
        fatpte.open(container, headers={"x": "y"})
    assert info.value.code is ErrorCode.INVALID_ARGUMENT


def test_the_environment_sets_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    from fatpte.fileio.remote import Policy

    assert Policy.from_environment().deadline == 3600.0  # the documented default
    monkeypatch.setenv("FATPTE_REMOTE_TIMEOUT", "2.5")
    monkeypatch.setenv("FATPTE_REMOTE_RANGE_SIZE", str(8 << 20))
    monkeypatch.setenv("FATPTE_REMOTE_DEADLINE", "90")
    assert Policy.from_environment() == Policy(timeout=2.5, range_size=8 << 20, deadline=90.0)
    for bad in ("nan", "inf", "-1", "soon"):
        monkeypatch.setenv("FATPTE_REMOTE_DEADLINE", bad)
        with pytest.raises(FatpteError) as info:
            Policy.from_environment()
        assert info.value.code is ErrorCode.INVALID_ARGUMENT and info.value.field == "FATPTE_REMOTE_DEADLINE"
    monkeypatch.delenv("FATPTE_REMOTE_DEADLINE")
    monkeypatch.setenv("FATPTE_REMOTE_ATTEMPTS", "0")
    with pytest.raises(FatpteError) as info:
        Policy.from_environment()
    assert info.value.code is ErrorCode.INVALID_ARGUMENT and info.value.field == "FATPTE_REMOTE_ATTEMPTS"
