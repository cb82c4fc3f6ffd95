"""The conformance vectors of specs/executorch.md section 7: an ExecuTorch program entry checked
against its manifest record (E1101 to E1104, and E1105's warning), each a minimal change of v2-program or
v2-program-fat (one manifest field or the backend id, checksums recomputed), or of a manifest
written again where a same-size edit cannot express the defect; and the valid exceptions of
`fatpte.signature_check` (`skipped`, `from:NAME`). Python's `fatpte.validate` and the C++
validator (`fatpte_validate_file`) must both report exactly the recorded first error.

Made by tests/support/vectors.py (`invalid_vectors`, `valid_vectors`), which imports this module
when it runs.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fatpte
from fatpte.errors import ErrorCode
from tests.support.vectors import _HDR, PROGRAM_FIXTURE, Edit, ManifestMap, Vector, _u, with_manifest

C = ErrorCode
_SIGNATURE = "manifest.entries[0].signature"
_INPUT = "entries[0].signature.methods[0].inputs[0]"


def _record(data: bytes, index: int = 0) -> int:
    """The file offset of manifest entry `index`'s table: where E1101, E1103 and E1104 are reported."""
    return ManifestMap(data, _u(data, _HDR.offsets["manifest_offset"][0], 8)).target(f"entries[{index}]")


def _table_record(e: Edit, index: int) -> int:
    """The file offset of table entry `index`'s record: where E1102 is reported."""
    return e.entry_at(index, "name")


def _pack(specs: list[fatpte.Specialization], **kwargs: Any) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) / "c.nfat"
        fatpte.pack(specs, dest, **kwargs)
        return dest.read_bytes()


def valid_program_vectors() -> list[Vector]:
    """The exceptions of rule 1, recorded in provenance `fatpte.signature_check`, and rule 5's
    warning (valid: a reader reports no error)."""
    portable = fatpte.pte_specialization(PROGRAM_FIXTURE, name="cpu")
    add = fatpte.pte_specialization(PROGRAM_FIXTURE.with_name("add_portable.pte"), name="add")
    unused = dataclasses.replace(portable, named_data=["unused.w"])
    return [
        Vector("v2-program-named-data-unused", _pack([unused], named_data={"unused.w": bytes(16)}),
               "v2-program's entry with named data 'unused.w', which its program never loads: valid, with "
               "rule 5's warning", warnings=(C.NAMED_DATA_UNUSED,)),
        Vector("v2-program-signature-skipped", _pack([portable], check_signatures=False),
               "v2-program packed with check_signatures=False: the entry states no signature and its provenance "
               "says fatpte.signature_check = skipped, so no signature is compared"),
        Vector("v2-program-signature-from", _pack([portable, add], signature_from="cpu"),
               "mlp_portable.pte as 'cpu' and add_portable.pte as 'add', both stating cpu's signature "
               "(fatpte.signature_check = from:cpu): only 'cpu''s program is compared with it, so 'add''s "
               "program, whose signature differs, is no error"),
    ]


def _edit(base: Vector, change: Callable[[Edit], object], name: str, description: str, code: ErrorCode,
          offset: int, fld: str) -> Vector:
    e = Edit(base)
    change(e)
    e.seal()
    return e.vector(name, description, code, offset, fld)


def _remanifest(base: Vector, name: str, description: str, change: Callable[[Any], Any], fld: str) -> Vector:
    """`base` (one program entry) with its manifest decoded, changed and written again; the entry
    keeps payload kind ET12. E1101 at the manifest entry's table."""
    from fatpte.manifest.codec import encode

    with fatpte.Container.from_buffer(base.data) as c:
        assert c.manifest is not None and not c.segments
        manifest = change(c.manifest)
        entries = [(e.name, e.backend_id, bytes(c.payload(e))) for e in c.entries]
    e = Edit(Vector(base.name, with_manifest(entries, encode(manifest), []), ""))
    for i in range(len(entries)):
        e.set_entry(i, "payload_kind", b"ET12")
    e.seal()
    return Vector(name, bytes(e.buf), f"{description} ({base.name}'s manifest written again)", None,
                  C.PROGRAM_SIGNATURE_MISMATCH, _record(bytes(e.buf)), fld)


def _with_input(change: Callable[[Any], Any], entries: int = 1) -> Callable[[Any], Any]:
    """A manifest change that replaces the first input of the first method of the first `entries`
    entries by change(input)."""
    def one(e: Any) -> Any:
        m = e.signature.methods[0]
        return e._replace(signature=e.signature._replace(
            methods=(m._replace(inputs=(change(m.inputs[0]), *m.inputs[1:])),)))

    def apply(man: Any) -> Any:
        return man._replace(entries=tuple(one(e) if i < entries else e for i, e in enumerate(man.entries)))
    return apply


