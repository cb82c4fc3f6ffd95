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


def _bundle(name: str) -> bytes:
    data = (VECTORS / name).read_bytes()
    slot = 64  # the signature slot: signature_offset u64, signature_size u32
    off, size = int.from_bytes(data[slot:slot + 8], "little"), int.from_bytes(data[slot + 8:slot + 12], "little")
    return data[off:off + size]


def test_the_unsigned_hint_is_escaped_before_it_reaches_the_terminal(tmp_path: Path) -> None:
    """S7: the bundle's hint is not signed; a newline in it must not forge an output line."""
    doc = json.loads(_bundle("v2-sig-untrusted-key.nfat"))
    doc["verificationMaterial"]["publicKey"]["hint"] = "x\nv2.nfat: verified\x1b[2K"
    sig = tmp_path / "forged.sig"
    sig.write_bytes(json.dumps(doc).encode())
    result = CliRunner().invoke(main, ["verify", str(VECTORS / "v2-named-data.nfat"), "--key", KEYS[0],
                                       "--signature", str(sig), "-q"])
    assert result.exit_code == 5 and "E1305" in result.output, result.output
    assert not any(line.startswith("v2.nfat: verified") for line in result.output.splitlines()), result.output
    assert "\x1b" not in result.output and "'x\\x0av2.nfat: verif" in result.output, result.output
    as_json = CliRunner().invoke(main, ["verify", str(VECTORS / "v2-named-data.nfat"), "--key", KEYS[0],
                                        "--signature", str(sig), "-q", "--json"])
    assert json.loads(as_json.output)["findings"][0]["code"] == "E1305"
