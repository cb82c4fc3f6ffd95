"""`fatpte.check`: every entry of a container that this machine can run, run on its golden calls by
the real runtime (specs/nfat-manifest.md section 11), each output compared with its golden tensor
and each entry with the others; the entries it cannot run are listed with the reason.

Each entry runs in one `fatpte-run --golden-report` process per method (fatpte.ops.runner): the
runner reads the golden tensors from the container, makes the calls in order on one loaded method
(state carries), compares, and saves the outputs to a scratch folder. Python reads only the
manifest and those outputs, in chunks, to compare entries with each other: never a payload, so
`check` of a container with a 1 GiB entry holds what that program needs in its own process plus the
golden tensors.

Entries against each other: two entries that made the same golden call (same method, same input
keys) agree on an output when `max|a - b| <= bound_a + bound_b`, the sum of their bounds against the
golden tensor, which two entries that both pass always meet (the triangle inequality): the pair
figures show how close the lowerings are, and catch entries whose own golden outputs disagree.
"""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from fatpte.device.fatpte_run import Runtime, read_report
from fatpte.errors import ErrorCode, FatpteError, clipped, printable
from fatpte.manifest.model import golden_bound, within
from fatpte.ops import runner
from fatpte.value.dtypes import element_size
from fatpte.value.tensors import decode_floats

# Entry states.
AGREES: Final = "agrees"
DISAGREES: Final = "disagrees"
CANNOT_RUN: Final = "cannot run"
NO_CALLS: Final = "no golden calls"
FAILED: Final = "failed"  # the runner refused the container (damage): the container is invalid

_CHUNK: Final = 1 << 20  # elements compared at a time


@dataclass(frozen=True, slots=True)
class OutputCheck:
    """One output of one golden call of one entry, against its golden tensor."""

    call: int
    output: int
    method: str
    key: str
    dtype: str
    shape: tuple[int, ...]
    max_abs: float
    max_rel: float
    max_want: float
    atol: float
    rtol: float
    bound: float
    passed: bool
    problem: str | None

    def to_json(self) -> dict[str, Any]:
        return {"call": self.call, "output": self.output, "method": self.method, "key": self.key,
                "dtype": self.dtype, "shape": list(self.shape), "max_abs": self.max_abs, "max_rel": self.max_rel,
                "max_want": self.max_want, "atol": self.atol, "rtol": self.rtol, "bound": self.bound,
                "passed": self.passed, "problem": self.problem}


@dataclass(slots=True)
class EntryCheck:
    """What `check` found for one entry of the table."""

    name: str
    backend_id: str
    state: str
    reason: str = ""
    runner: str = ""
    outputs: list[OutputCheck] = field(default_factory=list)
    # (golden call index, output) -> the saved output, for the comparison between entries
    files: dict[tuple[int, int], Path] = field(default_factory=dict)
    inputs: dict[int, tuple[str, tuple[str, ...]]] = field(default_factory=dict)  # call -> (method, input keys)
    code: ErrorCode | None = None  # FAILED: the runner's error

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "backend_id": self.backend_id, "state": self.state, "reason": self.reason or None,
                "runner": self.runner or None, "outputs": [o.to_json() for o in self.outputs]}


@dataclass(frozen=True, slots=True)
class PairCheck:
    """Two entries on one output of one golden call both made."""

    a: str
    b: str
    call: int
    output: int
    max_abs: float
    max_rel: float
    bound: float
    passed: bool

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "call": self.call, "output": self.output, "max_abs": self.max_abs,
                "max_rel": self.max_rel, "bound": self.bound, "passed": self.passed}


