"""Atomic output files: every write goes to a temporary file beside the destination and is
renamed into place only when complete, so a crash or an error never leaves a partial file at
the destination, and an existing file there is replaced in one step or not at all.

The temporary file is `.NAME.pPID.RANDOM.partial` beside `NAME` (PID the writing process's id,
RANDOM 12 hex digits). It is removed on any exception, on Ctrl-C (SIGINT), and on SIGTERM and
SIGHUP, which `terminations_raise` turns into the `Terminated` exception while a write is in
progress (the command line then ends the process by the same signal). Only SIGKILL or a power
cut can leave one behind: the next write of the same NAME in that folder removes those of its
pattern whose process no longer runs and which are older than the writing process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import BinaryIO

from fatpte.errors import ErrorCode, FatpteError

# When this process started (closely enough: when it imported fatpte's writer): a leftover
# temporary file older than this cannot be one this process is still writing.
_STARTED = time.time()
_SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived while an output was being written: raised in the main thread so
    that the temporary output is removed like on any other exception. A BaseException, as
    KeyboardInterrupt is: it is not an error to report but a request to stop."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def terminations_raise() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise `Terminated` instead of ending the process
    at once, so that `finally` and `except BaseException` clean up. Only signals whose action is
    the default are taken over (a handler the caller installed is left alone), only in the main
    thread (where Python runs handlers), and the previous actions come back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    taken = [s for s in _SIGNALS if signal.getsignal(s) is signal.SIG_DFL]
    for s in taken:
        signal.signal(s, _raise_terminated)
    try:
        yield
    finally:
        for s in taken:
            signal.signal(s, signal.SIG_DFL)


def end_by_signal(exc: Terminated) -> None:
    """End the process by the signal `exc` stands for, as if it had never been caught (its exit
    status then says so to the shell), once the outputs have been cleaned up."""
    signal.signal(exc.signum, signal.SIG_DFL)
    os.kill(os.getpid(), exc.signum)


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
    refuse_special_output(target)
    folder, name = os.path.split(target)
    remove_stale(folder or ".", name)
    with terminations_raise():
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


def refuse_special_output(target: str) -> None:
    """An output that exists must be a regular file: the rename would replace a device node, a
    FIFO, a socket or a symbolic link (`-o /dev/null --force`; as root in /dev, system-wide) with a
    regular file. E0811 NOT_A_FILE naming what it is; the link is not followed (lstat)."""
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise io_error(exc, target, "cannot examine the output") from exc
    if not stat.S_ISREG(mode):
        from fatpte.fileio.kinds import what_file

        raise FatpteError(ErrorCode.NOT_A_FILE, f"cannot write {target}: it is {what_file(mode)}, which fatpte does "
                          "not replace: only a regular file is replaced by an output; write to another path",
                          source=target)


def remove_stale(folder: str, name: str) -> list[str]:
    """Remove the temporary files `.NAME.pPID.RANDOM.partial` in `folder` that a killed writer left:
    those whose process no longer runs and that are older than this process. Returns their paths.
    Best effort: a file that cannot be examined or removed is left where it is.

    A stale file is older than this process, so it was in the folder before this process wrote
    there: the folder is listed once per process (`_stale_in`), whatever the number of outputs
    written into it (a listing per output made writing n outputs to one folder cost n^2)."""
    key = os.path.abspath(folder)
    with _STALE_LOCK:
        by_name = _STALE.get(key)
        if by_name is None:
            by_name = _STALE[key] = _stale_in(folder)
        candidates = by_name.pop(name, [])
    removed = list[str]()
    for path, pid in candidates:
        if _running(pid):
            continue
        with contextlib.suppress(OSError):
            os.unlink(path)
            removed.append(path)
    return removed


_STALE: dict[str, dict[str, list[tuple[str, int]]]] = {}  # folder -> NAME -> (path, pid) left to remove
_STALE_LOCK = threading.Lock()


def _stale_in(folder: str) -> dict[str, list[tuple[str, int]]]:
    """The temporary files of `folder` older than this process and of another process, by NAME."""
    out: dict[str, list[tuple[str, int]]] = {}
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return out
    for entry in entries:
        if not (entry.name.startswith(".") and entry.name.endswith(".partial")):
            continue
        parts = entry.name[1 : -len(".partial")].rsplit(".", 2)  # NAME, pPID, RANDOM
        if len(parts) != 3 or not parts[1].startswith("p") or not parts[1][1:].isdigit():
            continue
        pid = int(parts[1][1:])
        if pid == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if entry.stat(follow_symlinks=False).st_mtime < _STARTED:
                out.setdefault(parts[0], []).append((entry.path, pid))
    return out


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists but belongs to someone else
    return True


def _create_beside(folder: str, name: str) -> tuple[int, str]:
    """A new file `.NAME.pPID.RANDOM.partial` in `folder`, created exclusively and readable by the
    owner only until it is published: what tempfile.mkstemp does, without importing tempfile
    (random, shutil: milliseconds of every writing command's start-up)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        path = os.path.join(folder, f".{name}.p{os.getpid()}.{os.urandom(6).hex()}.partial")
        try:
            return os.open(path, flags, 0o600), path
        except FileExistsError:
            continue  # 48 random bits collided: draw again
    raise FileExistsError(f"no free temporary name beside {os.path.join(folder, name)}")


def io_error(exc: OSError, path: str | os.PathLike[str], doing: str) -> FatpteError:
    reason = exc.strerror or str(exc)
    return FatpteError(ErrorCode.IO_ERROR, f"{doing} {path}: {reason}", source=os.fspath(path), actual=exc.errno)
