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
from tools.hostile import nested_fat_delegates

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


def test_the_walk_stops_at_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Work bounded by the limit, not by the file: 10,000 levels read 5 containers."""
    seen: list[int] = []
    walk = fat_delegate._container_too_deep

    def counted(buf: memoryview, depth: int, at: int, path: str) -> object:
        seen.append(depth)
        return walk(buf, depth, at, path)

    monkeypatch.setattr(fat_delegate, "_container_too_deep", counted)
    assert _findings(_deep(10_000))
    assert seen == list(range(1, MAX_FAT_DELEGATE_DEPTH + 2))


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
