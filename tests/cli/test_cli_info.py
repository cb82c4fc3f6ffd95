"""`fatpte info`: the summary, the byte map with padding and gaps, JSON fields, exit codes."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import fatpte
from fatpte.cli.main import main
from fatpte.ops.info import byte_map


@pytest.fixture
def container(tmp_path: Path) -> Path:
    return fatpte.pack([fatpte.Specialization("xnnpack", b"x" * 100),
                        fatpte.Specialization("xnnpack", b"x" * 100, name="xnnpack-copy", priority=5),
                        fatpte.Specialization("cuda", b"c" * 10, alignment=4096)], tmp_path / "c.nfat")


def test_info_text_lists_every_entry(container: Path) -> None:
    result = CliRunner().invoke(main, ["info", str(container)])
    assert result.exit_code == 0, result.stderr
    assert "NFAT version 2, 3 entries" in result.stdout
    for name in ("xnnpack", "xnnpack-copy", "cuda"):
        assert name in result.stdout
    assert "  identical payloads are stored once: 100 B saved" in result.stdout.splitlines()


def test_info_json_fields(container: Path) -> None:
    result = CliRunner().invoke(main, ["info", "--json", str(container)])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["version"] == 2
    assert data["size"] == container.stat().st_size
    assert data["entry_count"] == 3 and data["segment_count"] == 0 and data["manifest"] is False
    assert data["payload_bytes"] == 210 and data["payload_bytes_stored"] == 110
    cuda = data["entries"][2]
    assert (cuda["name"], cuda["backend_id"], cuda["size"], cuda["alignment"]) == ("cuda", "cuda", 10, 4096)
    assert cuda["offset"] % 4096 == 0
    assert data["entries"][1]["priority"] == 5
    assert data["entries"][0]["shared_with"] == ["xnnpack-copy"]
    assert "map" not in data


def test_info_map_covers_every_byte_in_order(container: Path) -> None:
    result = CliRunner().invoke(main, ["info", "--json", "--map", str(container)])
    rows = json.loads(result.stdout)["map"]
    assert rows[0]["start"] == 0
    assert all(a["end"] == b["start"] for a, b in itertools.pairwise(rows))  # no byte missed, none twice
    assert rows[-1]["end"] == container.stat().st_size
    kinds = [r["kind"] for r in rows]
    assert kinds == ["header", "entry_table", "padding", "payload", "padding", "payload"]
    data = container.read_bytes()
    for r in rows:
        if r["kind"] == "padding":
            assert data[r["start"]:r["end"]] == bytes(r["size"])


def test_info_map_text(container: Path) -> None:
    result = CliRunner().invoke(main, ["info", "--map", str(container)])
    assert result.exit_code == 0
    assert "payload of 'xnnpack', 'xnnpack-copy'" in result.stdout
    assert "padding" in result.stdout


def test_byte_map_v1_marks_gaps_unclaimed(tmp_path: Path) -> None:
    path = fatpte.pack([fatpte.Specialization("a", b"aaaa")], tmp_path / "v1.nfat", version=1)
    path.write_bytes(path.read_bytes() + b"\x01\x02")  # trailing bytes no payload claims
    with fatpte.open(path) as c:
        rows = byte_map(c)
    assert [(r.kind, r.size) for r in rows] == [("header", 12), ("entry_table", 48), ("payload", 4),
                                                 ("unclaimed", 2)]


def test_info_on_a_broken_file_exits_1_with_the_finding(container: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.nfat"
    bad.write_bytes(container.read_bytes()[:-1])
    result = CliRunner().invoke(main, ["info", str(bad)])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"{bad}: E0104 at 0x20 (header.container_size): ")


def test_info_on_a_missing_file_exits_4(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["info", str(tmp_path / "nope.nfat")])
    assert result.exit_code == 4
    assert "E0801" in result.stderr


def test_info_of_a_container_with_named_data_and_a_manifest(tmp_path: Path) -> None:
    w = b"w" * 1000
    path = fatpte.pack([
        fatpte.Specialization("cpu", b"c" * 10, named_data={"a.weight": w, "tied": w},
                              requires={"arch": ["x86_64"], "cpu_features": ["avx2", "fma"]}),
        fatpte.Specialization("gpu", b"g" * 10, named_data=["tied", "bias"],
                              requires={"accelerators": [{"kind": "cuda", "targets": ["sm_80"]}],
                                        "min_memory_bytes": 2 << 30}),
    ], tmp_path / "m.nfat", named_data={"bias": b"b" * 5})
    data = json.loads(CliRunner().invoke(main, ["info", "--json", "--map", str(path)]).stdout)
    assert data["manifest"] is True and data["segment_count"] == 2
    assert data["named_data"] == [{"key": "a.weight", "segment": 1, "size": 1000, "alias_of": None},
                                  {"key": "bias", "segment": 0, "size": 5, "alias_of": None},
                                  {"key": "tied", "segment": 1, "size": 1000, "alias_of": "a.weight"}]
    assert (data["named_data_bytes"], data["named_data_bytes_stored"]) == (2005, 1005)
    cpu, gpu = data["entries"]
    assert cpu["requires"] == {"arch": ["x86_64"], "cpu_features": ["avx2", "fma"]}
    assert cpu["requires_text"] == "arch=x86_64, +avx2+fma"
    assert gpu["requires_text"] == "cuda sm_80, mem>=2 GiB"
    assert gpu["named_data"] == ["tied", "bias"]
    rows = data["map"]
    assert all(a["end"] == b["start"] for a, b in itertools.pairwise(rows))
    assert rows[-1]["end"] == data["size"]
    kinds = [r["kind"] for r in rows if r["kind"] != "padding"]
    assert kinds == ["header", "entry_table", "segment_table", "manifest", "payload", "payload", "segment",
                     "segment"]
    text = CliRunner().invoke(main, ["info", str(path)]).stdout
    assert "named data: 3 keys in 2 segments, 2.0 KiB referenced, 1005 B stored (1000 B saved by sharing)" in text
    assert "arch=x86_64, +avx2+fma" in text


def test_info_text_escapes_strings_from_the_file_and_shortens_long_keys(tmp_path: Path) -> None:
    long_key = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    path = fatpte.pack([fatpte.Specialization("cpu", b"c" * 10, named_data={"evil\x1b[2Jkey": b"w" * 8,
                                                                            long_key: b"v" * 2000})],
                       tmp_path / "k.nfat")
    text = CliRunner().invoke(main, ["info", str(path)]).stdout
    assert "\x1b" not in text
    assert "evil\\x1b[2Jkey" in text
    assert long_key not in text
    assert "9f86d081884c7d659a2feaa0c...b0f00a08" not in text  # the cut is first 25 and last 12
    assert "9f86d081884c7d659a2feaa0c...6c15b0f00a08" in text
    assert "2.0 KiB" in text
    data = json.loads(CliRunner().invoke(main, ["info", "--json", str(path)]).stdout)
    assert {k["key"] for k in data["named_data"]} == {"evil\x1b[2Jkey", long_key}  # --json keeps them whole
    assert sorted(k["size"] for k in data["named_data"]) == [8, 2000]
