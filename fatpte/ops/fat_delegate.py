"""NFAT containers shipped as delegate payloads inside a .pte: find, validate, select, thin.

A delegate whose payload starts with the NFAT magic is a fat delegate: a container of
specializations of that delegate's graph. This module looks inside such payloads with the
ordinary container code (Container.from_buffer, validate_buffer, select) and `thin_pte` writes a
.pte whose NFAT delegates hold only the entries a device gets, each replaced segment laid out
again by rewrite.replace_segment so every segment offset in the program stays right.
Only payloads that live in segments can change size; an inline NFAT payload is refused.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from fatpte.container.reader import Container
from fatpte.container.validation import Report, validate_buffer
from fatpte.device.profile import DeviceProfile
from fatpte.device.selection import Selection, select
from fatpte.errors import ErrorCode, FatpteError, Finding, finding
from fatpte.executorch.pte import Delegate, Program, read_program
from fatpte.executorch.rewrite import replace_segment
from fatpte.fileio.atomic import atomic_output, io_error
from fatpte.fileio.mapping import open_regular
from fatpte.format.layout import MAGIC, MAX_FAT_DELEGATE_DEPTH
from fatpte.format.structure import read_structure
from fatpte.ops.thinning import thin


def nfat_delegates(program: Program) -> tuple[Delegate, ...]:
    """Every delegate of every method whose payload is an NFAT container."""
    return tuple(
        d for m in program.methods for d in m.delegates if bytes(program.payload(d)[:4]) == MAGIC
    )


def _label(program: Program, d: Delegate) -> str:
    return f"{program.source or '<pte>'}[delegate {d.index} {d.backend_id} at {d.offset:#x}]"


def validate_nfat_delegates(program: Program) -> list[tuple[Delegate, Report]]:
    """Each NFAT delegate's container rules, then how deep fat delegates nest inside it (E1010)
    and whether each nested program on the way reads (the reader's code): specs/executorch.md
    section 8."""
    out = []
    clean: Clean = {}
    for d in nfat_delegates(program):
        report = validate_buffer(program.payload(d), source=_label(program, d))
        if not report.errors:
            deep = nesting_finding(program, d, clean=clean)
            if deep is not None:
                report = report._replace(findings=report.findings + (deep,))
        out.append((d, report))
    return out


_PROGRAM = b"ET12"

# Where the containers and programs the nesting walk has read without finding one too deep start
# in the file being validated, each with the deepest depth it was read at. One met again at that
# depth or less holds nothing too deep either (its levels only get shallower), so it is not read
# again: each is read at most MAX_FAT_DELEGATE_DEPTH times, however many entries, wrappers and
# delegates reach it (n entries sharing the level below, k levels deep, are n**k paths through
# bytes that grow as n * k). Keyed by the first byte alone: the same bytes given as a longer or
# shorter region (version 1 entries may overlap) either do not read, or read as the same table
# and the same payloads, so they hold nothing too deep either.
Clean = dict[int, int]


def nesting_finding(program: Program, delegate: Delegate, *, depth: int = 1, base: int = 0,
                    path: str = "", clean: Clean | None = None) -> Finding | None:
    """E1010 for the first NFAT container past MAX_FAT_DELEGATE_DEPTH inside fat delegate
    `delegate` of `program` (which is at `depth`), at its first byte in the file being validated
    (`base`: where `program` starts in it) and the path that reaches it, or the reader's error for
    the first nested program on the way that does not read; None when neither is. Each
    container and program on the way is read only as far as its table and delegates, at most
    MAX_FAT_DELEGATE_DEPTH + 1 levels down and once per depth (`clean`, shared by the walks of one
    file), so the work stays proportional to the file."""
    return _container_too_deep(program.payload(delegate), depth, base + delegate.offset,
                               f"{path}delegates[{delegate.index}].payload", {} if clean is None else clean)


def program_nesting_finding(program: Program, *, base: int = 0, path: str = "") -> Finding | None:
    """nesting_finding for the fat delegates of a program that is not inside one (depth 1)."""
    return _program_too_deep(program, 1, base, path, {})


def _program_too_deep(program: Program, depth: int, base: int, path: str, clean: Clean) -> Finding | None:
    for d in nfat_delegates(program):
        deep = nesting_finding(program, d, depth=depth, base=base, path=path, clean=clean)
        if deep is not None:
            return deep
    return None


def _container_too_deep(buf: memoryview, depth: int, at: int, path: str, clean: Clean) -> Finding | None:
    if depth > MAX_FAT_DELEGATE_DEPTH:
        return finding(ErrorCode.FAT_DELEGATE_TOO_DEEP,
                       f"a fat delegate at depth {depth}: fat delegates nest at most {MAX_FAT_DELEGATE_DEPTH} "
                       "levels deep (specs/executorch.md section 8)", offset=at, field=path,
                       expected=MAX_FAT_DELEGATE_DEPTH, actual=depth)
    if clean.get(at, 0) >= depth:
        return None
    try:
        entries = read_structure(buf).entries
    except FatpteError:
        entries = []  # validating that container reports why it cannot be read
    for e in entries:
        payload = buf[e.offset : e.end]
        inner = f"{path}.entries[{e.index}].payload"
        if bytes(payload[:4]) == MAGIC:
            deep = _container_too_deep(payload, depth + 1, at + e.offset, inner, clean)
        elif bytes(payload[4:8]) == _PROGRAM and clean.get(at + e.offset, 0) < depth + 1:
            try:
                nested = read_program(payload, source=None)
            except FatpteError as exc:
                return _unreadable(exc, at + e.offset, inner)
            deep = _program_too_deep(nested, depth + 1, at + e.offset, f"{inner}.", clean)
            if deep is None:
                clean[at + e.offset] = depth + 1
        else:
            continue
        if deep is not None:
            return deep
    clean[at] = depth
    return None


def _unreadable(exc: FatpteError, at: int, path: str) -> Finding:
    """A nested program (an entry whose bytes 4..8 are `ET12`) that does not read: the fat delegate
    would hand it to ExecuTorch, whose runtime aborts on some of what the reader refuses (a value
    index past the values: Method::get_value's ET_CHECK), so it is an error of the file, at the
    reader's offset within the program (specs/executorch.md section 8)."""
    where = f" ({exc.field})" if exc.field else ""
    return finding(exc.code, f"a nested program does not read as an ExecuTorch program: {exc.message}{where}",
                   offset=at + (exc.offset or 0), field=path)


def select_nfat_delegates(
    program: Program, device: DeviceProfile, *, prefer: Sequence[str] = (), exclude: Sequence[str] = ()
) -> list[tuple[Delegate, Selection]]:
    out = []
    for d in nfat_delegates(program):
        container = Container.from_buffer(program.payload(d), source=_label(program, d))
        out.append((d, select(container, device, prefer=prefer, exclude=exclude)))
    return out


def thin_pte(
    path: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    device: DeviceProfile | None = None,
    names: Sequence[str] | None = None,
    prefer: Sequence[str] = (),
    exclude: Sequence[str] = (),
    only_chosen: bool = False,
) -> Path:
    """Write to `dest` the .pte at `path` with each NFAT delegate thinned for `device` (or `names`),
    as `fatpte.thin` thins a container (`only_chosen`: the entry the device gets alone)."""
    source = str(path)
    fd = open_regular(source, "the program")  # a FIFO or a device: E0811 before a byte is read
    try:
        with os.fdopen(fd, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise FatpteError(ErrorCode.IO_ERROR, f"cannot read: {exc.strerror or exc}", source=source) from None
    program = read_program(data, source=source)
    fat = nfat_delegates(program)
    if not fat:
        raise FatpteError(ErrorCode.ENTRY_NOT_FOUND, "the program has no delegate whose payload is an NFAT "
                          "container", source=source)
    for d in fat:
        if d.location != "segment":
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"delegate {d.index} ({d.backend_id}) keeps its NFAT "
                              "payload inline in the flatbuffer, which cannot change size; export with "
                              "delegate segments (the default) to thin it", source=source,
                              field=f"delegates[{d.index}].processed")
    segments = sorted({d.data_index for d in fat})
    try:
        with tempfile.TemporaryDirectory(prefix="fatpte-thin-pte-") as tmp:
            for n, seg_index in enumerate(segments):
                current = read_program(data, source=source)
                seg = current.segments[seg_index]
                fat_in = Path(tmp, f"in{n}.nfat")
                fat_in.write_bytes(data[seg.offset : seg.offset + seg.size])
                thinned = thin(fat_in, Path(tmp, f"out{n}.nfat"), device=device, names=names, prefer=prefer,
                               exclude=exclude, only_chosen=only_chosen)
                data = replace_segment(data, seg_index, thinned.read_bytes(), source=source)
    except OSError as exc:  # the temporary folder: thin's own I/O errors are FatpteErrors already
        raise io_error(exc, tempfile.gettempdir(), "cannot use the temporary folder") from None
    target = Path(dest)
    with atomic_output(target) as f:
        f.write(data)
    return target
