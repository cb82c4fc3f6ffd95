"""`fatpte.select`: which specialization a device gets, and why each other one was not chosen.

A pure function of (container metadata, device profile, caller preferences): it reads the entry
table and the manifest, never a payload, and loads nothing. The rule is normative in
specs/nfat-manifest.md ("Selection"); the C++ loader implements the same rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from fatpte.container.reader import Container
from fatpte.device.profile import DeviceProfile
from fatpte.errors import ErrorCode, FatpteError, FatpteWarning, SelectionError, clipped, listed, quoted
from fatpte.format.model import Entry
from fatpte.format.vocabulary import meets_min_core
from fatpte.manifest.model import AcceleratorRequirement, Requirements

# The records below are NamedTuples rather than dataclasses so that `fatpte select` never
# imports `dataclasses` (see fatpte/format/model.py); they are built once per entry per selection.


class Failure(NamedTuple):
    """One requirement an entry states that the device does not meet."""

    requirement: str  # "os", "arch", "cpu_features", "accelerators[0]", "min_memory_bytes", "cpu_cores", ...
    needed: str
    has: str

    def text(self) -> str:
        """One line's part, for a terminal: what came from the file made printable and cut
        (errors.clipped); to_json() keeps the exact strings."""
        if self.requirement == "exclude":  # the caller's choice, not something the device lacks
            return f"excluded by the caller ({clipped(self.has)})"
        return f"{self.requirement}: needs {clipped(self.needed)}; the device has {clipped(self.has)}"

    def to_json(self) -> dict[str, str]:
        return {"requirement": self.requirement, "needed": self.needed, "has": self.has}


class Verdict(NamedTuple):
    """The outcome for one entry. `rank` is 1 for the chosen entry, None when not eligible.
    `executorch_backends` is what the manifest says the entry's program needs (None: not known).
    `grade` is how an eligible entry fits (specs/nfat-manifest.md 6.3: `exact`, `compatible`,
    `fallback`); None when not eligible."""

    entry: Entry
    eligible: bool
    failures: tuple[Failure, ...]
    notes: tuple[str, ...]
    specificity: int
    rank: int | None
    executorch_backends: tuple[str, ...] | None = None
    grade: str | None = None

    @property
    def delegates(self) -> bool:
        """The entry's program delegates to a backend: ranked above one that does not (6.2)."""
        return bool(self.executorch_backends)

    def to_json(self) -> dict[str, Any]:
        et = self.executorch_backends
        return {"entry": self.entry.name, "backend_id": self.entry.backend_id, "eligible": self.eligible,
                "rank": self.rank, "grade": self.grade, "priority": self.entry.priority,
                "specificity": self.specificity,
                "executorch_backends": None if et is None else list(et),
                "failures": [f.to_json() for f in self.failures], "notes": list(self.notes)}

    def line(self, shared: frozenset[str] = frozenset()) -> str:
        """The entry's line, then its notes but those of `shared` (said once for all, explain_lines)."""
        head = f"{clipped(self.entry.name)} [{clipped(self.entry.backend_id)}]"
        delegation = ""
        if self.executorch_backends is not None:
            delegation = (f", delegates to {', '.join(clipped(b) for b in self.executorch_backends)}"
                          if self.executorch_backends else ", portable operators")
        detail = f"priority {self.entry.priority}{delegation}, specificity {self.specificity}"
        if self.eligible:
            text = f"#{self.rank} {head}: eligible, {self.grade} ({detail})"
        else:
            text = f"-  {head}: rejected: " + "; ".join(f.text() for f in self.failures)
        return text + "".join(f"\n     note: {n}" for n in self.notes if n not in shared)


def explain_lines(verdicts: Sequence[Verdict]) -> list[str]:
    """One line per entry (indented), then each note two or more entries share, once: `note, for
    every entry: ...` or `note, for entries a, b: ...` (specs/nfat-manifest.md 6.3)."""
    holders: dict[str, list[Verdict]] = {}
    for v in verdicts:
        for n in dict.fromkeys(v.notes):
            holders.setdefault(n, []).append(v)
    shared = {n: vs for n, vs in holders.items() if len(vs) > 1}
    lines = ["  " + v.line(frozenset(shared)) for v in verdicts]
    for note, vs in shared.items():
        which = ("every entry" if len(vs) == len(verdicts)
                 else "entries " + listed([clipped(v.entry.name) for v in vs]))
        lines.append(f"  note, for {which}: {note}")
    return lines


