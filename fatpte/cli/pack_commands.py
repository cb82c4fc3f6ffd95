"""`fatpte pack` and `fatpte merge`: the commands that write a container, or a fat program, from
files. Grammar only: each parses its options, calls the library (the packing policy of
fatpte.ops.pack_policy and fatpte.ops.packing.write; fatpte.ops.fat_merge) and prints; `main`
adds them to the group.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click

from fatpte.cli.commands import check_inputs, check_output, echo, printed_warnings
from fatpte.cli.commands import progress as _progress
from fatpte.cli.options import (
    EXIT_HELP,
    aarch64_runtime_option,
    accelerator_option,
    alignment,
    force_option,
    output_option,
    parse_spec,
    priorities_of,
    priority_option,
    quiet_option,
)
from fatpte.errors import listed, quoted

if TYPE_CHECKING:
    from fatpte.ops.specialization import Specialization


_adapt_io_option = click.option(
    "--adapt-io", "adapt_io", is_flag=True,
    help="Let entries whose programs take or give float16 or bfloat16 where the others have float32 "
         "(a model.half() export) state the float32 signature with a signature adapter: the loader "
         "converts at the edge (specs/nfat-manifest.md 5.3).")

_require_option = click.option(
    "--require", "requires", multiple=True, metavar="NAME:KEY=VALUE",
    help="Add a requirement on the device's identity to entry NAME (repeatable): cpu_cores=CORE (one more core "
         "each; the device's every core must be listed), min_core=CORE, soc=WORD (one more machine model or SoC "
         "word each), min_memory_bytes=N (specs/nfat-manifest.md 4.4).")


@click.command(epilog=EXIT_HELP)
@click.argument("specs", nargs=-1, metavar="[NAME:]BACKEND=PAYLOAD|PROGRAM.pte|PACKAGE.ptn...")
@output_option
@click.option("--data", "data", multiple=True, metavar="[NAME=]FILE.ptd",
              help="Add the tensors of an ExecuTorch .ptd (or of a .ptn's program.safetensors) to the named "
                   "data of entry NAME, or without NAME= of each ExecuTorch program entry that loads one of them "
                   "(repeatable).")
@click.option("--share-pte-named-data", "share_pte_named_data", is_flag=True,
              help="Move the named data stored inside each ExecuTorch program, and the tensors of each .ptn, into "
                   "the shared named data; the entry's payload is then the program rewritten without it "
                   "(extract it with --data-out), or the package without them (extract puts them back).")
@click.option("--format-version", type=click.Choice(["1", "2"]), default=None,
              help="Container version to write (default 2).")
@click.option("--align", type=int, default=None, metavar="N", callback=lambda ctx, param, v: alignment(v),
              help="Default payload alignment, a power of two from 1 to 65536 (version 2; default 64).")
@click.option("--from", "from_toml", type=click.Path(dir_okay=False), metavar="PACK_TOML",
              help="Pack what a pack.toml describes (docs/pack-toml.md) instead of arguments.")
@click.option("--signature-from", "signature_from", metavar="NAME", default=None,
              help="Give every entry the program signature of entry NAME instead of checking that they "
                   "agree; recorded in each entry's provenance (fatpte.signature_check).")
@click.option("--no-signature-check", "no_signature_check", is_flag=True,
              help="Store no program signature and check none; recorded in each entry's provenance.")
@_adapt_io_option
@click.option("--golden", "golden", type=click.Path(dir_okay=False), metavar="CALLS.json", default=None,
              help="Golden calls for every entry that states a program signature: the calls `fatpte-run --inputs` "
                   "takes, each with its expected outputs (docs/golden.md).")
@click.option("--golden-from", "golden_from", metavar="NAME", default=None,
              help="Record the golden calls' outputs by running entry NAME with the real runtime (fatpte-run).")
@click.option("--golden-tolerance", "golden_tolerances", multiple=True, metavar="NAME=ATOL,RTOL",
              help="Let entry NAME's outputs be this far from the golden ones at least (repeatable): wider for "
                   "a quantized or fp16 entry.")
@accelerator_option
@_require_option
@aarch64_runtime_option
@priority_option
@force_option
@quiet_option
def pack(specs: tuple[str, ...], output: str, data: tuple[str, ...], share_pte_named_data: bool,
         format_version: str | None, align: int | None, from_toml: str | None, signature_from: str | None,
         no_signature_check: bool, adapt_io: bool, golden: str | None, golden_from: str | None,
         golden_tolerances: tuple[str, ...], accelerators: tuple[str, ...], requires: tuple[str, ...],
         aarch64_runtime: str | None, priorities: tuple[str, ...], force: bool, quiet: bool) -> None:
    """Pack payloads into a container.

    Each argument is BACKEND=PAYLOAD (the entry is named after its backend id) or
    NAME:BACKEND=PAYLOAD, where PAYLOAD is a file. Identical payloads are stored once.
    With --from, a pack.toml states everything instead (names, priorities, requirements,
    signatures, named data); `fatpte unpack` writes one that reproduces a container.

    A PAYLOAD that is an ExecuTorch program (.pte) is packed whole, with its program signature
    read from the file, so programs whose signatures differ are refused (E0411, both shown). It
    may be given as a bare PROGRAM.pte: the backend id is then derived from its delegates
    (`portable` when none, XnnpackBackend gives `xnnpack`). An ExecuTorch native package (.ptn)
    is packed whole the same way, its signature read from its program.ptg (a bare PACKAGE.ptn
    gets the backend id `native`). Two programs are the same program when their user inputs,
    user outputs and state (mutable buffers) agree in dtype and shape, buffer names compared
    only where both record them (the default export records none); when you know better,
    --signature-from NAME or --no-signature-check, recorded in the container; --adapt-io puts a
    float16 or bfloat16 program (model.half()) behind the float32 signature. Any program is
    checked against what is said of it: a backend id that names a backend the program does not
    delegate to (`portable` for an XNNPACK program) is refused (E1102). --data moves a .ptd's
    tensors into the container's shared named data (docs/executorch.md); --share-pte-named-data
    moves the named data stored in the programs there too, rewriting them (extract then no
    longer gives the input file back byte for byte), and the tensors of each .ptn (extract
    writes the package whole again).

    --format-version 1 writes ExecuTorch's published layout: each program or package is then
    its file under its backend id and nothing else (no names, priorities, alignment, named data
    or manifest); the programs' signatures are still checked against each other.

    Entries are ranked by priority (0 unless --priority NAME=N; higher is chosen first), then
    by the rules of specs/nfat-manifest.md section 6; pack warns (E0709) about entries that
    only their place in the table would tell apart.

    --golden CALLS.json stores golden calls (specs/nfat-manifest.md section 11): reference
    inputs and the outputs each entry must give, within a tolerance per output (its dtype's
    default, widened for an entry by --golden-tolerance), which `fatpte check` and
    `fatpte-run --self-test` run. --golden-from NAME records the outputs by running entry NAME
    with fatpte-run (`fatpte --runtime`, $FATPTE_RUN or on PATH) instead of taking them from
    CALLS.json (for aarch64, under qemu with --aarch64-runtime). Calls that cannot discriminate warn (E0712).
    """
    if signature_from is not None and no_signature_check:
        raise click.UsageError("--signature-from and --no-signature-check exclude each other")
    if from_toml is not None:
        _from_alone(specs or data or share_pte_named_data or format_version is not None or align is not None
                    or signature_from is not None or no_signature_check or adapt_io or priorities
                    or golden is not None or golden_from is not None or golden_tolerances or accelerators or requires)
        warnings = _pack_from_toml(from_toml, output, force, quiet, aarch64_runtime)
    else:
        version = _version(format_version, signature_from)
        warnings = _pack_arguments(specs, output, data=data, share_named_data=share_pte_named_data, version=version,
                                   align=align, signature_from=signature_from, check_signatures=not no_signature_check,
                                   adapt_io=adapt_io, golden=golden, golden_from=golden_from,
                                   golden_tolerances=golden_tolerances, accelerators=accelerators, requires=requires,
                                   aarch64_runtime=aarch64_runtime, priorities=priorities, force=force, quiet=quiet)
    _wrote_container(output)
    for line in warnings:
        echo(line, err=True)


def _from_alone(other_given: object) -> None:
    """--from states everything: any other option of what to pack is a usage error."""
    if other_given:
        raise click.UsageError("--from takes no [NAME:]BACKEND=PAYLOAD, --data, --share-pte-named-data, "
                               "--format-version, --align, --signature-from, --no-signature-check, --adapt-io, "
                               "--golden, --golden-from, --golden-tolerance, --accelerator, --require or --priority: "
                               "the pack.toml states them")


def _version(format_version: str | None, signature_from: str | None) -> int:
    """The container version `--format-version` asks for, with the options it allows."""
    version = int(format_version or "2")
    if version == 1 and signature_from is not None:
        raise click.UsageError("--signature-from gives entries a signature to store, and version 1 stores none "
                               "(its programs' signatures are checked against each other unless "
                               "--no-signature-check)")
    return version


def _pack_from_toml(from_toml: str, output: str, force: bool, quiet: bool, aarch64_runtime: str | None) -> list[str]:
    """`fatpte pack --from PACK_TOML`; its warnings."""
    from fatpte.cli.executorch_files import unresolved_warnings
    from fatpte.ops.packfile import pack_from_file

    check_inputs(from_toml)
    check_output(output, force)
    warnings: list[str] = []
    with _progress(f"packing {output}", quiet) as progress:
        pack_from_file(from_toml, output, progress=progress.update, aarch64_runtime=aarch64_runtime,
                       inspect=lambda specs: warnings.extend(unresolved_warnings(specs)))
    return warnings


def _pack_item(arg: str) -> str | Specialization:
    """An argument of `fatpte pack`: `[NAME:]BACKEND=PAYLOAD` parsed, a bare path as it is."""
    return parse_spec(arg) if "=" in arg else arg


def _pack_arguments(specs: tuple[str, ...], output: str, *, data: tuple[str, ...], share_named_data: bool,
                    version: int, align: int | None, signature_from: str | None, check_signatures: bool,
                    adapt_io: bool, golden: str | None, golden_from: str | None, golden_tolerances: tuple[str, ...],
                    accelerators: tuple[str, ...], requires: tuple[str, ...], aarch64_runtime: str | None,
                    priorities: tuple[str, ...], force: bool, quiet: bool) -> list[str]:
    """`fatpte pack` of its arguments: the packing policy's specializations of them
    (fatpte.ops.pack_policy, as `fatpte.pack` makes them), with the priorities and tolerances
    given, written by `fatpte.ops.packing.write`; its warnings."""
    from fatpte.cli.executorch_files import unresolved_warnings
    from fatpte.ops.pack_policy import resolve
    from fatpte.ops.packing import write

    parsed = resolve([_pack_item(a) for a in specs], data=data, share_named_data=share_named_data, version=version,
                     check_signatures=check_signatures)
    if not parsed:
        raise click.UsageError("give at least one [NAME:]BACKEND=PAYLOAD, or --from PACK_TOML")
    parsed = _prioritised(parsed, priorities_of(priorities))
    parsed = _required(parsed, requires)
    parsed = _golden_tolerances(parsed, golden_tolerances)
    parsed = _with_accelerators(parsed, accelerators)
    if golden_from is not None and golden is None:
        raise click.UsageError("--golden-from records the outputs of the golden calls --golden CALLS.json gives")
    check_inputs(*(s.payload for s in parsed if isinstance(s.payload, str)), *([golden] if golden else []))
    check_output(output, force)
    warnings = unresolved_warnings(parsed)
    with _progress(f"packing {output}", quiet) as progress:
        write(parsed, output, version=version, alignment=align, progress=progress.update,
              signature_from=signature_from, check_signatures=check_signatures, adapt_io=adapt_io, golden=golden,
              golden_from=golden_from, aarch64_runtime=aarch64_runtime)
    return warnings


def _prioritised(specs: list[Specialization], priorities: dict[str, int]) -> list[Specialization]:
    """`specs` with the priorities `--priority` gives their entries."""
    import dataclasses

    names = [s.entry_name for s in specs]
    unknown = [n for n in priorities if n not in names]
    if unknown:
        raise click.BadParameter(f"no entry is named {listed([quoted(n) for n in unknown])} (entries: "
                                 f"{listed([quoted(n) for n in names])})", param_hint="'--priority'")
    return [dataclasses.replace(s, priority=priorities[s.entry_name]) if s.entry_name in priorities else s
            for s in specs]


def _with_accelerators(specs: list[Specialization], values: tuple[str, ...]) -> list[Specialization]:
    """`specs` with the accelerator requirements `--accelerator NAME=KIND[:DEVICE][+CAP...]` adds to
    their entries' `requires` (docs/pack-toml.md, `requires.accelerators`)."""
    from fatpte.errors import FatpteError
    from fatpte.ops.pack_policy import with_accelerators

    added: dict[str, list[dict[str, object]]] = {}
    for value in values:
        name, sep, rest = value.partition("=")
        kind_device, *caps = rest.split("+")
        kind, _, device = kind_device.partition(":")
        if not sep or not name:
            raise click.BadParameter(f"{value!r} is not NAME=KIND[:DEVICE][+CAP...]", param_hint="'--accelerator'")
        added.setdefault(name, []).append({"kind": kind, "device": device, "capabilities": caps})
    try:
        return with_accelerators(specs, added)
    except FatpteError as exc:
        raise click.BadParameter(exc.message, param_hint="'--accelerator'") from None


