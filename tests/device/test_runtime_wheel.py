"""fatpte.device.runtime_wheel on wheels built here as zip files (the real wheels: tests/wheel/):
what `fatpte runtime unpack` takes, what it refuses, and that `check` finds the runner it unpacked;
and find_runtime's order (`$FATPTE_RUN`, the runner inside the package, PATH)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fatpte.device import fatpte_run, runtime_wheel
from fatpte.errors import ErrorCode, FatpteError
from fatpte.manifest.model import Requirements
from fatpte.ops import runner

WHEEL_TAG = "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none-manylinux_2_34_{arch}\n"


def make_wheel(path: Path, *, arch: str = "aarch64", members: dict[str, bytes] | None = None,
               runner_bytes: bytes | None = b"\x7fELF runner") -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("fatpte-0.1.0.dist-info/WHEEL", WHEEL_TAG.format(arch=arch))
        z.writestr("fatpte/__init__.py", "")
        if runner_bytes is not None:
            info = zipfile.ZipInfo("fatpte/_loader/bin/fatpte-run")
            info.external_attr = (stat.S_IFREG | 0o755) << 16
            z.writestr(info, runner_bytes)
        for name, data in (members or {}).items():
            z.writestr(name, data)
    return path


def test_unpack_puts_the_loader_under_its_architecture(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "w.whl", members={"fatpte/_loader/lib/libfatpte.so.0": b"lib"})
    cache = tmp_path / "cache"
    done = runtime_wheel.unpack_wheel(str(wheel), str(cache))
    assert done == runtime_wheel.Unpacked("aarch64", str(cache / "aarch64"), str(cache / "aarch64/bin/fatpte-run"))
    assert (cache / "aarch64/bin/fatpte-run").read_bytes() == b"\x7fELF runner"
    assert os.access(cache / "aarch64/bin/fatpte-run", os.X_OK)
    assert (cache / "aarch64/lib/libfatpte.so.0").stat().st_mode & 0o111 == 0
    assert runtime_wheel.cached_runtime("aarch64", str(cache)) == done.runner
    assert runtime_wheel.cached_runtime("x86_64", str(cache)) is None
    assert sorted(p.name for p in cache.iterdir()) == ["aarch64"]  # nothing left beside it


def test_unpack_replaces_what_was_there(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    runtime_wheel.unpack_wheel(str(make_wheel(tmp_path / "a.whl", members={"fatpte/_loader/old.txt": b"x"})),
                               str(cache))
    runtime_wheel.unpack_wheel(str(make_wheel(tmp_path / "b.whl", runner_bytes=b"new")), str(cache))
    assert (cache / "aarch64/bin/fatpte-run").read_bytes() == b"new"
    assert not (cache / "aarch64/old.txt").exists()
    assert sorted(p.name for p in cache.iterdir()) == ["aarch64"]


@pytest.mark.parametrize("member", ["fatpte/_loader/../evil", "fatpte/_loader//abs", "fatpte/_loader/a\\b"])
def test_unpack_refuses_a_member_outside_the_folder(tmp_path: Path, member: str) -> None:
    wheel = make_wheel(tmp_path / "w.whl", members={member: b"x"})
    with pytest.raises(FatpteError) as caught:
        runtime_wheel.unpack_wheel(str(wheel), str(tmp_path / "cache"))
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT and "outside its folder" in str(caught.value)
    assert not (tmp_path / "cache" / "aarch64").exists()


def test_unpack_refuses_a_link(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "w.whl")
    with zipfile.ZipFile(wheel, "a") as z:
        info = zipfile.ZipInfo("fatpte/_loader/lib/link")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(info, "/etc/passwd")
    with pytest.raises(FatpteError, match="is a link"):
        runtime_wheel.unpack_wheel(str(wheel), str(tmp_path / "cache"))


def test_unpack_refuses_a_pure_wheel_and_another_package(tmp_path: Path) -> None:
    with pytest.raises(FatpteError, match=r"holds no loader.*fatpte-run missing"):
        runtime_wheel.unpack_wheel(str(make_wheel(tmp_path / "p.whl", runner_bytes=None)), str(tmp_path / "c"))
    other = tmp_path / "o.whl"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("numpy-2.0.dist-info/WHEEL", WHEEL_TAG.format(arch="aarch64"))
    with pytest.raises(FatpteError, match="not a fatpte wheel"):
        runtime_wheel.unpack_wheel(str(other), str(tmp_path / "c"))
    (tmp_path / "text.whl").write_text("no zip")
    with pytest.raises(FatpteError, match="not a wheel"):
        runtime_wheel.unpack_wheel(str(tmp_path / "text.whl"), str(tmp_path / "c"))


def test_the_cache_folder_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(runtime_wheel.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert runtime_wheel.cache_dir() == str(tmp_path / "xdg" / "fatpte" / "runtimes")
    monkeypatch.setenv(runtime_wheel.CACHE_ENV, str(tmp_path / "mine"))
    assert runtime_wheel.cache_dir() == str(tmp_path / "mine")


def test_check_finds_the_unpacked_aarch64_runner_after_the_variable(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv(runtime_wheel.CACHE_ENV, str(cache))
    monkeypatch.delenv(runner.AARCH64_RUNTIME_ENV, raising=False)
    qemu = tmp_path / "qemu-aarch64"
    qemu.write_text("")
    none, why = runner.emulated_runtime(Requirements(), qemu=str(qemu))
    assert none is None and "fatpte runtime unpack" in why and runner.AARCH64_RUNTIME_ENV in why
    unpacked = runtime_wheel.unpack_wheel(str(make_wheel(tmp_path / "w.whl")))
    found, _ = runner.emulated_runtime(Requirements(), qemu=str(qemu))
    assert found is not None and found.command[-1] == unpacked.runner
    monkeypatch.setenv(runner.AARCH64_RUNTIME_ENV, str(qemu))  # the variable comes first
    named, _ = runner.emulated_runtime(Requirements(), qemu=str(qemu))
    assert named is not None and named.command[-1] == str(qemu)


def test_find_runtime_takes_the_packaged_runner_before_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    on_path = tmp_path / "fatpte-run"
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(fatpte_run.RUNTIME_ENV, raising=False)
    monkeypatch.setattr(fatpte_run, "packaged_runtime", lambda: None)
    assert fatpte_run.find_runtime() == (str(on_path), False)
    monkeypatch.setattr(fatpte_run, "packaged_runtime", lambda: "/site/fatpte/_loader/bin/fatpte-run")
    assert fatpte_run.find_runtime() == ("/site/fatpte/_loader/bin/fatpte-run", False)
    monkeypatch.setenv(fatpte_run.RUNTIME_ENV, "/named")
    assert fatpte_run.find_runtime() == ("/named", True)


def test_the_source_tree_has_no_packaged_runner() -> None:
    assert fatpte_run.packaged_runtime() is None  # the editable install and the tests use the source tree


def test_the_command_unpacks_and_says_where(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "w.whl")
    done = subprocess.run([sys.executable, "-m", "fatpte", "runtime", "unpack", str(wheel), "--into",
                           str(tmp_path / "c")], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "c" / "aarch64"
    assert done.stdout == f"unpacked the aarch64 loader of '{wheel}' into '{folder}': '{folder}/bin/fatpte-run'\n"
    bad = subprocess.run([sys.executable, "-m", "fatpte", "runtime", "unpack", str(tmp_path / "none.whl")],
                         capture_output=True, text=True, check=False)
    assert bad.returncode != 0 and "none.whl" in bad.stderr


def test_a_failed_replace_keeps_the_runner_that_was_there(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    runtime_wheel.unpack_wheel(str(make_wheel(tmp_path / "a.whl", runner_bytes=b"old")), str(cache))
    rename = os.rename

    def failing(src: str, dst: str) -> None:
        if os.path.basename(src).startswith(".aarch64."):  # the new tree, renamed into place
            raise OSError(28, "No space left on device")
        rename(src, dst)

    monkeypatch.setattr(runtime_wheel.os, "rename", failing)
    with pytest.raises(FatpteError) as caught:
        runtime_wheel.unpack_wheel(str(make_wheel(tmp_path / "b.whl", runner_bytes=b"new")), str(cache))
    assert caught.value.code is ErrorCode.IO_ERROR and "No space left" in str(caught.value)
    assert (cache / "aarch64/bin/fatpte-run").read_bytes() == b"old"
    assert sorted(p.name for p in cache.iterdir()) == ["aarch64"]
