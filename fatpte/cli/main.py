"""The `fatpte` command line: a thin click layer over the library.

Each command parses its arguments, calls one library function with explicit arguments, and
prints the result: results to stdout, errors to stderr. One boundary (`FatpteGroup.invoke`)
turns a `FatpteError` into a message (`path: E0203 at 0x48 (entries[2].size): ...`) and an exit
code, through `EXIT_CODES` (fatpte/cli/exit_codes.py), the one place that maps an error category to an
exit status.

Start-up cost matters (the command runs in build steps and hooks): this module imports only
click and fatpte's small click-free modules (errors, exit_codes, commands), takes paths as
the strings typed (no pathlib), and each command imports what it uses when it runs. The bodies
of `info`, `select`, `extract` and `validate` live in fatpte/cli/commands.py, without click, so
that the console script (fatpte/cli/launch.py) runs their plain forms without importing this module.
The options several commands share are in fatpte/cli/options.py; `pack` and `merge` are in
fatpte/cli/pack_commands.py, added to the group here.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from fatpte import __version__
from fatpte.cli import commands as bodies
from fatpte.cli.commands import (
    check_inputs,
    check_output,
    echo,
    emit_json,
    load_device,
    printed_warnings,
)
from fatpte.cli.commands import progress as _progress
from fatpte.cli.commands import words as _words
from fatpte.cli.exit_codes import (
    EXIT_INVALID,
    EXIT_IO,
    EXIT_NO_FIT,
    closed_stdout,
    error_line,
    exit_code,
    out_of_memory_line,
)
from fatpte.cli.options import (
    EXIT_HELP,
    aarch64_runtime_option,
    complete_device,
    device_option,
    exit_with,
    force_option,
    json_option,
    output_option,
    parse_spec,
    preference_options,
    quiet_option,
    run_body,
    specs_argument,
)
from fatpte.cli.pack_commands import merge, pack
from fatpte.cli.runtime_commands import runtime as runtime_group
from fatpte.cli.verdict_commands import verdicts
from fatpte.errors import ErrorCode, FatpteError, listed, printable, quoted
from fatpte.fileio.atomic import Terminated, end_by_signal

if TYPE_CHECKING:
    from fatpte.device.profile import DeviceProfile


class FatpteGroup(click.Group):
    """The group whose `invoke` is the single error boundary of the command line."""

    def invoke(self, ctx: click.Context) -> Any:
        with printed_warnings():
            try:
                return super().invoke(ctx)
            except FatpteError as exc:
                echo(error_line(exc), err=True)
                ctx.exit(exit_code(exc))
            except BrokenPipeError:
                ctx.exit(closed_stdout())  # stdout's reader closed it (`| head -1`): end quietly
            except OSError as exc:
                # The library wraps its own I/O; this catches writing results (a full disk).
                echo(f"fatpte: {ErrorCode.IO_ERROR.tag}: {exc}", err=True)
                ctx.exit(EXIT_IO)
            except MemoryError:
                echo(out_of_memory_line(), err=True)  # as the launcher (fatpte/cli/launch.py) does
                ctx.exit(EXIT_IO)
            except Terminated as exc:
                end_by_signal(exc)  # the outputs are cleaned up: die by the signal, as the launcher does
                ctx.exit(128 + exc.signum)


# ---------------------------------------------------------------------------------------------
# The group
# ---------------------------------------------------------------------------------------------


def _seconds(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    import math

    if value is not None and not (math.isfinite(value) and value >= 0):
        raise click.BadParameter(f"{value} is not a number of seconds (0 or more)")
    return value


class _Environment:
    """The environment variables a group option stands for, set while the command runs."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.before: dict[str, str | None] = {}

    def __enter__(self) -> None:
        for name, value in self.values.items():
            self.before[name] = os.environ.get(name)
            os.environ[name] = value

    def __exit__(self, *exc: object) -> None:
        for name, was in self.before.items():
            if was is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = was


@click.group(cls=FatpteGroup, epilog=EXIT_HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="fatpte")
@click.option("--runtime", metavar="FATPTE_RUN", default=None,
              help="The fatpte-run whose ExecuTorch runtime `--device host` and `fatpte device` describe "
                   "(its backends, asked with `fatpte-run --device-json --with-executorch`); sets $FATPTE_RUN. "
                   "Default: $FATPTE_RUN, else the one installed with fatpte's platform wheel, else fatpte-run on "
                   "PATH or beside this Python; '' asks none.")
@click.option("--remote-timeout", type=float, metavar="SECONDS", callback=_seconds,
              help="For a FILE that is a URL: seconds to connect and between two reads of an answer before it is "
                   "tried again (default 30; 0: no limit; env FATPTE_REMOTE_TIMEOUT).")
@click.option("--remote-deadline", type=float, metavar="SECONDS", callback=_seconds,
              help="For a FILE that is a URL: seconds for everything read from it, however slowly the server "
                   "answers (default 3600; 0: no limit; env FATPTE_REMOTE_DEADLINE). Past it: E0809.")
def main(runtime: str | None, remote_timeout: float | None, remote_deadline: float | None) -> None:
    """Pack, inspect, validate, select, extract, thin and rewrite NFAT fat ML program containers.

    A FILE of the reading commands may be the URL of a container (docs/remote.md)."""
    values = {name: repr(value) for name, value in (("FATPTE_REMOTE_TIMEOUT", remote_timeout),
                                                     ("FATPTE_REMOTE_DEADLINE", remote_deadline))
              if value is not None}
    if runtime is not None:
        from fatpte.device.fatpte_run import RUNTIME_ENV

        values[RUNTIME_ENV] = runtime
    if values:
        click.get_current_context().with_resource(_Environment(values))



