"""The `fatpte` console script: the plain forms of the reading commands without click.

`fatpte info`, `select`, `extract` and `validate` run in build steps, pre-commit hooks and
deployment scripts, on small files, where starting the command is most of its time: importing
click and building the click command tree costs more than opening, checking and selecting
(docs/performance.md). So this entry point parses those four commands itself when they come in
their plain forms, and runs the very function the click command runs (fatpte/cli/commands.py).
`fatpte --help` prints click's own text, generated from click at build time
(tools/gen_cli_help.py), when the terminal is wide enough for click to print that same text.

Anything it does not fully recognise goes to click unchanged: other help, --version, other
commands, `--`, an unknown, misspelt, bundled (`-qf`) or repeated single-value option, a value
that starts with `-`, a missing or extra argument, a path click would refuse (a directory for
-o, an unreadable file), the completion environment, and a usage problem found while running.
The launcher therefore never answers differently from click, only sooner; tests/cli/test_launch.py
checks its option table against the click commands and compares the two routes on generated
command lines.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple


class Verb(NamedTuple):
    """One command's grammar, as click declares it (a test compares the two)."""

    positional: str  # the argument's parameter name
    many: bool  # nargs=-1, required: one or more; else exactly one
    flags: dict[str, str]  # option spelling -> parameter name (is_flag)
    values: dict[str, str]  # option spelling -> parameter name (takes one value; the last one wins in click)
    multiple: dict[str, str]  # option spelling -> parameter name (multiple=True)
    required: frozenset[str]  # parameter names click requires
    paths: dict[str, bool]  # parameter name -> dir_okay, for every click.Path parameter


_PREFERENCE = {"--prefer": "prefer", "--exclude": "exclude"}

VERBS: dict[str, Verb] = {
    "info": Verb("file", False, {"--map": "show_map", "--json": "as_json"}, {}, {}, frozenset(),
                 {"file": True}),
    "select": Verb("file", False, {"--explain": "explain", "--strict": "strict", "--json": "as_json"},
                   {"--device": "device"},
                   _PREFERENCE, frozenset({"device"}), {"file": True}),
    "extract": Verb("file", False, {"-f": "force", "--force": "force", "-q": "quiet", "--quiet": "quiet"},
                    {"--name": "name", "--backend": "backend", "--device": "device", "-o": "output",
                     "--output": "output", "--data-out": "data_out"},
                    _PREFERENCE, frozenset({"output"}), {"file": True, "output": False, "data_out": False}),
    "validate": Verb("files", True, {"--strict": "strict", "--skip-plain-pte": "skip_plain_pte",
                                     "--allow-empty": "allow_empty", "--json": "as_json", "-q": "quiet",
                                     "--quiet": "quiet"}, {}, {},
                     frozenset(), {"files": True}),
}


def parse(args: Sequence[str]) -> tuple[str, dict[str, Any]] | None:
    """The command and its keyword arguments, or None when click must parse `args`."""
    if not args or args[0] not in VERBS:
        return None
    verb = VERBS[args[0]]
    kwargs: dict[str, Any] = {name: False for name in verb.flags.values()}
    kwargs.update({name: None for name in verb.values.values()})
    multiple: dict[str, list[str]] = {name: [] for name in verb.multiple.values()}
    positional: list[str] = []
    given: set[str] = set()
    rest = list(args[1:])
    while rest:
        token = rest.pop(0)
        if not token.startswith("-"):
            positional.append(token)
            continue
        spelling, eq, attached = token.partition("=")
        if eq and not spelling.startswith("--"):
            return None  # `-o=x` means the value "=x" to click: not a plain form
        if spelling in verb.flags:
            if eq:
                return None  # click: "Option '--json' does not take a value"
            kwargs[verb.flags[spelling]] = True
            continue
        name = verb.values.get(spelling) or verb.multiple.get(spelling)
        if name is None:
            return None  # --help, -V, --, -, a bundle, a typo, an option of another command
        if eq:
            value = attached
        elif rest and not rest[0].startswith("-"):
            value = rest.pop(0)
        else:
            return None  # no value, or one that starts with `-`: click decides
        if name in verb.multiple.values():
            multiple[name].append(value)
        elif name in given:
            return None
        else:
            given.add(name)
            kwargs[name] = value
    if (len(positional) < 1) if verb.many else (len(positional) != 1):
        return None
    if any(kwargs[name] is None for name in verb.required):
        return None
    kwargs[verb.positional] = tuple(positional) if verb.many else positional[0]
    kwargs.update({name: tuple(values) for name, values in multiple.items()})
    for name, dir_okay in verb.paths.items():
        value = kwargs[name]
        for path in (value if isinstance(value, tuple) else (value,)):
            if path is not None and not _path_as_click_takes_it(path, dir_okay):
                return None
    return args[0], kwargs