def program_record_vectors(by: dict[str, Vector]) -> Iterator[Vector]:
    """Rules 1 to 4 of specs/executorch.md section 7, each broken once."""
    program, fat = by["v2-program"], by["v2-program-fat"]
    at = _record(program.data)
    yield _edit(program, lambda e: e.set_manifest(f"{_INPUT}.dtype", b"float64"), "v2-program-signature-dtype",
                "entry 'cpu' states a float64 input; its program takes float32", C.PROGRAM_SIGNATURE_MISMATCH, at,
                _SIGNATURE)
    yield _edit(program, lambda e: e.set_manifest(f"{_INPUT}.shape[1].size", 5), "v2-program-signature-shape",
                "entry 'cpu' states an input of shape [1, 5]; its program takes [1, 4]",
                C.PROGRAM_SIGNATURE_MISMATCH, at, _SIGNATURE)
    yield _edit(program, lambda e: e.set_manifest("entries[0].signature.methods[0].outputs", 0),
                "v2-program-signature-output-count", "entry 'cpu' states no output; its program has one",
                C.PROGRAM_SIGNATURE_MISMATCH, at, _SIGNATURE)
    yield _remanifest(program, "v2-program-adapter-disagrees", "entry 'cpu''s input declares program_dtype "
                      "float16 behind float32 (a signature adapter); its program takes float32 there",
                      _with_input(lambda t: t._replace(program_dtype="float16")), _SIGNATURE)
    yield _remanifest(by["v2-program-signature-from"], "v2-program-signature-from-disagrees", "both entries state "
                      "a float64 input (fatpte.signature_check = from:cpu); 'cpu''s program, the one compared, "
                      "takes float32", _with_input(lambda t: t._replace(dtype="float64"), entries=2), _SIGNATURE)
    yield _edit(program, lambda e: e.set_entry(0, "backend_id", b"xnnpack"), "v2-program-backend-id-xnnpack",
                "entry 'cpu''s backend id is 'xnnpack'; its program delegates to no backend",
                C.BACKEND_ID_CONTRADICTS_PROGRAM, _table_record(Edit(program), 0), "entries[0].backend_id")
    yield _edit(fat, lambda e: e.set_entry(0, "backend_id", b"portable"), "v2-program-backend-id-portable",
                "entry 'fat''s backend id is 'portable'; its program delegates to FatpteBackend",
                C.BACKEND_ID_CONTRADICTS_PROGRAM, _table_record(Edit(fat), 0), "entries[0].backend_id")
    yield _edit(fat, lambda e: e.set_manifest("entries[0].executorch_backends[0]", b"VulkanBackend"),
                "v2-program-executorch-backends-wrong", "entry 'fat' states executorch_backends VulkanBackend; "
                "its program delegates to FatpteBackend", C.EXECUTORCH_BACKENDS_MISMATCH, _record(fat.data),
                "manifest.entries[0].executorch_backends")

    def digest(e: Edit) -> None:
        where, size = e.manifest_field("entries[0].provenance[0].value")
        old = bytes(e.buf[where : where + size])
        e.set_manifest("entries[0].provenance[0].value", (b"1" if old[:1] == b"0" else b"0") + old[1:])

    yield too_deep_vector()
    yield _edit(program, digest, "v2-program-sha256-wrong", "entry 'cpu''s provenance executorch.pte.sha256 "
                "differs from its program's SHA-256 in the first digit", C.PROGRAM_DIGEST_MISMATCH, at,
                "manifest.entries[0].provenance")


def too_deep_vector() -> Vector:
    """E1010 (specs/executorch.md section 8, before rule 1): mlp_fat.pte with its fat delegate's
    container wrapped in four more, one entry each, as a program entry whose record claims nothing
    of it; the fifth container down is past MAX_FAT_DELEGATE_DEPTH. Its offset is found by walking
    the tables (read_structure), its path as tests/support/hostile.fat_tree_first_too_deep names it."""
    from fatpte.format.structure import read_structure
    from fatpte.manifest.codec import encode
    from fatpte.manifest.model import Manifest, ManifestEntry
    from tests.support import hostile

    levels = [(2, [hostile.FAT])] * 4
    tree = hostile.fat_tree(PROGRAM_FIXTURE.with_name("mlp_fat.pte").read_bytes(), levels)
    e = Edit(Vector("tree", with_manifest([("fat", "fatpte", tree)], encode(Manifest(entries=(ManifestEntry("fat"),))),
                                          []), ""))
    e.set_entry(0, "payload_kind", b"ET12")
    e.seal()
    delegate = hostile.first_delegate(tree)
    at, size = e.entry(0, "offset") + delegate.offset, delegate.size
    for _ in levels:  # each level's one entry holds the container below
        inner = read_structure(bytes(e.buf[at : at + size])).entries[0]
        at, size = at + inner.offset, inner.size
    path = hostile.fat_tree_first_too_deep(levels, 0)
    assert path is not None
    return Vector("v2-program-fat-too-deep", bytes(e.buf), "mlp_fat.pte's fat delegate wrapped in four more "
                  "containers: the fifth level down is past MAX_FAT_DELEGATE_DEPTH (4)", None,
                  C.FAT_DELEGATE_TOO_DEEP, at, f"entries[0].payload.{path}")