main.add_command(pack)
main.add_command(merge)
main.add_command(runtime_group)
main.add_command(verdicts)

# ---------------------------------------------------------------------------------------------
# info
# ---------------------------------------------------------------------------------------------


@main.command(epilog=EXIT_HELP)
@click.argument("file", type=click.Path())
@click.option("--map", "show_map", is_flag=True,
              help="Print every region in file order, with the padding and gaps between them.")
@json_option
def info(file: str, show_map: bool, as_json: bool) -> None:
    """Describe a container: version, entries, named data, size.

    FILE may also be an ExecuTorch file, recognised by its bytes 4..8: a .pte program (methods
    with their inputs, outputs and mutable buffers, delegates with backend id and where each
    payload lives, segments, named data; NPTG and XNNPACK payloads and the entries of NFAT
    delegates are described inside), a .ptd (named data keys and sizes), a .ptn native package
    (recognised by its zip header: members, program signature, tensors), or a bare NPTG or
    XH00 delegate payload. --map is for containers only.

    FILE may be the URL of a container (https://, s3://, any scheme fsspec reads;
    docs/remote.md): one request fetches its header, tables and manifest, nothing more.
    """
    run_body(bodies.info, file=file, show_map=show_map, as_json=as_json)


# ---------------------------------------------------------------------------------------------
# check
# ---------------------------------------------------------------------------------------------


@main.command(epilog=EXIT_HELP)
@click.argument("files", nargs=-1, required=True, type=click.Path(), metavar="FILE")
@aarch64_runtime_option
@click.option("--qemu", "qemu", metavar="QEMU", default=None, type=click.Path(dir_okay=False),
              help="The qemu-aarch64 to emulate with (default: the one on PATH).")
@click.option("--cpus", metavar="CPU[,CPU]", default=None,
              help="Run each entry on every CPU listed where its requirements hold, one row per (entry, CPU): "
                   "qemu models (cortex-a53, cortex-a76, a64fx, max, Nehalem, Haswell, ...), device profiles "
                   "(mapped to the closest qemu model: docs/golden.md) or `native`.")
@click.option("--allow-unchecked", "allow_unchecked", metavar="NAME[,NAME]|all", default=None,
              help="Accept these entries' golden calls not running here (by default exit 7).")
@click.option("--shard", metavar="K/N", default=None,
              help="Run shard K of N of the (entry, CPU) rows (with --json); join the reports with --merge.")
@click.option("--merge", "merge", is_flag=True,
              help="FILE... are the --json reports of every shard of one check: print the report of one run.")
@click.option("--mutants", is_flag=True,
              help="Also show that the golden calls can fail: derive known-wrong variants of each entry that "
                   "agrees (a weight perturbed, two output elements swapped, an output scaled) and require that "
                   "its golden calls reject each one; exit 8 when one survives (docs/golden.md, Adequacy).")
@json_option
def check(files: tuple[str, ...], aarch64_runtime: str | None, qemu: str | None, cpus: str | None,
          allow_unchecked: str | None, shard: str | None, merge: bool, mutants: bool, as_json: bool) -> None:
    """Run every entry of FILE this machine can run on its golden calls, and compare.

    Each entry that states golden calls (packed with --golden) runs them through the real
    runtime (fatpte-run: `fatpte --runtime`, $FATPTE_RUN or on PATH), one process per entry
    and method, its calls in order on one loaded method; each output is compared with its
    golden tensor under its tolerance, and each entry with the others. Prints the agreement
    table: entry x output, the largest absolute and relative differences and the tolerance.
    An entry this machine cannot run is listed with the reason (a requirement it fails, a
    backend library that is not there); one made for aarch64 runs under qemu-aarch64 with the
    weakest CPU model that has its features when an aarch64 fatpte-run is given or unpacked
    (`fatpte runtime unpack` of fatpte's aarch64 wheel), and an x86_64
    one whose features this host lacks under qemu-x86_64 (AVX-512: natively only). --cpus runs
    each entry on each CPU listed. FILE may be a URL: it is fetched through fatpte's remote
    reader to a private temporary file (0600, removed afterwards) that fatpte-run reads, so its
    credentials are never printed nor put on a command line. Exit 6 when an entry disagrees, 7
    when an entry with golden calls did not run them here (unless --allow-unchecked names it),
    3 when no entry can run here, 1 when the container breaks a rule: an entry's golden calls
    break E0421-E0423 (a call naming a method the program lacks is E0422), or fatpte-run finds
    it damaged. With --mutants, exit 8 when a mutant survives (an error of the check itself, or
    an entry left unchecked, is reported first, with its own status). Calls that cannot
    discriminate (constant inputs, an output the same in every call, a widened tolerance wider
    than the entries differ) are warned of (E0712). FILE may be a .pte: each of its fat
    delegates' containers is checked (a plain program is E0711, with the command that packs it).
    """
    from fatpte.cli.check_body import run_check

    status = run_check(files, aarch64_runtime=aarch64_runtime, qemu=qemu, cpus=cpus,
                       allow_unchecked=allow_unchecked, shard=shard, merge=merge, mutants=mutants,
                       as_json=as_json)
    if status:
        exit_with(status)


