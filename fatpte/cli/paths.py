"""Which files `fatpte validate` checks when given directories.

A file named on the command line is always checked. A directory is walked recursively, in
sorted order, skipping directories whose name starts with a dot (.git, .venv); in it:
- every `*.nfat` file is checked (the extension says it is a container, so a damaged one
  must be reported, not skipped);
- a `*.pte` file is checked only when it holds containers: it starts with the magic `NFAT`,
  or it is an ExecuTorch program with a delegate whose payload is an NFAT container (a fat
  delegate). Plain ExecuTorch programs share the extension and are not containers, so they are
  skipped, not failed; so is a program fatpte's reader cannot read (it may come from a newer
  ExecuTorch), which is reported only when named on the command line.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from fatpte.format import layout as L

CONTAINER_SUFFIX = ".nfat"
SNIFFED_SUFFIX = ".pte"


def _holds_containers(path: str) -> bool:
    """Starts with the magic, or is an ExecuTorch program with an NFAT delegate."""
    try:
        from fatpte.errors import FatpteError
        from fatpte.fileio.mapping import open_regular

        try:
            fd = open_regular(path)  # a FIFO named *.pte must not stop the walk
        except FatpteError:
            return True  # validate then reports it (E0811), as it reports an unreadable file
        with os.fdopen(fd, "rb") as f:
            head = f.read(8)
            if head[: len(L.MAGIC)] == L.MAGIC:
                return True
            # Imported here: only a *.pte that is no container pays for the program reader.
            from fatpte.executorch.pte import IDENTIFIER

            if head[4:8] != IDENTIFIER:
                return False
            from fatpte.executorch.pte import read_program
            from fatpte.ops.fat_delegate import nfat_delegates

            try:
                return bool(nfat_delegates(read_program(head + f.read(), source=path)))
            except FatpteError:
                return False
    except OSError:
        return True  # unreadable: let validate report the I/O error rather than hide the file


def _suffix(path: str) -> str:
    return os.path.splitext(path)[1].lower()


def _walk(root: str) -> Iterator[str]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            suffix = _suffix(name)
            if suffix == CONTAINER_SUFFIX or (suffix == SNIFFED_SUFFIX and _holds_containers(path)):
                yield path


def _plain_pte(path: str) -> bool:
    return _suffix(path) == SNIFFED_SUFFIX and not _holds_containers(path)


def containers(paths: Iterable[str | os.PathLike[str]], *, skip_plain_pte: bool = False,
               empty: list[str] | None = None) -> Iterator[str]:
    """The files to check for `paths`, each once, in the order given (directories expanded),
    spelled as given (a directory's files as DIRECTORY/NAME). With `skip_plain_pte`, a named
    `*.pte` file that holds no container is skipped too (pre-commit passes every staged `*.pte`
    file by name). `a.nfat` and `./a.nfat` are the same file, checked once. Each directory in
    which the walk finds no container is appended to `empty`, when given. A URL is checked as
    one file."""
    from fatpte.fileio.url import is_url

    seen: set[str] = set()
    for p in paths:
        path = os.fspath(p)
        if is_url(path):  # a URL is one file, checked as given
            if path not in seen:
                seen.add(path)
                yield path
            continue
        is_dir = os.path.isdir(path)
        found = _walk(path) if is_dir else iter((path,))
        any_found = False
        for f in found:
            if skip_plain_pte and _plain_pte(f):
                continue
            any_found = True
            key = os.path.normpath(f)
            if key not in seen:
                seen.add(key)
                yield f
        if is_dir and not any_found and empty is not None:
            empty.append(path)
