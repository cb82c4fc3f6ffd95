"""docs/cli.md is generated from the commands and up to date; the JSON fields it documents are
exactly the fields the commands print; the pre-commit hooks and the CI doc use real options."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

import fatpte
from fatpte.cli.main import main
from fatpte.cli.schema import JSON_FIELDS
from tests.paths import ROOT


def test_cli_md_is_up_to_date() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_cli_docs.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_cli_md_documents_every_command() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for name in main.commands:
        assert f"### fatpte {name}\n" in text


def fields(key: str) -> set[str]:
    return {f for f, _ in JSON_FIELDS[key][1]}


def test_documented_json_fields_are_the_real_ones(tmp_path: Path) -> None:
    a = fatpte.pack([fatpte.Specialization("x", b"1" * 9)], tmp_path / "a.nfat")
    b = fatpte.pack([fatpte.Specialization("y", b"2")], tmp_path / "b.nfat")
    data = json.loads(CliRunner().invoke(main, ["info", "--json", "--map", str(a)]).stdout)
    assert set(data) == fields("info")
    assert set(data["entries"][0]) == fields("info.entries[]")
    assert all(set(r) == fields("info.map[]") for r in data["map"])
    plain = json.loads(CliRunner().invoke(main, ["info", "--json", str(a)]).stdout)
    assert set(plain) == fields("info") - {"map"}
    bad = tmp_path / "bad.nfat"
    bad.write_bytes(a.read_bytes()[:-1])
    report = json.loads(CliRunner().invoke(main, ["validate", "--json", str(bad)]).stdout)
    assert set(report) == fields("validate")
    assert set(report["findings"][0]) == fields("validate.findings[]")
    d = json.loads(CliRunner().invoke(main, ["diff", "--json", str(a), str(b)]).stdout)
    assert set(d) == fields("diff")
    u = json.loads(CliRunner().invoke(main, ["unpack", "--json", str(a), "-o", str(tmp_path / "u")]).stdout)
    assert set(u) == fields("unpack")


def test_documented_json_fields_of_the_targeting_verbs(tmp_path: Path) -> None:
    c = fatpte.pack([fatpte.Specialization("cpu", b"1", named_data={"w": b"w", "w2": b"w"}),
                     fatpte.Specialization("gpu", b"2", requires={"accelerators": [{"kind": "cuda"}]})],
                    tmp_path / "c.nfat")
    data = json.loads(CliRunner().invoke(main, ["info", "--json", str(c)]).stdout)
    assert set(data["named_data"][1]) == fields("info.named_data[]")
    assert set(data["segments"][0]) == fields("info.segments[]")
    profile = tmp_path / "d.json"
    profile.write_text(CliRunner().invoke(main, ["device", "--json"]).stdout)
    # executorch_backends only where ExecuTorch's runtime is installed (never in .venv); the
    # identity only where the OS tells it.
    optional = {"executorch_backends", "cpu_cores", "kernel", "os_release", "machine", "soc"}
    assert fields("device") - optional <= set(json.loads(profile.read_text())) <= fields("device")
    sel = json.loads(CliRunner().invoke(main, ["select", "--json", str(c), "--device", str(profile)]).stdout)
    assert set(sel) == fields("select")
    assert set(sel["verdicts"][0]) == fields("select.verdicts[]")
    cov = json.loads(CliRunner().invoke(main, ["coverage", "--json", str(c), "--devices", str(profile)]).stdout)
    assert set(cov) == fields("coverage")
    assert set(cov["devices"][0]) == fields("coverage.devices[]")


def test_pre_commit_hooks_run(tmp_path: Path) -> None:
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    entries = re.findall(r"^\s+entry: (.+)$", hooks, re.MULTILINE)
    assert len(entries) == 2
    good = fatpte.pack([fatpte.Specialization("x", b"1")], tmp_path / "good.nfat")
    plain = tmp_path / "model.pte"
    plain.write_bytes(b"\x1c\0\0\0ET12" + bytes(24))  # a plain ExecuTorch program, staged alongside
    for entry in entries:
        argv = shlex.split(entry)
        assert argv[:2] == ["fatpte", "validate"]
        result = CliRunner().invoke(main, [*argv[1:], str(good), str(plain)])
        assert result.exit_code == 0, result.output
        assert result.stdout.splitlines()[-1].startswith("checked 1 file: 1 valid")
    # Without the flag, a named plain program is checked, and is not a container.
    assert CliRunner().invoke(main, ["validate", str(plain)]).exit_code == 1


def test_ci_doc_commands_use_real_options(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    commands = {c.strip() for c in re.findall(r"^\s*(?:run: |- )?(fatpte validate[^\n>`]*)", text, re.MULTILINE)}
    assert "fatpte validate --strict --quiet ." in commands
    fatpte.pack([fatpte.Specialization("x", b"1")], tmp_path / "m.nfat")
    for command in commands:
        argv = [a if a != "." else str(tmp_path) for a in shlex.split(command)[1:]]
        result = CliRunner().invoke(main, argv)
        assert result.exit_code == 0, (command, result.output)
