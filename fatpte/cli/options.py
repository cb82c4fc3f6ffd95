"""What the click commands of the command line share: the exit-code epilog, the options several
commands take (-o, --force, --quiet, --json, --priority, --device, --prefer/--exclude), and
the parsers of their values (`parse_spec`, `priorities_of`, `alignment`). Imported by `main`
and the command modules beside it, never by the launcher (it imports click).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from fatpte.cli.commands import UsageProblem
from fatpte.cli.exit_codes import EXIT_OK

if TYPE_CHECKING:
    from fatpte.ops.specialization import Specialization

EXIT_HELP = """\b
Exit codes:
  0  success
  1  invalid container, or a failed finding
  2  usage error
  3  no specialization fits the device
  4  I/O error (a file cannot be read or written)
  5  not verified: no signature, an untrusted one, or content it does not vouch for (verify)
  6  an entry runs but disagrees with its golden calls or another entry (check)
  7  an entry with golden calls did not run them, and --allow-unchecked does not name it (check)
  8  a known-wrong variant of an entry passes its golden calls (check --mutants)"""

F = TypeVar("F", bound=Callable[..., Any])


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON (fields in docs/cli.md).")(f)


def force_option(f: F) -> F:
    return click.option("-f", "--force", is_flag=True, help="Replace OUT if it exists.")(f)


def aarch64_runtime_option(f: F) -> F:
    """`--aarch64-runtime`: the aarch64 fatpte-run that `check` and `pack --golden-from` run an
    entry made for aarch64 with, under qemu-aarch64 (fatpte.ops.runner)."""
    return click.option("--aarch64-runtime", "aarch64_runtime", metavar="FATPTE_RUN", default=None,
                        type=click.Path(dir_okay=False),
                        help="An aarch64 build of fatpte-run, run under qemu-aarch64 for entries made for aarch64 "
                             "(default: $FATPTE_RUN_AARCH64, else the one `fatpte runtime unpack` took from fatpte's "
                             "aarch64 wheel).")(f)


def quiet_option(f: F) -> F:
    return click.option("-q", "--quiet", is_flag=True, help="No progress display.")(f)


def output_option(f: F) -> F:
    return click.option("-o", "--output", "output", required=True, metavar="OUT",
                        type=click.Path(dir_okay=False), help="File to write.")(f)


def run_body(body: Callable[..., int], /, **kwargs: Any) -> None:
    """Run a command body of fatpte/cli/commands.py: its UsageProblem becomes click's usage error,
    and the status it returns the exit status."""
    try:
        status = body(**kwargs)
    except UsageProblem as exc:
        raise click.UsageError(str(exc)) from None
    if status != EXIT_OK:
        exit_with(status)


def exit_with(code: int) -> None:
    click.get_current_context().exit(code)


def parse_spec(text: str) -> Specialization:
    """`[NAME:]BACKEND=PAYLOAD` as a Specialization whose payload is the path PAYLOAD."""
    from fatpte.ops.specialization import Specialization

    head, sep, payload = text.partition("=")
    if not sep or not head or not payload:
        raise click.BadParameter(f"{text!r} is not [NAME:]BACKEND=PAYLOAD")
    name, colon, backend = head.partition(":")
    if not colon:
        return Specialization(head, payload)
    if not name or not backend:
        raise click.BadParameter(f"{text!r} is not [NAME:]BACKEND=PAYLOAD")
    return Specialization(backend, payload, name=name)


def alignment(value: int | None) -> int | None:
    from fatpte.format.structure import valid_alignment

    if value is not None and not valid_alignment(value):
        raise click.BadParameter(f"{value} is not a power of two from 1 to 65536")
    return value


def priorities_of(values: Sequence[str]) -> dict[str, int]:
    """`--priority NAME=N` values as entry name -> priority (the last one given for a name wins)."""
    out: dict[str, int] = {}
    for value in values:
        name, sep, number = value.rpartition("=")
        try:
            out[name] = int(number)
        except ValueError:
            name = ""
        if not sep or not name:
            raise click.BadParameter(f"{value!r} is not NAME=N (N an integer)", param_hint="'--priority'")
    return out


def accelerator_option(f: F) -> F:
    return click.option(
        "--accelerator", "accelerators", multiple=True, metavar="NAME=KIND[:DEVICE][+CAP...]",
        help="Entry NAME needs an accelerator of KIND (cuda, metal, vulkan, opencl, npu, openvino), of the vendor "
             "runtime's DEVICE type and listing each capability CAP, e.g. openvino=openvino:NPU+int8 (repeatable; "
             "an OpenVINO program's compile-spec device is required without it).")(f)


def priority_option(f: F) -> F:
    return click.option("--priority", "priorities", multiple=True, metavar="NAME=N",
                        help="Give entry NAME priority N, a 32-bit integer (default 0; higher is chosen first; "
                             "repeatable).")(f)


def preference_options(f: F) -> F:
    f = click.option("--exclude", multiple=True, metavar="B1,B2",
                     help="Never choose these names or backend ids (repeatable).")(f)
    return click.option("--prefer", multiple=True, metavar="B1,B2",
                        help="Among equal priorities, prefer these names or backend ids, in order "
                             "(repeatable).")(f)


def complete_device(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Shell completion of --device: `host`, the named profiles, and JSON files."""
    from click.shell_completion import CompletionItem

    from fatpte.device.profile import DeviceProfile

    words = [w for w in ["host", *DeviceProfile.names()] if w.startswith(incomplete)]
    return [CompletionItem(w) for w in words] + [CompletionItem(incomplete, type="file")]


def device_option(required: bool) -> Callable[[F], F]:
    return click.option("--device", required=required, metavar="host|NAME|PROFILE.json",
                        shell_complete=complete_device,
                        help="The device: `host` (this machine), a named profile (`fatpte device list`) or a "
                             "profile JSON file.")


def specs_argument(f: F) -> F:
    return click.argument("specs", nargs=-1, metavar="[NAME:]BACKEND=PAYLOAD...")(f)