@dataclass(slots=True)
class CheckReport:
    source: str
    entries: list[EntryCheck]
    pairs: list[PairCheck]
    runtimes: list[str] = field(default_factory=list)  # each runner used, described in full

    @property
    def ran(self) -> list[EntryCheck]:
        return [e for e in self.entries if e.state in (AGREES, DISAGREES)]

    @property
    def error(self) -> FatpteError | None:
        """Why the check fails, as the error whose category gives the exit status; None when it passes."""
        failed = [e for e in self.entries if e.state == FAILED]
        if failed:
            return FatpteError(failed[0].code or ErrorCode.IO_ERROR, f"entry {clipped(failed[0].name)}: "
                               f"{failed[0].reason}", source=self.source)
        bad = [e for e in self.entries if e.state == DISAGREES]
        pairs = [p for p in self.pairs if not p.passed]
        if bad:
            return FatpteError(ErrorCode.GOLDEN_MISMATCH, f"entry {clipped(bad[0].name)}: {bad[0].reason}",
                               source=self.source)
        if pairs:
            p = pairs[0]
            return FatpteError(ErrorCode.GOLDEN_MISMATCH, f"entries {clipped(p.a)} and {clipped(p.b)} disagree on "
                               f"output {p.output} of golden call {p.call}: max abs {p.max_abs:.3g} > {p.bound:.3g}",
                               source=self.source)
        if not self.ran:
            return FatpteError(ErrorCode.NO_SPECIALIZATION_FITS, "no entry with golden calls can run on this "
                               "machine: " + "; ".join(f"{clipped(e.name)}: {e.reason or e.state}"
                                                       for e in self.entries), source=self.source)
        return None

    def to_json(self) -> dict[str, Any]:
        err = self.error
        return {"source": self.source, "ok": err is None,
                "error": None if err is None else {"code": err.code.tag, "message": err.message},
                "entries": [e.to_json() for e in self.entries], "pairs": [p.to_json() for p in self.pairs]}

    def text(self) -> str:
        """The agreement table: entry x output, then the entries that did not run, then the pairs."""
        ran = self.ran
        lines = [f"{printable(self.source)}: {len(ran)} of {len(self.entries)} entries ran their golden calls"
                 + (f" ({', '.join(sorted(set(self.runtimes)))})" if self.runtimes else "")]
        rows = [("entry", "runner", "call", "output", "dtype", "shape", "max abs", "max rel", "tolerance", "result")]
        for e in ran:
            for o in e.outputs:
                result = "pass" if o.passed else ("FAIL: " + o.problem if o.problem else "FAIL")
                rows.append((clipped(e.name, 48), e.runner, f"{o.call} {clipped(o.method, 32)}", str(o.output),
                             o.dtype, "[" + ", ".join(map(str, o.shape)) + "]", _num(o.max_abs), _num(o.max_rel),
                             f"{_num(o.atol)} + {_num(o.rtol)} * {_num(o.max_want)} = {_num(o.bound)}", result))
            if not e.outputs or e.state == DISAGREES and all(o.passed for o in e.outputs):
                rows.append((clipped(e.name, 48), e.runner, "-", "-", "-", "-", "-", "-", "-",
                             ("FAIL: " if e.state == DISAGREES else "") + printable(e.reason)))
        if len(rows) > 1:
            lines += ["", *_table(rows)]
        others = [e for e in self.entries if e not in ran]
        if others:
            lines += ["", "not run:"]
            lines += [f"  {clipped(e.name)} [{clipped(e.backend_id)}]: {e.state}"
                      + (f": {printable(e.reason)}" if e.reason else "") for e in others]
        if self.pairs:
            worst: dict[tuple[str, str], PairCheck] = {}
            for p in self.pairs:
                w = worst.get((p.a, p.b))
                if w is None or (not p.passed and w.passed) or (p.passed == w.passed and p.max_rel > w.max_rel):
                    worst[(p.a, p.b)] = p
            pair_rows = [("entry", "against", "largest on", "max abs", "max rel", "bound", "result")]
            pair_rows += [(clipped(p.a, 48), clipped(p.b, 48), f"call {p.call} output {p.output}", _num(p.max_abs),
                           _num(p.max_rel), _num(p.bound), "pass" if p.passed else "FAIL")
                          for p in worst.values()]
            lines += ["", "entries against each other (the largest difference over the golden calls both made):",
                      *_table(pair_rows)]
        err = self.error
        lines += ["", "result: " + ("every entry that ran agrees with its golden calls and with the others"
                                    if err is None else f"{err.code.tag}: {printable(err.message)}")]
        return "\n".join(lines)


def _num(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf"
    return f"{value:.3g}"


def _table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]


def _values(path: Path, dtype: str) -> Iterator[list[float]]:
    """The elements of a saved output, as floats, _CHUNK at a time."""
    size = element_size(dtype) or 1
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK * size):
            yield decode_floats(dtype, chunk)


def compare_files(a: Path, b: Path, dtype: str) -> float:
    """max|a - b| over two saved outputs of one dtype and size, as specs/nfat-manifest.md 11.1 counts
    differences (two NaNs or equal infinities: 0; a NaN or infinity against another value: infinity)."""
    worst = 0.0
    for xs, ys in zip(_values(a, dtype), _values(b, dtype)):
        for x, y in zip(xs, ys):
            if x == y or (math.isnan(x) and math.isnan(y)):
                continue
            d = abs(x - y) if math.isfinite(x) and math.isfinite(y) else math.inf
            worst = max(worst, d)
    return worst