def _path_as_click_takes_it(path: str, dir_okay: bool) -> bool:
    """What click.Path(dir_okay=...) accepts without an error: a path that does not exist, or
    one that exists, is readable, and is not a directory where a file is required."""
    import stat

    try:
        st = os.stat(path)
    except OSError:
        return True
    except ValueError:
        return False  # an embedded NUL: click's own os.stat raises, let it report that
    if not dir_okay and stat.S_ISDIR(st.st_mode):
        return False
    return os.access(path, os.R_OK)


def _body(command: str) -> Callable[..., int]:
    from fatpte.cli import commands as bodies

    body: Callable[..., int] = getattr(bodies, command)
    return body


def _top_help() -> int | None:
    """`fatpte --help`: click's own text, generated from it (fatpte/_generated/cli_help.py), when
    the terminal is wide enough that click would print exactly that text."""
    import shutil  # what click's HelpFormatter asks for the width

    from fatpte._generated.cli_help import MIN_COLUMNS, TEXT

    if shutil.get_terminal_size().columns < MIN_COLUMNS:
        return None
    try:
        sys.stdout.write(TEXT)
        sys.stdout.flush()
    except OSError:
        return None  # a closed pipe: click writes again and reports it its way
    return 0


def run(args: Sequence[str]) -> int | None:
    """Run `args` without click and return the exit status; None when click must run them (then
    nothing has been printed or written)."""
    if "_FATPTE_COMPLETE" in os.environ:
        return None  # shell completion is click's
    if list(args) in (["--help"], ["-h"]):
        return _top_help()
    parsed = parse(args)
    if parsed is None:
        return None
    command, kwargs = parsed
    from fatpte.cli.commands import UsageProblem, echo, printed_warnings
    from fatpte.cli.exit_codes import EXIT_IO, closed_stdout, error_line, exit_code, out_of_memory_line
    from fatpte.errors import ErrorCode, FatpteError
    from fatpte.fileio.atomic import Terminated, end_by_signal

    try:
        with printed_warnings():
            return _body(command)(**kwargs)
    except UsageProblem:
        return None  # found before anything was written; click reports it with the usage line
    except FatpteError as exc:
        echo(error_line(exc), err=True)
        return exit_code(exc)
    except BrokenPipeError:
        return closed_stdout()  # its reader has what it wanted (`| head -1`), as the click group does
    except OSError as exc:
        # The library wraps its own I/O; this catches writing results (a full disk), as the
        # click group's boundary does (fatpte/cli/main.py, FatpteGroup.invoke).
        echo(f"fatpte: {ErrorCode.IO_ERROR.tag}: {exc}", err=True)
        return EXIT_IO
    except Terminated as exc:
        end_by_signal(exc)  # the outputs are cleaned up: die by the signal, as without fatpte's handler
        return 128 + exc.signum
    except MemoryError:
        # The work budgets (specs/nfat.md section 9) keep reading a file within a constant times its
        # size; this is the machine running out all the same. Reported like the C++ loader does.
        echo(out_of_memory_line(), err=True)
        return EXIT_IO
    except KeyboardInterrupt:
        echo("\nAborted!", err=True)  # what click prints on ^C, with the same status
        return 1


def main(args: Sequence[str] | None = None) -> int:
    """The console script: `fatpte ARGS...`."""
    argv = list(sys.argv[1:] if args is None else args)
    status = run(argv)
    if status is not None:
        return status
    from fatpte.cli.main import main as click_main

    click_main(argv, prog_name="fatpte")  # exits
    return 0
