"""Whether a container's golden calls can fail: `fatpte check --mutants` (docs/golden.md,
"Adequacy"). Each entry that agrees with its golden calls gets known-wrong variants
(fatpte.ops.mutants), and its golden calls must reject each one.

- Output mutants are applied to the outputs the entry itself gave in the check (saved by
  fatpte.ops.check in a folder kept for this), before they are compared with the golden tensors
  under each output's own bound (specs/nfat-manifest.md 11.1): no process is started for them.
- A weight mutant is a copy of the entry's program with one float weight perturbed, packed alone
  with the entry's named data and golden calls (fatpte.ops.edit.isolate) into a scratch
  container, and checked as the entry is: the same runner, fatpte-run --golden-report.

A mutant is killed when at least one golden call rejects it (an output outside its bound, or a
call that does not run), and survives otherwise; `caught_by` lists the calls that rejected it.
"""

from __future__ import annotations

import contextlib
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from fatpte.errors import FatpteError, FatpteWarning, clipped, printable
from fatpte.manifest.model import within
from fatpte.ops import mutants as M
from fatpte.ops.check import AGREES, DISAGREES, CheckReport, EntryCheck, check
from fatpte.value.dtypes import FLOAT_DTYPES

KILLED: Final = "killed"
SURVIVED: Final = "survived"
NOT_RUN: Final = "not run"  # a weight mutant that could not be packed or run: neither killed nor survived


@dataclass(frozen=True, slots=True)
class MutantResult:
    """What an entry's golden calls did with one mutant of it."""

    entry: str
    mutant: M.Mutant
    state: str
    caught_by: tuple[int, ...] = ()  # the golden calls that rejected it
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"entry": self.entry, **self.mutant.to_json(), "state": self.state, "caught_by": list(self.caught_by),
                "reason": self.reason or None}


@dataclass(slots=True)
class AdequacyReport:
    """Every mutant of every entry that agreed, and for each entry the mutants it has none of, why."""

    results: list[MutantResult] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (entry, why a kind of mutant is missing)

    @property
    def survivors(self) -> list[MutantResult]:
        return [r for r in self.results if r.state == SURVIVED]

    @property
    def adequate(self) -> bool:
        return not self.survivors

    def to_json(self) -> dict[str, Any]:
        return {"adequate": self.adequate, "killed": sum(r.state == KILLED for r in self.results),
                "survived": len(self.survivors), "not_run": sum(r.state == NOT_RUN for r in self.results),
                "results": [r.to_json() for r in self.results],
                "notes": [{"entry": e, "note": n} for e, n in self.notes]}

    def text(self) -> str:
        lines = ["mutants (known-wrong variants each entry's golden calls must reject):"]
        rows = [("entry", "mutant", "result", "caught by golden calls")]
        for r in self.results:
            caught = ", ".join(map(str, r.caught_by)) or "-"
            rows.append((clipped(r.entry, 48), clipped(r.mutant.name, 40), r.state.upper() if r.state == SURVIVED
                         else r.state, caught + (f" ({printable(r.reason)})" if r.reason else "")))
        if len(rows) > 1:
            widths = [max(len(row[k]) for row in rows) for k in range(4)]
            lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
        lines += [f"  {clipped(e)}: {printable(n)}" for e, n in self.notes]
        survivors = self.survivors
        if survivors:
            lines.append(f"adequacy: {len(survivors)} of {len(self.results)} mutants survived: the golden calls "
                         "cannot tell these wrong entries from right ones; record calls whose inputs vary (random, "
                         "not constant or zero) and tolerances no wider than the entries need")
            lines += [f"  {clipped(r.entry)}: {printable(r.mutant.description)}" for r in survivors]
        else:
            lines.append(f"adequacy: every mutant was killed ({len(self.results)})" if self.results
                         else "adequacy: no mutant could be derived (no entry agreed, or none has outputs to change)")
        return "\n".join(lines)


def check_with_mutants(path: str, *, runtime: str | None = None, aarch64_runtime: str | None = None,
                       qemu: str | None = None) -> tuple[CheckReport, AdequacyReport]:
    """`fatpte.check` of the container at `path`, then the mutants of every entry that agrees."""
    from fatpte.fileio.url import is_url, redact

    with tempfile.TemporaryDirectory(prefix="fatpte-mutants-") as scratch, _local(path) as local:
        kept = Path(scratch) / "outputs"
        kept.mkdir()
        report = check(local, runtime=runtime, aarch64_runtime=aarch64_runtime, qemu=qemu, keep=kept)
        if is_url(path):
            report.source = redact(path)
        found = AdequacyReport()
        for entry in report.entries:
            if entry.state == AGREES:
                _output_mutants(local, entry, found)
                _weight_mutants(local, entry, Path(scratch), found, runtime=runtime,
                                aarch64_runtime=aarch64_runtime, qemu=qemu)
    return report, found


