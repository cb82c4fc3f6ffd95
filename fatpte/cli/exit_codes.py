"""How the command line ends: the exit statuses, and the one line an error prints.

Both routes into a command use this module: the click command tree (fatpte/cli/main.py) and the
launcher that runs the reading commands without click (fatpte/cli/launch.py). It imports nothing
but fatpte.errors (and, on the error path of a file that is no container, the sniffing of
fatpte/cli/executorch_files.py), so the launcher's start-up does not pay for click.
"""

from __future__ import annotations

import os

from fatpte.errors import Category, ErrorCode, FatpteError, FatpteWarning, terminal_safe

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_NO_FIT = 3
EXIT_IO = 4
EXIT_UNVERIFIED = 5
EXIT_DISAGREES = 6
# `check`'s strict gate: an entry with golden calls did not run them here and --allow-unchecked
# does not name it. A status of its own, not an error category: nothing failed, something was not
# checked (docs/cli.md, "Exit codes").
EXIT_UNCHECKED = 7
# `check --mutants`: a known-wrong variant of an entry passes its golden calls. No error category
# leads here: every entry agreed, and the calls were shown unable to fail (docs/golden.md, Adequacy).
EXIT_INADEQUATE = 8

# The one place that maps an error category to an exit status.
EXIT_CODES: dict[Category, int] = {
    Category.INVALID: EXIT_INVALID,
    Category.USAGE: EXIT_USAGE,
    Category.SELECTION: EXIT_NO_FIT,
    Category.IO: EXIT_IO,
    Category.UNVERIFIED: EXIT_UNVERIFIED,
    Category.DISAGREES: EXIT_DISAGREES,
}


# stdout closed by its reader (`fatpte validate FILE | head -1`): the status of a process SIGPIPE
# ended, as the shell reports it, and nothing printed (docs/cli.md, "Exit codes").
EXIT_CLOSED_PIPE = 128 + 13


def closed_stdout() -> int:
    """End quietly on a stdout its reader closed: the usual Unix behaviour (SIGPIPE ends a writer
    without a word). Points stdout at /dev/null so that the interpreter's last flush of what
    is still buffered does not fail again on the way out; EXIT_CLOSED_PIPE."""
    import sys

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no stdout descriptor: nothing left to flush into it
        pass
    return EXIT_CLOSED_PIPE


def exit_code(error: FatpteError) -> int:
    """The documented exit status for an error."""
    return EXIT_CODES[error.code.category]


def error_line(error: FatpteError) -> str:
    """`path: E0203 at 0x48 (entries[2].size): ...`; `fatpte:` when no file is involved. A file
    given as a container that does not start with the magic is said to be what it is instead
    (an ExecuTorch .ptn or .ptd, a Git LFS pointer, ...). Control characters a path, field or
    message may hold are escaped (errors.terminal_safe)."""
    if (error.code is ErrorCode.BAD_MAGIC and error.offset == 0 and isinstance(error.actual, bytes)
            and error.source is not None and os.path.isfile(error.source)):
        from fatpte.cli.executorch_files import not_a_container  # the error path only: keeps start-up lean

        error = FatpteError(error.code, not_a_container(error.source, error.actual), source=error.source,
                            offset=error.offset, field=error.field, expected=error.expected, actual=error.actual)
    text = terminal_safe(str(error))
    return text if error.source is not None else f"fatpte: {text}"


def out_of_memory_line() -> str:
    """What a command prints when the machine runs out of memory (MemoryError): E0801, as the C++
    loader reports std::bad_alloc, never a traceback."""
    return f"fatpte: {ErrorCode.IO_ERROR.tag}: out of memory"


def warning_line(warning: FatpteWarning) -> str:
    """`fatpte: warning: E0709 (specializations): ...`: a FatpteWarning as the command line prints it,
    its control characters escaped (errors.terminal_safe)."""
    return f"fatpte: warning: {terminal_safe(str(warning))}"
