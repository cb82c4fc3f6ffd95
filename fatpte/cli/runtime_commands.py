"""`fatpte runtime`: the fatpte-runs this installation can use. `fatpte runtime unpack WHEEL`
takes the loader out of one of fatpte's platform wheels (the aarch64 one on an x86_64 CI) into the
runtime cache, where `fatpte check` finds it for that architecture's entries
(fatpte.device.runtime_wheel; docs/wheels.md). Grammar only; `main` adds the group.
"""

from __future__ import annotations

import click

from fatpte.cli.commands import check_inputs, echo, emit_json
from fatpte.cli.options import EXIT_HELP, json_option
from fatpte.errors import quoted


@click.group(epilog=EXIT_HELP)
def runtime() -> None:
    """The fatpte-run binaries fatpte uses: the one installed with it, and those for other
    architectures unpacked from fatpte's platform wheels."""


@runtime.command("unpack", epilog=EXIT_HELP)
@click.argument("wheel", type=click.Path(dir_okay=False), metavar="WHEEL")
@click.option("--into", "into", type=click.Path(file_okay=False), metavar="DIR", default=None,
              help="The runtime cache to unpack into (default: $FATPTE_RUNTIME_CACHE, else "
                   "$XDG_CACHE_HOME/fatpte/runtimes, else ~/.cache/fatpte/runtimes).")
@json_option
def unpack(wheel: str, into: str | None, as_json: bool) -> None:
    """Unpack the loader of a fatpte platform wheel (fatpte-run, its libraries, headers and CMake
    package) into the runtime cache, under the wheel's architecture, replacing what was there.

    `fatpte check` then runs the entries made for that architecture with it: an aarch64 wheel's
    fatpte-run runs under qemu-aarch64 on an x86_64 machine, with no cross build. An explicit
    --aarch64-runtime or $FATPTE_RUN_AARCH64 still comes first. The cache given with --into is
    found by check when $FATPTE_RUNTIME_CACHE names it.
    """
    from fatpte.device.runtime_wheel import unpack_wheel

    check_inputs(wheel, local="runtime unpack")
    done = unpack_wheel(wheel, into)
    if as_json:
        emit_json({"arch": done.arch, "folder": done.folder, "fatpte_run": done.runner})
        return
    echo(f"unpacked the {done.arch} loader of {quoted(wheel)} into {quoted(done.folder)}: {quoted(done.runner)}")
