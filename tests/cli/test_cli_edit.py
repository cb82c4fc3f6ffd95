"""`fatpte add/remove/replace/convert`: lipo-style edits; what each keeps, refuses and writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import fatpte
from fatpte.cli.main import main


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def v2(tmp_path: Path) -> Path:
    return fatpte.pack([fatpte.Specialization("portable", b"p" * 30),
                        fatpte.Specialization("xnnpack", b"x" * 40, alignment=256)], tmp_path / "v2.nfat")


def entries(path: Path) -> list[tuple[str, str, int, int, bytes]]:
    with fatpte.open(path) as c:
        return [(e.name, e.backend_id, e.alignment, e.priority, bytes(c.payload(e))) for e in c.entries]


def test_add_appends_and_keeps_the_rest(v2: Path, tmp_path: Path) -> None:
    payload = tmp_path / "cuda.bin"
    payload.write_bytes(b"c" * 9)
    out = tmp_path / "out.nfat"
    code, stdout, _ = run("add", v2, "-o", out, f"cuda-sm90:cuda={payload}")
    assert code == 0 and "'cuda-sm90'" in stdout
    assert entries(out) == [("portable", "portable", 64, 0, b"p" * 30), ("xnnpack", "xnnpack", 256, 0, b"x" * 40),
                            ("cuda-sm90", "cuda", 64, 0, b"c" * 9)]
    assert fatpte.validate(out).ok


def test_add_duplicate_name_exits_1_and_writes_nothing(v2: Path, tmp_path: Path) -> None:
    payload = tmp_path / "p.bin"
    payload.write_bytes(b"z")
    code, _, stderr = run("add", v2, "-o", tmp_path / "out.nfat", f"xnnpack={payload}")
    assert code == 1
    assert "E0206" in stderr
    assert not (tmp_path / "out.nfat").exists()


def test_remove_and_replace(v2: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.nfat"
    assert run("remove", v2, "-o", out, "--name", "portable")[0] == 0
    assert entries(out) == [("xnnpack", "xnnpack", 256, 0, b"x" * 40)]
    code, _, stderr = run("remove", out, "-o", tmp_path / "empty.nfat", "--name", "xnnpack")
    assert code == 2 and "E0701" in stderr  # a container holds at least one entry
    code, _, stderr = run("remove", v2, "-o", tmp_path / "x.nfat", "--name", "nope")
    assert code == 2 and "E0704" in stderr
    new = tmp_path / "new.bin"
    new.write_bytes(b"NEW")
    out2 = tmp_path / "rep.nfat"
    assert run("replace", v2, new, "--name", "xnnpack", "-o", out2)[0] == 0
    assert entries(out2) == [("portable", "portable", 64, 0, b"p" * 30), ("xnnpack", "xnnpack", 256, 0, b"NEW")]


def test_in_place_edit_needs_force(v2: Path, tmp_path: Path) -> None:
    before = v2.read_bytes()
    code, _, stderr = run("remove", v2, "-o", v2, "--name", "portable")
    assert code == 2 and "--force" in stderr
    assert v2.read_bytes() == before
    assert run("remove", v2, "-o", v2, "--name", "portable", "--force")[0] == 0
    assert [e[0] for e in entries(v2)] == ["xnnpack"]


def test_convert_round_trip_v2_v1_v2(tmp_path: Path) -> None:
    src = fatpte.pack([fatpte.Specialization("a", b"aaa"), fatpte.Specialization("b", b"bbbbb")],
                      tmp_path / "src.nfat")
    v1 = tmp_path / "v1.nfat"
    assert run("convert", src, "--to", "1", "-o", v1)[0] == 0
    direct = fatpte.pack([fatpte.Specialization("a", b"aaa"), fatpte.Specialization("b", b"bbbbb")],
                         tmp_path / "direct.nfat", version=1)
    assert v1.read_bytes() == direct.read_bytes()  # alignment dropped: only padding is lost
    back = tmp_path / "back.nfat"
    assert run("convert", v1, "--to", "2", "-o", back)[0] == 0
    assert back.read_bytes() == src.read_bytes()


def test_convert_to_v1_names_every_obstacle(tmp_path: Path) -> None:
    src = fatpte.pack([fatpte.Specialization("xnnpack", b"a", name="xnnpack-int8"),
                       fatpte.Specialization("cuda", b"b", priority=3)], tmp_path / "src.nfat")
    code, _, stderr = run("convert", src, "--to", "1", "-o", tmp_path / "v1.nfat")
    assert code == 2
    assert "E0703" in stderr
    assert "'xnnpack-int8'" in stderr and "priority 3" in stderr
    assert not (tmp_path / "v1.nfat").exists()


def test_convert_v1_with_duplicate_ids_to_v2_is_refused(tmp_path: Path) -> None:
    src = fatpte.pack([fatpte.Specialization("a", b"1"), fatpte.Specialization("a", b"2")], tmp_path / "d.nfat",
                      version=1)
    code, _, stderr = run("convert", src, "--to", "2", "-o", tmp_path / "v2.nfat")
    assert code == 1
    assert "E0206" in stderr and "'a'" in stderr


def test_v1_edits_stay_v1(tmp_path: Path) -> None:
    src = fatpte.pack([fatpte.Specialization("a", b"1"), fatpte.Specialization("b", b"2")], tmp_path / "d.nfat",
                      version=1)
    out = tmp_path / "o.nfat"
    assert run("remove", src, "-o", out, "--name", "a")[0] == 0
    with fatpte.open(out) as c:
        assert c.version == 1 and [e.name for e in c.entries] == ["b"]


def test_replace_error_paths(v2: Path, tmp_path: Path) -> None:
    new = tmp_path / "new.bin"
    new.write_bytes(b"N")
    code, _, stderr = run("replace", v2, new, "--name", "nope", "-o", tmp_path / "o.nfat")
    assert code == 2 and "E0704" in stderr
    code, _, stderr = run("replace", v2, tmp_path / "missing.bin", "--name", "portable", "-o", tmp_path / "o.nfat")
    assert code == 4 and "E0801" in stderr
    assert not (tmp_path / "o.nfat").exists()


def _key(tmp_path: Path) -> Path:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    path = tmp_path / "release.pem"
    path.write_bytes(ed25519.Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return path


def test_an_edit_of_a_signed_container_says_the_output_is_not_signed(tmp_path: Path) -> None:
    v2 = fatpte.pack([fatpte.Specialization("portable", b"p" * 30, priority=-1),
                      fatpte.Specialization("xnnpack", b"x" * 40)], tmp_path / "signed.nfat")
    payload = tmp_path / "new.bin"
    payload.write_bytes(b"n" * 12)
    out = tmp_path / "out.nfat"
    # Unsigned in, nothing to say.
    code, _, err = run("replace", v2, payload, "--name", "xnnpack", "-o", out)
    assert (code, err) == (0, "")
    key = _key(tmp_path)
    fatpte.sign(v2, key)
    edits = {"replace": ["replace", v2, payload, "--name", "xnnpack"], "add": ["add", v2, f"gpu={payload}"],
             "remove": ["remove", v2, "--name", "portable"], "convert": ["convert", v2, "--to", "2"]}
    for name, args in edits.items():
        code, _, err = run(*args, "-o", out, "-f")
        assert code == 0, (name, err)
        # (add also warns that the new entry ties with one before it: E0709)
        assert err.endswith(f"fatpte: warning: {v2} is signed (an embedded signature) and {out} is not: a "
                            "signature vouches for the content it was made for, so an edit drops it; sign again "
                            f"with `fatpte sign {out} --key PRIVATE.pem` (add --detached for a .sig beside it)\n"), name
        with fatpte.open(out) as c:
            assert c.header.signature_size == 0  # what the warning says
    fatpte.unsign(v2)
    fatpte.sign(v2, key, detached=True)
    code, _, err = run("replace", v2, payload, "--name", "xnnpack", "-o", out, "-f")
    assert code == 0 and f"{v2} is signed ({v2}.sig) and {out} is not" in err
    # Following the advice gives a container that verifies.
    assert run("sign", out, "--key", key)[0] == 0