# ---------------------------------------------------------------------------------------------
# validate
# ---------------------------------------------------------------------------------------------


@main.command(epilog=EXIT_HELP)
@click.argument("files", nargs=-1, required=True, type=click.Path())
@click.option("--strict", is_flag=True, help="Warnings fail too.")
@click.option("--skip-plain-pte", is_flag=True,
              help="Skip *.pte files that hold no container (plain ExecuTorch programs: no NFAT magic, no NFAT "
                   "delegate), also when named on the command line; for hooks that pass every *.pte file.")
@click.option("--allow-empty", is_flag=True,
              help="Accept a directory that holds no container (by default it fails: exit 1).")
@json_option
@quiet_option
def validate(files: tuple[str, ...], strict: bool, skip_plain_pte: bool, allow_empty: bool, as_json: bool,
             quiet: bool) -> None:
    """Check containers against every rule of the spec, checksums included.

    In a container that passes them, each entry that is an ExecuTorch program is then checked
    against its manifest entry: its signature, backend id, ExecuTorch backends, program digest
    and named data (E1101-E1105, specs/executorch.md section 7).

    FILES may be directories: they are searched recursively (skipping directories whose name
    starts with a dot) for *.nfat files, and for *.pte files that start with the magic NFAT or
    are ExecuTorch programs with an NFAT delegate. In an ExecuTorch program, each NFAT delegate
    is checked as a container of its own (`path[delegate 0 ...]`). A program with none, named
    on the command line, is reported as not a container (E0101) unless --skip-plain-pte; so is
    any other file, saying what it is (an ExecuTorch .ptd or .ptn, a Git LFS pointer, ...).
    A directory in which no container is found fails too (a wrong path must not pass), unless
    --allow-empty. Prints one line per finding (`path: E0208 at 0x9c (entries[0].checksum):
    ...`) and a summary line counting files; with --json, one JSON object per container per line
    and no summary. Exits 1 when any file is invalid (with --strict, also when any has a
    warning) or a directory holds no container, and 4 when a file cannot be read (the others are
    still checked).

    A FILE that is a URL (docs/remote.md) is read once, streaming, in range requests.
    """
    run_body(bodies.validate, files=files, strict=strict, skip_plain_pte=skip_plain_pte,
              allow_empty=allow_empty, as_json=as_json, quiet=quiet)


# ---------------------------------------------------------------------------------------------
# extract
# ---------------------------------------------------------------------------------------------


@main.command(epilog=EXIT_HELP)
@click.argument("file", type=click.Path())
@click.option("--name", help="The entry with this name.")
@click.option("--backend", help="The only entry with this backend id.")
@device_option(required=False)
@preference_options
@output_option
@click.option("--data-out", "data_out", type=click.Path(dir_okay=False), default=None,
              metavar="FILE.ptd", help="Also write the entry's named data as an ExecuTorch .ptd, the data "
                                       "file the extracted program loads its moved weights from.")
@force_option
@quiet_option
def extract(file: str, name: str | None, backend: str | None, device: str | None, prefer: tuple[str, ...],
            exclude: tuple[str, ...], output: str, data_out: str | None, force: bool, quiet: bool) -> None:
    """Write one entry's raw payload to OUT, after checking its CRC32C.

    The entry is the one named --name, the only one with backend id --backend, or the one
    --device gets (as `fatpte select` chooses it; exit 3 when none fits). --data-out writes the
    entry's named data (checked against the segment CRC32Cs) as a .ptd (docs/executorch.md).

    FILE may be a URL (docs/remote.md): the entry is chosen from the header, tables and
    manifest, then only its payload is fetched, in range requests, hashed as it arrives.
    """
    run_body(bodies.extract, file=file, name=name, backend=backend, device=device, prefer=prefer,
              exclude=exclude, output=output, data_out=data_out, force=force, quiet=quiet)


# ---------------------------------------------------------------------------------------------
# select / thin
# ---------------------------------------------------------------------------------------------


@main.command(epilog=EXIT_HELP)
@click.argument("file", type=click.Path())
@device_option(required=True)
@preference_options
@click.option("--explain", is_flag=True, help="Show every entry: its rank, or every requirement it fails.")
@click.option("--strict", is_flag=True,
              help="A --prefer or --exclude word that names no entry and no backend id is an error (exit 2), "
                   "not a warning.")
@json_option
def select(file: str, device: str, prefer: tuple[str, ...], exclude: tuple[str, ...], explain: bool,
           strict: bool, as_json: bool) -> None:
    """Print the name of the entry DEVICE gets from FILE.

    Eligible entries are those whose every requirement holds on the device, and whose
    ExecuTorch program's backends are in the device's runtime when the profile lists them
    (`host` does where a fatpte-run answers: `fatpte device`). They rank by priority, then
    --prefer order, then a program that delegates to a backend (XNNPACK, ...) before one of
    portable operators, then specificity, then table order (specs/nfat-manifest.md). A --prefer
    or --exclude word that names no entry and no backend id is a warning listing those that
    exist (an error with --strict). When no entry fits, exits 3 and lists on stderr every entry
    and every requirement it fails, with what the device has instead (--json still prints the
    verdicts, with `chosen` null).

    FILE may be an ExecuTorch program (.pte) with NFAT delegates: the entry is chosen in each,
    one name per line in program order (--json: `path` and a `delegates` list). A program
    without one is an error (exit 2).

    FILE may be the URL of a container (docs/remote.md): one request fetches what selection
    reads.
    """
    run_body(bodies.select, file=file, device=device, prefer=prefer, exclude=exclude,
              explain=explain, strict=strict, as_json=as_json)


