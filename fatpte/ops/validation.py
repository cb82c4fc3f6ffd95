"""`fatpte.validate`: every rule of the container specs (fatpte.container.validation), then each
entry whose payload is an ExecuTorch program against its manifest record (specs/executorch.md
section 7): a container whose program was replaced at the byte level, CRC32C recomputed, no
longer passes.

The program checks run on a container that passed every other rule (a damaged container already
fails, and its payloads cannot be trusted to be the entries'), only for entries whose payload
kind is `ET12`; the ExecuTorch readers are imported only then.
"""

from __future__ import annotations

import os
from typing import Any

from fatpte.container.validation import Report
from fatpte.container.validation import validate_buffer as container_findings
from fatpte.errors import Finding
from fatpte.fileio.buffers import BytesLike
from fatpte.fileio.mapping import mapped_file
from fatpte.fileio.streams import Progress
from fatpte.fileio.url import is_url

_PROGRAM = b"ET12"  # fatpte.executorch.pte.IDENTIFIER, whose module (dataclasses) only loads when needed


def validate_buffer(buf: BytesLike, *, source: str = "<buffer>", progress: Progress | None = None) -> Report:
    """Validate a container held in memory; `progress(done, total)` follows the bytes hashed."""
    report = container_findings(buf, source=source, progress=progress)
    if report.errors or report.version != 2:
        return report
    found = program_findings(buf, source)
    return report._replace(findings=report.findings + tuple(found)) if found else report


def validate(location: str | os.PathLike[str], *, progress: Progress | None = None,
             **storage_options: Any) -> Report:
    """Validate the container at a path or a URL; raises `FatpteError` only when it cannot be
    read. `progress(done, total)` follows the bytes hashed. A URL is read once, streaming, with
    the container rules only (fatpte.container.locations): checking a program against its record
    needs its payload whole, so a container at a URL gets those checks once it is downloaded."""
    if is_url(location):
        from fatpte.container.locations import validate as validate_location

        return validate_location(location, progress=progress, **storage_options)
    if storage_options:
        from fatpte.errors import ErrorCode, FatpteError

        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "storage options go with a URL, not a path",
                          source=os.fspath(location), actual=sorted(storage_options))
    with mapped_file(location) as (buf, _):
        return validate_buffer(buf, source=os.fspath(location), progress=progress)


def program_findings(buf: BytesLike, source: str | None) -> list[Finding]:
    """specs/executorch.md section 7 for every ExecuTorch program entry of a valid v2 container,
    in table order; each finding at the field it is about."""
    from fatpte.format.structure import read_structure

    st = read_structure(buf, source=source)
    programs = [e for e in st.entries if e.payload_kind == _PROGRAM]
    h = st.header
    if not programs or h is None or not h.manifest_size:
        return []
    from fatpte.errors import FatpteError, finding
    from fatpte.executorch.pte import read_program
    from fatpte.manifest.rules import read_manifest
    from fatpte.ops import program_entry as pe
    from fatpte.ops.fat_delegate import program_nesting_finding  # E1010 (specs/executorch.md 8)

    manifest = read_manifest(buf, h, source=source)
    assert manifest is not None
    index = {e.name: i for i, e in enumerate(manifest.entries)}
    out: list[Finding] = []
    view = memoryview(buf)
    try:
        for e in programs:
            i = index[e.name]
            me = manifest.entries[i]
            record = h.manifest_offset + me.position
            payload = view[e.offset : e.end]
            try:
                program = read_program(payload, source=source)  # read once: facts, then nesting
                facts = pe.facts_of(program, payload)
            except FatpteError as exc:
                claims = (me.signature is not None or me.executorch_backends is not None
                          or pe.SHA256_KEY in dict(me.provenance))
                if claims:  # the record speaks of a program the payload is not
                    out.append(finding(exc.code, f"the payload of {e.name!r} is not the ExecuTorch program its "
                                       f"manifest entry describes: {exc.message}",
                                       offset=e.offset + (exc.offset or 0), field=f"entries[{e.index}].payload"))
                continue
            deep = program_nesting_finding(program, base=e.offset, path=f"entries[{e.index}].payload.")
            if deep is not None:
                out.append(deep)
            decision = pe.signature_decision(me.provenance)
            for code, part, why in pe.record_problems(me, facts, decision, e.backend_id):
                if part == "backend_id":
                    where, path = h.header_size + e.index * h.entry_size, f"entries[{e.index}].backend_id"
                else:
                    where, path = record, f"manifest.entries[{i}].{part}"
                out.append(finding(code, f"entry {e.name!r}: {why}", offset=where, field=path))
    finally:
        view.release()
    return out

