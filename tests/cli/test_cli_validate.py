"""`fatpte validate`: files and directories, one line per finding, the summary, --strict, --json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import fatpte
from fatpte.cli.main import main
from fatpte.cli.paths import containers
from tests.paths import ET_FIXTURES


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A repository with valid and invalid containers, a warning, and files to skip."""
    root = tmp_path / "repo"
    (root / "models" / "deep").mkdir(parents=True)
    (root / ".git").mkdir()
    good = fatpte.pack([fatpte.Specialization("cpu", b"p" * 64)], root / "models" / "good.nfat")
    data = bytearray(good.read_bytes())
    # A flipped payload byte: the payload checksum no longer matches.
    assert data[-1] == ord("p")
    data[-1] ^= 0xFF
    (root / "models" / "flipped.nfat").write_bytes(bytes(data))
    # Cut short: the header states more bytes than the file has.
    (root / "models" / "deep" / "cut.nfat").write_bytes(good.read_bytes()[:-8])
    # A v1 container with trailing bytes: valid, with one warning.
    v1 = fatpte.pack([fatpte.Specialization("cpu", b"abc")], root / "models" / "deep" / "v1.pte", version=1)
    v1.write_bytes(v1.read_bytes() + b"\0")
    (root / "models" / "plain.pte").write_bytes(b"\x1c\0\0\0ET12" + bytes(40))  # a plain program: skipped
    (root / "models" / "notes.txt").write_text("not a container")
    (root / ".git" / "hidden.nfat").write_bytes(b"junk")  # in a dot directory: skipped
    return root


def test_directory_discovery(tree: Path) -> None:
    found = [Path(p).relative_to(tree).as_posix() for p in containers([tree])]
    assert found == ["models/flipped.nfat", "models/good.nfat", "models/deep/cut.nfat", "models/deep/v1.pte"]


def test_mixed_directory_prints_one_line_per_finding_and_exits_1(tree: Path) -> None:
    result = CliRunner().invoke(main, ["validate", str(tree)])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    flipped = tree / "models" / "flipped.nfat"
    cut = tree / "models" / "deep" / "cut.nfat"
    v1 = tree / "models" / "deep" / "v1.pte"
    assert len(lines) == 4
    assert lines[0].startswith(f"{flipped}: E0208 at ")
    assert "(entries[0].checksum)" in lines[0]
    assert lines[1].startswith(f"{cut}: E0104 at 0x20 (header.container_size): ")
    assert lines[2].startswith(f"{v1}: E0504 warning at ")
    assert lines[3] == "checked 4 files: 2 valid, 2 invalid; 2 errors, 1 warning"
    assert result.stderr == ""


def test_all_valid_exits_0_and_strict_fails_on_warnings(tree: Path) -> None:
    good = tree / "models" / "good.nfat"
    v1 = tree / "models" / "deep" / "v1.pte"
    result = CliRunner().invoke(main, ["validate", str(good), str(v1)])
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == "checked 2 files: 2 valid, 0 invalid; 0 errors, 1 warning"
    strict = CliRunner().invoke(main, ["validate", "--strict", str(good), str(v1)])
    assert strict.exit_code == 1
    assert strict.stdout.splitlines()[-1] == "checked 2 files: 1 valid, 1 invalid; 0 errors, 1 warning"


def test_json_is_one_object_per_file(tree: Path) -> None:
    result = CliRunner().invoke(main, ["validate", "--json", str(tree)])
    assert result.exit_code == 1
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    assert [Path(o["path"]).name for o in objects] == ["flipped.nfat", "good.nfat", "cut.nfat", "v1.pte"]
    assert [o["valid"] for o in objects] == [False, True, False, True]
    assert objects[0]["findings"][0]["code"] == "E0208"
    assert objects[0]["findings"][0]["field"] == "entries[0].checksum"
    assert objects[2]["findings"][0] == {**objects[2]["findings"][0], "code": "E0104", "offset": 0x20,
                                         "name": "TRUNCATED_CONTAINER", "severity": "error"}
    assert objects[3]["findings"][0]["severity"] == "warning"
    assert objects[1] == {"path": str(tree / "models" / "good.nfat"), "ok": True, "valid": True, "version": 2,
                          "size": (tree / "models" / "good.nfat").stat().st_size, "findings": [], "omitted": {}}


