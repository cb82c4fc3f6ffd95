"""The packing policy `fatpte pack` and Python callers of `fatpte.pack` share: what each thing given
to pack becomes before a container is written (`resolve`).

An ExecuTorch program (.pte) or native package (.ptn) given as a path, bare or as the payload of a
Specialization that states no signature and no ExecuTorch backends, becomes `pte_specialization`
or `ptn_specialization` of it (fatpte.ops.pte_specialize): its signature, backends and backend id
read from the file. `data` ([NAME=]FILE.ptd) adds a .ptd's tensors to program entries
(`data_targets`); `share_named_data` moves the programs' and packages' own named data into the
container's; version 1 keeps of each such file its backend id, name and bytes (`version_1`).
`fatpte.ops.packing.pack` applies `resolve` first, and the command line calls it before its own
grammar (priorities, tolerances, warnings) and then `pack`, so both write the same bytes.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from fatpte.errors import ErrorCode, FatpteError, listed, quoted

if TYPE_CHECKING:
    from fatpte.ops.specialization import Specialization

def executorch_kind(path: str | os.PathLike[str]) -> str | None:
    """"pte", "ptd", "ptn", "nptg" or "xnnpack" when `path` is that ExecuTorch file; None for an NFAT
    container, anything else, or a file that cannot be read. The ExecuTorch readers are imported
    only when the file is not a container."""
    from fatpte.fileio.mapping import read_head
    from fatpte.format.layout import MAGIC

    data = read_head(path, 64)
    if data[: len(MAGIC)] == MAGIC:
        return None
    from fatpte.executorch.describe import sniff

    return sniff(data)


@dataclass(slots=True)
class _Program:
    """A program argument, specialized once its entry name (which `data` targets) is known."""

    path: str
    backend_id: str | None
    name: str | None
    template: Specialization | None  # what the caller stated besides the file, if anything


def resolve(items: Iterable[Specialization | str | os.PathLike[str]], *, data: Sequence[str] = (),
            share_named_data: bool = False, version: int = 2,
            check_signatures: bool = True) -> list[Specialization]:
    """The specializations pack writes for `items`, in their order.

    A bare path must be an ExecuTorch program or package: a program's backend id is derived from
    its delegates, a package's is `native`. A Specialization whose payload is the path of one,
    and which states no signature and no ExecuTorch backends, becomes it the same way, keeping
    its backend id, name and what else it states. Each `data` value [NAME=]FILE adds the tensors
    of a .ptd (or of a .ptn's program.safetensors) to the named data of entry NAME, or of each
    program entry that loads one of them (`data_targets`). With `share_named_data` each program's
    and package's own named data moves there too (docs/executorch.md).

    For `version` 1, which has no manifest, each such file is its bytes with its backend id and
    name: the signatures read from them are checked against each other as for version 2 (unless
    not `check_signatures`), then left out (`version_1`); `data` and `share_named_data` are
    refused (E0703)."""
    if version == 1 and (data or share_named_data):
        raise FatpteError(ErrorCode.NOT_REPRESENTABLE_IN_V1, "version 1 has no named data: --data and "
                          "--share-pte-named-data need version 2 (the default)",
                          field="--data" if data else "--share-pte-named-data")
    slots, programs, files = _classify(items, share_named_data)
    _refuse_options_without_files(data, share_named_data, programs, files)
    built = _specialize_programs(programs, data, share_named_data)
    out = [built[s] if isinstance(s, int) else s for s in slots]
    derived = {**files, **{id(b): p.template for b, p in zip(built, programs, strict=True)}}
    return version_1(out, check_signatures, derived) if version == 1 else out


def _classify(items: Iterable[Specialization | str | os.PathLike[str]], share_named_data: bool,
              ) -> tuple[list[Specialization | int], list[_Program], dict[int, Specialization | None]]:
    """Each item as a Specialization, or as an index into the programs to specialize later; and
    the package specializations made here (by id), each with the caller's Specialization."""
    from fatpte.ops.pte_specialize import ptn_specialization
    from fatpte.ops.specialization import Specialization

    programs: list[_Program] = []
    slots: list[Specialization | int] = []
    files: dict[int, Specialization | None] = {}
    for item in items:
        template: Specialization | None = None
        backend: str | None = None
        name: str | None = None
        if not isinstance(item, Specialization):
            kind: str | None = _bare_kind(item)
            path = os.fspath(item)
        elif _states_a_file(item):
            template, backend, name = item, item.backend_id, item.name
            path = os.fspath(cast("str | os.PathLike[str]", item.payload))
            kind = executorch_kind(path)
        else:
            slots.append(item)
            continue
        if kind == "pte":
            slots.append(len(programs))
            programs.append(_Program(path, backend, name, template))
        elif kind == "ptn":
            spec = _keep_stated(ptn_specialization(path, backend_id=backend, name=name,
                                                   share_named_data=share_named_data, **_stated(template)), template)
            files[id(spec)] = template
            slots.append(spec)
        else:
            assert template is not None
            slots.append(template)
    return slots, programs, files


def _bare_kind(item: str | os.PathLike[str]) -> str:
    """The kind of a bare path, which must be an ExecuTorch program or package."""
    kind = executorch_kind(item)
    if kind in ("pte", "ptn"):
        return kind
    arg = os.fspath(item)
    why = "an ExecuTorch program or package" if os.path.isfile(arg) else "a file"
    raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{arg!r} is not [NAME:]BACKEND=PAYLOAD, and not "
                      f"{why}: a bare path must be an ExecuTorch program (.pte) or native package "
                      "(.ptn)", actual=arg)


