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
from fatpte.ops import golden_warnings, runner
from fatpte.ops.golden import DEFAULT_TOLERANCE
from fatpte.value.dtypes import element_size
from fatpte.value.tensors import decode_floats

# Entry states.
AGREES: Final = "agrees"
DISAGREES: Final = "disagrees"
CANNOT_RUN: Final = "cannot run"
NO_CALLS: Final = "no golden calls"
FAILED: Final = "failed"  # the runner refused the container (damage): the container is invalid
NOT_ELIGIBLE: Final = "not eligible"  # --cpus: the entry's requirements do not hold on that CPU (no failure)
ALL: Final = "all"  # --allow-unchecked all

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
    cpu: str | None = None  # the CPU asked for with --cpus (None: the default choice)
    call_errors: int = 0  # golden calls the runner started but could not make
    seconds: float = 0.0  # the runner's wall time (a timing field: left out when reports are compared)

    @property
    def ran(self) -> bool:
        """Every golden call was made and compared (passing or not)."""
        return self.state in (AGREES, DISAGREES) and self.call_errors == 0

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "cpu": self.cpu, "backend_id": self.backend_id, "state": self.state,
                "reason": self.reason or None, "runner": self.runner or None, "call_errors": self.call_errors,
                "seconds": round(self.seconds, 3), "outputs": [o.to_json() for o in self.outputs]}


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
    a_cpu: str | None = None
    b_cpu: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "a_cpu": self.a_cpu, "b": self.b, "b_cpu": self.b_cpu, "call": self.call,
                "output": self.output, "max_abs": self.max_abs, "max_rel": self.max_rel, "bound": self.bound,
                "passed": self.passed}


@dataclass(frozen=True, slots=True)
class Unchecked:
    """An entry with golden calls that did not run them here (on one CPU, or on none: cpu None)."""

    name: str
    cpu: str | None
    reason: str
    allowed: bool

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "cpu": self.cpu, "reason": self.reason, "allowed": self.allowed}