def check(path: str, *, runtime: str | None = None, aarch64_runtime: str | None = None,
          qemu: str | None = None) -> CheckReport:
    """Run every entry of the container at `path` that this machine (or an emulator of another
    architecture its requirements name) can run on its golden calls, and compare. NO_GOLDEN_CALLS
    when no entry has any. A URL is fetched first, through fatpte's remote reader, to a private
    temporary file that the runners read (`fetched`): its credentials are never shown (the report
    names it `redact`ed) nor put on a runner's command line."""
    from fatpte.fileio.url import is_url, redact

    if not is_url(path):
        return _check(path, path, runtime=runtime, aarch64_runtime=aarch64_runtime, qemu=qemu)
    shown = redact(path)
    if runner.native_runtime(runtime) is None:  # before the download: nothing could run it
        raise _no_runner(shown)
    with fetched(path) as local:
        return _check(local, shown, runtime=runtime, aarch64_runtime=aarch64_runtime, qemu=qemu)


@contextlib.contextmanager
def fetched(url: str) -> Iterator[str]:
    """The container at `url`, streamed through fatpte's remote reader (every answer checked,
    specs/remote.md) into `container.nfat` in a new folder only this user can enter (0700), the
    file itself 0600, created new (never through a link); the folder and the file are removed
    when the block ends, whatever ends it. Nothing but the range being written is held."""
    from fatpte.container.locations import open as open_container

    with tempfile.TemporaryDirectory(prefix="fatpte-check-") as folder:  # mkdtemp: 0700
        local = os.path.join(folder, "container.nfat")
        fd = os.open(local, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            with open_container(url) as c:
                c.copy_range(0, c.size, fd, 0)
        finally:
            os.close(fd)
        yield local


def _no_runner(source: str) -> FatpteError:
    return FatpteError(ErrorCode.INVALID_ARGUMENT, "check runs the entries with fatpte-run, and none was found: "
                       "set $FATPTE_RUN, give `fatpte --runtime PATH`, put fatpte-run on PATH, or install fatpte's "
                       "platform wheel (docs/wheels.md)", source=source)


def _check(path: str, source: str, *, runtime: str | None, aarch64_runtime: str | None,
           qemu: str | None) -> CheckReport:
    """`check` of the local file `path`, reported as `source` (the URL it came from, redacted)."""
    from fatpte.container.locations import open as open_container
    from fatpte.manifest.rules import golden_problem_of_each_entry

    with open_container(path) as c:
        manifest = c.manifest
        records = {} if manifest is None else manifest.by_name()
        table = list(c.entries)
    # The golden rules first (specs/nfat-manifest.md 11.2, 11.3): an entry that breaks one is an
    # invalid container (exit 1), never an entry that cannot run here (a call naming a method the
    # program lacks once made fatpte-run refuse to load it: "no entry can run", exit 3).
    problems = {} if manifest is None else {manifest.entries[i].name: found for i, found in
                                            golden_problem_of_each_entry(manifest).items()}
    if not any(r.golden for r in records.values()):
        raise FatpteError(ErrorCode.NO_GOLDEN_CALLS, "the container has no golden calls to check: pack it with "
                          "--golden CALLS.json (and --golden-from NAME to record the outputs)", source=source)
    if runner.native_runtime(runtime) is None:
        raise _no_runner(source)
    report = CheckReport(source, [], [])
    with tempfile.TemporaryDirectory(prefix="fatpte-check-") as scratch:
        for e in table:
            record = records.get(e.name)
            result = EntryCheck(e.name, e.backend_id, NO_CALLS)
            report.entries.append(result)
            if record is None or not record.golden:
                continue
            if e.name in problems:
                code, field_path, message = problems[e.name]
                result.state, result.code = FAILED, code
                result.reason = f"{message} ({code.tag} at {field_path})"
                continue
            place = runner.placement(e, record, runtime=runtime, aarch64_runtime=aarch64_runtime, qemu=qemu)
            if place.runtime is None:
                result.state, result.reason = CANNOT_RUN, place.reason
                continue
            result.runner = place.runtime.label
            report.runtimes.append(place.runtime.describe())
            result.inputs = {k: (call.method, call.inputs) for k, call in enumerate(record.golden)}
            _run_entry(path, e.index, e.name, record, place.runtime, Path(scratch), result)
        report.pairs = _pairs(report.ran)
    return report


def _run_entry(path: str, index: int, name: str, record: Any, rt: Runtime, scratch: Path,
               result: EntryCheck) -> None:
    """Every method's golden calls of one entry, one fatpte-run each; `result` filled."""
    result.state = AGREES
    for m, method in enumerate(dict.fromkeys(call.method for call in record.golden)):
        saved = scratch / f"{index}-{m}"
        saved.mkdir()
        done = rt.run([path, "--entry", name, "--method", method, "--golden-report", "--json",
                       "--save-outputs", str(saved)])
        report = read_report(done, rt) if done.stdout.strip() else None
        golden = None if report is None else report.golden
        if done.returncode in (0, 6) and golden is not None:
            _read_golden(golden, method, saved, result)
            if done.returncode == 6:
                result.state = DISAGREES
            continue
        said = (" | ".join(report.dispatch[-2:]) if report is not None else "") or done.stderr.strip()[-500:]
        if done.returncode == 3:  # no load: a backend library missing, the program refused, ...
            result.state, result.reason = CANNOT_RUN, f"method {method!r}: {said}"
        else:
            result.state, result.reason = FAILED, f"method {method!r}: exit {done.returncode}: {said}"
            result.code = None if report is None else report.code  # the report's error, never stderr
        return


def _read_golden(golden: dict[str, Any], method: str, saved: Path, result: EntryCheck) -> None:
    """One method's golden report (fatpte-run --golden-report) into `result`."""
    for k, call in enumerate(golden["calls"]):
        index_k = int(call["index"])
        if call.get("error"):
            result.state = DISAGREES
            result.reason = result.reason or f"golden call {index_k} could not run: {call['error']}"
        for j, o in enumerate(call["outputs"]):
            checked = _output_check(index_k, j, method, o)
            result.outputs.append(checked)
            result.files[(index_k, j)] = saved / f"call-{k}-output-{j}.bin"
            if not checked.passed:
                result.state = DISAGREES
            if not checked.passed and not result.reason:
                figures = o.get("problem") or (f"max abs {_num(float(o['max_abs']))} (rel "
                                               f"{_num(float(o['max_rel']))}) > {_num(float(o['bound']))}")
                result.reason = f"golden call {index_k}, output {j}: {figures}"


def _output_check(call: int, j: int, method: str, o: dict[str, Any]) -> OutputCheck:
    """One output of fatpte-run's golden report. The bound and the verdict are taken again by the
    rule of 11.1 (golden_bound, within), so a runner that let a NaN pass under an overflowing bound
    is not believed."""
    max_abs, max_want, atol, rtol = (float(o[k]) for k in ("max_abs", "max_want", "atol", "rtol"))
    bound = golden_bound(atol, rtol, max_want)
    passed = bool(o["passed"]) and o.get("problem") is None and within(max_abs, bound)
    return OutputCheck(call, j, method, o["key"], o["dtype"], tuple(o["shape"]), max_abs, float(o["max_rel"]),
                       max_want, atol, rtol, bound, passed, o.get("problem"))


def _pairs(ran: list[EntryCheck]) -> list[PairCheck]:
    """Each pair of entries that ran, on every output of every golden call both made."""
    out = []
    # Each entry's outputs by (call, output), made once: a search of the list per output was
    # quadratic in the golden calls (issue 42 C1).
    by_call = [{(o.call, o.output): o for o in e.outputs} for e in ran]
    for i, a in enumerate(ran):
        for i_b, b in enumerate(ran[i + 1 :], i + 1):
            for (call, j), file_a in sorted(a.files.items()):
                file_b = b.files.get((call, j))
                if file_b is None or a.inputs.get(call) != b.inputs.get(call):
                    continue
                oa, ob = by_call[i].get((call, j)), by_call[i_b].get((call, j))
                if oa is None or ob is None:
                    continue
                if oa.problem or ob.problem or oa.key != ob.key or not file_a.exists() or not file_b.exists():
                    continue
                if file_a.stat().st_size != file_b.stat().st_size:
                    continue
                d = compare_files(file_a, file_b, oa.dtype)
                bound = golden_bound(oa.bound, 1.0, ob.bound)  # their sum, saturated as 11.1's bound is
                rel = d / oa.max_want if oa.max_want > 0 else (0.0 if d == 0 else math.inf)
                out.append(PairCheck(a.name, b.name, call, j, d, rel, bound, within(d, bound)))
    return out
