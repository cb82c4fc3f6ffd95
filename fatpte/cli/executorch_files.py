"""The ExecuTorch side of the command line: what `info`, `pack`, `thin`, `validate` and `select`
do when a file is an ExecuTorch file rather than an NFAT container.

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
    from fatpte.format.layout import MAGIC

    data = head(path)
    if data[: len(MAGIC)] == MAGIC:
        return None
    from fatpte.executorch.describe import sniff

    return sniff(data)


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


def _data_targets(data: Sequence[str], programs: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """`--data [NAME=]FILE.ptd` values as entry name -> .ptd files, for `programs` (entry name, path).

    Without NAME, FILE goes to each program entry whose program loads from outside itself a key
    FILE holds (an XNNPACK program that holds its weights gets none of a portable program's .ptd,
    which would then be named data it never loads: E1105, and `validate --strict` would fail); a
    FILE that no program entry needs is refused. NAME= attaches the whole file to that entry."""
    from fatpte.executorch.keys import program_keys
    from fatpte.executorch.pte import read_program
    from fatpte.fileio.mapping import map_view
    from fatpte.ops.pte_specialize import ptd_tensors

    names = [name for name, _ in programs]
    targets: dict[str, list[str]] = {n: [] for n in names}
    needs: dict[str, set[str]] | None = None  # entry name -> the keys its program loads from outside
    for value in data:
        name, sep, path = value.partition("=")
        if not sep:
            if needs is None:
                needs = {n: set(program_keys(read_program(map_view(p), source=p)).external) for n, p in programs}
            keys = set(ptd_tensors(value))
            takers = [n for n in names if needs[n] & keys]
            if not takers:
                raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"--data {value!r}: no ExecuTorch program entry loads a "
                                  f"key of it from outside the program (it holds {listed(sorted(map(quoted, keys)))}"
                                  "); give --data NAME=FILE to attach it to entry NAME anyway", field="--data",
                                  actual=value)
            for n in takers:
                targets[n].append(value)
        elif not name or not path:
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"--data {value!r} is not [NAME=]FILE.ptd",
                              field="--data")
        elif name not in targets:
            have = ", ".join(repr(n) for n in names) or "none"
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"--data {value!r}: no ExecuTorch program entry is "
                              f"named {name!r} (program entries: {have})", field="--data", actual=name)
        else:
            targets[name].append(path)
    return targets


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


def pack_specs(args: Sequence[str], data: Sequence[str],
               parse: Callable[[str], Specialization], *, share_named_data: bool = False, version: int = 2,
               check_signatures: bool = True) -> list[Specialization]:
    """The specializations `fatpte pack` packs for its arguments.

    An argument whose payload is an ExecuTorch program becomes `pte_specialization` of it: the
    whole file, its payload kind and program signature read from it (so pack refuses two
    different programs, E0411). A bare path (no `=`) is allowed for a program: its backend id is
    derived from its delegates. A native package (.ptn) becomes `ptn_specialization` of it, the
    same way (backend id `native` when bare); with `share_named_data` its tensors move into the
    shared named data too, and extract puts them back. Each `--data [NAME=]FILE` adds the tensors
    of a .ptd (or of a .ptn's program.safetensors) to the named data of entry NAME, or of each
    program entry that loads one of them (`_data_targets`). With `share_named_data`
    (--share-pte-named-data) each program's own named data moves there too, the payload being
    the program rewritten without it (docs/executorch.md).

    For `version` 1, which has no manifest, each program or package is its file with its backend
    id and nothing else: the signatures read from them are checked against each other as for
    version 2 (unless not `check_signatures`), then left out, as version 1 has no place for them;
    named data (`data`, `share_named_data`) is refused (E0703)."""
    from fatpte.ops.pte_specialize import backend_id_of_file, pte_specialization, ptn_specialization

    if version == 1 and (data or share_named_data):
        raise FatpteError(ErrorCode.NOT_REPRESENTABLE_IN_V1, "version 1 has no named data: --data and "
                          "--share-pte-named-data need version 2 (the default)",
                          field="--data" if data else "--share-pte-named-data")

    # (path, backend id or None to derive, name) per program argument, to build after --data is known.
    programs: list[tuple[str, str | None, str | None]] = []
    specs: list[Specialization | int] = []  # an int is an index into `programs`
    packages = 0
    for arg in args:
        if "=" not in arg:
            kind = executorch_kind(arg)
            if kind == "ptn":
                specs.append(ptn_specialization(arg, share_named_data=share_named_data))
                packages += 1
                continue
            if kind != "pte":
                why = "an ExecuTorch program or package" if os.path.isfile(arg) else "a file"
                raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{arg!r} is not [NAME:]BACKEND=PAYLOAD, and not "
                                  f"{why}: a bare path must be an ExecuTorch program (.pte) or native package "
                                  "(.ptn)", actual=arg)
            specs.append(len(programs))
            programs.append((arg, None, None))
            continue
        spec = parse(arg)
        kind = executorch_kind(spec.payload) if isinstance(spec.payload, str) else None
        if kind == "pte":
            specs.append(len(programs))
            programs.append((str(spec.payload), spec.backend_id, spec.name))
        elif kind == "ptn":
            specs.append(ptn_specialization(str(spec.payload), backend_id=spec.backend_id, name=spec.name,
                                            share_named_data=share_named_data))
            packages += 1
        else:
            specs.append(spec)
    if data and not programs:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "--data adds a .ptd's named data to ExecuTorch program "
                          "entries, and no payload is an ExecuTorch program", field="--data")
    if share_named_data and not programs and not packages:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "--share-pte-named-data moves the named data of ExecuTorch "
                          "programs and packages, and no payload is an ExecuTorch program (.pte) or package (.ptn)",
                          field="--share-pte-named-data")
    # Each program is specialized once (hashing, and rewriting with share_named_data, read the
    # whole file), after its entry name, which --data targets, is known.
    names = [name or backend or backend_id_of_file(path) for path, backend, name in programs]
    targets = _data_targets(data, [(n, path) for n, (path, _, _) in zip(names, programs, strict=True)])
    built = [pte_specialization(path, backend_id=backend, name=name, data_files=targets[entry],
                                share_named_data=share_named_data)
             for (path, backend, name), entry in zip(programs, names, strict=True)]
    out = [built[s] if isinstance(s, int) else s for s in specs]
    return _version_1(out, check_signatures) if version == 1 else out


def _version_1(specs: Sequence[Specialization], check_signatures: bool) -> list[Specialization]:
    """`specs` as version 1 holds them: the programs' and packages' signatures checked against
    each other (E0411, as `pack` checks them), then each of them only its backend id, name and
    file; the other specializations as they are."""
    from fatpte.manifest.model import Signature
    from fatpte.ops.program_entry import disagreeing_signature
    from fatpte.ops.specialization import Specialization

    files = [s for s in specs if s.signature is not None and s.executorch_backends is not None]
    if check_signatures:
        found = disagreeing_signature([(s.entry_name, Signature.from_mapping(s.signature)) for s in files])
        if found is not None:
            raise FatpteError(ErrorCode.SIGNATURE_MISMATCH, found[1], field="signature")
    return [Specialization(s.backend_id, s.payload, name=s.name) if any(s is f for f in files) else s
            for s in specs]


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
                 prefer: Sequence[str], exclude: Sequence[str]) -> str:
    """`fatpte thin` on an ExecuTorch program: write OUT with each NFAT delegate thinned; the
    summary line."""
    from fatpte.container.reader import Container
    from fatpte.executorch.pte import read_program
    from fatpte.ops.fat_delegate import nfat_delegates, thin_pte

    thin_pte(path, output, device=device, names=names, prefer=prefer, exclude=exclude)
    data = _read(output)
    program = read_program(data, source=os.fspath(output))
    kept = []
    for d in nfat_delegates(program):
        c = Container.from_buffer(bytes(program.payload(d)), source=os.fspath(output))
        kept.append(f"delegate {d.index} kept {listed([quoted(e.name) for e in c.entries])}")
    return f"wrote {output}: {'; '.join(kept)}; {len(data)} bytes (was {os.stat(path).st_size})"
