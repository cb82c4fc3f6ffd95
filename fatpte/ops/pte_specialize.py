"""Whole ExecuTorch files (.pte programs, .ptn native packages) as specializations: backend id
and program signature derived from the file.

`pte_specialization(path)` reads the program (bounds-checked, see pte.py), derives its signature
(fatpte.executorch.signature) and a backend id from its delegates, and returns a fatpte.Specialization whose
payload is the file itself, streamed unchanged by pack, so extracting the entry gives back the
same bytes. pack then refuses programs whose signatures differ (SIGNATURE_MISMATCH), naming
both entries and the first difference.

With `share_named_data=True` the payload is instead the program rewritten without its named data
(rewrite.remove_named_data), whose bytes become the entry's named data: opt-in, because the
entry's payload is then no longer the input file. `fatpte.ops.ptd_export.entry_data_file` writes, for an
extracted entry, the .ptd that gives the runtime those keys back.

`ptn_specialization(path)` packs a .ptn whole, its signature read from program.ptg: the package
holds its tensors itself. The tensors of a .ptn can also serve a .pte that loads them by key
(`data_files`), as a .ptd's do.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, cast

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.describe import SNIFF_SIZE, sniff
from fatpte.executorch.keys import program_keys
from fatpte.executorch.ptd import read_ptd
from fatpte.executorch.pte import Program, read_program
from fatpte.executorch.ptn import PROGRAM_MEMBER, read_ptn
from fatpte.executorch.ptn_write import SHARED, SHARED_KEY, strip, tensor_types
from fatpte.executorch.rewrite import remove_named_data
from fatpte.executorch.signature import native_signature, program_signature
from fatpte.fileio.mapping import map_view
from fatpte.manifest.model import LAYOUT_DTYPES, TensorLayout
from fatpte.ops.program_entry import NAMED_DATA_KEY, SHA256_KEY, backend_word
from fatpte.ops.specialization import NamedData, Specialization

if TYPE_CHECKING:
    from fatpte.manifest.model import Requirements
    from fatpte.ops.specialization import RequirementsMapping, SignatureMapping

_NOT_ID = re.compile(r"[^A-Za-z0-9_.-]")


def backend_id_of(program: Program) -> str:
    """`portable` for a program with no delegate; else its delegates' ids, lowercased with the
    `Backend` suffix dropped (`XnnpackBackend` -> `xnnpack`), sorted and joined with `-`."""
    ids = sorted({backend_word(d.backend_id) for m in program.methods for d in m.delegates})
    if not ids:
        return "portable"
    text = _NOT_ID.sub("_", "-".join(ids))
    return text[:32]


def backend_id_of_file(path: str | os.PathLike[str]) -> str:
    """`backend_id_of` the program at `path`, read through a mapping."""
    return backend_id_of(read_program(map_view(path), source=str(path)))


NATIVE_BACKEND_ID = "native"  # ExecuTorch's NativeBackend, as backend_id_of spells it
NATIVE_BACKEND = "NativeBackend"  # the ExecuTorch backend that runs a .ptn's program.ptg


def executorch_backends_of(program: Program) -> list[str]:
    """The ExecuTorch backend ids the program's delegates need (e.g. `XnnpackBackend`), sorted;
    empty for a program of portable operators only."""
    return sorted({d.backend_id for m in program.methods for d in m.delegates})


def ptd_tensors(path: str | os.PathLike[str]) -> dict[str, tuple[memoryview, TensorLayout | None]]:
    """The tensors of the .ptd (or .ptn) at `path`: key -> (a view of its bytes in a mapping of the
    file, no copy; its layout as the file records it, or None when it records none). A .ptn gives
    the tensors of its program.safetensors, each alias with its owner's bytes, laid out
    contiguously (safetensors has no other order)."""
    data = map_view(path)
    out: dict[str, tuple[memoryview, TensorLayout | None]] = {}
    if sniff(data[:SNIFF_SIZE]) == "ptn":
        for p in read_ptn(data, source=str(path)).tensors:
            layout = TensorLayout(p.dtype, p.shape, tuple(range(len(p.shape)))) if p.dtype in LAYOUT_DTYPES else None
            out[p.key] = (data[p.offset : p.offset + p.size], layout)
        return out
    for t in read_ptd(data, source=str(path)).named_data:
        layout = None
        if t.dtype is not None and t.dtype in LAYOUT_DTYPES:
            layout = TensorLayout(t.dtype, t.shape or (), t.dim_order or ())
        out[t.key] = (data[t.offset : t.offset + t.size], layout)
    return out


def ptd_named_data(path: str | os.PathLike[str]) -> dict[str, memoryview]:
    """The tensors of the .ptd (or .ptn) at `path`, key -> a view of its bytes in a mapping of the
    file (no copy), for the container's shared named data."""
    return {key: view for key, (view, _) in ptd_tensors(path).items()}


def unresolved_keys(spec: Specialization) -> tuple[str, ...]:
    """The named-data keys the program `spec` packs loads that neither the program nor the
    entry's named data in the container holds: without them the extracted program fails to
    load, and `extract --data-out` cannot supply them. () when the payload is not a program."""
    payload = spec.payload
    data = map_view(payload) if isinstance(payload, (str, os.PathLike)) else memoryview(payload)
    if bytes(data[4:8]) != b"ET12":
        return ()
    program = read_program(data, source=str(payload) if isinstance(payload, (str, os.PathLike)) else None)
    named = spec.named_data or ()
    return tuple(k for k in program_keys(program).external if k not in set(named))