@contextlib.contextmanager
def _local(path: str) -> Iterator[str]:
    """`path`, or a private copy of the container at a URL (fatpte.ops.check.fetched)."""
    from fatpte.fileio.url import is_url
    from fatpte.ops.check import fetched

    if not is_url(path):
        yield path
        return
    with fetched(path) as local:
        yield local


def _output_mutants(path: str, entry: EntryCheck, found: AdequacyReport) -> None:
    """The swap and scale mutants of `entry`, on the outputs its check saved."""
    from fatpte.container.locations import open as open_container
    from fatpte.fileio.mapping import map_view

    caught: dict[str, set[int]] = {M.SWAP: set(), M.SCALE: set()}
    derived: set[str] = set()
    with open_container(path) as c:
        for o in entry.outputs:
            saved = entry.files.get((o.call, o.output))
            if saved is None or not saved.exists() or saved.stat().st_size == 0:
                continue
            got, want = map_view(saved), c.named_data(o.key)
            if len(got) != len(want):
                continue
            differences = {M.SWAP: M.swap_difference(o.dtype, got, want, o.max_abs),
                           M.SCALE: M.scale_difference(o.dtype, got, want, M.output_scale(o.rtol))
                           if o.dtype in FLOAT_DTYPES else None}
            for kind, difference in differences.items():
                if difference is not None:
                    derived.add(kind)
                    if not within(difference, o.bound):
                        caught[kind].add(o.call)
    described = {M.SWAP: "the largest and the smallest element of each output exchanged",
                 M.SCALE: "each output multiplied by 1 + 10 x its rtol"}
    for kind in (M.SWAP, M.SCALE):
        if kind not in derived:
            why = f"no {kind} mutant: no output changes under it (elements all equal, or all zero)"
            found.notes.append((entry.name, why))
            continue
        state = KILLED if caught[kind] else SURVIVED
        found.results.append(MutantResult(entry.name, M.Mutant(kind, kind, described[kind]), state,
                                          tuple(sorted(caught[kind]))))


def _weight_mutants(path: str, entry: EntryCheck, scratch: Path, found: AdequacyReport, *,
                    runtime: str | None, aarch64_runtime: str | None, qemu: str | None) -> None:
    """The weight mutants of `entry`, each packed alone and checked by the runner the entry ran on."""
    from fatpte.container.locations import open as open_container
    from fatpte.ops.edit import isolate
    from fatpte.ops.program_entry import is_program

    with open_container(path) as c:
        payload = bytes(c.payload(entry.name))
        manifest = c.manifest
        record = None if manifest is None else manifest.by_name().get(entry.name)
    if not is_program(payload):
        found.notes.append((entry.name, "no weight mutant: its payload is not an ExecuTorch program"))
        return
    try:
        targets = M.weight_targets(payload, source=f"{path}[{entry.name}]")
    except FatpteError as exc:
        found.notes.append((entry.name, f"no weight mutant: its program cannot be read ({exc})"))
        return
    if not targets:
        why = ("no weight mutant: its program holds no weight it can move (none in its constant segment or its "
               "XNNPACK delegates' graphs; named data moved into the container is left alone)")
        found.notes.append((entry.name, why))
        return
    rtol = max((o.rtol for call in (record.golden if record else ()) for o in call.outputs), default=0.0)
    for k, tensor in enumerate(targets):
        mutant, data = M.weight_mutant(payload, tensor, M.weight_step(rtol))
        dest = scratch / f"weight-{k}.nfat"
        try:
            isolate(path, dest, entry.name, data)
            with warnings.catch_warnings():  # the entry's calls, warned about by its own check
                warnings.simplefilter("ignore", FatpteWarning)
                ran = check(str(dest), runtime=runtime, aarch64_runtime=aarch64_runtime, qemu=qemu).entries[0]
        except FatpteError as exc:
            found.results.append(MutantResult(entry.name, mutant, NOT_RUN, reason=str(exc)))
            continue
        finally:
            dest.unlink(missing_ok=True)
        if ran.state == AGREES:
            found.results.append(MutantResult(entry.name, mutant, SURVIVED))
        elif ran.state == DISAGREES:
            calls = tuple(sorted({o.call for o in ran.outputs if not o.passed}))
            found.results.append(MutantResult(entry.name, mutant, KILLED, calls, "" if calls else ran.reason))
        else:
            found.results.append(MutantResult(entry.name, mutant, NOT_RUN, reason=f"{ran.state}: {ran.reason}"))
