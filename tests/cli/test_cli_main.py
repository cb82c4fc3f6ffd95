"""The command line as a whole: the error boundary and exit codes, help, start-up imports,
`python -m fatpte`, shell completion, progress display."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

import fatpte
from fatpte.cli.exit_codes import EXIT_CODES, error_line, exit_code
from fatpte.cli.main import main
from fatpte.cli.progress import Progress, wanted
from fatpte.errors import Category, ErrorCode, FatpteError


def test_every_category_has_its_documented_exit_code() -> None:
    assert EXIT_CODES == {Category.INVALID: 1, Category.USAGE: 2, Category.SELECTION: 3, Category.IO: 4,
                          Category.UNVERIFIED: 5, Category.DISAGREES: 6}
    assert {exit_code(FatpteError(c, "x")) for c in ErrorCode} == {1, 2, 3, 4, 5, 6}
    assert exit_code(FatpteError(ErrorCode.GOLDEN_MISMATCH, "x")) == 6
    assert exit_code(FatpteError(ErrorCode.NO_SPECIALIZATION_FITS, "x")) == 3
    assert exit_code(FatpteError(ErrorCode.IO_ERROR, "x")) == 4


def test_error_line_format() -> None:
    err = FatpteError(ErrorCode.PAYLOAD_OUT_OF_BOUNDS, "payload ends at 0x1200, past the end of the file at 0x1000",
                      source="m.nfat", offset=0x48, field="entries[2].size")
    assert error_line(err) == ("m.nfat: E0203 at 0x48 (entries[2].size): payload ends at 0x1200, past the end of "
                               "the file at 0x1000")
    assert error_line(FatpteError(ErrorCode.NO_SPECIALIZATIONS, "nothing")) == "fatpte: E0701: nothing"


def test_help_documents_the_exit_codes() -> None:
    for args in ([], ["validate"], ["pack"]):
        result = CliRunner().invoke(main, [*args, "--help"])
        assert result.exit_code == 0
        for line in ("0  success", "1  invalid container", "2  usage error", "3  no specialization fits",
                     "4  I/O error"):
            assert line in result.stdout


def test_unknown_command_and_option_exit_2() -> None:
    assert CliRunner().invoke(main, ["frobnicate"]).exit_code == 2
    assert CliRunner().invoke(main, ["info", "--bogus", "x"]).exit_code == 2


def _imported_modules(*args: str) -> set[str]:
    # A wide terminal, whatever the caller's: below it `fatpte --help` is click's (fatpte/cli/launch.py).
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "fatpte", *args], capture_output=True,
                          text=True, check=False, env={**os.environ, "COLUMNS": "100"})
    assert proc.returncode == 0, proc.stderr
    return {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}


def test_help_starts_without_heavy_imports() -> None:
    # `fatpte --help` is printed by the launcher (fatpte/cli/launch.py); a command's help is click's.
    for args, via_click in ((["--help"], False), (["pack", "--help"], True)):
        modules = _imported_modules(*args)
        assert ("fatpte.cli.main" in modules) == via_click  # the measurement works
        heavy = {m for m in modules
                 if m.split(".")[0] in {"hypothesis", "numpy", "pytest", "construct", "flatbuffers"}}
        assert heavy == set()


# What reading commands must not import: writers' libraries (construct builds records,
# flatbuffers builds manifests), test tools, the macOS probe's ctypes.util (subprocess), and
# click: their plain forms run through the launcher (fatpte/cli/launch.py, tests/cli/test_launch.py).
_NOT_FOR_READERS = {"hypothesis", "numpy", "pytest", "construct", "flatbuffers", "tempfile", "ctypes.util", "click"}


def _heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m in _NOT_FOR_READERS or m.split(".")[0] in _NOT_FOR_READERS}


def test_info_and_select_import_only_what_they_need(tmp_path: Path) -> None:
    path = fatpte.pack([fatpte.Specialization("a", b"x", requires={"arch": ["x86_64", "aarch64"]},
                                              signature={"methods": [{"name": "forward"}]})], tmp_path / "c.nfat")
    modules = _imported_modules("info", str(path))
    assert "fatpte.ops.info" in modules
    assert _heavy(modules) == set()
    modules = _imported_modules("select", str(path), "--device", "raspberry-pi-5", "--explain")
    assert "fatpte.device.selection" in modules and "fatpte.manifest.model" in modules
    assert _heavy(modules) == set()


def test_python_dash_m_runs_the_same_command(tmp_path: Path) -> None:
    path = fatpte.pack([fatpte.Specialization("a", b"x")], tmp_path / "c.nfat")
    proc = subprocess.run([sys.executable, "-m", "fatpte", "validate", str(path)], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0
    assert proc.stdout == "checked 1 file: 1 valid, 0 invalid; 0 errors, 0 warnings\n"
    bad = tmp_path / "bad.nfat"
    bad.write_bytes(b"NOPE" + bytes(60))
    proc = subprocess.run([sys.executable, "-m", "fatpte", "info", str(bad)], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"{bad}: E0101 at 0x0 (header.magic): ")


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(shell: str) -> None:
    result = CliRunner().invoke(main, ["completion", shell])
    assert result.exit_code == 0
    assert "_FATPTE_COMPLETE" in result.stdout


def test_completion_completes_commands() -> None:
    result = CliRunner().invoke(main, [], env={"_FATPTE_COMPLETE": "bash_complete", "COMP_WORDS": "fatpte val",
                                               "COMP_CWORD": "1"}, prog_name="fatpte")
    assert "validate" in result.stdout


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_a_terminal_and_not_when_quiet() -> None:
    assert wanted(_Tty(), quiet=False)
    assert not wanted(_Tty(), quiet=True)
    assert not wanted(io.StringIO(), quiet=False)


def test_progress_line_and_cleanup() -> None:
    stream = _Tty()
    p = Progress(stream, "validating", total=4 << 20, enabled=True)
    p.advance(1 << 20)
    assert p.line(3.0) == "validating [#######                       ]  25% 1.0 MiB/4.0 MiB 3s"
    assert Progress(stream, "packing", enabled=True).line(2.0) == "packing ... 2s"
    with Progress(stream, "x", enabled=True, delay=3600):
        pass  # ends before the delay: nothing is drawn
    assert stream.getvalue() == ""
    with Progress(stream, "x", enabled=False, delay=0) as quiet:
        quiet.advance(1)
    assert stream.getvalue() == ""


def test_completion_of_device_names(tmp_path: Path) -> None:
    path = fatpte.pack([fatpte.Specialization("a", b"x")], tmp_path / "c.nfat")
    result = CliRunner().invoke(main, [], env={"_FATPTE_COMPLETE": "bash_complete",
                                               "COMP_WORDS": f"fatpte select {path} --device ho",
                                               "COMP_CWORD": "4"}, prog_name="fatpte")
    assert "plain,host" in result.stdout.splitlines()


def test_progress_draws_after_its_delay_and_clears_its_line() -> None:
    stream = _Tty()
    with Progress(stream, "validating", total=10, enabled=True, delay=0) as p:
        p.advance(5)
        for _ in range(1000):  # wait for the drawing thread's first line, however slow the machine
            if stream.getvalue():
                break
            threading.Event().wait(0.01)
    text = stream.getvalue()
    assert text.startswith("\rvalidating [")
    assert text.endswith("\r\x1b[K")  # the line is cleared for what follows