@main.command(epilog=EXIT_HELP)
@click.argument("file", type=click.Path())
@device_option(required=False)
@click.option("--name", "names", multiple=True, help="Keep this entry (repeatable).")
@click.option("--only-chosen", is_flag=True,
              help="With --device: keep only the entry DEVICE gets, not the entries it falls back to.")
@preference_options
@output_option
@force_option
@quiet_option
def thin(file: str, device: str | None, names: tuple[str, ...], only_chosen: bool, prefer: tuple[str, ...],
         exclude: tuple[str, ...], output: str, force: bool, quiet: bool) -> None:
    """Write a smaller container with only the entries eligible on DEVICE (or the --name entries)
    and the named data they use. Payload and segment bytes, checksums and digests are kept
    unchanged.

    For a device, every eligible entry is kept, in table order, so the device ranks them as
    before: the one it gets and those a loader falls back to when that one fails to load, fails
    its self-test or fails after load. --only-chosen keeps the one it gets alone. With both
    --device and --name, the entries eligible on the device among the named ones are kept.

    FILE may be an ExecuTorch program (.pte) whose delegate payloads are NFAT containers: OUT
    is then a .pte whose NFAT delegates keep only those entries, every segment offset of the
    program rewritten (docs/executorch.md). A program without one is an error (exit 2).

    FILE may be the URL of a container (docs/remote.md): only the kept payloads and named data
    are fetched, each checked against its CRC32C as it arrives.
    """
    from fatpte.cli.executorch_files import is_program, thin_program
    from fatpte.container.locations import open as open_container
    from fatpte.container.reader import open as open_path
    from fatpte.fileio.url import is_url
    from fatpte.ops.thinning import thin_container

    if device is None and not names:
        raise click.UsageError("give --device, --name, or both")
    if (prefer or exclude or only_chosen) and device is None:
        raise click.UsageError("--prefer, --exclude and --only-chosen go with --device")
    check_inputs(file)
    check_output(output, force)
    profile = None if device is None else load_device(device)
    if not is_url(file) and is_program(file):
        with _progress(f"writing {output}", quiet):
            line = thin_program(file, output, device=profile, names=list(names) or None, prefer=_words(prefer),
                                exclude=_words(exclude), only_chosen=only_chosen)
        echo(line)
        return
    with open_container(file) as source, _progress(f"writing {output}", quiet):
        thin_container(source, output, device=profile, names=list(names) or None, prefer=_words(prefer),
                       exclude=_words(exclude), only_chosen=only_chosen)
    with open_path(output) as c:
        kept = listed([quoted(e.name) for e in c.entries])
        echo(f"wrote {output}: kept {kept}; {c.size} bytes (was {source.size})")


# ---------------------------------------------------------------------------------------------
# device
# ---------------------------------------------------------------------------------------------


def _device_text(profile: DeviceProfile) -> str:
    from fatpte.cli.render import shown, size

    accs = ", ".join(f"{a.kind}{' ' + a.device if a.device else ''} {a.version} ({shown(a.name)}, "
                     f"{size(a.memory_bytes)}{'; ' + ' '.join(a.capabilities) if a.capabilities else ''})"
                     for a in profile.accelerators)
    backends = ", ".join(f"{shown(k)} ABI {v}" for k, v in sorted(profile.backends.items()))
    cited = [f"{'sources:' if i == 0 else '':<14}{shown(src)}" for i, src in enumerate(profile.sources or ())]
    return "\n".join([
        f"name:         {profile.name}",
        f"os / arch:    {profile.os} {profile.arch}",
        f"cpu features: {' '.join(sorted(profile.cpu_features)) or '-'}",
        f"accelerators: {accs or '-'}",
        f"memory:       {size(profile.memory_bytes) if profile.memory_bytes else 'unknown'}",
        f"backends:     {backends or '-'}",
        "executorch:   " + ("not known (no fatpte-run found: `fatpte --runtime PATH` or $FATPTE_RUN names one)"
                            if profile.executorch_backends is None
                            else ", ".join(sorted(profile.executorch_backends)) or "no backend (portable operators)"),
        f"cores:        {' '.join(shown(c) for c in sorted(profile.cpu_cores or ())) or 'not known'}",
        f"system:       {shown(profile.os_release or 'not known')}, kernel {shown(profile.kernel or 'not known')}",
        f"machine/soc:  {' '.join(shown(w) for w in ([profile.machine] if profile.machine else []) + sorted(profile.soc or ())) or 'not known'}",
        *cited,
    ])


def _show_device(profile: DeviceProfile, as_json: bool) -> None:
    if as_json:
        click.echo(profile.to_json_text(), nl=False)  # the canonical bytes the C++ loader prints too
    else:
        echo(_device_text(profile))


@main.group(cls=FatpteGroup, invoke_without_command=True, epilog=EXIT_HELP)
@json_option
@click.option("--vendor-runtime", "vendor_runtimes", multiple=True, metavar="NAME=PATH",
              help="The library of vendor runtime NAME (openvino: libopenvino_c.so.*), looked at first; NAME= "
                   "withholds it (repeatable). Else its variable (OPENVINO_LIB_PATH), the openvino package of "
                   "$VIRTUAL_ENV, $CONDA_PREFIX or this Python, then the system's library search.")
