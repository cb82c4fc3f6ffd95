"""Fat delegates nest at most MAX_FAT_DELEGATE_DEPTH levels (specs/executorch.md section 8, issue 33
F1): `fatpte validate` reports the first container past the limit with E1010, at its first byte
and the path that reaches it, in a .pte and in a container's program entry alike, and looks no
deeper, so 10,000 nested wrappers cost what 5 do. tests/loader/test_fat_delegate_runtime.py holds
the runtime's half."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import fatpte
from fatpte.errors import ErrorCode
from fatpte.executorch.pte import read_program
from fatpte.format.layout import MAX_FAT_DELEGATE_DEPTH
from fatpte.ops import fat_delegate
from tests.paths import ROOT
from tests.support import hostile
from tests.support.hostile import nested_fat_delegates

FIXTURE = ROOT / "tests" / "fixtures" / "executorch" / "mlp_fat.pte"
FATPTE = [sys.executable, "-m", "fatpte"]
LEVEL = 60  # a version 1 wrapper of one entry


def _deep(depth: int) -> bytes:
    return nested_fat_delegates(FIXTURE.read_bytes(), depth)


def _findings(data: bytes) -> list[tuple[ErrorCode, int | None, str | None]]:
    reports = fat_delegate.validate_nfat_delegates(read_program(data))
    return [(f.code, f.offset, f.field) for _, r in reports for f in r.findings]


def test_the_limit_is_four() -> None:
    assert MAX_FAT_DELEGATE_DEPTH == 4


@pytest.mark.parametrize("depth", [1, 2, MAX_FAT_DELEGATE_DEPTH])
def test_up_to_the_limit_is_valid(depth: int) -> None:
    assert _findings(_deep(depth)) == []


@pytest.mark.parametrize("depth", [MAX_FAT_DELEGATE_DEPTH + 1, 50, 10_000])
def test_past_the_limit_is_e1010_at_the_first_container_too_deep(depth: int) -> None:
    data = _deep(depth)
    (delegate,) = [d for m in read_program(data).methods for d in m.delegates]
    path = "delegates[0].payload" + ".entries[0].payload" * MAX_FAT_DELEGATE_DEPTH
    assert _findings(data) == [(ErrorCode.FAT_DELEGATE_TOO_DEEP, delegate.offset + MAX_FAT_DELEGATE_DEPTH * LEVEL, path)]
    assert data[delegate.offset + MAX_FAT_DELEGATE_DEPTH * LEVEL:][:4] == b"NFAT"


def _walked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The depth of every container the nesting walk is asked about, as it asks."""
    seen: list[int] = []
    walk = fat_delegate._container_too_deep

    def counted(buf: memoryview, depth: int, at: int, path: str, clean: fat_delegate.Clean) -> object:
        seen.append(depth)
        return walk(buf, depth, at, path, clean)

    monkeypatch.setattr(fat_delegate, "_container_too_deep", counted)
    return seen


def test_the_walk_stops_at_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Work bounded by the limit, not by the file: 10,000 levels read 5 containers."""
    seen = _walked(monkeypatch)
    assert _findings(_deep(10_000))
    assert seen == list(range(1, MAX_FAT_DELEGATE_DEPTH + 2))


def _too_deep(data: bytes) -> list[tuple[ErrorCode, int | None, str | None]]:
    return [f for f in _findings(data) if f[0] == ErrorCode.FAT_DELEGATE_TOO_DEEP]


def _read_structure_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    read = fat_delegate.read_structure

    def counted(buf: memoryview) -> object:
        calls.append(len(buf))
        return read(buf)

    monkeypatch.setattr(fat_delegate, "read_structure", counted)
    return calls


@pytest.mark.parametrize("fan", [1, 64])
@pytest.mark.parametrize("version", [1, 2])
def test_entries_sharing_the_level_below_are_walked_once(monkeypatch: pytest.MonkeyPatch, fan: int,
                                                          version: int) -> None:
    """Found by the nested fat-delegate fuzz target's generator (issue 33): `fan` entries of each
    level sharing the level below are fan**k paths through k levels, in a file that grows as
    fan * k. The walk followed every path: 32 entries a level, four levels, a 10 KB valid .pte, took
    47 s. Each container is now read once per depth, however many entries reach it: as many reads
    for 64 entries a level as for one, through wrappers and through nested programs alike."""
    fixture = FIXTURE.read_bytes()
    levels = [(version, [hostile.FAT] * fan), (version, [hostile.PROGRAM] * fan), (version, [hostile.FAT] * fan)]
    calls = _read_structure_calls(monkeypatch)
    assert _too_deep(hostile.fat_tree(fixture, levels)) == []
    assert len(calls) == 4  # the three levels and the program's own container, once each
    calls.clear()
    deeper = [*levels, (version, [hostile.JUNK, hostile.FAT] * (fan // 2 or 1))]
    assert hostile.fat_tree_depth(deeper) == MAX_FAT_DELEGATE_DEPTH + 1
    (finding,) = _too_deep(hostile.fat_tree(fixture, deeper))
    assert finding[0] == ErrorCode.FAT_DELEGATE_TOO_DEEP
    assert finding[2] == hostile.fat_tree_first_too_deep(deeper, 0)
    assert len(calls) == MAX_FAT_DELEGATE_DEPTH


def test_the_command_line_says_so(tmp_path: Path) -> None:
    deep = tmp_path / "deep.pte"
    deep.write_bytes(_deep(10_000))
    proc = subprocess.run([*FATPTE, "validate", str(deep), "--json"], capture_output=True, text=True, check=False)
    assert proc.returncode == 1, proc.stderr
    assert "E1010" in proc.stdout


def test_a_container_counts_its_programs_fat_delegates_from_one(tmp_path: Path) -> None:
    """An entry of a stand-alone container is not inside a fat delegate: its program's fat delegates
    are at depth 1, so the same program is valid or not in a container as on its own."""
    for depth, valid in ((MAX_FAT_DELEGATE_DEPTH, True), (MAX_FAT_DELEGATE_DEPTH + 1, False)):
        program = _deep(depth)
        container = fatpte.pack([fatpte.Specialization("fatpte", program, name="fat")],
                                tmp_path / f"deep{depth}.nfat")
        report = fatpte.validate(container)
        codes = [(f.code, f.field) for f in report.findings if f.code == ErrorCode.FAT_DELEGATE_TOO_DEEP]
        if valid:
            assert codes == [], report.findings
        else:
            assert codes == [(ErrorCode.FAT_DELEGATE_TOO_DEEP, "entries[0].payload.delegates[0].payload"
                              + ".entries[0].payload" * MAX_FAT_DELEGATE_DEPTH)], report.findings


@pytest.mark.parametrize("fan", [1, 64])
def test_regions_from_one_first_byte_are_walked_once(monkeypatch: pytest.MonkeyPatch, fan: int) -> None:
    """Version 1 entries may overlap: `fan` entries each seeing the level below one byte longer than
    the one before are `fan` regions that read as one table. Keyed by region, the walk read that
    table once per entry: 2,000 entries over a 2,000-entry table, a 200 KB .pte, took 23 s. Keyed by
    the first byte, as many reads for 64 entries a level as for one."""
    levels = [(1, [hostile.FAT] * fan)] * 3
    calls = _read_structure_calls(monkeypatch)
    assert _too_deep(hostile.fat_tree(FIXTURE.read_bytes(), levels, overlap=True)) == []
    assert len(calls) == 4
