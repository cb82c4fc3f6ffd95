"""Every file the C++ tools read is a regular file of bounded size (issue 33, "Files"): a FIFO
given as --inputs, --input, --backend-map, --trusted-key or --signature is refused at once with
E0811 (it used to wait for a writer forever), and so is /dev/zero (it used to be read up to a
limit of 1 GiB first). The subprocess timeout only stops a hang; the test asserts the refusal."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.builds import missing_build
from tests.paths import ROOT

BUILD = ROOT / "build" / "loader"
VECTOR = ROOT / "specs" / "vectors" / "v2-signed.nfat"


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


def _tool(name: str) -> Path:
    path = BUILD / name
    if not path.exists():
        missing_build(f"build/loader/{name} is not built: run `make loader`")
    return path


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
@pytest.mark.parametrize("option", ["--inputs", "--input", "--backend-map", "--trusted-key", "--signature"])
def test_a_special_file_is_refused_at_once(fifo: Path, tmp_path: Path, special: str, option: str) -> None:
    path = str(fifo) if special == "fifo" else special
    key = ROOT / "specs" / "vectors" / "trusted-ed25519.pub.pem"
    calls = tmp_path / "calls.json"
    calls.write_text("[]")
    if option == "--signature":
        cmd = [str(_tool("fatpte-verify")), str(VECTOR), "--trusted-key", str(key), "--signature", path]
    elif option == "--trusted-key":
        cmd = [str(_tool("fatpte-run")), str(VECTOR), "--inputs", str(calls), "--require-signature",
               "--trusted-key", path]
    elif option == "--backend-map":
        cmd = [str(_tool("fatpte-run")), str(VECTOR), "--inputs", str(calls), "--backend-map", path]
    else:
        cmd = [str(_tool("fatpte-run")), str(VECTOR), option, path]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode != 0, proc.stdout
    assert "E0811" in proc.stderr and "not a regular file" in proc.stderr, proc.stderr