@click.pass_context
def device(ctx: click.Context, as_json: bool, vendor_runtimes: tuple[str, ...]) -> None:
    """Show this machine's device profile (what `--device host` means).

    The profile lists the ExecuTorch backends this machine's runtime provides
    (`executorch_backends`), so that selection rejects entries whose program needs one it lacks:
    those of the C++ runtime of the ExecuTorch SDK, as fatpte-run answers (`fatpte --runtime
    PATH`, $FATPTE_RUN, else the one installed with fatpte's platform wheel, else fatpte-run on
    PATH or beside this Python; no torch needed, and
    `--device host` asks it too), else, for this command only, those registered in ExecuTorch's
    Python runtime when it is installed (asking imports torch, seconds). Neither: not known.
    The devices of vendor runtimes found (OpenVINO: CPU, GPU.0, NPU) are accelerators of kind
    openvino (specs/device-profile.md 9.1).

    With --json, the canonical profile JSON (specs/device-profile.md), byte for byte what the
    C++ loader's `fatpte-run --device-json` prints for the same facts (each lists the ExecuTorch
    backends of the runtime it asked, if any).
    """
    if ctx.invoked_subcommand is None:
        from fatpte.device.profile import DeviceProfile

        _show_device(DeviceProfile.host(executorch=True, vendor_runtimes=_vendor_runtimes(vendor_runtimes)), as_json)


def _vendor_runtimes(assignments: tuple[str, ...]) -> dict[str, str]:
    from fatpte.device.vendor_runtimes import VENDOR_RUNTIMES, parse_assignment

    out: dict[str, str] = {}
    for text in assignments:
        parsed = parse_assignment(text)
        if parsed is None:
            names = ", ".join(r.name for r in VENDOR_RUNTIMES)
            raise click.BadParameter(f"{text!r} is not NAME=PATH for a vendor runtime (one of: {names}); NAME= "
                                     "withholds it", param_hint="--vendor-runtime")
        out[parsed[0]] = parsed[1]
    return out


@device.command("list", epilog=EXIT_HELP)
@json_option
def device_list(as_json: bool) -> None:
    """List the named device profiles: those installed with fatpte (specs/devices/ in its
    source), or those in $FATPTE_DEVICES_DIR when set."""
    from fatpte.device.profile import DeviceProfile

    profiles = [DeviceProfile.load(n) for n in DeviceProfile.names()]
    if as_json:
        emit_json([p.to_json() for p in profiles])
        return
    from fatpte.cli.render import table

    rows = [(p.name, p.os, p.arch, ", ".join(f"{a.kind} {a.version}" for a in p.accelerators) or "-")
            for p in profiles]
    echo(table(("name", "os", "arch", "accelerators"), rows))


@device.command("show", epilog=EXIT_HELP)
@click.argument("name", metavar="NAME|PROFILE.json")
@json_option
def device_show(name: str, as_json: bool) -> None:
    """Show a named device profile, or a profile JSON file, checked."""
    _show_device(load_device(name), as_json)


# ---------------------------------------------------------------------------------------------
# coverage
# ---------------------------------------------------------------------------------------------


@main.command(epilog=EXIT_HELP)
@click.argument("file", type=click.Path())
@click.option("--devices", metavar="host|@SET|NAME|FILE,...|DIR", default=None,
              help="Device profiles: `host`, sets of named profiles (`@fleet`: the CPUs fleets run, one per "
                   "x86-64 level and Arm core; `@all`), names or JSON files, comma-separated, or a directory of "
                   "*.json files (default: every named profile).")
@preference_options
@click.option("--strict", is_flag=True, help="Exit 3 when some device gets no entry; with --receipts, exit 1 "
                                             "when a device ran another entry than planned.")
@click.option("--receipts", "receipt_files", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="Receipts (fatpte-run --receipt, specs/receipts.md) to compare with the plan: for each load of "
                   "FILE's container, the entry selection plans for the receipt's device profile beside the entry "
                   "the device ran (repeatable).")
@json_option
def coverage(file: str, devices: str | None, prefer: tuple[str, ...], exclude: tuple[str, ...], strict: bool,
             receipt_files: tuple[str, ...], as_json: bool) -> None:
    """Show which entry each device gets, which devices get none, and the bytes each device
    would download after thinning.

    The download size is computed from the tables: the size of the container `fatpte thin
    --only-chosen` writes for that entry. FILE may be the URL of a container (docs/remote.md).

    With --receipts, also what devices reported: each load receipt of this container (by its
    digest) with the entry planned for its device profile and the entry it ran, and every
    difference with the reason codes of the entries it rejected.
    """
    from fatpte.ops.coverage import coverage as device_coverage
    from fatpte.ops.coverage import device_profiles

    result = device_coverage(file, device_profiles(devices), prefer=_words(prefer), exclude=_words(exclude))
    if receipt_files:
        from fatpte.container.locations import open as open_container
        from fatpte.ops.receipts import compare, read_receipts

        with open_container(file) as c:
            result["observed"] = compare(c, read_receipts(receipt_files))
    if as_json:
        emit_json(result)
    else:
        from fatpte.cli.render import coverage_text, receipts_text

        echo(coverage_text(result))
        if receipt_files:
            echo(receipts_text(result["observed"]))
    if strict and result["uncovered"]:
        exit_with(EXIT_NO_FIT)
    if strict and receipt_files and result["observed"]["differences"]:
        exit_with(EXIT_INVALID)


