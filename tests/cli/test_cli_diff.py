"""`fatpte diff`: entries added, removed and changed, size delta, --json fields, --exit-code."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import fatpte
from fatpte.cli.main import main


def test_diff_reports_each_kind_of_change(tmp_path: Path) -> None:
    a = fatpte.pack([fatpte.Specialization("keep", b"k"), fatpte.Specialization("gone", b"g"),
                     fatpte.Specialization("edit", b"old")], tmp_path / "a.nfat")
    b = fatpte.pack([fatpte.Specialization("keep", b"k"), fatpte.Specialization("edit", b"newer", priority=2),
                     fatpte.Specialization("new", b"n")], tmp_path / "b.nfat")
    result = CliRunner().invoke(main, ["diff", "--json", str(a), str(b)])
    assert result.exit_code == 0
    d = json.loads(result.stdout)
    assert [e["name"] for e in d["added"]] == ["new"]
    assert [e["name"] for e in d["removed"]] == ["gone"]
    assert len(d["changed"]) == 1
    fields = d["changed"][0]["fields"]
    assert d["changed"][0]["name"] == "edit"
    assert fields["size"] == {"old": 3, "new": 5}
    assert fields["priority"] == {"old": 0, "new": 2}
    assert set(fields) == {"size", "checksum", "priority"}
    assert d["size"] == {"old": a.stat().st_size, "new": b.stat().st_size,
                         "delta": b.stat().st_size - a.stat().st_size}
    assert d["unchanged"] is False
    text = CliRunner().invoke(main, ["diff", str(a), str(b)])
    assert "+ new" in text.stdout and "- gone" in text.stdout and "~ edit: size 3 -> 5" in text.stdout
    assert CliRunner().invoke(main, ["diff", "--exit-code", str(a), str(b)]).exit_code == 1


def test_diff_of_equal_containers(tmp_path: Path) -> None:
    a = fatpte.pack([fatpte.Specialization("x", b"1")], tmp_path / "a.nfat")
    v1 = fatpte.pack([fatpte.Specialization("x", b"1")], tmp_path / "v1.nfat", version=1)
    same = CliRunner().invoke(main, ["diff", "--exit-code", str(a), str(a)])
    assert same.exit_code == 0 and "no entry changed" in same.stdout
    # v1 stores no checksum: diff computes it, so only the version and layout differ.
    d = json.loads(CliRunner().invoke(main, ["diff", "--json", str(v1), str(a)]).stdout)
    assert d["version"] == {"old": 1, "new": 2}
    assert [c["fields"] for c in d["changed"]] == [{"alignment": {"old": 1, "new": 64}}]


def test_diff_of_a_missing_file_exits_4(tmp_path: Path) -> None:
    a = fatpte.pack([fatpte.Specialization("x", b"1")], tmp_path / "a.nfat")
    assert CliRunner().invoke(main, ["diff", str(a), str(tmp_path / "no.nfat")]).exit_code == 4


def test_diff_compares_requirements_signature_and_named_data(tmp_path: Path) -> None:
    sig = {"methods": [{"name": "forward", "inputs": [{"dtype": "float32", "shape": [1]}], "outputs": []}]}
    a = fatpte.pack([fatpte.Specialization("cpu", b"p", requires={"arch": ["x86_64"]}, signature=sig,
                                           named_data={"w": b"1" * 10, "gone": b"g"})], tmp_path / "a.nfat")
    sig2 = {"methods": [{"name": "forward", "inputs": [{"dtype": "float16", "shape": [1]}], "outputs": []}]}
    b = fatpte.pack([fatpte.Specialization("cpu", b"p", requires={"arch": ["aarch64"]}, signature=sig2,
                                           named_data={"w": b"2" * 12, "new": b"n"})], tmp_path / "b.nfat")
    result = CliRunner().invoke(main, ["diff", "--json", str(a), str(b)])
    d = json.loads(result.stdout)
    fields = d["changed"][0]["fields"]
    assert fields["requires"] == {"old": {"arch": ["x86_64"]}, "new": {"arch": ["aarch64"]}}
    assert fields["signature"]["old"]["methods"][0]["inputs"][0]["dtype"] == "float32"
    assert fields["named_data"] == {"old": ["w", "gone"], "new": ["w", "new"]}  # in the order given
    assert "size" not in fields and "checksum" not in fields
    nd = d["named_data"]
    assert [k["key"] for k in nd["added"]] == ["new"] and [k["key"] for k in nd["removed"]] == ["gone"]
    assert nd["changed"] == [{"key": "w", "fields": {"size": {"old": 10, "new": 12},
                                                     "checksum": nd["changed"][0]["fields"]["checksum"]}}]
    text = CliRunner().invoke(main, ["diff", str(a), str(b)]).stdout
    assert "~ cpu: requires" in text and "+ named data 'new' (1 bytes)" in text and "~ named data 'w'" in text
