"""The ExecuTorch side of the command line: what `info`, `thin`, `validate` and `select` do when a
file is an ExecuTorch file rather than an NFAT container, and `pack`'s warnings (what a program
entry becomes is the packing policy's, fatpte.ops.pack_policy).

main.py tells the two apart by a file's first 8 bytes (`executorch_kind`: NFAT magic first, then
the flatbuffer identifier at bytes 4..8) and calls the functions here, which are thin layers over
fatpte.executorch (docs/executorch.md). That package is imported only inside these functions, so
`fatpte --help` and every command on a container start without it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from fatpte.errors import ErrorCode, FatpteError, listed, quoted

# Paths as the command line gave them (a str), or a Path from a Python caller; pathlib is not
# imported here, because `fatpte info` and `select` on a container call executorch_kind first.
PathArg = str | os.PathLike[str]

if TYPE_CHECKING:
    from fatpte.container.validation import Report
    from fatpte.device.profile import DeviceProfile
    from fatpte.ops.specialization import Specialization

HEAD_SIZE = 64  # the NFAT magic at 0..4, an ExecuTorch identifier at 4..8, a .ptn's first member name


def head(path: PathArg) -> bytes:
    """The first bytes of `path`; empty when it cannot be read, so that the command reports the
    I/O error the way it reports it for containers."""
    from fatpte.fileio.mapping import read_head

    return read_head(path, HEAD_SIZE)


def executorch_kind(path: PathArg) -> str | None:
    """"pte", "ptd", "ptn", "nptg" or "xnnpack" when `path` is that ExecuTorch file; None for an NFAT
    container (or anything else, which the container commands then reject as they always did)."""
    from fatpte.ops.pack_policy import executorch_kind as kind

    return kind(path)


def is_program(path: PathArg) -> bool:
    """True when `path` is an ExecuTorch program (.pte, identifier ET12) and not a container."""
    return executorch_kind(path) == "pte"


def _read(path: PathArg) -> bytes:
    from fatpte.fileio.atomic import io_error
    from fatpte.fileio.mapping import open_regular

    fd = open_regular(path)
    try:
        with os.fdopen(fd, "rb") as f:
            fd = -1
            return f.read()
    except OSError as exc:
        raise io_error(exc, path, "cannot read") from None
    finally:
        if fd >= 0:
            os.close(fd)


def _not_fat(path: PathArg) -> FatpteError:
    return FatpteError(ErrorCode.ENTRY_NOT_FOUND, "the ExecuTorch program has no delegate whose payload is an "
                       "NFAT container", source=os.fspath(path))


# ---------------------------------------------------------------------------------------------
# pack
# ---------------------------------------------------------------------------------------------


def unresolved_warnings(specs: Sequence[Specialization]) -> list[str]:
    """`fatpte pack`'s warnings: one per program entry that loads named-data keys neither the
    program nor the container holds (the extracted program would fail to load)."""
    from fatpte.ops.pte_specialize import unresolved_keys

    lines = []
    for spec in specs:
        missing = unresolved_keys(spec)
        if missing:
            source = f" ({spec.payload})" if isinstance(spec.payload, str) else ""
            lines.append(f"fatpte: warning: entry {spec.entry_name!r}{source} loads {len(missing)} named-data "
                         f"{'key' if len(missing) == 1 else 'keys'} that neither the program nor the container "
                         f"holds: {', '.join(missing)}; give the .ptd it was exported with (--data "
                         f"{spec.entry_name}=FILE.ptd), or the extracted program will not load")
    return lines


# ---------------------------------------------------------------------------------------------
# extract
# ---------------------------------------------------------------------------------------------


def write_entry_data(container: PathArg, entry: str, dest: PathArg) -> str:
    """`fatpte extract --data-out`: write the entry's named data as a .ptd; the summary line."""
    from fatpte.ops.ptd_export import entry_data_file

    written = entry_data_file(container, entry, dest)
    if written.path is None:
        return f"wrote no {dest}: {written.entry!r} has no named data, so its program needs no data file"
    n = len(written.keys)
    return (f"wrote {written.path}: named data of {written.entry!r}, {n} {'key' if n == 1 else 'keys'}, "
            f"{written.size} bytes")


# ---------------------------------------------------------------------------------------------
# info / validate / select / thin
# ---------------------------------------------------------------------------------------------


def describe_json(path: PathArg) -> dict[str, Any]:
    from fatpte.executorch.describe import describe

    return describe(os.fspath(path)).to_json()


def describe_text(path: PathArg) -> str:
    from fatpte.executorch.describe import describe

    return describe(os.fspath(path)).text()