class Selection(NamedTuple):
    """The chosen entry and a verdict for every entry, in table order."""

    chosen: Entry
    verdicts: tuple[Verdict, ...]
    device: DeviceProfile
    prefer: tuple[str, ...]
    exclude: tuple[str, ...]

    @property
    def ranked(self) -> tuple[Verdict, ...]:
        """The eligible entries, best first."""
        return tuple(sorted((v for v in self.verdicts if v.eligible), key=lambda v: v.rank or 0))

    def explain(self) -> str:
        d = self.device
        lines = [f"device {d.name!r}: {d.os} {d.arch}",
                 f"chosen: {clipped(self.chosen.name)} [{clipped(self.chosen.backend_id)}]"]
        if self.prefer:
            lines.append(f"preference: {clipped(', '.join(self.prefer))}")
        if self.exclude:
            lines.append(f"excluded: {clipped(', '.join(self.exclude))}")
        lines += explain_lines(self.verdicts)
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return _report(self.device, self.chosen, self.prefer, self.exclude, self.verdicts)


def _version(text: str) -> tuple[int, int]:
    parts = [int(p) for p in text.split(".")[:2]]
    return (parts[0], parts[1] if len(parts) > 1 else 0)


def _accelerator(req: AcceleratorRequirement, device: DeviceProfile) -> bool:
    for acc in device.accelerators:
        if acc.kind != req.kind or acc.memory_bytes < req.min_memory_bytes:
            continue
        if not req.device_met(acc.device) or any(c not in acc.capabilities for c in req.capabilities):
            continue
        if not req.targets or any(t.holds(_version(acc.version)) for t in req.targets):
            return True
    return False


def _accelerator_needed(req: AcceleratorRequirement) -> str:
    text = req.kind + (f" {req.device}" if req.device else "")
    if req.targets:
        text += " " + " or ".join(t.text(req.kind) for t in req.targets)
    if req.capabilities:
        text += " with capabilities " + ", ".join(req.capabilities)
    if req.min_memory_bytes:
        text += f" with at least {req.min_memory_bytes} bytes of memory"
    return text


def _accelerators_had(kind: str, device: DeviceProfile) -> str:
    # A vendor runtime's device shows its name and capabilities: "openvino CPU 2026.4.0 (Intel(R)
    # Xeon(R) Processor, 0 bytes; bf16, fp32, int8)".
    have = [f"{a.kind}{' ' + a.device if a.device else ''} {a.version} ({a.name}, {a.memory_bytes} bytes"
            f"{'; ' + ', '.join(a.capabilities) if a.capabilities else ''})" for a in device.accelerators
            if a.kind == kind]
    return ", ".join(have) if have else f"no {kind} accelerator"


def evaluate(entry: Entry, req: Requirements, device: DeviceProfile) -> tuple[list[Failure], list[str]]:
    """Every requirement of `req` the device fails, and notes on what could not be checked here."""
    failures: list[Failure] = []
    notes: list[str] = []
    if req.os and device.os not in req.os:
        failures.append(Failure("os", "one of " + ", ".join(req.os), device.os))
    if req.arch and device.arch not in req.arch:
        failures.append(Failure("arch", "one of " + ", ".join(req.arch), device.arch))
    missing = [f for f in req.cpu_features if f not in device.cpu_features]
    if missing:
        failures.append(Failure("cpu_features", ", ".join(req.cpu_features),
                                f"no {', '.join(missing)} (it has {', '.join(sorted(device.cpu_features)) or 'none'})"))
    for i, acc in enumerate(req.accelerators):
        if not _accelerator(acc, device):
            failures.append(Failure(f"accelerators[{i}]", _accelerator_needed(acc),
                                    _accelerators_had(acc.kind, device)))
    if req.min_memory_bytes and device.memory_bytes < req.min_memory_bytes:
        failures.append(Failure("min_memory_bytes", f"at least {req.min_memory_bytes} bytes",
                                f"{device.memory_bytes} bytes"))
    failures += identity_failures(req, device)
    abi = req.backend_abi
    if abi is not None:
        have = device.backends.get(entry.backend_id)
        if have is None:
            notes.append(f"backend ABI {abi.text()} not checked: the profile does not list backend "
                         f"'{clipped(entry.backend_id)}'; the loader checks it when it loads the backend library")
        elif not abi.holds(have):
            failures.append(Failure("backend_abi", f"{entry.backend_id} ABI {abi.text()}", f"ABI {have}"))
    return failures, notes


