"""`fatpte-run --save-outputs DIR` writes by the rule of every fatpte output (issue 42, W2).

It opened DIR/call-K-output-J.bin with fopen("wb"): a symbolic link planted there had its target
overwritten with the output's bytes (as root, any file), and a FIFO or a device node there was
written into. Python's writer (fatpte/fileio/atomic.py) has the rule "outputs replace only regular
files", written whole to a temporary file beside the destination and renamed into place; the
loader now has it too (loader/src/common/output_file.hpp). Here: a planted symbolic link (its
target unchanged), a FIFO (refused at once, never opened), a directory, a regular file (replaced
with the output, mode 0666 less the umask), and no temporary file left behind in any case; and
both languages refuse each with E0811 and the same words, and remove the same leftovers of a killed
writer.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.atomic import atomic_output
from tests.builds import loader_build
from tests.paths import ROOT

BUILD = ROOT / "build" / "loader"
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
CALL = [{"inputs": [{"dtype": "float32", "shape": [2, 3], "values": [1, 2, 3, 4, 5, 6]},
                    {"dtype": "float32", "shape": [2, 3], "values": [10, 20, 30, 40, 50, 60]}]}]
OUTPUT = struct.pack("<6f", 11, 22, 33, 44, 55, 66)
NAME = "call-0-output-0.bin"


@pytest.fixture(scope="module")
def container(tmp_path_factory: pytest.TempPathFactory) -> Path:
    loader_build("release", "fatpte-run", sdk=True)
    out = tmp_path_factory.mktemp("save") / "add.nfat"
    done = subprocess.run([sys.executable, "-m", "fatpte", "pack", "-q", "-o", str(out),
                           f"portable:portable={FIXTURES / 'add_portable.pte'}"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return out


def save(container: Path, folder: Path) -> subprocess.CompletedProcess[str]:
    calls = folder.parent / "calls.json"
    calls.write_text(json.dumps(CALL))
    return subprocess.run([str(BUILD / "fatpte-run"), str(container), "--inputs", str(calls), "--json",
                           "--save-outputs", str(folder)], capture_output=True, text=True, timeout=60, check=False)


def python_refusal(path: Path) -> FatpteError:
    with pytest.raises(FatpteError) as caught, atomic_output(path) as f:
        f.write(OUTPUT)
    return caught.value


def left_behind(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".partial")]


def test_a_planted_symlink_is_refused_and_its_target_left_alone(container: Path, tmp_path: Path) -> None:
    folder, target = tmp_path / "out", tmp_path / "precious"
    folder.mkdir()
    target.write_bytes(b"keep me")
    (folder / NAME).symlink_to(target)
    done = save(container, folder)
    assert done.returncode == 4, done.stderr
    assert target.read_bytes() == b"keep me" and (folder / NAME).is_symlink()
    want = f"cannot write {folder / NAME}: it is a symbolic link, which fatpte does not replace"
    assert "E0811" in done.stderr and want in done.stderr
    py = python_refusal(folder / NAME)
    assert py.code == ErrorCode.NOT_A_FILE and py.message in done.stderr
    assert target.read_bytes() == b"keep me" and left_behind(folder) == []


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_fifo_or_a_directory_is_refused(container: Path, tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    if kind == "fifo":
        os.mkfifo(folder / NAME)
    else:
        (folder / NAME).mkdir()
    done = save(container, folder)  # a FIFO opened for writing would wait for a reader: the timeout says
    assert done.returncode == 4, done.stderr
    what = "a FIFO" if kind == "fifo" else "a directory"
    assert f"E0811: cannot write {folder / NAME}: it is {what}, which fatpte does not replace" in done.stderr
    py = python_refusal(folder / NAME)
    assert py.code == ErrorCode.NOT_A_FILE and py.message in done.stderr
    assert left_behind(folder) == []


def test_a_regular_file_is_replaced_whole(container: Path, tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    old = folder / NAME
    old.write_bytes(b"an older output, longer than the new one" * 10)
    inode = old.stat().st_ino
    done = save(container, folder)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["calls"][0]["outputs"][0]["file"] == NAME
    assert old.read_bytes() == OUTPUT
    assert old.stat().st_ino != inode  # a new file renamed over it, not the old one rewritten in place
    mask = os.umask(0)
    os.umask(mask)
    assert old.stat().st_mode & 0o777 == 0o666 & ~mask
    assert sorted(p.name for p in folder.iterdir()) == [NAME]


def test_a_missing_folder_is_an_io_error_without_a_file(container: Path, tmp_path: Path) -> None:
    done = save(container, tmp_path / "absent")
    assert done.returncode == 4 and "E0801: cannot create a temporary file beside" in done.stderr
    assert not (tmp_path / "absent").exists()


def _leftovers(folder: Path) -> dict[str, Path]:
    """Temporary files of NAME as a killed writer leaves them (a process gone: pid 999999999, past any
    pid_max; older than the writer), and three a writer must keep: one of a process that runs (this
    one), one newer than the writer, and one of another output's name."""
    files = {"stale": folder / f".{NAME}.p999999999.0123456789ab.partial",
             "running": folder / f".{NAME}.p{os.getpid()}.0123456789ab.partial",
             "new": folder / f".{NAME}.p999999998.0123456789ab.partial",
             "other name": folder / ".call-9-output-9.bin.p999999999.0123456789ab.partial"}
    for key, path in files.items():
        path.write_bytes(b"partial")
        if key != "new":
            os.utime(path, (1_000_000_000, 1_000_000_000))
    return files


def test_temporary_files_a_killed_writer_left_are_removed_as_python_does(container: Path, tmp_path: Path) -> None:
    for writer in ("fatpte-run", "python"):
        folder = tmp_path / writer
        folder.mkdir()
        files = _leftovers(folder)
        later = time.time() + 3600
        os.utime(files["new"], (later, later))  # newer than either writer: it may be one still writing
        if writer == "fatpte-run":
            assert save(container, folder).returncode == 0
        else:
            with atomic_output(folder / NAME) as f:
                f.write(OUTPUT)
        assert (folder / NAME).read_bytes() == OUTPUT
        assert {k for k, p in files.items() if p.exists()} == {"running", "new", "other name"}, writer
