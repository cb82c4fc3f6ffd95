"""What `fatpte check` does once its arguments are parsed: run a check (or a shard of one) or merge
the shard reports, print the report, and end with the status it calls for (docs/golden.md,
"Checking a container"): an error's by its category (1, 3, 4, 6), else 7 (EXIT_UNCHECKED) when
the strict gate fails, else 0. No click here: option errors are FatpteErrors (E0702, exit 2)."""

from __future__ import annotations

from collections.abc import Sequence

from fatpte.cli.commands import check_inputs, echo, emit_json
from fatpte.cli.exit_codes import EXIT_OK, EXIT_UNCHECKED, exit_code
from fatpte.errors import ErrorCode, FatpteError


def _usage(message: str, field: str) -> FatpteError:
    return FatpteError(ErrorCode.INVALID_ARGUMENT, message, field=field)


def run_check(files: Sequence[str], *, aarch64_runtime: str | None, qemu: str | None, cpus: str | None,
              allow_unchecked: str | None, shard: str | None, merge: bool, as_json: bool) -> int:
    """The whole command; returns the exit status."""
    from fatpte.ops import check_merge, check_shards
    from fatpte.ops.check import check as check_file

    if merge:
        given = [n for n, v in (("--cpus", cpus), ("--allow-unchecked", allow_unchecked), ("--shard", shard),
                                ("--aarch64-runtime", aarch64_runtime), ("--qemu", qemu)) if v is not None]
        if given:
            raise _usage(f"--merge joins shard reports as they are: {', '.join(given)} belong to the shards' "
                         "`check` runs", "merge")
        check_inputs(*files)
        report = check_merge.merge(files)
    else:
        if len(files) != 1:
            raise _usage(f"check takes one container (given {len(files)}); --merge takes the shard reports",
                         "file")
        if shard is not None and not as_json:
            raise _usage("--shard writes a report for --merge: give --json", "shard")
        check_inputs(files[0])
        report = check_file(files[0], aarch64_runtime=aarch64_runtime, qemu=qemu, cpus=cpus,
                            allow_unchecked=allow_unchecked,
                            shard=None if shard is None else check_shards.parse_shard(shard))
    if as_json:
        emit_json(report.to_json())
    else:
        echo(report.text())
    error = report.error
    if error is not None:
        return exit_code(error)
    return EXIT_OK if report.gate is None else EXIT_UNCHECKED