def test_unreadable_file_exits_4_and_others_are_still_checked(tree: Path) -> None:
    missing = tree / "missing.nfat"
    result = CliRunner().invoke(main, ["validate", str(missing), str(tree / "models" / "good.nfat")])
    assert result.exit_code == 4
    assert result.stderr.startswith(f"{missing}: E0801")
    assert result.stdout.splitlines()[-1] == "checked 2 files: 1 valid, 0 invalid, 1 unreadable; 0 errors, 0 warnings"


def test_no_arguments_is_a_usage_error() -> None:
    assert CliRunner().invoke(main, ["validate"]).exit_code == 2


def test_files_keep_their_spelling_and_are_checked_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    fatpte.pack([fatpte.Specialization("a", b"x")], tmp_path / "c.nfat")
    (tmp_path / "d").mkdir()
    fatpte.pack([fatpte.Specialization("a", b"y")], tmp_path / "d" / "e.nfat")
    assert list(containers(["./c.nfat", "c.nfat", "./d/", "d/e.nfat"])) == ["./c.nfat", "./d/e.nfat"]


def test_a_directory_without_containers_fails_unless_allowed(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "notes.txt").write_text("no container here")
    result = CliRunner().invoke(main, ["validate", str(tmp_path / "models")])
    assert result.exit_code == 1
    assert result.stdout == "checked 0 files: 0 valid, 0 invalid; 0 errors, 0 warnings\n"
    assert result.stderr == (f"{tmp_path / 'models'}: no container in this directory (no *.nfat file, no *.pte "
                             "file holding one); pass --allow-empty if that is expected\n")
    allowed = CliRunner().invoke(main, ["validate", "--allow-empty", str(tmp_path / "models")])
    assert (allowed.exit_code, allowed.stderr) == (0, "")


def test_an_empty_directory_fails_beside_valid_containers(tree: Path, tmp_path: Path) -> None:
    good = tree / "models" / "good.nfat"
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(main, ["validate", str(good), str(tmp_path / "empty")])
    assert result.exit_code == 1
    assert result.stdout == "checked 1 file: 1 valid, 0 invalid; 0 errors, 0 warnings\n"
    assert result.stderr.startswith(f"{tmp_path / 'empty'}: no container in this directory")


def test_named_plain_programs_skipped_on_request_are_no_failure(tree: Path) -> None:
    result = CliRunner().invoke(main, ["validate", "--skip-plain-pte", str(tree / "models" / "plain.pte")])
    assert (result.exit_code, result.stderr) == (0, "")


@pytest.mark.parametrize(("name", "content", "says"), [
    ("notes.txt", b"just some text, long enough", ("not a container, and not an ExecuTorch file: it starts with "
                                                   "b'just', not b'NFAT'")),
    ("model.nfat", b"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n",
     "not a container: a Git LFS pointer file (fetch the real file with `git lfs pull`)"),
    ("w.ptd", (ET_FIXTURES / "mlp_native_external.native_weights.ptd").read_bytes(),
     "not a container: an ExecuTorch data file (.ptd, FT01)"),
    ("m.ptn", (ET_FIXTURES / "mlp.ptn").read_bytes(),
     "not a container: an ExecuTorch native package (.ptn); `fatpte pack` packs it as an entry"),
])
def test_a_file_that_is_no_container_is_reported_as_what_it_is(tmp_path: Path, name: str, content: bytes,
                                                                says: str) -> None:
    (tmp_path / name).write_bytes(content)
    result = CliRunner().invoke(main, ["validate", str(tmp_path / name)])
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == f"{tmp_path / name}: E0101 at 0x0 (header.magic): {says}"
