"""The one room that finds and drives fatpte-run (the C++ loader's command line, loader/) and
reads its report: `find_runtime` (which fatpte-run), `Runtime` (one to run, natively or under an
emulator: its argv prefix), `call` (the one place a fatpte-run process is started), and
`read_report` (the report of `fatpte-run --json`, held to specs/run_report.schema.json by
`fatpte.device.run_report`). What asks fatpte-run anything goes through here: `fatpte check`,
`pack --golden-from` (fatpte.ops.runner places an entry on a runner, then runs it), and the
ExecuTorch backends of `fatpte device` and `--device host` (fatpte.device.probe_executorch).

Which fatpte-run: `$FATPTE_RUN` (`fatpte --runtime PATH` sets it; empty: none), else the one the
platform wheel installed inside this package (fatpte/_loader/bin/fatpte-run, docs/wheels.md), else
`fatpte-run` on PATH, else one beside this Python (a venv's bin folder). Only `os` and `sys` are imported up
front (`--device host` on a machine with no fatpte-run pays for a look along PATH, not for the
subprocess machinery, nor for dataclasses: the read path's start-up cost, tests/cli/test_startup_imports.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from fatpte.errors import ErrorCode, FatpteError, printable

if TYPE_CHECKING:
    import subprocess

RUNTIME_ENV: Final = "FATPTE_RUN"
RUNTIME_NAME: Final = "fatpte-run"
TIMEOUT_SECONDS: Final = 600  # one entry's golden calls; a large program under emulation is slow


def find_runtime() -> tuple[str | None, bool]:
    """(the fatpte-run to ask, or None; whether `$FATPTE_RUN` named it)."""
    named = os.environ.get(RUNTIME_ENV)
    if named is not None:
        return (named or None), True
    packaged = packaged_runtime()
    if packaged is not None:
        return packaged, False
    folders = [d for d in os.environ.get("PATH", os.defpath).split(os.pathsep) if d]
    folders.append(os.path.dirname(os.path.abspath(sys.executable)))
    for folder in folders:
        path = os.path.join(folder, RUNTIME_NAME)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path, False
    return None, False


def packaged_runtime() -> str | None:
    """The fatpte-run the platform wheel put inside this package (fatpte/_loader/bin), or None (a
    pure-Python install, the source tree)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(package, "_loader", "bin", RUNTIME_NAME)
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


def call(argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """A fatpte-run process (`argv`, its command first), its output captured as text; OSError when
    it cannot be started, subprocess.TimeoutExpired when it does not finish within `timeout`."""
    import subprocess

    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False,
                          env=environment())


def environment() -> dict[str, str]:
    """The environment a fatpte-run gets: ours, with `VIRTUAL_ENV` set to this Python's virtual
    environment when it runs in one that was not activated, as activation would set it. The
    search for vendor runtimes (fatpte.device.vendor_runtimes) looks in this Python's own
    site-packages, which fatpte-run cannot know; with it both find the same runtime."""
    env = dict(os.environ)
    if "VIRTUAL_ENV" not in env and sys.prefix != sys.base_prefix:
        env["VIRTUAL_ENV"] = sys.prefix
    return env


class Runtime(NamedTuple):
    """A fatpte-run to run entries with: `command` is its argv prefix (under qemu, qemu's)."""

    command: tuple[str, ...]
    arch: str
    cpu: str | None = None  # the qemu CPU model, None when native

    @property
    def label(self) -> str:
        """`native x86_64` or `qemu cortex-a76`: which runner, for a table."""
        return f"native {self.arch}" if self.cpu is None else f"qemu {self.cpu}"

    def describe(self) -> str:
        if self.cpu is None:
            return f"native {self.arch} ({self.command[-1]})"
        return f"qemu-{self.arch} -cpu {self.cpu} ({self.command[-1]})"

    def run(self, args: Sequence[str], timeout: float = TIMEOUT_SECONDS) -> subprocess.CompletedProcess[str]:
        """The runner with `args`; E0801 when it cannot be started or does not finish in time."""
        import subprocess

        try:
            return call([*self.command, *args], timeout)
        except OSError as exc:
            raise FatpteError(ErrorCode.IO_ERROR, f"cannot run {self.describe()}: {exc.strerror or exc}",
                              source=self.command[-1]) from None
        except subprocess.TimeoutExpired:
            raise FatpteError(ErrorCode.IO_ERROR, f"{self.describe()} did not finish within {timeout:.0f} s",
                              source=self.command[-1]) from None

    def device_json(self) -> Any:
        """The device this runner sees, as `--device-json --with-executorch` prints it (its probe;
        under qemu, the emulated CPU), with the ExecuTorch backends its runtime provides: decoded,
        not yet read as a profile."""
        import json

        done = self.run(["--device-json", "--with-executorch"], timeout=120)
        if done.returncode != 0:
            said = printable(done.stderr.strip()[:300]) or "no message"
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{self.describe()} does not describe its device "
                              f"(`--device-json --with-executorch` exited {done.returncode}: {said}); it must be a "
                              "fatpte-run built with the ExecuTorch SDK", source=self.command[-1])
        try:
            return json.loads(done.stdout)
        except ValueError:
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{self.describe()} answered --device-json with no JSON",
                              source=self.command[-1]) from None


class RunReport(NamedTuple):
    """What `fatpte-run --json` reports of one run (specs/run-report.md): the entry loaded (or
    None), the loading steps, the calls made (each `{"outputs": [tensor, ...]}`), the golden
    report, and the error the run ended with: its code (None for a code this fatpte does not
    know, `error_tag` still naming it) and message."""

    chosen: str | None
    backend_id: str | None
    method: str
    dispatch: tuple[str, ...]
    calls: tuple[dict[str, Any], ...]
    golden: dict[str, Any] | None
    error_tag: str | None
    error_message: str

    @property
    def code(self) -> ErrorCode | None:
        if self.error_tag is None:
            return None
        value = int(self.error_tag[1:])
        return ErrorCode(value) if value in ErrorCode._value2member_map_ else None


def read_report(done: subprocess.CompletedProcess[str], runtime: Runtime) -> RunReport:
    """The report a run printed, read by the strict reader (no key twice; NaN and the infinities
    as numbers, as fatpte-run writes a figure) and held to specs/run_report.schema.json; E0702
    naming the runner when it printed none, or one outside the schema."""
    from fatpte.fileio.strict_json import JsonRefused, JsonRules, loads

    try:
        doc = loads(done.stdout.encode("utf-8", "surrogatepass"), JsonRules(constants=True))
    except JsonRefused as exc:
        if exc.kind != "syntax":
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{runtime.describe()} printed a report outside "
                              f"specs/run_report.schema.json: {exc}", source=runtime.command[-1]) from None
        doc = None
    if not isinstance(doc, dict):
        said = printable(done.stderr.strip()[-500:]) or "no message"
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{runtime.describe()} printed no JSON report (exit "
                          f"{done.returncode}: {said})", source=runtime.command[-1])
    return report_from_json(doc, runtime.describe(), runtime.command[-1])


def report_from_json(doc: Any, who: str, source: str) -> RunReport:
    """`doc` as a RunReport; E0702 when it is outside specs/run_report.schema.json."""
    from fatpte.device.run_report import outside

    problem = outside(doc)
    if problem is not None:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{who} printed a report outside specs/run_report.schema.json: "
                          f"{problem}", source=source)
    error = doc["error"]
    return RunReport(doc["chosen"], doc["backend_id"], doc["method"], tuple(doc["dispatch"]), tuple(doc["calls"]),
                     doc["golden"], None if error is None else error["code"],
                     "" if error is None else error["message"])