@dataclass(slots=True)
class CheckReport:
    """What `check` found: one row per (entry, CPU) pair (one per entry without --cpus). A shard
    (`shard` set) holds its slice of the rows; the rules over all rows (that something ran, that
    each entry was eligible on some CPU) wait for the merge (fatpte.ops.check_merge)."""

    source: str
    entries: list[EntryCheck]
    pairs: list[PairCheck]
    runtimes: list[str] = field(default_factory=list)  # each runner used, described in full
    cpus: list[str] | None = None  # --cpus, as asked
    allow_unchecked: list[str] = field(default_factory=list)  # --allow-unchecked: names, or ["all"]
    shard: tuple[int, int] | None = None  # (K, N) of --shard K/N
    shard_data: dict[str, Any] | None = None  # a shard's: what the merge needs (fatpte.ops.check_shards)

    @property
    def ran(self) -> list[EntryCheck]:
        return [e for e in self.entries if e.state in (AGREES, DISAGREES)]

    def allowed(self, name: str) -> bool:
        return ALL in self.allow_unchecked or name in self.allow_unchecked

    @property
    def unchecked(self) -> list[Unchecked]:
        """Every entry with golden calls that did not run them: each row that could not run or
        failed to make a call, and (a whole report) each entry eligible on none of the CPUs."""
        gaps = [Unchecked(e.name, e.cpu, e.reason or e.state, self.allowed(e.name))
                for e in self.entries if e.state == CANNOT_RUN or e.call_errors]
        if self.shard is None:
            rows: dict[str, list[EntryCheck]] = {}
            for e in self.entries:
                rows.setdefault(e.name, []).append(e)
            for name, mine in rows.items():
                if all(e.state == NOT_ELIGIBLE for e in mine):
                    why = "; ".join(f"{e.cpu}: {e.reason}" for e in mine)
                    gaps.append(Unchecked(name, None, f"eligible on none of the CPUs asked for ({why})",
                                          self.allowed(name)))
        return gaps

    @property
    def error(self) -> FatpteError | None:
        """Why the check fails, as the error whose category gives the exit status; None when it
        passes or fails only by entries left unchecked (`gate`)."""
        failed = [e for e in self.entries if e.state == FAILED]
        if failed:
            return FatpteError(failed[0].code or ErrorCode.IO_ERROR, f"entry {clipped(failed[0].name)}: "
                               f"{failed[0].reason}", source=self.source)
        bad = [e for e in self.entries if e.state == DISAGREES]
        pairs = [p for p in self.pairs if not p.passed]
        if bad:
            return FatpteError(ErrorCode.GOLDEN_MISMATCH, f"entry {clipped(bad[0].name)}{_on(bad[0].cpu)}: "
                               f"{bad[0].reason}", source=self.source)
        if pairs:
            p = pairs[0]
            return FatpteError(ErrorCode.GOLDEN_MISMATCH, f"entries {clipped(p.a)}{_on(p.a_cpu)} and "
                               f"{clipped(p.b)}{_on(p.b_cpu)} disagree on output {p.output} of golden call "
                               f"{p.call}: max abs {p.max_abs:.3g} > {p.bound:.3g}", source=self.source)
        if not self.ran and self.shard is None:
            return FatpteError(ErrorCode.NO_SPECIALIZATION_FITS, "no entry with golden calls can run on this "
                               "machine: " + "; ".join(f"{clipped(e.name)}{_on(e.cpu)}: {e.reason or e.state}"
                                                       for e in self.entries), source=self.source)
        return None

    @property
    def gate(self) -> str | None:
        """Why the strict gate fails (exit 7): the entries left unchecked and not allowed; None
        when every entry with golden calls ran them, or each gap was allowed."""
        gaps = [g for g in self.unchecked if not g.allowed]
        if not gaps:
            return None
        named = ", ".join(dict.fromkeys(clipped(g.name) for g in gaps))
        return (f"golden calls not run here, and not allowed: {named} ({len(gaps)} in all): give the runner each "
                "needs, or accept the gaps with --allow-unchecked NAME[,NAME] (or all)")

    @property
    def ok(self) -> bool:
        return self.error is None and self.gate is None

    def counts(self) -> dict[str, int]:
        """The rows by outcome: ran, failed to run, could not run, not eligible, no golden calls."""
        return {"ran": sum(e.ran for e in self.entries),
                "failed_to_run": sum(e.state == FAILED or e.call_errors > 0 for e in self.entries),
                "could_not_run": sum(e.state == CANNOT_RUN for e in self.entries),
                "not_eligible": sum(e.state == NOT_ELIGIBLE for e in self.entries),
                "no_golden_calls": sum(e.state == NO_CALLS for e in self.entries)}

    def to_json(self) -> dict[str, Any]:
        err = self.error
        gate = self.gate
        if err is not None:
            error: dict[str, Any] | None = {"code": err.code.tag, "message": err.message}
        else:
            error = None if gate is None else {"code": None, "message": gate}
        doc = {"source": self.source, "ok": err is None and gate is None, "error": error, "cpus": self.cpus, "allow_unchecked": self.allow_unchecked,
               "shard": None if self.shard is None else {"index": self.shard[0], "count": self.shard[1]},
               "counts": self.counts(), "unchecked": [g.to_json() for g in self.unchecked],
               "runtimes": sorted(set(self.runtimes)),
               "entries": [e.to_json() for e in self.entries], "pairs": [p.to_json() for p in self.pairs]}
        if self.shard_data is not None:
            doc["shard_data"] = self.shard_data
        return doc

    def text(self) -> str:
        """The header, the agreement table (row x output), the rows that did not run, the entries
        left unchecked, the pairs, and the result."""
        c = self.counts()
        unit = "entries" if self.cpus is None else "(entry, CPU) pairs"
        head = (f"{printable(self.source)}: {c['ran']} of {len(self.entries)} {unit} ran their golden calls, "
                f"{c['failed_to_run']} failed to run, {c['could_not_run']} could not run"
                + (f", {c['not_eligible']} not eligible" if c["not_eligible"] else "")
                + (f" ({', '.join(sorted(set(self.runtimes)))})" if self.runtimes else ""))
        lines = [head, *_output_table(self.ran), *_not_run(self.entries), *_unchecked_lines(self.unchecked),
                 *_pair_table(self.pairs)]
        err, gate = self.error, self.gate
        if err is not None:
            result = f"{err.code.tag}: {printable(err.message)}"
        elif gate is not None:
            result = f"unchecked: {printable(gate)}"
        else:
            result = "every entry that ran agrees with its golden calls and with the others"
            allowed = [g.name for g in self.unchecked]
            if allowed:
                result += f"; allowed unchecked: {', '.join(dict.fromkeys(clipped(n) for n in allowed))}"
        return "\n".join([*lines, "", "result: " + result])


def _on(cpu: str | None) -> str:
    return "" if cpu is None else f" on {clipped(cpu)}"


def _output_table(ran: list[EntryCheck]) -> list[str]:
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
    return ["", *_table(rows)] if len(rows) > 1 else []


def _not_run(entries: list[EntryCheck]) -> list[str]:
    others = [e for e in entries if e.state not in (AGREES, DISAGREES)]
    if not others:
        return []
    return ["", "not run:", *(f"  {clipped(e.name)} [{clipped(e.backend_id)}]{_on(e.cpu)}: {e.state}"
                              + (f": {printable(e.reason)}" if e.reason else "") for e in others)]


