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
from pathlib import Path

from fatpte import layout as L

CONTAINER_SUFFIX = ".nfat"
SNIFFED_SUFFIX = ".pte"


def _holds_containers(path: Path) -> bool:
    """Starts with the magic, or is an ExecuTorch program with an NFAT delegate."""
    try:
        with path.open("rb") as f:
            head = f.read(8)
            if head[: len(L.MAGIC)] == L.MAGIC:
                return True
            # Imported here: only a *.pte that is no container pays for the program reader.
            from fatpte.executorch.pte import IDENTIFIER

            if head[4:8] != IDENTIFIER:
                return False
            from fatpte.errors import FatpteError
            from fatpte.executorch.nfat_pte import nfat_delegates
            from fatpte.executorch.pte import read_program

            try:
                return bool(nfat_delegates(read_program(head + f.read(), source=str(path))))
            except FatpteError:
                return False
    except OSError:
        return True  # unreadable: let validate report the I/O error rather than hide the file


def _walk(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath, name)
            suffix = path.suffix.lower()
            if suffix == CONTAINER_SUFFIX or (suffix == SNIFFED_SUFFIX and _holds_containers(path)):
                yield path


def _plain_pte(path: Path) -> bool:
    return path.suffix.lower() == SNIFFED_SUFFIX and not _holds_containers(path)


def containers(paths: Iterable[str | os.PathLike[str]], *, skip_plain_pte: bool = False) -> Iterator[Path]:
    """The files to check for `paths`, each once, in the order given (directories expanded).
    With `skip_plain_pte`, a named `*.pte` file that holds no container is skipped too
    (pre-commit passes every staged `*.pte` file by name)."""
    seen: set[Path] = set()
    for p in paths:
        path = Path(p)
        found = _walk(path) if path.is_dir() else iter((path,))
        for f in found:
            if skip_plain_pte and _plain_pte(f):
                continue
            if f not in seen:
                seen.add(f)
                yield f