def ptn_specialization(
    path: str | os.PathLike[str],
    *,
    backend_id: str | None = None,
    name: str | None = None,
    priority: int = 0,
    alignment: int | None = None,
    requires: Requirements | RequirementsMapping | None = None,
    provenance: Mapping[str, str] | None = None,
    share_named_data: bool = False,
) -> Specialization:
    """A Specialization for the .ptn at `path`: the whole file (extracting the entry gives it back
    byte for byte), its signature read from program.ptg, backend id `native` unless given.

    With `share_named_data`, its tensors become the entry's named data (stored once across the
    container) and the payload is the package without them (ptn_write.strip); `fatpte extract`
    puts them back (fatpte.ops.ptn_export). A package without tensors stays the file itself."""
    source = str(path)
    data = map_view(path)
    package = read_ptn(data, source=source)
    extra = {"executorch.ptn.sha256": hashlib.sha256(data).hexdigest()}
    payload: str | bytes = source
    named: dict[str, NamedData] = {}
    if share_named_data and package.tensors:
        types = tensor_types(package.program, source=source)
        for t in package.tensors:
            if types.get(t.key, (None, None))[:2] != (t.dtype, t.shape):
                stated = types.get(t.key)
                said = "no constant" if stated is None else f"{stated[0]}{list(stated[1])}"
                raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"cannot move the tensors of {source} into the "
                                  f"container: {t.key!r} is {t.dtype}{list(t.shape)} in program.safetensors but "
                                  f"program.ptg gives {said}, so extract could not put it back", source=source,
                                  field=f"program.safetensors[{t.key!r}]")
            # Safetensors tensors are contiguous: dim order 0..n-1 (the layout the manifest records).
            layout = TensorLayout(t.dtype, t.shape, tuple(range(len(t.shape)))) if t.dtype in LAYOUT_DTYPES else None
            named[t.key] = NamedData(data[t.offset:t.offset + t.size], layout=layout)
        member = package.member(PROGRAM_MEMBER)
        assert member is not None  # read_ptn requires it
        payload = strip(data[member.offset:member.offset + member.size])
        extra[SHARED_KEY] = SHARED
    return Specialization(
        backend_id or NATIVE_BACKEND_ID,
        payload,
        name=name,
        priority=priority,
        alignment=alignment,
        requires=requires,
        signature=cast("SignatureMapping", native_signature(package.program)),
        provenance=dict(provenance or {}) | extra,
        named_data=named or None,
        executorch_backends=[NATIVE_BACKEND],
    )


def pte_specialization(
    path: str | os.PathLike[str],
    *,
    backend_id: str | None = None,
    name: str | None = None,
    priority: int = 0,
    alignment: int | None = None,
    requires: Requirements | RequirementsMapping | None = None,
    provenance: Mapping[str, str] | None = None,
    data_files: Sequence[str | os.PathLike[str]] = (),
    share_named_data: bool = False,
) -> Specialization:
    """A Specialization for the .pte at `path`, its signature and backend id read from the file.

    The tensors of each .ptd in `data_files` (the external weights the program loads by key)
    become the entry's named data: pack stores identical bytes once across specializations, and
    one key with two contents is refused there. With `share_named_data`, so does the named data
    stored inside the program, and the payload is the program rewritten without it (the runtime
    then needs a .ptd holding those keys: `entry_data_file`)."""
    source = str(path)
    data = map_view(path)
    program = read_program(data, source=source)
    named: dict[str, bytes | memoryview] = {}
    layouts: dict[str, TensorLayout] = {}
    origin: dict[str, str] = {}
    payload: str | bytes = source
    # pack records the program's SHA-256 (executorch.pte.sha256) as it checks the payload; only a
    # rewritten program records the input file's here, with a word saying the payload is not it.
    provenance_extra: dict[str, str] = {}
    if share_named_data and program.named_data:
        # A program without named data stays the file itself, streamed and extracted unchanged.
        payload, moved = remove_named_data(bytes(data), source=source)  # a rewritten copy: in memory
        named.update(moved)
        origin.update(dict.fromkeys(moved, source))
        provenance_extra = {SHA256_KEY: hashlib.sha256(data).hexdigest(), NAMED_DATA_KEY: SHARED}
    for ptd in data_files:
        for key, (blob, layout) in ptd_tensors(ptd).items():
            if key in named and named[key] != blob:
                raise FatpteError(ErrorCode.NAMED_DATA_CONFLICT, f"key {key!r} has different contents in "
                                  f"{origin[key]} and {ptd}, both given for {source}", source=str(ptd),
                                  field=f"named_data[{key!r}]", expected=origin[key], actual=str(ptd))
            named[key] = blob
            origin.setdefault(key, str(ptd))
            if layout is not None:
                layouts.setdefault(key, layout)  # pack refuses one key given two layouts
    return Specialization(
        backend_id or backend_id_of(program),
        payload,
        name=name,
        priority=priority,
        alignment=alignment,
        requires=requires,
        # program_signature builds exactly the mapping form Signature.from_mapping reads
        signature=cast("SignatureMapping", program_signature(program)),
        provenance=dict(provenance or {}) | provenance_extra,
        named_data={k: NamedData(v, layout=layouts[k]) if k in layouts else v for k, v in named.items()} or None,
        executorch_backends=executorch_backends_of(program),
    )