_REQUIRE_KEYS = ("cpu_cores", "min_core", "soc", "min_memory_bytes")


def _required(specs: list[Specialization], values: tuple[str, ...]) -> list[Specialization]:
    """`specs` with the requirements `--require NAME:KEY=VALUE` adds to their entries, read as
    pack.toml's `requires` is (fatpte.manifest.model.Requirements.from_mapping)."""
    from fatpte.errors import FatpteError
    from fatpte.ops.specialization import with_requirements

    names = [s.entry_name for s in specs]
    added: dict[str, dict[str, Any]] = {}
    for value in values:
        name, colon, rest = value.partition(":")
        key, eq, word = rest.partition("=")
        if not colon or not eq or key not in _REQUIRE_KEYS or not word:
            raise click.BadParameter(f"{value!r} is not NAME:KEY=VALUE with KEY one of {', '.join(_REQUIRE_KEYS)}",
                                     param_hint="'--require'")
        if name not in names:
            raise click.BadParameter(f"no entry is named {quoted(name)} (entries: {listed([quoted(n) for n in names])})",
                                     param_hint="'--require'")
        table = added.setdefault(name, {})
        if key in ("cpu_cores", "soc"):
            table.setdefault(key, []).append(word)
        elif key == "min_memory_bytes":
            if not word.isdigit():
                raise click.BadParameter(f"{value!r}: min_memory_bytes is a number of bytes", param_hint="'--require'")
            table[key] = int(word)
        else:
            table[key] = word
    try:
        return [with_requirements(s, added[s.entry_name]) if s.entry_name in added else s for s in specs]
    except FatpteError as exc:
        raise click.BadParameter(exc.message, param_hint="'--require'") from None