def _unchecked_lines(gaps: list[Unchecked]) -> list[str]:
    if not gaps:
        return []
    # The reason of a row that could not run is in "not run" above; an entry eligible on none of
    # the CPUs has no row of its own saying so.
    return ["", "golden calls not run here (exit 7 unless allowed with --allow-unchecked):",
            *(f"  {clipped(g.name)}{_on(g.cpu)}: {'allowed' if g.allowed else 'UNCHECKED'}"
              + (f": {printable(g.reason)}" if g.cpu is None and g.reason.startswith("eligible on none") else "")
              for g in gaps)]


def _pair_table(pairs: list[PairCheck]) -> list[str]:
    if not pairs:
        return []
    worst: dict[tuple[str, str | None, str, str | None], PairCheck] = {}
    for p in pairs:
        key = (p.a, p.a_cpu, p.b, p.b_cpu)
        w = worst.get(key)
        if w is None or (not p.passed and w.passed) or (p.passed == w.passed and p.max_rel > w.max_rel):
            worst[key] = p
    rows = [("entry", "against", "largest on", "max abs", "max rel", "bound", "result")]
    rows += [(clipped(p.a, 48) + _on(p.a_cpu), clipped(p.b, 48) + _on(p.b_cpu), f"call {p.call} output {p.output}",
              _num(p.max_abs), _num(p.max_rel), _num(p.bound), "pass" if p.passed else "FAIL")
             for p in worst.values()]
    return ["", "entries against each other (the largest difference over the golden calls both made):", *_table(rows)]


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


@dataclass(frozen=True, slots=True)
class CheckOptions:
    """What a check is asked for beyond the container: the runners, the CPU matrix (`cpus`, as
    `--cpus` gives it: None for the default choice), the gaps accepted (`allow_unchecked`: names,
    or "all"), and the slice of the rows (`shard`: K, N)."""

    runtime: str | None = None
    aarch64_runtime: str | None = None
    qemu: str | None = None
    cpus: str | None = None
    allow_unchecked: str | None = None
    shard: tuple[int, int] | None = None


def check(path: str, *, runtime: str | None = None, aarch64_runtime: str | None = None,
          qemu: str | None = None, cpus: str | None = None, allow_unchecked: str | None = None,
          shard: tuple[int, int] | None = None, keep: Path | None = None) -> CheckReport:
    """Run every entry of the container at `path` that this machine (or an emulator of another
    architecture its requirements name) can run on its golden calls, and compare; with `cpus`
    (`--cpus`), on each CPU listed; `allow_unchecked` (`--allow-unchecked`) accepts named gaps;
    `shard` (K, N) runs that slice of the rows. NO_GOLDEN_CALLS when no entry has any. A URL is
    fetched first, through fatpte's remote reader, to a private temporary file that the runners
    read (`fetched`): its credentials are never shown (the report names it `redact`ed) nor put on
    a runner's command line. `keep`: an empty folder the entries' outputs are saved in and left
    (EntryCheck.files), for the caller to read; by default a temporary folder, removed on return."""
    from fatpte.fileio.url import is_url, redact

    options = CheckOptions(runtime, aarch64_runtime, qemu, cpus, allow_unchecked, shard)
    if not is_url(path):
        return _check(path, path, options, keep)
    shown = redact(path)
    if runner.native_runtime(options.runtime) is None:  # before the download: nothing could run it
        raise _no_runner(shown)
    with fetched(path) as local:
        return _check(local, shown, options, keep)


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


