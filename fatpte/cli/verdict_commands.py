"""`fatpte verdicts list|clear DIR`: what devices remembered about the entries they tried (the
verdict store a loader keeps with `fatpte-run --verdicts DIR` or its load options,
specs/verdicts.md). Grammar only: the library is fatpte.ops.verdicts; `main` adds the group.
"""

from __future__ import annotations

import datetime
import json

import click

from fatpte.cli.commands import echo
from fatpte.cli.exit_codes import EXIT_INVALID
from fatpte.cli.options import EXIT_HELP, exit_with, json_option
from fatpte.errors import FatpteError, printable


@click.group()
def verdicts() -> None:
    """List or clear the verdicts a loader remembered in a verdict store folder (specs/verdicts.md)."""


def _line(r: object) -> str:
    from fatpte.ops.verdicts import VerdictRecord

    assert isinstance(r, VerdictRecord)
    when = datetime.datetime.fromtimestamp(r.time, datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    shown = "crash" if r.verdict == "attempt" else r.verdict
    reason = f": {printable(r.reason)}" if r.reason else (": the process ended during the attempt"
                                                         if r.verdict == "attempt" else "")
    return (f"  {shown:<5} entry {r.entry} {printable(r.name)!r} method {printable(r.method)!r}, {when}, "
            f"container {r.container[:12]}, device {r.device[:12]}{reason}")


@verdicts.command("list", epilog=EXIT_HELP)
@click.argument("folder", type=click.Path(file_okay=False))
@json_option
def list_(folder: str, as_json: bool) -> None:
    """Print every store file of FOLDER (NAME.verdicts.json) and its records: the verdict (pass,
    fail, crash; a crash journal record left by a process that ended during an attempt is a crash),
    the entry, when, the first digits of the container's and the device's digests, and the reason.
    A store the loader would refuse (damaged, too large, of a newer version) is named with why; its
    verdicts are not used by any load (exit 1)."""
    from fatpte.ops.verdicts import read_store, store_files

    out: list[dict[str, object]] = []
    refused = False
    for path in store_files(folder):
        try:
            records = read_store(path)
        except FatpteError as exc:
            refused = True
            out.append({"file": str(path), "error": {"code": exc.code.tag, "field": exc.field,
                                                     "message": exc.message}, "records": []})
            if not as_json:
                echo(f"{printable(str(path))}: not used: {exc.code.tag} {printable(exc.message)}")
            continue
        out.append({"file": str(path), "error": None, "records": [r.to_json() for r in records]})
        if not as_json:
            echo(f"{printable(str(path))}: {len(records)} record(s)")
            for r in records:
                echo(_line(r))
    if as_json:
        echo(json.dumps({"folder": folder, "stores": out}, indent=2))
    elif not out:
        echo(f"{printable(folder)}: no verdict store")
    if refused:
        exit_with(EXIT_INVALID)


@verdicts.command(epilog=EXIT_HELP)
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--app", metavar="NAME", help="Only the store of application NAME (NAME.verdicts.json; fatpte-run's "
                                             "is fatpte-run).")
@click.option("--entry", metavar="NAME", help="Only the verdicts of the entries named NAME.")
def clear(folder: str, app: str | None, entry: str | None) -> None:
    """Forget the verdicts of FOLDER's stores (all, or --app's, or --entry's): the next load tries
    those entries again, under the crash journal. A store the loader refuses is removed whole
    unless --entry is given."""
    from fatpte.ops.verdicts import clear as clear_store

    echo(f"forgot {clear_store(folder, app=app, entry=entry)} verdict(s)")