def _golden_tolerances(specs: list[Specialization], values: tuple[str, ...]) -> list[Specialization]:
    """`specs` with the tolerances `--golden-tolerance NAME=ATOL,RTOL` gives their entries."""
    import dataclasses

    names = [s.entry_name for s in specs]
    given: dict[str, dict[str, float]] = {}
    for value in values:
        name, eq, numbers = value.partition("=")
        parts = numbers.split(",")
        try:
            atol, rtol = (float(x) for x in parts) if len(parts) == 2 else (None, None)
        except ValueError:
            atol = rtol = None
        if not eq or atol is None or rtol is None:
            raise click.BadParameter(f"{value!r} is not NAME=ATOL,RTOL", param_hint="'--golden-tolerance'")
        if name not in names:
            raise click.BadParameter(f"no entry is named {quoted(name)} (entries: {listed([quoted(n) for n in names])})",
                                     param_hint="'--golden-tolerance'")
        given[name] = {"atol": atol, "rtol": rtol}
    return [dataclasses.replace(s, golden_tolerance=given[s.entry_name]) if s.entry_name in given else s
            for s in specs]


def _wrote_container(path: str) -> None:
    from fatpte.container.reader import open as open_container

    with open_container(path) as c:
        n = len(c.entries)
        echo(f"wrote {path}: version {c.version}, {n} {'entry' if n == 1 else 'entries'}, {c.size} bytes")