def _check(path: str, source: str, options: CheckOptions, keep: Path | None = None) -> CheckReport:
    """`check` of the local file `path`, reported as `source` (the URL it came from, redacted)."""
    from fatpte.container.locations import open as open_container
    from fatpte.manifest.rules import golden_problem_of_each_entry
    from fatpte.ops import check_matrix, check_shards

    with open_container(path) as c:
        manifest = c.manifest
        records = {} if manifest is None else manifest.by_name()
        table = list(c.entries)
        golden_warnings.warn_container(c)
    # The golden rules first (specs/nfat-manifest.md 11.2, 11.3): an entry that breaks one is an
    # invalid container (exit 1), never an entry that cannot run here (a call naming a method the
    # program lacks once made fatpte-run refuse to load it: "no entry can run", exit 3).
    problems = {} if manifest is None else {manifest.entries[i].name: found for i, found in
                                            golden_problem_of_each_entry(manifest).items()}
    if not any(r.golden for r in records.values()):
        raise FatpteError(ErrorCode.NO_GOLDEN_CALLS, "the container has no golden calls to check: pack it with "
                          "--golden CALLS.json (and --golden-from NAME to record the outputs)", source=source)
    native = runner.native_runtime(options.runtime)
    if native is None:
        raise _no_runner(source)
    cpus = None if options.cpus is None else check_matrix.parse_cpus(options.cpus, native.arch)
    report = CheckReport(source, [], [], cpus=None if cpus is None else
                         check_matrix.names(cpus), allow_unchecked=_allowed(options.allow_unchecked, table),
                         shard=options.shard)
    rows = plan(table, records, cpus)
    mine = check_shards.select([-1 if cpu is None else (cpus or []).index(cpu) for _, cpu in rows], options.shard)
    folder: contextlib.AbstractContextManager[str] = (tempfile.TemporaryDirectory(prefix="fatpte-check-")
                                                      if keep is None else contextlib.nullcontext(str(keep)))
    with folder as scratch:
        for k, (e, cpu) in enumerate(rows):
            if k not in mine:
                continue
            result = EntryCheck(e.name, e.backend_id, NO_CALLS, cpu=None if cpu is None else cpu.asked)
            report.entries.append(result)
            _run_row(path, e, records.get(e.name), cpu, problems, options, Path(scratch) / str(k), result,
                     report.runtimes)
        report.pairs = _pairs(report.ran)
        golden_warnings.wide_tolerances(report.ran, report.pairs, DEFAULT_TOLERANCE)
        if options.shard is not None:
            report.shard_data = check_shards.shard_data(report.entries, sorted(mine), len(rows), file_digest(path))
    return report


def plan(table: Sequence[Any], records: dict[str, Any], cpus: Sequence[Any] | None) -> list[tuple[Any, Any]]:
    """The rows of a check, in order: each entry of the table, on each CPU asked for when it has
    golden calls to run (with --cpus), else once (cpu None)."""
    rows: list[tuple[Any, Any]] = []
    for e in table:
        record = records.get(e.name)
        if cpus is None or record is None or not record.golden:
            rows.append((e, None))
        else:
            rows += [(e, cpu) for cpu in cpus]
    return rows


def _allowed(text: str | None, table: Sequence[Any]) -> list[str]:
    """--allow-unchecked NAME[,NAME] or all, as a list; E0702 for a name no entry has."""
    if text is None:
        return []
    names = [n.strip() for n in text.split(",")]
    if names == [ALL]:
        return [ALL]
    known = {e.name for e in table}
    for n in names:
        if n not in known:
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"--allow-unchecked: no entry is named {clipped(n)!r} "
                              f"(the entries: {', '.join(clipped(e.name) for e in table)}; or give `all`)",
                              field="allow_unchecked", actual=n)
    return list(dict.fromkeys(names))


def file_digest(path: str) -> str:
    """The SHA-256 of the file at `path`, hex: what names the container a shard is of (only a shard
    pays for reading the whole file)."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _run_row(path: str, e: Any, record: Any, cpu: Any, problems: dict[str, Any], options: CheckOptions,
             saved: Path, result: EntryCheck, runtimes: list[str]) -> None:
    """One row: the entry `e` on `cpu` (None: the default choice), `result` filled."""
    import time

    from fatpte.ops import check_matrix

    if record is None or not record.golden:
        return
    if e.name in problems:
        code, field_path, message = problems[e.name]
        result.state, result.code = FAILED, code
        result.reason = f"{message} ({code.tag} at {field_path})"
        return
    if cpu is None:
        place = runner.placement(e, record, runtime=options.runtime, aarch64_runtime=options.aarch64_runtime,
                                 qemu=options.qemu)
        eligible = True
    else:
        place, eligible = check_matrix.place_on(e, record, cpu, runtime=options.runtime,
                                                aarch64_runtime=options.aarch64_runtime, qemu=options.qemu)
    if place.runtime is None:
        result.state, result.reason = (CANNOT_RUN if eligible else NOT_ELIGIBLE), place.reason
        return
    result.runner = place.runtime.label + ("" if cpu is None or cpu.asked == cpu.model else f" ({cpu.asked})")
    runtimes.append(place.runtime.describe())
    result.inputs = {k: (call.method, call.inputs) for k, call in enumerate(record.golden)}
    saved.mkdir()
    started = time.monotonic()
    _run_entry(path, e.index, e.name, record, place.runtime, saved, result)
    result.seconds = time.monotonic() - started


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
            result.call_errors += 1
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
                out.append(PairCheck(a.name, b.name, call, j, d, rel, bound, within(d, bound), a.cpu, b.cpu))
    return out