def _states_a_file(spec: Specialization) -> bool:
    """Whether `spec` is a path whose ExecuTorch file is read here: one that states no signature and
    no backends of its own (a stated one is checked against the program when packing)."""
    return (isinstance(spec.payload, (str, os.PathLike)) and spec.signature is None
            and spec.executorch_backends is None)


def _stated(template: Specialization | None) -> dict[str, Any]:
    """What `template` (the caller's Specialization of an ExecuTorch file) states that
    pte_specialization and ptn_specialization take as arguments."""
    if template is None:
        return {}
    return {"priority": template.priority, "alignment": template.alignment, "requires": template.requires,
            "provenance": template.provenance}


def _keep_stated(spec: Specialization, template: Specialization | None) -> Specialization:
    """`spec`, read from a file, with what else `template` states: named data, digests, golden."""
    if template is None:
        return spec
    named: Any = template.named_data
    if named is not None and spec.named_data:
        if not isinstance(named, Mapping):
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{template.entry_name!r} lists named-data keys "
                              "defined elsewhere, and its ExecuTorch file gives named data of its own: give them "
                              "as a mapping of keys to bytes", field="named_data")
        named = {**cast("Mapping[str, Any]", spec.named_data), **named}
    return dataclasses.replace(
        spec, named_data=spec.named_data if named is None else named, source_digest=template.source_digest,
        payload_sha256=template.payload_sha256, golden=template.golden, golden_tolerance=template.golden_tolerance)


def _refuse_options_without_files(data: Sequence[str], share_named_data: bool, programs: Sequence[_Program],
                                  files: Mapping[int, object]) -> None:
    if data and not programs:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "--data adds a .ptd's named data to ExecuTorch program "
                          "entries, and no payload is an ExecuTorch program", field="--data")
    if share_named_data and not programs and not files:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "--share-pte-named-data moves the named data of ExecuTorch "
                          "programs and packages, and no payload is an ExecuTorch program (.pte) or package (.ptn)",
                          field="--share-pte-named-data")


def _specialize_programs(programs: Sequence[_Program], data: Sequence[str],
                         share_named_data: bool) -> list[Specialization]:
    """Each program specialized once (hashing, and rewriting with share_named_data, read the whole
    file), after its entry name, which `data` targets, is known."""
    from fatpte.ops.pte_specialize import backend_id_of_file, pte_specialization

    names = [p.name or p.backend_id or backend_id_of_file(p.path) for p in programs]
    targets = data_targets(data, [(n, p.path) for n, p in zip(names, programs, strict=True)])
    return [_keep_stated(pte_specialization(p.path, backend_id=p.backend_id, name=p.name, data_files=targets[entry],
                                            share_named_data=share_named_data, **_stated(p.template)), p.template)
            for p, entry in zip(programs, names, strict=True)]


def data_targets(data: Sequence[str], programs: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """`data` values [NAME=]FILE.ptd as entry name -> .ptd files, for `programs` (entry name, path).

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


def version_1(specs: Sequence[Specialization], check_signatures: bool,
              derived: Mapping[int, Specialization | None]) -> list[Specialization]:
    """`specs` as version 1 holds them: the signatures of those read from ExecuTorch files (by id
    in `derived`) checked against each other (E0411, as `pack` checks them), then each of them only
    its backend id, name and file, or the caller's Specialization of it (so what version 1 cannot
    hold is refused as before); the other specializations as they are."""
    from fatpte.manifest.model import Signature
    from fatpte.ops.program_entry import disagreeing_signature
    from fatpte.ops.specialization import Specialization

    files = [s for s in specs if id(s) in derived]
    if check_signatures:
        found = disagreeing_signature([(s.entry_name, Signature.from_mapping(s.signature)) for s in files
                                       if s.signature is not None])
        if found is not None:
            raise FatpteError(ErrorCode.SIGNATURE_MISMATCH, found[1], field="signature")
    return [s if id(s) not in derived else derived[id(s)] or Specialization(s.backend_id, s.payload, name=s.name)
            for s in specs]


def with_accelerators(specs: Sequence[Specialization],
                      added: Mapping[str, Sequence[Mapping[str, object]]]) -> list[Specialization]:
    """`specs` with, for each entry name of `added`, those accelerator requirements (pack.toml's
    `requires.accelerators` tables: kind, device, capabilities) appended to its `requires`.
    INVALID_ARGUMENT for a name no entry has, or a table `requires` would refuse."""
    from fatpte.manifest.model import Requirements

    names = [s.entry_name for s in specs]
    unknown = [n for n in added if n not in names]
    if unknown:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"no entry is named {quoted(unknown[0])} (entries: "
                          f"{listed([quoted(n) for n in names])})", field="accelerators", actual=unknown[0])
    out = []
    for s in specs:
        if s.entry_name not in added:
            out.append(s)
            continue
        req = Requirements.from_mapping(s.requires)
        more = Requirements.from_mapping({"accelerators": list(added[s.entry_name])}, s.entry_name)
        out.append(dataclasses.replace(s, requires=req._replace(accelerators=req.accelerators + more.accelerators)))
    return out
