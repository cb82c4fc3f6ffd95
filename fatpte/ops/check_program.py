"""`fatpte check` of an ExecuTorch program (.pte) rather than a container (issue 36, the edges):

- a fat program (fatpte.ops.fat_delegate: a delegate whose payload is an NFAT container) is
  checked delegate by delegate: each NFAT payload is copied to a private temporary file (a folder
  only this user can enter) and checked as a container, its nested entries' golden calls run by
  the same runners; each report is named `PROGRAM[delegate I BACKEND at 0xOFFSET]`, as `validate`
  names a fat delegate;
- a plain program holds no golden calls: E0711, with the commands that pack it with some.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.pte import read_program
from fatpte.fileio.mapping import map_view
from fatpte.ops.check import CheckReport, check
from fatpte.ops.fat_delegate import nfat_delegates
from fatpte.ops.golden_adequacy import AdequacyReport, check_with_mutants


def plain_program(path: str) -> FatpteError:
    """What `check` says of a program with no fat delegate: how to give it golden calls."""
    return FatpteError(ErrorCode.NO_GOLDEN_CALLS, "an ExecuTorch program with no fat delegate holds no golden calls "
                       "to check: pack it into a container with them, `fatpte pack -o model.nfat "
                       f"portable={path} --golden CALLS.json --golden-from portable` (calls.json: the inputs of a "
                       "few calls, docs/golden.md), then `fatpte check model.nfat`; or merge its lowerings into a fat "
                       "program with `fatpte merge ... --golden CALLS.json`", source=path)


def check_program(path: str, *, mutants: bool = False, runtime: str | None = None,
                  aarch64_runtime: str | None = None, qemu: str | None = None, cpus: str | None = None,
                  allow_unchecked: str | None = None) -> list[tuple[CheckReport, AdequacyReport | None]]:
    """Each fat delegate of the program at `path` checked as a container (with its mutants when
    asked; on each CPU of `cpus`, with `allow_unchecked`'s gaps accepted, as `check` does); E0711
    for a program with none."""
    program = read_program(map_view(path), source=path)
    delegates = nfat_delegates(program)
    if not delegates:
        raise plain_program(path)
    found: list[tuple[CheckReport, AdequacyReport | None]] = []
    with tempfile.TemporaryDirectory(prefix="fatpte-check-") as folder:  # mkdtemp: 0700
        for d in delegates:
            nested = Path(folder, f"delegate-{d.index}.nfat")
            fd = os.open(nested, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(program.payload(d))
            label = f"{path}[delegate {d.index} {d.backend_id} at {d.offset:#x}]"
            try:
                if mutants:
                    report, adequacy = check_with_mutants(str(nested), runtime=runtime,
                                                          aarch64_runtime=aarch64_runtime, qemu=qemu)
                else:
                    report, adequacy = check(str(nested), runtime=runtime, aarch64_runtime=aarch64_runtime,
                                             qemu=qemu, cpus=cpus, allow_unchecked=allow_unchecked), None
            except FatpteError as exc:  # named after the delegate, never the scratch file
                message = exc.message
                if exc.code is ErrorCode.NO_GOLDEN_CALLS:
                    message = ("the fat delegate's container has no golden calls to check: merge the program with "
                               "them, `fatpte merge LOWERED.pte PORTABLE.pte -o OUT.pte --golden CALLS.json "
                               "--golden-from portable` (docs/golden.md)")
                raise FatpteError(exc.code, message, source=label, offset=exc.offset, field=exc.field,
                                  expected=exc.expected, actual=exc.actual) from None
            report.source = label
            found.append((report, adequacy))
    return found