# ---------------------------------------------------------------------------------------------
# unpack
# ---------------------------------------------------------------------------------------------


@main.command(epilog=EXIT_HELP)
@click.argument("file", type=click.Path())
@click.option("-o", "--output", "directory", metavar="DIR", type=click.Path(file_okay=False), default=None,
              help="Directory to write (it may exist if empty).")
@click.option("-d", "--directory", "old_directory", metavar="DIR", type=click.Path(file_okay=False), default=None,
              help="Deprecated spelling of -o, still accepted (with a warning).")
@click.option("--no-verify", is_flag=True, help="Skip repacking to check that pack.toml reproduces FILE.")
@force_option
@quiet_option
@json_option
def unpack(file: str, directory: str | None, old_directory: str | None, no_verify: bool, force: bool, quiet: bool,
           as_json: bool) -> None:
    """Write every payload and named-data segment of FILE to DIR, with a pack.toml.

    `fatpte pack -o OUT --from DIR/pack.toml` then writes FILE again, byte for byte, for any
    container in the layout fatpte writes. Unpacking checks this by repacking to a temporary
    file (skip with --no-verify) and warns on stderr when the bytes would differ (a container
    written by another tool, e.g. a version 1 file with gaps): the files are exact either way.
    With --force, an existing DIR is replaced whole. DIR is given with -o, as every command
    that writes takes its output; -d DIR, the spelling of earlier versions, still works. FILE
    may be a URL (docs/remote.md): it is fetched whole, once.
    """
    from fatpte.fileio.url import redact
    from fatpte.ops.unpack import unpack_to_dir

    if directory is not None and old_directory is not None:
        raise click.UsageError("give the directory once: -o DIR (-d DIR is its deprecated spelling)")
    if directory is None and old_directory is None:
        raise click.UsageError("Missing option '-o' / '--output': the directory to write")
    if directory is None:
        assert old_directory is not None
        directory = old_directory
        echo("fatpte: warning: unpack -d/--directory is deprecated: give the directory with -o DIR", err=True)
    check_inputs(file)
    with _progress(f"unpacking {file}", quiet):
        done = unpack_to_dir(file, directory, force=force, verify=not no_verify)
    if as_json:
        emit_json(done.to_json())
    else:
        echo(f"wrote {done.directory}: {done.payload_files} payload files, {done.named_data_files} "
                   f"named-data files, {done.pack_toml.name}")
    if done.reproducible is False:
        shown = redact(file)
        echo(f"{shown}: warning: `fatpte pack --from {done.pack_toml}` writes the same entries but "
             f"not the same bytes: {shown} is not in the layout fatpte writes", err=True)


# ---------------------------------------------------------------------------------------------
# diff
# ---------------------------------------------------------------------------------------------


@main.command(epilog=EXIT_HELP)
@click.argument("a", type=click.Path())
@click.argument("b", type=click.Path())
@click.option("--exit-code", is_flag=True, help="Exit 1 when the entries differ.")
@json_option
def diff(a: str, b: str, exit_code: bool, as_json: bool) -> None:
    """Show entries added, removed or changed from A to B, and the size delta.

    A and B may be URLs of containers (docs/remote.md).
    """
    from fatpte.cli.render import diff_text
    from fatpte.container.locations import open as open_container
    from fatpte.ops.diff import compare

    with open_container(a) as ca, open_container(b) as cb:
        result = compare(ca, cb)
    if as_json:
        emit_json(result)
    else:
        echo(diff_text(result))
    if exit_code and not result["unchanged"]:
        exit_with(EXIT_INVALID)


def _signed(file: str) -> list[str]:
    """How FILE is signed: `embedded`, `FILE.sig`, both or neither (read before an edit writes)."""
    from fatpte.container.reader import open as open_container
    from fatpte.ops.signing import DETACHED_SUFFIX

    with open_container(file) as c:
        embedded = c.header.signature_size > 0
    return ["an embedded signature"] * embedded + [file + DETACHED_SUFFIX] * os.path.isfile(file + DETACHED_SUFFIX)


def _unsigned_output(signatures: list[str], file: str, output: str) -> None:
    """Say that the edit wrote OUT without the signature FILE had, and how to sign it again."""
    if signatures:
        echo(f"fatpte: warning: {file} is signed ({' and '.join(signatures)}) and {output} is not: a signature "
             f"vouches for the content it was made for, so an edit drops it; sign again with `fatpte sign {output} "
             "--key PRIVATE.pem` (add --detached for a .sig beside it)", err=True)


# ---------------------------------------------------------------------------------------------
# add / remove / replace / convert
# ---------------------------------------------------------------------------------------------


@main.command(epilog=EXIT_HELP)
@click.argument("file", type=click.Path())
@specs_argument
@output_option
@click.option("--adapt-io", "adapt_io", is_flag=True,
              help="As pack's: a float16 or bfloat16 program joins behind the float32 signature (an adapter).")
