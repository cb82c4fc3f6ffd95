"""A stdout its reader closed (`fatpte validate FILE | head -1`, issue 42 point 8) ends the command
quietly with the status of a process SIGPIPE ended (128 + 13, docs/cli.md "Exit codes"), through
both routes into a command: the launcher (validate, info) and the click group (diff). The pipe is a
real one whose reading end is closed before the command writes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from fatpte.cli.exit_codes import EXIT_CLOSED_PIPE
from tests.paths import ROOT

VECTOR = str(ROOT / "specs" / "vectors" / "v2-many-entries.nfat")


@pytest.mark.parametrize("args", [["validate", VECTOR], ["info", VECTOR, "--map"], ["diff", VECTOR, VECTOR]])
def test_a_closed_stdout_ends_the_command_quietly(args: list[str]) -> None:
    reading, writing = os.pipe()
    os.close(reading)
    done = subprocess.run([sys.executable, "-m", "fatpte", *args], stdout=writing, stderr=subprocess.PIPE,
                          text=True, timeout=120, check=False)
    os.close(writing)
    assert done.stderr == ""
    assert done.returncode == EXIT_CLOSED_PIPE == 141