def identity_failures(req: Requirements, device: DeviceProfile) -> list[Failure]:
    """The revision-4 requirements (specs/nfat-manifest.md 4.4): every core of the device in
    `cpu_cores`, every core at least `min_core`, the machine or an SoC word in `soc`. A profile
    that does not list its cores (or machine and SoC) meets none of them."""
    failures: list[Failure] = []
    cores = device.cpu_cores
    has = ", ".join(sorted(cores)) if cores else "no core listed (the profile does not say which cores it has)"
    if req.cpu_cores and (not cores or not cores <= frozenset(req.cpu_cores)):
        failures.append(Failure("cpu_cores", "every core one of " + ", ".join(req.cpu_cores), has))
    if req.min_core is not None and (not cores or not all(meets_min_core(c, req.min_core) for c in cores)):
        failures.append(Failure("min_core", f"every core {req.min_core} or a later one", has))
    if req.soc:
        words = ([device.machine] if device.machine is not None else []) + sorted(device.soc or ())
        if not any(w in words for w in req.soc):
            parts = ([f"machine {device.machine}"] if device.machine is not None else []) + (
                ["soc " + ", ".join(sorted(device.soc))] if device.soc else [])
            failures.append(Failure("soc", "one of " + ", ".join(req.soc),
                                    " and ".join(parts) or "no machine or SoC listed (the profile does not say)"))
    return failures


def grade(req: Requirements) -> str:
    """How an eligible entry fits (specs/nfat-manifest.md 6.3): `exact` when it names the device's
    cores or SoC, `compatible` when it states CPU features or accelerators, else `fallback`."""
    if req.names_device:
        return "exact"
    return "compatible" if req.cpu_features or req.accelerators else "fallback"


def needs_vendor_runtime(container: Container) -> bool:
    """Whether an entry of `container` needs a vendor runtime (specs/device-profile.md 9.1): it
    requires one of its devices, or its program delegates to the backend that opens it. Selecting
    for this machine looks for vendor runtimes only then."""
    from fatpte.device.vendor_runtimes import VENDOR_RUNTIMES

    manifest = container.manifest if container.header.manifest_size else None
    if manifest is None:
        return False
    kinds = {r.name for r in VENDOR_RUNTIMES}
    backends = {r.backend_id for r in VENDOR_RUNTIMES}
    return any(a.kind in kinds for e in manifest.entries for a in e.requires.accelerators) or any(
        b in backends for e in manifest.entries for b in (e.executorch_backends or ()))


def runtime_check(needs: Sequence[str] | None, device: DeviceProfile) -> tuple[list[Failure], list[str]]:
    """The entry's program needs the ExecuTorch backends `needs` (the manifest's
    executorch_backends, None: not known); the device's runtime has `device.executorch_backends`
    (None: not known). A backend it lacks fails the entry; when the profile does not say, the
    need is noted as not checked (specs/nfat-manifest.md 6.1)."""
    if not needs:
        return [], []
    have = device.executorch_backends
    if have is None:
        # The same words for every entry (the entry's own backends are on its line), so that
        # --explain says it once.
        note = ("ExecuTorch backends not checked: the profile does not list the backends its "
                "runtime has (`fatpte device` lists them when it finds the runtime: fatpte-run, or ExecuTorch's Python runtime)")
        return [], [note]
    present = frozenset(have)
    missing = [b for b in needs if b not in present]
    if not missing:
        return [], []
    return [Failure("executorch_backends", ", ".join(needs),
                    f"no {', '.join(clipped(b) for b in missing)} (its runtime has "
                    f"{', '.join(clipped(b) for b in sorted(have)) or 'no backend'})")], []


def _unknown_words(container: Container, prefer: tuple[str, ...], exclude: tuple[str, ...],
                   strict: bool) -> None:
    """Warn (FatpteWarning E0710), or with `strict` raise INVALID_ARGUMENT, for each caller word
    that names no entry and no backend id of the container: a typo never passes for a choice.
    Linear in the entries and the words (thin excludes every entry but those it keeps), and the
    message lists a bounded number of each."""
    names = [e.name for e in container.entries]
    ids = list(dict.fromkeys(e.backend_id for e in container.entries))
    known = frozenset(names) | frozenset(ids)
    for label, words in (("prefer", prefer), ("exclude", exclude)):
        unknown = [w for w in dict.fromkeys(words) if w not in known]
        if not unknown:
            continue
        message = (f"{label} {listed([quoted(w) for w in unknown])} {'names' if len(unknown) == 1 else 'name'} no "
                   f"entry and no backend id of the container (entries: {listed([clipped(n) for n in names])}; "
                   f"backend ids: {listed([clipped(i) for i in ids])})")
        if strict:
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, message, source=container.source, field=label,
                              actual=unknown)
        import warnings

        warnings.warn(FatpteWarning(ErrorCode.UNKNOWN_WORD, message, field=label), stacklevel=3)


