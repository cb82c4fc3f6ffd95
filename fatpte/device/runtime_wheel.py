"""fatpte-runs for other architectures, taken from fatpte's platform wheels (docs/wheels.md): the
runtime cache, `unpack_wheel` (what `fatpte runtime unpack` does: a platform wheel's loader, the
fatpte/_loader tree, unpacked into the cache under its architecture) and `cached_runtime` (the
fatpte-run unpacked there for an architecture, which `fatpte check` runs under qemu for the
entries made for it: fatpte.ops.runner). No cross build is needed to check aarch64 entries on an
x86_64 machine, only the aarch64 wheel.

The cache is `$FATPTE_RUNTIME_CACHE`, else `$XDG_CACHE_HOME/fatpte/runtimes`, else
`~/.cache/fatpte/runtimes`; an architecture's folder there (`aarch64/`: bin, lib, include, ...)
is unpacked beside it and renamed into place whole, so a runner found there is never half written.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import zipfile
from typing import Final, NamedTuple

from fatpte.errors import ErrorCode, FatpteError, quoted

CACHE_ENV: Final = "FATPTE_RUNTIME_CACHE"
LOADER_TREE: Final = "fatpte/_loader/"  # where a platform wheel holds the loader (pyproject.toml)
RUNNER: Final = "bin/fatpte-run"
ARCHES: Final = ("aarch64", "x86_64")
MAX_MEMBERS: Final = 4096  # a wheel's loader tree holds a few hundred files (the SDK's headers)


class Unpacked(NamedTuple):
    """What `unpack_wheel` made: the architecture, its folder in the cache, its fatpte-run."""

    arch: str
    folder: str
    runner: str


def cache_dir() -> str:
    """The runtime cache's folder (it may not exist yet)."""
    named = os.environ.get(CACHE_ENV)
    if named:
        return named
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "fatpte", "runtimes")


def cached_runtime(arch: str, cache: str | None = None) -> str | None:
    """The fatpte-run unpacked for `arch` in the cache, or None."""
    path = os.path.join(cache or cache_dir(), arch, RUNNER)
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


def wheel_arch(wheel: zipfile.ZipFile, source: str) -> str:
    """The architecture of a fatpte platform wheel, from its WHEEL file's tags; E0702 for another
    package's wheel, or a pure one (no loader inside)."""
    names = [n for n in wheel.namelist() if n.startswith("fatpte-") and n.endswith(".dist-info/WHEEL")]
    if len(names) != 1:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "not a fatpte wheel (no fatpte-*.dist-info/WHEEL inside)",
                          source=source)
    tags = [line.split(":", 1)[1].strip() for line in wheel.read(names[0]).decode("utf-8", "replace").splitlines()
            if line.startswith("Tag:")]
    arches = {arch for tag in tags for arch in ARCHES if tag.endswith("_" + arch)}
    if LOADER_TREE + RUNNER not in wheel.namelist() or len(arches) != 1:
        said = ", ".join(quoted(t) for t in tags) or "none"
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"this fatpte wheel holds no loader for one Linux "
                          f"architecture (tags {said}; {LOADER_TREE}{RUNNER} "
                          f"{'present' if LOADER_TREE + RUNNER in wheel.namelist() else 'missing'}): give a "
                          "platform wheel, built by `make wheel` or `make wheel-aarch64`", source=source)
    return arches.pop()


def _members(wheel: zipfile.ZipFile, source: str) -> list[tuple[zipfile.ZipInfo, str]]:
    """The loader tree's files with their paths below it; E0702 for a path that would leave the
    folder, a link, or more members than a loader holds."""
    found = []
    for info in wheel.infolist():
        if not info.filename.startswith(LOADER_TREE) or info.is_dir():
            continue
        relative = info.filename[len(LOADER_TREE):]
        parts = relative.split("/")
        mode = info.external_attr >> 16
        if relative.startswith("/") or "\\" in relative or any(p in ("", ".", "..") for p in parts) \
                or stat.S_ISLNK(mode):
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"the wheel member {quoted(info.filename)} is a link or "
                              "a path outside its folder; refusing to unpack it", source=source)
        found.append((info, relative))
    if len(found) > MAX_MEMBERS:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"the wheel's loader tree has {len(found)} files, more than "
                          f"the {MAX_MEMBERS} a fatpte wheel holds", source=source)
    return found


def _extract(wheel: zipfile.ZipFile, members: list[tuple[zipfile.ZipInfo, str]], folder: str) -> None:
    for info, relative in members:
        target = os.path.join(folder, *relative.split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with wheel.open(info) as src, open(target, "wb") as out:
            shutil.copyfileobj(src, out)
        executable = (info.external_attr >> 16) & 0o111
        os.chmod(target, 0o755 if executable else 0o644)


def _replace(new: str, folder: str) -> None:
    """`new` renamed to `folder`, an older `folder` moved aside first (and back when the rename
    fails) and removed after."""
    old = None
    if os.path.lexists(folder):
        old = tempfile.mkdtemp(dir=os.path.dirname(folder), prefix=f".{os.path.basename(folder)}.old.")
        os.rename(folder, os.path.join(old, "tree"))
    try:
        os.rename(new, folder)
    except OSError:
        if old is not None:
            os.rename(os.path.join(old, "tree"), folder)
            os.rmdir(old)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def unpack_wheel(path: str, cache: str | None = None) -> Unpacked:
    """The loader of the fatpte platform wheel at `path` unpacked into `cache` (default: the
    runtime cache) under its architecture, replacing what was there; E0702 when `path` is not a
    fatpte platform wheel, E0801 when it cannot be read or the cache cannot be written."""
    cache = cache or cache_dir()
    try:
        with zipfile.ZipFile(path) as wheel:
            arch = wheel_arch(wheel, path)
            members = _members(wheel, path)
            os.makedirs(cache, exist_ok=True)
            staging = tempfile.mkdtemp(dir=cache, prefix=f".{arch}.")
            try:
                _extract(wheel, members, staging)
                _replace(staging, os.path.join(cache, arch))
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
    except zipfile.BadZipFile as exc:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"not a wheel (a zip file): {exc}", source=path) from None
    except OSError as exc:
        raise FatpteError(ErrorCode.IO_ERROR, f"cannot unpack the wheel into {cache}: {exc.strerror or exc}",
                          source=exc.filename or path) from None
    folder = os.path.join(cache, arch)
    return Unpacked(arch, folder, os.path.join(folder, RUNNER))