@force_option
@quiet_option
def add(file: str, specs: tuple[str, ...], output: str, adapt_io: bool, force: bool, quiet: bool) -> None:
    """Write FILE with more entries appended to OUT.

    An added ExecuTorch program is checked as `fatpte pack` checks one: its signature must agree
    with the container's entries (E0411; --adapt-io bridges float16 or bfloat16 against float32),
    its backend id with its delegates (E1102).
    """
    from fatpte.ops.edit import add as add_entries

    parsed = [parse_spec(s) for s in specs]
    if not parsed:
        raise click.UsageError("give at least one [NAME:]BACKEND=PAYLOAD to add")
    check_inputs(file, *(s.payload for s in parsed if isinstance(s.payload, str)), local="add")
    check_output(output, force)
    signatures = _signed(file)
    with _progress(f"writing {output}", quiet):
        add_entries(file, output, parsed, adapt_io=adapt_io)
    echo(f"wrote {output}: added {listed([quoted(s.entry_name) for s in parsed])}")
    _unsigned_output(signatures, file, output)


@main.command(epilog=EXIT_HELP)
@click.argument("file", type=click.Path())
@click.option("--name", "names", multiple=True, required=True, help="Entry to remove (repeatable).")
@output_option
@force_option
@quiet_option
def remove(file: str, names: tuple[str, ...], output: str, force: bool, quiet: bool) -> None:
    """Write FILE without the named entries to OUT."""
    from fatpte.ops.edit import remove as remove_entries

    check_inputs(file, local="remove")
    check_output(output, force)
    signatures = _signed(file)
    with _progress(f"writing {output}", quiet):
        remove_entries(file, output, names)
    echo(f"wrote {output}: removed {', '.join(map(repr, names))}")
    _unsigned_output(signatures, file, output)


@main.command(epilog=EXIT_HELP)
@click.argument("file", type=click.Path())
@click.argument("payload", type=click.Path())
@click.option("--name", required=True, help="Entry whose payload is replaced.")
@output_option
@click.option("--adapt-io", "adapt_io", is_flag=True,
              help="As pack's: a float16 or bfloat16 program goes behind the float32 signature (an adapter).")
@force_option
@quiet_option
def replace(file: str, payload: str, name: str, output: str, adapt_io: bool, force: bool, quiet: bool) -> None:
    """Write FILE with the payload of entry NAME replaced by PAYLOAD to OUT.

    The entry's manifest record is derived again from PAYLOAD, as `fatpte pack` derives it (a
    payload SHA-256; for an ExecuTorch program its signature, ExecuTorch backends, program digest
    and the named data it needs), and checked the same way: another model's program is refused.

    OUT is unsigned, as after every edit (add, remove, convert too): when FILE is signed, a
    warning on stderr says so and how to sign OUT again.
    """
    from fatpte.ops.edit import replace as replace_payload

    check_inputs(file, payload, local="replace")
    check_output(output, force)
    signatures = _signed(file)
    with _progress(f"writing {output}", quiet):
        replace_payload(file, output, name, payload, adapt_io=adapt_io)
    echo(f"wrote {output}: replaced the payload of {quoted(name)}")
    _unsigned_output(signatures, file, output)


@main.command(epilog=EXIT_HELP)
@click.argument("file", type=click.Path())
@click.option("--to", "to_version", type=click.Choice(["1", "2"]), required=True, help="Version to write.")
@output_option
@force_option
@quiet_option
def convert(file: str, to_version: str, output: str, force: bool, quiet: bool) -> None:
    """Write FILE as another container version to OUT.

    To version 1: refused, naming every reason, when FILE holds what version 1 cannot (entry
    names that differ from backend ids, priorities, a manifest, named data). Version 1 has no
    alignment, so the payloads are stored back to back: only padding is lost. To version 2:
    each entry is named after its backend id and aligned to 64 bytes.
    """
    from fatpte.ops.edit import convert as convert_file

    check_inputs(file, local="convert")
    check_output(output, force)
    signatures = _signed(file)
    with _progress(f"writing {output}", quiet):
        convert_file(file, output, int(to_version))
    echo(f"wrote {output}: version {to_version}")
    _unsigned_output(signatures, file, output)


# ---------------------------------------------------------------------------------------------
# sign, verify, unsign (specs/nfat-signature.md)
# ---------------------------------------------------------------------------------------------


@main.command(epilog=EXIT_HELP)
@click.argument("file", type=click.Path())
@click.option("--key", "key", required=True, metavar="PRIVATE.pem", type=click.Path(dir_okay=False),
              help="ECDSA P-256 or Ed25519 private key (PEM).")
@click.option("-o", "--output", "output", metavar="OUT", type=click.Path(dir_okay=False),
              help="File to write (default: FILE itself, or FILE.sig with --detached).")
@click.option("--detached", is_flag=True, help="Write the signature to a file beside FILE instead of into it "
              "(verify it with --signature).")
@force_option
@quiet_option
def sign(file: str, key: str, output: str | None, detached: bool, force: bool, quiet: bool) -> None:
    """Sign FILE: a statement of every entry (name, backend id, kind, priority, alignment, SHA-256
    of its payload, of its manifest record and of its golden calls or their absence) and
    named-data key, signed with KEY and stored in the container's signature region (or, with
    --detached, in FILE.sig).

    The statement names entries, not offsets, so `fatpte thin` keeps it valid. FILE must be a
    valid version 2 container; a signature it already has is replaced.
    """
    from fatpte.ops.signing import DETACHED_SUFFIX
    from fatpte.ops.signing import sign as sign_file

    target = output if output is not None else (file + DETACHED_SUFFIX if detached else file)
    if output is not None or detached:
        check_output(target, force)
    with _progress(f"signing {file}", quiet) as progress:
        written = sign_file(file, key, output, detached=detached, progress=progress.update)
    what = "signature" if detached else "signed container"
    echo(f"wrote {written}: {what}, {os.stat(written).st_size} bytes")