def program_reports(path: PathArg) -> list[Report]:
    """`fatpte validate` on an ExecuTorch program: one Report per NFAT delegate. A program that
    cannot be read, or has no NFAT delegate, gives one Report with one error saying so."""
    from fatpte.container.validation import Report
    from fatpte.errors import finding
    from fatpte.executorch.pte import read_program
    from fatpte.fileio.mapping import map_view
    from fatpte.ops.fat_delegate import validate_nfat_delegates

    # Mapped, not read: checking a program's NFAT delegates touches them and its flatbuffer only.
    data = map_view(path)
    try:
        reports = [r for _, r in validate_nfat_delegates(read_program(data, source=os.fspath(path)))]
    except FatpteError as exc:
        return [Report(os.fspath(path), None, len(data), (exc.finding,))]
    if reports:
        return reports
    return [Report(os.fspath(path), None, len(data), (finding(
        ErrorCode.BAD_MAGIC, "not a container: an ExecuTorch program (ET12) with no delegate whose payload is "
        "an NFAT container (--skip-plain-pte skips such files)", offset=0, field="header.magic",
        expected="NFAT", actual=bytes(data[:4]).hex()),))]


# What a file that is not a container is, when it is an ExecuTorch file (by executorch_kind).
_NOT_CONTAINER = {
    "ptd": "an ExecuTorch data file (.ptd, FT01)",
    "ptn": "an ExecuTorch native package (.ptn); `fatpte pack` packs it as an entry",
    "nptg": "a bare ExecuTorch native backend payload (NPTG)",
    "xnnpack": "a bare XNNPACK delegate payload",
}
_LFS_POINTER = b"version https://git-lfs"


def not_a_container(path: PathArg, magic: bytes) -> str:
    """The message for a file whose first bytes are not the NFAT magic: what it is instead."""
    kind = executorch_kind(path)
    if kind in _NOT_CONTAINER:
        return f"not a container: {_NOT_CONTAINER[kind]}"
    if head(path).startswith(_LFS_POINTER):
        return "not a container: a Git LFS pointer file (fetch the real file with `git lfs pull`)"
    return f"not a container, and not an ExecuTorch file: it starts with {magic!r}, not b'NFAT'"


def file_reports(path: PathArg, *, progress: Callable[[int, int], None] | None = None) -> list[Report]:
    """What `fatpte validate` reports for one file: a container's report, each NFAT delegate's
    for an ExecuTorch program (`program_reports`), and for any other file one error saying what
    it is instead of a container."""
    from fatpte.ops.validation import validate  # the container rules, then its ExecuTorch programs

    if is_program(path):
        return program_reports(path)
    report = validate(path, progress=progress)
    first = report.findings[0] if report.findings else None
    if first is not None and first.code is ErrorCode.BAD_MAGIC and isinstance(first.actual, bytes):
        first = first._replace(message=not_a_container(path, first.actual))
        report = report._replace(findings=(first, *report.findings[1:]))
    return [report]


def select_program(path: PathArg, device: DeviceProfile, *, prefer: Sequence[str], exclude: Sequence[str],
                   explain: bool) -> tuple[dict[str, Any], str]:
    """`fatpte select` on an ExecuTorch program: the JSON object and the text for its NFAT
    delegates, each chosen from as from a container (SelectionError when one has no fit)."""
    from fatpte.executorch.pte import read_program
    from fatpte.fileio.mapping import map_view
    from fatpte.ops.fat_delegate import select_nfat_delegates

    chosen = select_nfat_delegates(read_program(map_view(path), source=os.fspath(path)), device, prefer=prefer,
                                   exclude=exclude)
    if not chosen:
        raise _not_fat(path)
    result = {"path": os.fspath(path), "delegates": [
        {"index": d.index, "backend_id": d.backend_id, "offset": d.offset, **s.to_json()} for d, s in chosen]}
    if explain:
        text = "\n\n".join(f"delegate {d.index} ({d.backend_id} at {d.offset:#x}):\n{s.explain()}"
                           for d, s in chosen)
    else:
        text = "\n".join(s.chosen.name for _, s in chosen)
    return result, text


def thin_program(path: PathArg, output: PathArg, *, device: DeviceProfile | None, names: Sequence[str] | None,
                 prefer: Sequence[str], exclude: Sequence[str], only_chosen: bool = False) -> str:
    """`fatpte thin` on an ExecuTorch program: write OUT with each NFAT delegate thinned; the
    summary line."""
    from fatpte.container.reader import Container
    from fatpte.executorch.pte import read_program
    from fatpte.ops.fat_delegate import nfat_delegates, thin_pte

    thin_pte(path, output, device=device, names=names, prefer=prefer, exclude=exclude, only_chosen=only_chosen)
    data = _read(output)
    program = read_program(data, source=os.fspath(output))
    kept = []
    for d in nfat_delegates(program):
        c = Container.from_buffer(bytes(program.payload(d)), source=os.fspath(output))
        kept.append(f"delegate {d.index} kept {listed([quoted(e.name) for e in c.entries])}")
    return f"wrote {output}: {'; '.join(kept)}; {len(data)} bytes (was {os.stat(path).st_size})"
