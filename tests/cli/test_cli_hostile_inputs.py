"""Hostile inputs to the command line (issue 33): a named-data key past the segment table (P1), the
unsigned hint (S7), every file a command reads (a regular file of bounded size), and outputs that
are not regular files (W1)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
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


# -- every file a command reads is a regular file of bounded size ------------------------------


def _special(tmp_path: Path, kind: str, name: str) -> Path:
    if kind == "fifo":
        path = tmp_path / name
        os.mkfifo(path)  # no writer: a reader that waits for one hangs
        return path
    if kind == "directory":
        path = tmp_path / name
        path.mkdir()
        return path
    return Path("/dev/zero")  # endless: a reader that is not bounded reads until memory runs out


def _fatpte(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fatpte", *args], capture_output=True, text=True, timeout=timeout,
                          check=False, env={**os.environ, "COLUMNS": "100"})


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
@pytest.mark.parametrize("what", ["verify --key", "verify --trust", "verify --signature", "sign --key", "pack --from",
                                  "select --device", "coverage --devices"])
def test_every_file_a_command_reads_is_refused_at_once_unless_regular(tmp_path: Path, what: str, kind: str) -> None:
    """A FIFO with no writer, /dev/zero or a directory given as a key, a trusted key in a --trust
    folder, a detached signature, pack.toml or a device profile: E0811 before a byte is read, exit
    4; nothing waits for a writer and nothing reads without end."""
    signed = str(VECTORS / "v2-signed.nfat")
    if what == "verify --trust":
        folder = tmp_path / "trust"
        folder.mkdir()
        if kind == "dev-zero":
            (folder / "zero.pem").symlink_to("/dev/zero")
        else:
            _special(folder, kind, "k.pem")
        args = ["verify", signed, "--trust", str(folder)]
    else:
        special = str(_special(tmp_path, kind, "input.json" if "device" in what else "input.pem"))
        args = {
            "verify --key": ["verify", signed, "--key", special],
            "verify --signature": ["verify", signed, "--key", KEYS[0], "--signature", special],
            "sign --key": ["sign", signed, "--key", special, "-o", str(tmp_path / "s.nfat")],
            "pack --from": ["pack", "-o", str(tmp_path / "p.nfat"), "--from", special],
            "select --device": ["select", signed, "--device", special],
            "coverage --devices": ["coverage", signed, "--devices", special],
        }[what]
    if kind == "directory" and what in ("verify --key", "verify --signature", "sign --key", "pack --from"):
        pytest.skip("click refuses a directory for this option itself (exit 2)")
    if kind == "directory" and what == "coverage --devices":
        pytest.skip("--devices takes a folder of profiles (docs/cli.md)")
    done = _fatpte(*args)
    assert done.returncode == 4 and "E0811" in done.stderr, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
@pytest.mark.parametrize("what", ["coverage --receipts", "pack --golden", "check --merge", "thin PROGRAM",
                                  "verdicts list"])
def test_the_other_files_a_command_reads_are_refused_at_once_unless_regular(tmp_path: Path, what: str,
                                                                            kind: str) -> None:
    """The same for receipts, golden calls, shard reports, a program to thin and a verdict store
    found in its folder (a FIFO there hung `fatpte verdicts list`; /dev/zero as a shard report was
    read until memory ran out): E0811, nothing waited for, nothing read without end."""
    signed = str(VECTORS / "v2-signed.nfat")
    if what == "verdicts list":
        (tmp_path / "store").mkdir()
        store = tmp_path / "store" / "app.verdicts.json"
        os.mkfifo(store) if kind == "fifo" else store.symlink_to("/dev/zero")
        done = _fatpte("verdicts", "list", str(tmp_path / "store"))
        assert done.returncode == 1 and "E0811" in done.stdout + done.stderr, (done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        return
    special = str(_special(tmp_path, kind, "input.json"))
    args = {
        "coverage --receipts": ["coverage", signed, "--receipts", special],
        "pack --golden": ["pack", "-o", str(tmp_path / "p.nfat"), f"cpu:cpu={signed}", "--golden", special],
        "check --merge": ["check", "--merge", special, special],
        "thin PROGRAM": ["thin", special, "--device", "x86-64-v3", "-o", str(tmp_path / "t.pte")],
    }[what]
    done = _fatpte(*args)
    assert done.returncode == 4 and "E0811" in done.stderr, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr


def test_a_key_file_is_at_most_64_kib(tmp_path: Path) -> None:
    pem = Path(KEYS[0]).read_bytes()
    big = tmp_path / "big.pem"
    big.write_bytes(pem + b" " * ((64 << 10) + 1 - len(pem)))
    done = _fatpte("verify", str(VECTORS / "v2-signed.nfat"), "--key", str(big))
    assert done.returncode == 2 and "E0702" in done.stderr and "larger than 65536 bytes" in done.stderr, done.stderr
    big.write_bytes(pem + b" " * ((64 << 10) - len(pem)))  # exactly the limit: trailing whitespace is allowed
    assert _fatpte("verify", str(VECTORS / "v2-signed.nfat"), "--key", str(big)).returncode == 0


# -- W1: an output that is not a regular file is never replaced ---------------------------------


@pytest.mark.parametrize("kind", ["symlink", "dangling-symlink", "fifo", "device"])
def test_force_never_replaces_an_output_that_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    import stat

    out = tmp_path / "out.bin"
    target = tmp_path / "real.bin"
    target.write_bytes(b"keep")
    if kind == "symlink":
        out.symlink_to(target)
    elif kind == "dangling-symlink":
        out.symlink_to(tmp_path / "nowhere")
    elif kind == "fifo":
        os.mkfifo(out)
    else:
        try:
            os.mknod(out, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # what /dev/null is, in tmp_path
        except PermissionError:
            pytest.skip("creating a device node needs root")
    before = os.lstat(out).st_mode
    for args in (["extract", str(VECTORS / "v2-named-data.nfat"), "--name", "cpu", "-o", str(out), "--force"],
                 ["thin", str(VECTORS / "v2-named-data.nfat"), "--name", "cpu", "-o", str(out), "--force"],
                 ["unsign", str(VECTORS / "v2-signed.nfat"), "-o", str(out), "--force"]):
        done = _fatpte(*args)
        assert done.returncode == 4 and "E0811" in done.stderr, (args, done.stderr)
        assert "which fatpte does not replace" in done.stderr
        assert os.lstat(out).st_mode == before
    assert target.read_bytes() == b"keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin", "real.bin"]  # no temporary left


_HUGE = "y" * 500_000


@pytest.mark.parametrize("what", ["profile source", "profile key", "pack.toml key", "pack.toml file"])
def test_a_huge_string_from_a_file_never_makes_a_huge_error_line(tmp_path: Path, what: str) -> None:
    """A device profile or pack.toml that holds a 500,000-character string where a short one
    belongs: the error names the field and the rule and quotes the string clipped (its size said),
    never whole: the line stays a few KB (it was 1 MB and 1.5 MB). Messages quote file strings
    clipped (errors.quoted); a finding shows at most MESSAGE_BYTES of message and CLIP_BYTES of field."""
    from fatpte.errors import CLIP_BYTES, MESSAGE_BYTES

    profile = {"name": "x", "os": "linux", "arch": "aarch64", "cpu_features": [], "accelerators": [],
               "memory_bytes": 1, "backends": {}}
    if what == "profile source":
        profile["sources"] = [_HUGE]
    elif what == "profile key":
        profile[_HUGE] = 1
    (tmp_path / "d.json").write_text(json.dumps(profile))
    head = '[[specialization]]\nname = "a"\nbackend_id = "cpu"\n'
    toml = {"pack.toml key": f'{head}payload = "p.bin"\n{_HUGE} = 1\n', "pack.toml file": f'{head}payload = "{_HUGE}"\n'}
    if what.startswith("pack.toml"):
        (tmp_path / "pack.toml").write_text(toml[what])
        (tmp_path / "p.bin").write_bytes(b"p" * 8)
        args = ["pack", "-o", str(tmp_path / "o.nfat"), "--from", str(tmp_path / "pack.toml")]
    else:
        args = ["select", str(VECTORS / "v2-selection-matrix.nfat"), "--device", str(tmp_path / "d.json")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 if what.startswith("profile") else result.exit_code in (1, 2), result.output
    assert isinstance(result.exception, SystemExit)
    assert "E07" in result.output and "bytes" in result.output, result.output[:2000]
    assert len(result.output) < MESSAGE_BYTES + 2 * CLIP_BYTES + 1000, len(result.output)
