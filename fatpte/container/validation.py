"""`fatpte.validate`: every rule of the spec, content checks included, as a list of findings."""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from fatpte.container.integrity import check_integrity
from fatpte.errors import ErrorCode, Finding, Severity, out_of_memory
from fatpte.fileio.buffers import BytesLike
from fatpte.fileio.mapping import mapped_file
from fatpte.fileio.streams import Progress
from fatpte.format.structure import read_structure


class Report(NamedTuple):
    """The outcome of validating one container (a NamedTuple: see fatpte/format/model.py for why)."""

    source: str
    version: int | None
    size: int
    findings: tuple[Finding, ...] = ()
    # Findings past errors.MAX_FINDINGS_PER_CODE of one code, counted rather than kept: (code, count).
    omitted: tuple[tuple[ErrorCode, int], ...] = ()

    @property
    def ok(self) -> bool:
        """True when no finding is an error (warnings allowed)."""
        return not self.errors

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity is Severity.ERROR)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity is Severity.WARNING)

    @property
    def first_error(self) -> Finding | None:
        """The error both implementations report for this file (spec section 6)."""
        errors = self.errors
        return errors[0] if errors else None

    def omitted_lines(self) -> list[str]:
        """`... and 999900 more E0413 findings (not listed)`, one per code."""
        return [f"... and {n} more {code.tag} {'finding' if n == 1 else 'findings'} (not listed)"
                for code, n in self.omitted]

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.source,
            "ok": self.ok,
            "version": self.version,
            "size": self.size,
            "findings": [f.to_json() for f in self.findings],
            "omitted": {code.tag: n for code, n in self.omitted},
        }


def validate_buffer(buf: BytesLike, *, source: str = "<buffer>", progress: Progress | None = None) -> Report:
    """Validate a container held in memory; `progress(done, total)` follows the bytes hashed."""
    try:
        st = read_structure(buf, source=source)
        check_integrity(buf, st, progress)
    except MemoryError:
        raise out_of_memory(source, "validating") from None
    version = st.header.version if st.header else None
    return Report(source=source, version=version, size=st.size, findings=tuple(st.findings),
                  omitted=tuple(sorted(st.omitted.items())))


def validate(path: str | os.PathLike[str], *, progress: Progress | None = None) -> Report:
    """Validate the container at `path`; raises `FatpteError` only when it cannot be read.
    `progress(done, total)` follows the bytes hashed."""
    with mapped_file(path) as (buf, _):
        return validate_buffer(buf, source=os.fspath(path), progress=progress)