def select(
    container: Container, device: DeviceProfile, *, prefer: Sequence[str] = (), exclude: Sequence[str] = (),
    strict: bool = False,
) -> Selection:
    """Choose the entry for `device`; raises SelectionError listing every entry and why when none fits.

    A word of `prefer` or `exclude` that names no entry and no backend id of the container is a
    FatpteWarning (E0710) listing those that exist; with `strict`, an INVALID_ARGUMENT error."""
    for label, words in (("prefer", prefer), ("exclude", exclude)):
        if isinstance(words, str) or not all(isinstance(w, str) for w in words):
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{label} must be a sequence of names or backend ids",
                              field=label, actual=words)
    prefer, exclude = tuple(prefer), tuple(exclude)
    if prefer or exclude:
        _unknown_words(container, prefer, exclude, strict)
    manifest = container.manifest
    # Indexed once: a container may hold 65536 entries, and so may the caller's lists (thin
    # excludes every entry but the named ones).
    described = {} if manifest is None else manifest.by_name()
    candidates = []
    for e in container.entries:
        me = described.get(e.name)
        candidates.append(Candidate(e, Requirements() if me is None else me.requires,
                                    None if me is None else me.executorch_backends))
    verdicts, chosen = rank(candidates, device, prefer=prefer, exclude=exclude)
    if chosen is None:
        lines = "\n".join(explain_lines(verdicts))
        error = SelectionError(ErrorCode.NO_SPECIALIZATION_FITS,
                               f"no specialization fits device {device.name!r} ({device.os} {device.arch}):\n{lines}",
                               source=container.source)
        error.report = _report(device, None, prefer, exclude, verdicts)
        raise error
    return Selection(chosen, verdicts, device, prefer, exclude)


class Candidate(NamedTuple):
    """An entry as selection sees it: its table record, its requirements and the ExecuTorch
    backends its program needs (None: not known). `entry.index` is its place in the ranking's
    last key, table order."""

    entry: Entry
    requires: Requirements
    executorch_backends: tuple[str, ...] | None


def rank(candidates: Sequence[Candidate], device: DeviceProfile, *, prefer: Sequence[str] = (),
         exclude: Sequence[str] = ()) -> tuple[tuple[Verdict, ...], Entry | None]:
    """The verdict of every candidate, in their order, and the chosen entry (None when none is
    eligible): specs/nfat-manifest.md section 6, over any list of entries. `select` ranks a
    container's entries; verification replays it over the entries a signed statement lists."""
    prefer, exclude = tuple(prefer), tuple(exclude)
    excluded = frozenset(exclude)
    rank_of: dict[str, int] = {}
    for i, w in enumerate(prefer):
        rank_of.setdefault(w, i)
    evaluated: list[tuple[Entry, list[Failure], list[str], int, tuple[str, ...] | None, str]] = []
    for e, req, needs in candidates:
        failures, notes = evaluate(e, req, device)
        more_failures, more_notes = runtime_check(needs, device)
        failures += more_failures
        notes += more_notes
        if e.name in excluded or e.backend_id in excluded:
            # The word that excludes it, not the whole list (which thin makes as long as the table).
            word = e.name if e.name in excluded else e.backend_id
            failures.append(Failure("exclude", "not to be excluded by the caller", f"exclude={word}"))
        evaluated.append((e, failures, notes, req.specificity, needs, grade(req)))

    def preference(e: Entry) -> int:
        return min(rank_of.get(e.name, len(prefer)), rank_of.get(e.backend_id, len(prefer)))

    eligible = [x for x in evaluated if not x[1]]
    # specs/nfat-manifest.md 6.2: priority, the caller's preference, a program that delegates to a
    # backend before one of portable operators (or not known), specificity, table position.
    eligible.sort(key=lambda x: (-x[0].priority, preference(x[0]), -bool(x[4]), -x[3], x[0].index))
    ranks = {x[0].index: r for r, x in enumerate(eligible, 1)}
    verdicts = tuple(Verdict(e, not f, tuple(f), tuple(n), s, ranks.get(e.index), et, None if f else g)
                     for e, f, n, s, et, g in evaluated)
    return verdicts, (eligible[0][0] if eligible else None)


def _report(device: DeviceProfile, chosen: Entry | None, prefer: tuple[str, ...], exclude: tuple[str, ...],
            verdicts: tuple[Verdict, ...]) -> dict[str, Any]:
    return {"device": device.name, "chosen": None if chosen is None else chosen.name, "prefer": list(prefer),
            "exclude": list(exclude), "verdicts": [v.to_json() for v in verdicts]}
