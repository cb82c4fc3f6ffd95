"""Every reading command takes a URL, as docs/remote.md says (issue 32, Why 5: `verify` and
`unpack` said `E0801 ... No such file or directory`); the commands that rewrite a file on disk
say that a URL is not one, instead of that it does not exist."""

from __future__ import annotations

import filecmp
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fatpte
from tests.remote.servers import Nginx


def fatpte_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fatpte", *args], capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[Nginx, Path]:
    www = tmp_path_factory.mktemp("www")
    keys = {"w0": os.urandom(100), "w1": os.urandom(70_000)}
    path = fatpte.pack([fatpte.Specialization("portable", os.urandom(1000), named_data=["w0"]),
                        fatpte.Specialization("xnnpack", os.urandom(300_000), priority=1, named_data=["w0", "w1"])],
                       www / "c.nfat", named_data=keys)
    server = Nginx(www, tmp_path_factory.mktemp("nginx"))
    yield server, path  # type: ignore[misc]
    server.close()


def same_tree(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    if filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)[1:] != ([], []):
        return False
    return all(same_tree(a / d, b / d) for d in cmp.common_dirs)


def test_unpack_of_a_url_is_unpack_of_the_file(served: tuple[Nginx, Path], tmp_path: Path) -> None:
    nginx, path = served
    mark = nginx.mark()
    remote = fatpte_cli("unpack", nginx.url(path.name), "-d", str(tmp_path / "remote"), "-q", "--json")
    assert remote.returncode == 0, remote.stderr
    log = nginx.requests(mark)
    assert sum(r.body_bytes for r in log) == path.stat().st_size  # the file, once
    local = fatpte_cli("unpack", str(path), "-d", str(tmp_path / "local"), "-q", "--json")
    assert json.loads(remote.stdout)["reproducible"] is json.loads(local.stdout)["reproducible"] is True
    assert same_tree(tmp_path / "remote", tmp_path / "local")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["local", "remote"]  # nothing left beside


@pytest.mark.parametrize("args", [
    ("remove", "{url}", "--name", "portable", "-o", "{out}"),
    ("convert", "{url}", "--to", "1", "-o", "{out}"),
    ("replace", "{url}", "--name", "portable", "{payload}", "-o", "{out}"),
    ("add", "{url}", "cuda={payload}", "-o", "{out}"),
])
def test_a_command_that_rewrites_a_file_says_a_url_is_none(served: tuple[Nginx, Path], tmp_path: Path,
                                                           args: tuple[str, ...]) -> None:
    nginx, _ = served
    payload = tmp_path / "p.bin"
    payload.write_bytes(b"x" * 10)
    url = nginx.url("c.nfat").replace("http://", "http://user:secret@")
    done = fatpte_cli(*(a.format(url=url, out=tmp_path / "o.nfat", payload=payload) for a in args))
    assert done.returncode == 2, done.stderr
    shown = url.replace("user:secret@", "***@")
    assert done.stderr.startswith(f"{shown}: E0702: `fatpte {args[0]}` reads files on disk, and {shown} is a URL: "
                                  "fetch it first"), done.stderr
    assert not (tmp_path / "o.nfat").exists()
