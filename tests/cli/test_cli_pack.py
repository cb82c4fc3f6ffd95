"""`fatpte pack`: BACKEND=PAYLOAD arguments, versions, alignment, overwrite protection, exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import fatpte
from fatpte.cli.main import main


@pytest.fixture
def payloads(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, data in {"a": b"payload-a" * 10, "b": bytes(range(256)) * 3, "c": b"payload-a" * 10}.items():
        path = tmp_path / f"{name}.bin"
        path.write_bytes(data)
        out[name] = path
    return out


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_pack_writes_the_container_the_library_writes(payloads: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "x.nfat"
    code, stdout, stderr = run("pack", "-o", out, f"xnnpack={payloads['a']}", f"cuda-sm80:cuda={payloads['b']}")
    # Nothing says which of the two a device that could run both should get: only table order.
    assert (code, stderr) == (0, ("fatpte: warning: E0709 (specialization): entries 'xnnpack' and 'cuda-sm80' can "
                                  "both be eligible on one device and tie on priority (0), delegation (neither "
                                  "delegates to a backend) and specificity (0): only their place in the table "
                                  "chooses 'xnnpack'; give the one to prefer a higher priority (`fatpte pack "
                                  "--priority NAME=N`, `priority = N` in a pack.toml)\n"))
    assert "2 entries" in stdout
    expected = fatpte.pack([fatpte.Specialization("xnnpack", payloads["a"]),
                            fatpte.Specialization("cuda", payloads["b"], name="cuda-sm80")], tmp_path / "ref.nfat")
    assert out.read_bytes() == expected.read_bytes()
    with fatpte.open(out) as c:
        assert [(e.name, e.backend_id, e.alignment) for e in c.entries] == [
            ("xnnpack", "xnnpack", 64), ("cuda-sm80", "cuda", 64)]


def test_pack_version_1_and_alignment(payloads: dict[str, Path], tmp_path: Path) -> None:
    code, _, _ = run("pack", "-o", tmp_path / "v1.nfat", "--format-version", "1", f"a={payloads['a']}")
    assert code == 0
    with fatpte.open(tmp_path / "v1.nfat") as c:
        assert c.version == 1
    code, _, _ = run("pack", "-o", tmp_path / "al.nfat", "--align", "4096", f"a={payloads['a']}")
    assert code == 0
    with fatpte.open(tmp_path / "al.nfat") as c:
        assert c.entries[0].alignment == 4096 and c.entries[0].offset % 4096 == 0


@pytest.mark.parametrize("args", [
    [],  # no specialization
    ["nopayload"],  # no '='
    [":cuda=x"],  # empty name
    ["--align", "3", "a=x"],  # not a power of two
    ["--format-version", "3", "a=x"],
])
def test_pack_usage_errors_exit_2(args: list[str], tmp_path: Path) -> None:
    code, stdout, _ = run("pack", "-o", tmp_path / "x.nfat", *args)
    assert code == 2
    assert stdout == ""
    assert not (tmp_path / "x.nfat").exists()


def test_pack_v1_cannot_hold_names_exit_2(payloads: dict[str, Path], tmp_path: Path) -> None:
    code, _, stderr = run("pack", "-o", tmp_path / "x.nfat", "--format-version", "1", f"n:a={payloads['a']}")
    assert code == 2
    assert "E0703" in stderr


def test_pack_bad_backend_id_exits_1(payloads: dict[str, Path], tmp_path: Path) -> None:
    code, _, stderr = run("pack", "-o", tmp_path / "x.nfat", f"ok:bad/id={payloads['a']}")
    assert code == 1
    assert "E0202" in stderr and "specialization[0].backend_id" in stderr


def test_pack_missing_payload_is_an_io_error(tmp_path: Path) -> None:
    code, _, stderr = run("pack", "-o", tmp_path / "x.nfat", f"a={tmp_path / 'missing.bin'}")
    assert code == 4
    assert "E0801" in stderr and "missing.bin" in stderr
    assert list(tmp_path.iterdir()) == []  # no partial output, no temporary file left


def test_pack_refuses_to_overwrite_without_force(payloads: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "x.nfat"
    out.write_bytes(b"keep me")
    code, _, stderr = run("pack", "-o", out, f"a={payloads['a']}")
    assert code == 2
    assert "--force" in stderr
    assert out.read_bytes() == b"keep me"
    code, _, _ = run("pack", "-o", out, "--force", f"a={payloads['a']}")
    assert code == 0
    assert out.read_bytes()[:4] == b"NFAT"


# -- messages that say what to do ----------------------------------------------------------------


def test_a_directory_as_payload_says_so(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    code, out, err = run("pack", "-o", tmp_path / "x.nfat", f"a={tmp_path / 'dir'}")
    assert (code, out) == (4, "")
    assert err == (f"{tmp_path / 'dir'}: E0811: cannot read {tmp_path / 'dir'}: it is a directory, not a regular "
                   "file\n")


def test_a_missing_input_is_named_before_an_existing_output(payloads: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "x.nfat"
    out.write_bytes(b"old")
    code, _, err = run("pack", "-o", out, f"a={tmp_path / 'missing.bin'}")
    assert code == 4
    assert err == f"{tmp_path / 'missing.bin'}: E0801: cannot read {tmp_path / 'missing.bin'}: No such file or directory\n"
    for args in (["extract", tmp_path / "missing.nfat", "--name", "a", "-o", out],
                 ["thin", tmp_path / "missing.nfat", "--name", "a", "-o", out],
                 ["pack", "-o", out, "--from", tmp_path / "missing.toml"]):
        code, _, err = run(*args)
        assert code == 4 and "E0801: cannot read" in err and "the output exists" not in err, args
    assert out.read_bytes() == b"old"


def test_a_duplicate_name_speaks_command_line(payloads: dict[str, Path], tmp_path: Path) -> None:
    code, _, err = run("pack", "-o", tmp_path / "x.nfat", f"a={payloads['a']}", f"a={payloads['b']}")
    assert code == 1
    assert err == ("fatpte: E0206 (specialization[1].name): specialization[1]: name 'a' is already used by "
                   "specialization[0]; give each variant its own name (NAME:a=PAYLOAD on the command line, "
                   "name = \"...\" in a pack.toml)\n")


def test_version_1_of_programs_is_executorchs_layout_byte_for_byte(tmp_path: Path) -> None:
    # Version 1 has no manifest: each program is its file under its backend id, nothing else
    # (specs/nfat.md section 3.5: the header, the entries, the payloads back to back).
    import struct

    from tests.paths import ET_FIXTURES

    programs = [ET_FIXTURES / "mlp_xnnpack.pte", ET_FIXTURES / "mlp_portable.pte", ET_FIXTURES / "mlp.ptn"]
    code, stdout, err = run("pack", "--format-version", "1", "-o", tmp_path / "v1.nfat", *programs)
    assert (code, err) == (0, "")
    payloads = [p.read_bytes() for p in programs]
    expected = b"NFAT" + struct.pack("<II", 1, 3)
    offset = 0
    for backend, payload in zip((b"xnnpack", b"portable", b"native"), payloads):
        expected += backend.ljust(32, b"\0") + struct.pack("<QQ", offset, len(payload))
        offset += len(payload)
    expected += b"".join(payloads)
    assert (tmp_path / "v1.nfat").read_bytes() == expected
    assert stdout == f"wrote {tmp_path / 'v1.nfat'}: version 1, 3 entries, {len(expected)} bytes\n"
    assert fatpte.validate(tmp_path / "v1.nfat").ok
    # A backend id of one's own is fine; a name is not (version 1 has none).
    code, _, err = run("pack", "--format-version", "1", "-o", tmp_path / "x.nfat",
                       f"xnnpack-avx2={programs[0]}", f"cpu:portable={programs[1]}")
    assert code == 2 and "E0703" in err and "version 1 has no entry names" in err


def test_version_1_still_checks_that_the_programs_are_one_program(tmp_path: Path) -> None:
    from tests.paths import ET_FIXTURES

    programs = [ET_FIXTURES / "add_xnnpack.pte", ET_FIXTURES / "mlp_portable.pte"]
    code, _, err = run("pack", "--format-version", "1", "-o", tmp_path / "x.nfat", *programs)
    assert code == 1
    assert err == ("fatpte: E0411 (signature): entries 'xnnpack' and 'portable' declare different program "
                   "signatures: method 'forward' inputs differ (2 vs 1 inputs): [float32[2, 3], float32[2, 3]] vs "
                   "[float32[1, 4]]\n")
    code, _, err = run("pack", "--format-version", "1", "-o", tmp_path / "x.nfat", *programs, "--no-signature-check")
    assert (code, err) == (0, "")
    with fatpte.open(tmp_path / "x.nfat") as c:
        assert (c.version, [e.backend_id for e in c.entries]) == (1, ["xnnpack", "portable"])


@pytest.mark.parametrize(("args", "said"), [
    (["--data", "mlp.ptn"], "E0703 (--data): version 1 has no named data"),
    (["--share-pte-named-data"], "E0703 (--share-pte-named-data): version 1 has no named data"),
    (["--signature-from", "xnnpack"], "version 1 stores none"),
])
def test_version_1_refuses_what_it_cannot_hold(tmp_path: Path, args: list[str], said: str) -> None:
    from tests.paths import ET_FIXTURES

    args = [str(ET_FIXTURES / a) if a.endswith(".ptn") else a for a in args]
    code, _, err = run("pack", "--format-version", "1", "-o", tmp_path / "x.nfat", ET_FIXTURES / "mlp_xnnpack.pte",
                       *args)
    assert code == 2 and said in err
    assert not (tmp_path / "x.nfat").exists()


def test_priority_sets_an_entrys_priority_and_ends_the_tie(tmp_path: Path) -> None:
    from tests.paths import ET_FIXTURES

    programs = [ET_FIXTURES / "mlp.ptn", ET_FIXTURES / "mlp_xnnpack.pte", ET_FIXTURES / "mlp_portable.pte"]
    code, _, err = run("pack", "-o", tmp_path / "t.nfat", *programs)
    assert code == 0 and "E0709" in err and "`fatpte pack --priority NAME=N`" in err  # the tie, and what ends it
    code, _, err = run("pack", "-o", tmp_path / "p.nfat", *programs, "--priority", "xnnpack=10",
                       "--priority", "portable=-1", "--priority", "xnnpack=5")
    assert (code, err) == (0, "")
    with fatpte.open(tmp_path / "p.nfat") as c:
        assert [(e.name, e.priority) for e in c.entries] == [("native", 0), ("xnnpack", 5), ("portable", -1)]
    # The same container as the library writes with those priorities.
    specs = [fatpte.ptn_specialization(programs[0]), fatpte.pte_specialization(programs[1], priority=5),
             fatpte.pte_specialization(programs[2], priority=-1)]
    assert (tmp_path / "p.nfat").read_bytes() == fatpte.pack(specs, tmp_path / "ref.nfat").read_bytes()


@pytest.mark.parametrize(("args", "said"), [
    (["--priority", "xnnpak=1"], "no entry is named 'xnnpak' (entries: 'a')"),
    (["--priority", "a=high"], "'a=high' is not NAME=N (N an integer)"),
    (["--priority", "=1"], "'=1' is not NAME=N (N an integer)"),
])
def test_a_priority_that_names_no_entry_or_no_number_is_a_usage_error(payloads: dict[str, Path], tmp_path: Path,
                                                                       args: list[str], said: str) -> None:
    code, _, err = run("pack", "-o", tmp_path / "x.nfat", f"a={payloads['a']}", *args)
    assert code == 2 and said in err
    assert not (tmp_path / "x.nfat").exists()


def test_priority_out_of_range_or_in_version_1_is_refused(payloads: dict[str, Path], tmp_path: Path) -> None:
    code, _, err = run("pack", "-o", tmp_path / "x.nfat", f"a={payloads['a']}", "--priority", f"a={1 << 31}")
    assert code == 2 and "is not a 32-bit integer" in err
    code, _, err = run("pack", "-o", tmp_path / "x.nfat", "--format-version", "1", f"a={payloads['a']}",
                       "--priority", "a=1")
    assert code == 2 and "E0703" in err and "no alignment or priority" in err
    (tmp_path / "pack.toml").write_text(f'[[specialization]]\nbackend_id = "a"\npayload = "{payloads["a"]}"\n')
    code, _, err = run("pack", "-o", tmp_path / "x.nfat", "--from", tmp_path / "pack.toml", "--priority", "a=1")
    assert code == 2 and "--priority: the pack.toml states them" in err