def _verify_text(report: Any) -> str:
    lines = [f"{report.source}: {'verified' if report.ok else 'NOT verified'}"
             + (f" (signature: {report.signature}, key {report.key_id[:16]}...)" if report.key_id else "")]
    for e in report.entries:
        lines.append(f"  {e.status:<9} {printable(e.name)} ({printable(e.backend_id)})")
    for name in report.thinned:
        lines.append(f"  {'thinned':<9} {printable(name)}")
    if report.named_data or report.thinned_named_data:
        lines.append(f"  named data: {report.named_data} key(s) verified, {len(report.thinned_named_data)} thinned")
    for name in report.unsigned_golden:
        lines.append(f"  golden calls of {printable(name)} are not signed (a statement before revision 3, no "
                     "fatpte.golden.sha256 in its provenance): a signed load does not run them")
    lines += [f"  {f.describe()}" for f in report.findings]
    return "\n".join(lines)


@main.command(epilog=EXIT_HELP)
@click.argument("file", type=click.Path())
@click.option("--key", "keys", multiple=True, metavar="PUBLIC.pem", type=click.Path(),
              help="Trusted public key (PEM); repeat for several.")
@click.option("--trust", "trust", multiple=True, metavar="DIR", type=click.Path(file_okay=False),
              help="Folder whose *.pem files are trusted public keys.")
@click.option("--signature", "signature", metavar="SIG", type=click.Path(dir_okay=False),
              help="Detached signature to use (default: the embedded one; FILE.sig is read only when given "
                   "here).")
@click.option("--refuse-downgrade", "downgrade", metavar="host|NAME|PROFILE.json", default=None,
              shell_complete=complete_device,
              help="Also fail (E1308) when the entry this device gets among the signed entries was thinned "
                   "away, leaving it a weaker one. Off by default (specs/nfat-signature.md 6, step 11).")
@json_option
@quiet_option
def verify(file: str, keys: tuple[str, ...], trust: tuple[str, ...], signature: str | None, downgrade: str | None,
           as_json: bool, quiet: bool) -> None:
    """Verify FILE's signature against trusted keys, then every entry and named-data key it holds:
    each must match the signed statement. Signed entries FILE no longer holds (thinned) are listed,
    and are not an error, unless --refuse-downgrade names a device whose best signed entry is one
    of them. Exit 5 when verification fails, naming the entry or field.

    Golden calls the signature does not vouch for (signed before statement revision 3, no golden
    digest in the signed provenance) are listed too, and are not an error: a signed self-test does
    not make them (specs/nfat-signature.md 6.1). A key file that is not a readable regular file
    exits 4 (E0811, E0801), one that holds no single public key exits 2 (E0702), as in fatpte-verify.

    FILE may be a URL (docs/remote.md): the signature region comes in one request, the payloads
    and named data only when the signature is by a trusted key.
    """
    from fatpte.fileio.url import is_url
    from fatpte.ops.signing import load_trusted_keys
    from fatpte.ops.signing import verify as verify_file

    if not keys and not trust:
        raise click.UsageError("give --key PUBLIC.pem or --trust DIR")
    trusted = load_trusted_keys(keys, trust)
    profile = None if downgrade is None else load_device(downgrade)
    with _progress(f"verifying {file}", quiet) as progress:
        if is_url(file):
            from fatpte.ops.verify_remote import verify_remote

            report = verify_remote(file, trusted, signature=signature, progress=progress.update, downgrade=profile)
        else:
            report = verify_file(file, trusted, signature=signature, progress=progress.update, downgrade=profile)
    if as_json:
        emit_json(report.to_json())
    else:
        echo(_verify_text(report))
    if not report.ok:
        assert report.first_error is not None
        exit_with(exit_code(FatpteError.from_finding(report.first_error, file)))


@main.command(epilog=EXIT_HELP)
@click.argument("file", type=click.Path())
@click.option("-o", "--output", "output", metavar="OUT", type=click.Path(dir_okay=False),
              help="File to write (default: FILE itself).")
@force_option
def unsign(file: str, output: str | None, force: bool) -> None:
    """Remove FILE's embedded signature. A container signed by `fatpte sign` gets back the exact
    bytes it had before."""
    from fatpte.ops.signing import unsign as unsign_file

    if output is not None:
        check_output(output, force)
    written = unsign_file(file, output)
    echo(f"wrote {written}: no signature, {os.stat(written).st_size} bytes")


# ---------------------------------------------------------------------------------------------
# completion
# ---------------------------------------------------------------------------------------------


@main.command(epilog=EXIT_HELP)
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script for SHELL.

    \b
    bash: eval "$(fatpte completion bash)"   (in ~/.bashrc)
    zsh:  eval "$(fatpte completion zsh)"    (in ~/.zshrc)
    fish: fatpte completion fish > ~/.config/fish/completions/fatpte.fish
    """
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell)
    assert cls is not None  # the Choice above lists only shells click supports
    click.echo(cls(main, {}, "fatpte", "_FATPTE_COMPLETE").source())


def commands() -> Sequence[str]:
    """The command names, in the order docs/cli.md documents them."""
    return list(main.commands)