# ---------------------------------------------------------------------------------------------
# merge
# ---------------------------------------------------------------------------------------------


@click.command(epilog=EXIT_HELP)
@click.argument("programs", nargs=-1, required=True, metavar="[NAME=]PROGRAM.pte...")
@output_option
@priority_option
@click.option("--golden", "golden", type=click.Path(dir_okay=False), metavar="CALLS.json", default=None,
              help="Golden calls for the nested portable program's entry: the calls list `fatpte pack --golden` "
                   "takes (docs/golden.md); `fatpte check OUT` runs them.")
@click.option("--golden-from", "golden_from", metavar="NAME", default=None,
              help="Record the golden calls' outputs by running entry NAME (the portable program: `portable`) "
                   "with the real runtime (fatpte-run).")
@force_option
def merge(programs: tuple[str, ...], output: str, priorities: tuple[str, ...], golden: str | None,
          golden_from: str | None, force: bool) -> None:
    """Merge lowered programs of one model into one fat program (.pte), without torch.

    Give each lowering of the model as ExecuTorch exported it: programs lowered to a backend
    (m_xnnpack.pte, ...) and at most one portable program (m_portable.pte, no delegate). OUT is
    the first lowered program with each method's delegate made a fat delegate (backend id
    FatpteBackend): its payload is an NFAT container of every lowered program's delegate payload
    and the portable program whole, which runs as a nested program when no backend entry can.
    ExecuTorch runs OUT with libexecutorch_backend_fatpte.so loaded (docs/executorch.md).

    Entries are named after their backend (`xnnpack`, `portable`) unless NAME= is given. The
    programs' signatures must agree, as `fatpte pack` checks them (E0411). Each lowered program
    must be one delegate per method over the method's inputs and outputs, so that the portable
    program can stand in for it: a program whose backend took only part of the graph (state
    kept outside the delegate, operators left to the portable kernels) is refused (E0702), naming
    the input, output or value that differs. Every entry must load the first lowered program's
    named data (E0706).

    --golden CALLS.json gives the nested portable program's entry golden calls (with their
    outputs, or recorded by running entry NAME with --golden-from NAME): `fatpte check OUT`
    runs them, and the fat delegate does when its `self_test` option is set (docs/golden.md).
    """
    from fatpte.ops.fat_merge import merge_programs

    given: list[str | tuple[str, str]] = []
    for arg in programs:
        name, sep, path = arg.partition("=")
        if sep and (not name or not path):
            raise click.BadParameter(f"{arg!r} is not [NAME=]PROGRAM.pte", param_hint="PROGRAMS")
        given.append((name, path) if sep else arg)
    if golden_from is not None and golden is None:
        raise click.UsageError("--golden-from records the outputs of the golden calls --golden CALLS.json gives")
    check_inputs(*(g if isinstance(g, str) else g[1] for g in given), *([golden] if golden else []))
    check_output(output, force)
    with printed_warnings():
        written = merge_programs(given, output, priorities=priorities_of(priorities), golden=golden,
                                 golden_from=golden_from)
    echo(f"wrote {written}: fat program, {os.stat(written).st_size} bytes")
