"""What `fatpte check` does once its arguments are parsed: run a check (or a shard of one) or merge
the shard reports, print the report, and end with the status it calls for (docs/golden.md,
"Checking a container"): an error's by its category (1, 3, 4, 6), else 7 (EXIT_UNCHECKED) when
the strict gate fails, else 8 (EXIT_INADEQUATE) when a mutant of `--mutants` survives, else 0. No click here: option errors are FatpteErrors (E0702, exit 2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fatpte.cli.commands import check_inputs, echo, emit_json
from fatpte.cli.exit_codes import EXIT_INADEQUATE, EXIT_OK, EXIT_UNCHECKED, exit_code
from fatpte.errors import ErrorCode, FatpteError

if TYPE_CHECKING:
    from fatpte.ops.check import CheckReport
    from fatpte.ops.golden_adequacy import AdequacyReport


def _usage(message: str, field: str) -> FatpteError:
    return FatpteError(ErrorCode.INVALID_ARGUMENT, message, field=field)


def run_check(files: Sequence[str], *, aarch64_runtime: str | None, qemu: str | None, cpus: str | None,
              allow_unchecked: str | None, shard: str | None, merge: bool, mutants: bool, as_json: bool) -> int:
    """The whole command; returns the exit status."""
    from fatpte.ops import check_merge

    if merge:
        given = [n for n, v in (("--cpus", cpus), ("--allow-unchecked", allow_unchecked), ("--shard", shard),
                                ("--aarch64-runtime", aarch64_runtime), ("--qemu", qemu),
                                ("--mutants", mutants or None)) if v is not None]
        if given:
            raise _usage(f"--merge joins shard reports as they are: {', '.join(given)} belong to the shards' "
                         "`check` runs", "merge")
        check_inputs(*files)
        found: list[tuple[CheckReport, AdequacyReport | None]] = [(check_merge.merge(files), None)]
        program = False
    else:
        if len(files) != 1:
            raise _usage(f"check takes one container (given {len(files)}); --merge takes the shard reports",
                         "file")
        if shard is not None and not as_json:
            raise _usage("--shard writes a report for --merge: give --json", "shard")
        if mutants and (cpus is not None or shard is not None):
            raise _usage("--mutants runs each entry's known-wrong variants where the entry runs by default: "
                         "give it without --cpus and --shard", "mutants")
        check_inputs(files[0])
        program, found = _run(files[0], aarch64_runtime=aarch64_runtime, qemu=qemu, cpus=cpus,
                              allow_unchecked=allow_unchecked, shard=shard, mutants=mutants)
    _print(files[0], found, program, as_json)
    return _status(found)


def _run(file: str, *, aarch64_runtime: str | None, qemu: str | None, cpus: str | None,
         allow_unchecked: str | None, shard: str | None,
         mutants: bool) -> tuple[bool, list[tuple[CheckReport, AdequacyReport | None]]]:
    """Check `file`: a container (or a shard of its rows), or each fat delegate of a .pte (E0711
    for a plain program), with the mutants when asked; whether it was a program, and the reports."""
    from fatpte.cli.commands import printed_warnings
    from fatpte.cli.executorch_files import is_program
    from fatpte.fileio.url import is_url
    from fatpte.ops import check_shards
    from fatpte.ops.check import check as check_file
    from fatpte.ops.check_program import check_program
    from fatpte.ops.golden_adequacy import check_with_mutants

    program = not is_url(file) and is_program(file)
    if program and shard is not None:
        raise _usage("--shard slices one container's rows; a .pte's fat delegates are checked whole", "shard")
    with printed_warnings():
        if program:  # a fat program: each fat delegate's container
            return True, check_program(file, mutants=mutants, aarch64_runtime=aarch64_runtime, qemu=qemu,
                                       cpus=cpus, allow_unchecked=allow_unchecked)
        if mutants:
            return False, [check_with_mutants(file, aarch64_runtime=aarch64_runtime, qemu=qemu)]
        report = check_file(file, aarch64_runtime=aarch64_runtime, qemu=qemu, cpus=cpus,
                            allow_unchecked=allow_unchecked,
                            shard=None if shard is None else check_shards.parse_shard(shard))
        return False, [(report, None)]


def _print(file: str, found: list[tuple[CheckReport, AdequacyReport | None]], program: bool,
           as_json: bool) -> None:
    """The report: one container's (with its mutants), or a program's, one per fat delegate."""
    if not as_json:
        echo("\n\n".join(r.text() + ("" if a is None else "\n\n" + a.text()) for r, a in found))
        return
    docs = []
    for report, adequacy in found:
        doc = report.to_json()
        if adequacy is not None:
            doc["ok"], doc["mutants"] = doc["ok"] and adequacy.adequate, adequacy.to_json()
        docs.append(doc)
    emit_json(docs[0] if not program else {"source": file, "ok": all(d["ok"] for d in docs), "delegates": docs})


def _status(found: list[tuple[CheckReport, AdequacyReport | None]]) -> int:
    """An error's status by its category first (1, 3, 4, 6), then 7 for a gate that failed, then 8
    for a mutant that survived, else 0."""
    errors = [r.error for r, _ in found if r.error is not None]
    if errors:
        return exit_code(errors[0])
    if any(r.gate is not None for r, _ in found):
        return EXIT_UNCHECKED
    if any(a is not None and not a.adequate for _, a in found):
        return EXIT_INADEQUATE
    return EXIT_OK
