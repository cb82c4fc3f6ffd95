"""Atomic output files: every write goes to a temporary file beside the destination and is
renamed into place only when complete, so a crash or an error never leaves a partial file at
the destination, and an existing file there is replaced in one step or not at all."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import BinaryIO

from fatpte.errors import ErrorCode, FatpteError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_output(dest: str | os.PathLike[str], *, overwrite: bool = True) -> Iterator[BinaryIO]:
    """Yield a file to write; on success it replaces `dest`, on any exception it vanishes."""
    # os.path, not pathlib: extract is on the fast read path, where `import pathlib` costs ~9 ms.
    # Messages keep the caller's spelling of the path.
    target = os.fspath(dest)
    if not overwrite and os.path.exists(target):
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{target} exists; refusing to overwrite it",
                          source=target)
    folder, name = os.path.split(target)
    try:
        fd, tmp = _create_beside(folder or ".", name)
    except OSError as exc:
        raise io_error(exc, target, "cannot create a temporary file beside") from exc
    try:
        with os.fdopen(fd, "w+b") as handle:
            yield handle
            handle.flush()
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise io_error(exc, target, "cannot write") from exc
        raise


def _create_beside(folder: str, name: str) -> tuple[int, str]:
    """A new file `.NAME.RANDOM.partial` in `folder`, created exclusively and readable by the owner
    only until it is published: what tempfile.mkstemp does, without importing tempfile (random,
    shutil: milliseconds of every writing command's start-up)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        path = os.path.join(folder, f".{name}.{os.urandom(6).hex()}.partial")
        try:
            return os.open(path, flags, 0o600), path
        except FileExistsError:
            continue  # 48 random bits collided: draw again
    raise FileExistsError(f"no free temporary name beside {os.path.join(folder, name)}")


def io_error(exc: OSError, path: str | os.PathLike[str], doing: str) -> FatpteError:
    reason = exc.strerror or str(exc)
    return FatpteError(ErrorCode.IO_ERROR, f"{doing} {path}: {reason}", source=os.fspath(path), actual=exc.errno)
