"""What `fatpte info`, `select`, `extract` and `validate` do once their arguments are parsed.

Each function here is the whole body of one command: it takes the parsed arguments as plain
values (paths as the strings given), prints results to stdout and progress and per-file errors
to stderr, and returns the exit status; a FatpteError it raises is printed and mapped to an exit
status by the caller. Two callers run them: the click commands of fatpte/cli/main.py, and the launcher
(fatpte/cli/launch.py), which parses the plain forms of these commands without importing click. So
this module must not import click: a usage error found while running (two options that exclude
each other) is raised as `UsageProblem`, which the click layer reports as click reports its own.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fatpte.cli.exit_codes import EXIT_INVALID, EXIT_OK, error_line, exit_code, warning_line
from fatpte.errors import ErrorCode, FatpteError, SelectionError, Severity, printable, quoted, terminal_safe

if TYPE_CHECKING:
    from types import TracebackType

    from fatpte.cli.progress import Progress
    from fatpte.device.profile import DeviceProfile


class UsageProblem(Exception):
    """Arguments that parse but do not go together. Never leaves the command line: fatpte/cli/main.py
    turns it into click's usage error (`Usage: ...`, exit 2), and the launcher hands the whole
    command to click, which then reaches the same check."""


# ---------------------------------------------------------------------------------------------
# Shared helpers (fatpte/cli/main.py uses them for its other commands too)
# ---------------------------------------------------------------------------------------------


def echo(text: str = "", *, err: bool = False) -> None:
    """One line to stdout (or stderr), flushed, as click.echo writes it: the two streams stay in
    order when they go to the same place. Every control character but the newline is escaped on
    the way (errors.terminal_safe): the last guard, behind the renderers' own escaping of each
    string from a file. JSON text, which json.dumps writes in ASCII, passes unchanged."""
    stream = sys.stderr if err else sys.stdout
    stream.write(terminal_safe(text) + "\n")
    stream.flush()


def emit_json(value: Any) -> None:
    import json

    echo(json.dumps(value, indent=2))


def check_inputs(*paths: str | os.PathLike[str] | None, local: str | None = None) -> None:
    """Refuse an input file that is missing, unreadable or no regular file (a directory, FIFO,
    device: E0811, as every reader refuses it), before anything else (the output's existence
    included): what the user must fix first is named first. A URL is checked by its first request
    (docs/remote.md), except for the command `local` names, which reads files on disk only
    (E0702)."""
    import stat

    from fatpte.fileio.atomic import io_error
    from fatpte.fileio.kinds import what_file
    from fatpte.fileio.url import is_url, redact

    for path in paths:
        if path is not None and local is not None and is_url(path):
            shown = redact(path)
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"`fatpte {local}` reads files on disk, and {shown} is a "
                              f"URL: fetch it first (curl -o model.nfat {shown}); the reading commands (info, select, "
                              "extract, thin, validate, coverage, diff, unpack, verify) take URLs", source=shown)
        if path is None or is_url(path):
            continue
        try:
            st = os.stat(path)
        except OSError as exc:
            raise io_error(exc, path, "cannot read") from None
        if not stat.S_ISREG(st.st_mode):
            raise FatpteError(ErrorCode.NOT_A_FILE, f"cannot read {os.fspath(path)}: it is {what_file(st.st_mode)}, "
                              "not a regular file", source=os.fspath(path))


def check_output(path: str | os.PathLike[str], force: bool) -> None:
    """Refuse to replace an existing output unless --force was given."""
    if not force and os.path.lexists(path):
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "the output exists; pass --force to replace it",
                          source=os.fspath(path))


def progress(label: str, quiet: bool, total: int | None = None) -> Progress:
    from fatpte.cli.progress import Progress, wanted
    from fatpte.fileio.url import redact

    stream = sys.stderr
    return Progress(stream, redact(label), total=total, enabled=wanted(stream, quiet))


class printed_warnings:
    """While active, each FatpteWarning the library issues (`warnings.warn`) is printed on stderr
    as `fatpte: warning: E0709 (...): ...` when it comes, once per message; other warnings as
    Python prints them. (A class, not contextlib, which the read path does not import.)"""

    def __enter__(self) -> None:
        import warnings

        from fatpte.errors import FatpteWarning

        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("default", FatpteWarning)
        python_shows = warnings.showwarning

        def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: Any = None, line: str | None = None) -> None:
            if isinstance(message, FatpteWarning):
                echo(warning_line(message), err=True)
            else:
                python_shows(message, category, filename, lineno, file, line)

        warnings.showwarning = show

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._catch.__exit__(kind, error, trace)


def words(values: Sequence[str]) -> tuple[str, ...]:
    """`--prefer a,b --prefer c` as ("a", "b", "c")."""
    return tuple(w.strip() for v in values for w in v.split(",") if w.strip())


def load_device(value: str, *, vendor: bool = True) -> DeviceProfile:
    """`host` (probe this machine; without `vendor`, no vendor runtime is looked for), a named
    profile (`fatpte device list`), or a profile JSON file."""
    from fatpte.device.profile import DeviceProfile

    return DeviceProfile.host(vendor=vendor) if value == "host" else DeviceProfile.load(value)


# ---------------------------------------------------------------------------------------------
# The commands
# ---------------------------------------------------------------------------------------------


def info(file: str, show_map: bool, as_json: bool) -> int:
    """`fatpte info`."""
    from fatpte.cli.executorch_files import describe_json, describe_text, executorch_kind
    from fatpte.fileio.url import is_url

    if not is_url(file) and executorch_kind(file) is not None:
        if show_map:
            raise UsageProblem(f"{file} is an ExecuTorch file, not a container: --map shows a container's "
                               "regions")
        if as_json:
            emit_json(describe_json(file))
        else:
            echo(describe_text(file))
        return EXIT_OK
    from fatpte.cli.render import info_text, map_text
    from fatpte.container.locations import open as open_container
    from fatpte.ops.info import byte_map, summary

    with open_container(file) as container:
        data = summary(container)
        rows = [r.to_json() for r in byte_map(container)] if show_map else None
    if as_json:
        if rows is not None:
            data["map"] = rows
        emit_json(data)
        return EXIT_OK
    echo(info_text(data))
    if rows is not None:
        echo()
        echo(map_text(rows))
    return EXIT_OK


def select(file: str, device: str, prefer: Sequence[str], exclude: Sequence[str], explain: bool,
           as_json: bool, strict: bool = False) -> int:
    """`fatpte select`."""
    from fatpte.cli.executorch_files import is_program, select_program
    from fatpte.container.locations import open as open_container
    from fatpte.device.selection import needs_vendor_runtime
    from fatpte.device.selection import select as select_entry
    from fatpte.fileio.url import is_url

    if not is_url(file) and is_program(file):
        result, text = select_program(file, load_device(device), prefer=words(prefer), exclude=words(exclude),
                                      explain=explain)
        if as_json:
            emit_json(result)
        else:
            echo(text)
        return EXIT_OK
    with open_container(file) as container:
        profile = load_device(device, vendor=needs_vendor_runtime(container))
        try:
            chosen = select_entry(container, profile, prefer=words(prefer), exclude=words(exclude), strict=strict)
        except SelectionError as exc:
            if as_json and exc.report is not None:
                emit_json(exc.report)  # every verdict on stdout; the error and exit 3 follow
            raise
    if as_json:
        emit_json(chosen.to_json())
    elif explain:
        echo(chosen.explain())
    else:
        echo(chosen.chosen.name)
    return EXIT_OK


def extract(file: str, name: str | None, backend: str | None, device: str | None, prefer: Sequence[str],
            exclude: Sequence[str], output: str, data_out: str | None, force: bool, quiet: bool) -> int:
    """`fatpte extract`."""
    from fatpte.container.locations import open as open_container
    from fatpte.fileio.url import redact
    from fatpte.ops.extraction import extract_entry

    if sum(x is not None for x in (name, backend, device)) != 1:
        raise UsageProblem("give exactly one of --name, --backend or --device")
    if (prefer or exclude) and device is None:
        raise UsageProblem("--prefer and --exclude go with --device")
    for option, path in (("-o", output), ("--data-out", data_out)):
        if path is not None and os.path.realpath(path) == os.path.realpath(file):
            raise UsageProblem(f"{option} {path} is FILE itself: extracting would replace the container with one "
                               "of its payloads")
    check_inputs(file)
    check_output(output, force)
    if data_out is not None:
        if os.path.realpath(data_out) == os.path.realpath(output):
            raise UsageProblem("--data-out and -o must be different files")
        check_output(data_out, force)
    with open_container(file) as container:
        if device is not None:
            from fatpte.device.selection import needs_vendor_runtime
            from fatpte.device.selection import select as select_entry

            profile = load_device(device, vendor=needs_vendor_runtime(container))
            entry = select_entry(container, profile, prefer=words(prefer), exclude=words(exclude)).chosen
        else:
            entry = container.entry(name) if name is not None else container.by_backend(str(backend))
        manifest = container.manifest if container.header.manifest_size else None
        described = None if manifest is None else manifest.entry(entry.name)
        keys = () if described is None else described.named_data
        package = False
        if keys and data_out is not None:
            from fatpte.container.reader import segment_of

            for key in keys:  # a key that is missing or past the segment table: stop before writing -o
                segment_of(container, key)
        if keys:  # only then can it be a .ptn whose tensors moved into the container
            from fatpte.ops.ptn_export import is_shared_package

            package = is_shared_package(container, entry)
        if package:
            # A package is self-contained: extract writes it whole again (fatpte.ops.ptn_export).
            from fatpte.ops.ptn_export import write_entry_package

            with progress(f"extracting {quoted(entry.name)}", quiet):
                size = write_entry_package(container, entry, output)
        else:
            with progress(f"extracting {quoted(entry.name)}", quiet) as bar:
                extract_entry(container, entry, output, progress=bar.update)
    if package:
        echo(f"wrote {output}: package of {quoted(entry.name)} ({printable(entry.backend_id)}) with its {len(keys)} tensors put "
             f"back from the container's named data, {size} bytes")
    else:
        echo(f"wrote {output}: payload of {quoted(entry.name)} ({printable(entry.backend_id)}), {entry.size} bytes")
    if data_out is None and keys and not package:
        # The payload loads these keys from a data file beside it; without one it fails to load.
        suggestion = os.path.splitext(output)[0] + ".ptd"
        echo(f"{redact(file)}: warning: {quoted(entry.name)} loads {len(keys)} named-data "
             f"{'key' if len(keys) == 1 else 'keys'} kept in the container, not in its payload: the extracted "
             f"program needs them in a data file; extract again with --data-out {suggestion} --force", err=True)
    if data_out is not None:
        from fatpte.cli.executorch_files import write_entry_data

        echo(write_entry_data(file, entry.name, data_out))
    return EXIT_OK


def validate(files: Sequence[str], strict: bool, skip_plain_pte: bool, allow_empty: bool, as_json: bool,
             quiet: bool) -> int:
    """`fatpte validate`."""
    import json

    from fatpte.cli.executorch_files import file_reports
    from fatpte.cli.paths import containers
    from fatpte.container.locations import validate as validate_url
    from fatpte.fileio.url import is_url, redact

    empty: list[str] = []
    paths = list(containers(files, skip_plain_pte=skip_plain_pte, empty=empty))
    sizes = {p: _size_or_zero(p) for p in paths}
    valid = invalid = errors = warnings = 0
    unreadable: list[FatpteError] = []
    # One file: a bar over the bytes the library hashes. Several: a bar over the files' sizes,
    # moving file by file.
    label = f"validating {paths[0]}" if len(paths) == 1 else f"validating {len(paths)} files"
    with progress(label, quiet, sum(sizes.values()) if len(paths) > 1 else None) as bar:
        within = bar.update if len(paths) == 1 else None
        for path in paths:
            try:
                if is_url(path):  # a container at a URL, read once, streaming (docs/remote.md)
                    reports = [validate_url(path, progress=within)]
                else:
                    reports = file_reports(path, progress=within)
            except FatpteError as exc:
                unreadable.append(exc)
                echo(error_line(exc), err=True)
                if as_json:
                    echo(json.dumps({"path": redact(path), "ok": False, "valid": False, "version": None,
                                     "size": None, "findings": [exc.finding.to_json()], "omitted": {}}))
                continue
            finally:
                if within is None:
                    bar.advance(sizes[path])
            file_ok = True  # a program counts as one file, valid when each of its NFAT delegates is
            for report in reports:
                ok = report.ok and not (strict and report.warnings)
                file_ok &= ok
                omitted = dict(report.omitted)
                errors += len(report.errors) + sum(n for c, n in omitted.items() if c.severity is Severity.ERROR)
                warnings += len(report.warnings) + sum(n for c, n in omitted.items()
                                                       if c.severity is Severity.WARNING)
                if as_json:
                    echo(json.dumps({**report.to_json(), "valid": ok}))
                else:
                    for f in report.findings:
                        echo(f"{report.source}: {f.describe()}")
                    for line in report.omitted_lines():
                        echo(f"{report.source}: {line}")
            valid += file_ok
            invalid += not file_ok
    if not allow_empty:
        # A directory without a container is most often a wrong path or a checkout without its
        # LFS files: CI must not go green on it.
        for directory in empty:
            echo(f"{directory}: no container in this directory (no *.nfat file, no *.pte file holding one); "
                 "pass --allow-empty if that is expected", err=True)
    if not as_json:
        checked = valid + invalid + len(unreadable)
        parts = [f"{valid} valid", f"{invalid} invalid"]
        if unreadable:
            parts.append(f"{len(unreadable)} unreadable")
        echo(f"checked {checked} {'file' if checked == 1 else 'files'}: {', '.join(parts)}; "
             f"{errors} {'error' if errors == 1 else 'errors'}, "
             f"{warnings} {'warning' if warnings == 1 else 'warnings'}")
    if unreadable:
        return exit_code(unreadable[0])  # an I/O error: validate raises only when it cannot read
    if invalid or (empty and not allow_empty):
        return EXIT_INVALID
    return EXIT_OK


def _size_or_zero(path: str | os.PathLike[str]) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0  # reported as an I/O error when the file is validated
