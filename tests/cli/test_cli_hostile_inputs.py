"""Hostile inputs to the command line (issue 33): a named-data key past the segment table (P1)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from fatpte.cli.main import main
from tests.paths import ROOT

VECTORS = ROOT / "specs" / "vectors"
INDEX = json.loads((VECTORS / "index.json").read_text())["vectors"]
BAD_SEGMENT = "v2-named-data-bad-segment.nfat"  # key 'w.b' names segment 99 of 2
KEYS = [str(VECTORS / k) for k in INDEX["v2-signed.nfat"]["verify"]["keys"]]


@pytest.mark.parametrize("args", [
    ["thin", "{f}", "--device", "x86-64-v3", "-o", "{d}/t.nfat"],
    ["thin", "{f}", "--name", "cpu", "-o", "{d}/t.nfat"],
    ["unpack", "{f}", "-d", "{d}/u"],
    ["coverage", "{f}"],
    ["extract", "{f}", "--name", "cpu", "-o", "{d}/e.bin", "--data-out", "{d}/e.ptd"],
    ["add", "{f}", "extra:cuda={d}/payload.bin", "-o", "{d}/a.nfat"],
    ["remove", "{f}", "--name", "gpu", "-o", "{d}/r.nfat"],
    ["replace", "{f}", "{d}/payload.bin", "--name", "gpu", "-o", "{d}/p.nfat"],
    ["verify", "{f}", "--key", KEYS[0], "--key", KEYS[1]],
    ["verify", "{f}", "--key", KEYS[0], "--signature", "{d}/payload.bin"],
], ids=lambda a: " ".join(a[:1] + [x for x in a[2:] if x.startswith("--")][:1]))
def test_a_key_past_the_segment_table_is_e0414_on_every_path(args: list[str], tmp_path: Path) -> None:
    """Every command that reads, copies or hashes named data reports the key whose segment index is
    past the table as validate does (E0414 at the manifest, field manifest.named_data[1].segment),
    with exit 1, never a traceback, and writes nothing."""
    f = tmp_path / "c.nfat"
    shutil.copy(VECTORS / BAD_SEGMENT, f)
    (tmp_path / "payload.bin").write_bytes(b"payload")
    want = INDEX[BAD_SEGMENT]["error"]
    assert (want["code"], want["field"]) == ("E0414", "manifest.named_data[1].segment")
    result = CliRunner().invoke(main, [a.format(f=f, d=tmp_path) for a in args])
    assert result.exit_code == 1, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit)
    assert f"E0414 at {want['offset']:#x} (manifest.named_data[1].segment)" in result.output, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.nfat", "payload.bin"]
