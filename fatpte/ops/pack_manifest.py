"""The manifest `pack` writes: one record per specialization (requirements, signature, named-data
keys, digests, provenance), checked with the same consistency rules `validate` applies. An entry
whose payload is an ExecuTorch program gets its record derived from the program and checked
against it (fatpte.ops.program_entry), whichever way the specialization was made.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

from fatpte.errors import ErrorCode, FatpteError, FatpteWarning
from fatpte.format import layout as L
from fatpte.manifest.codec import encode
from fatpte.manifest.model import (
    GOLDEN_DIGEST_KEY,
    SIGNATURE_CHECK_KEY,
    Manifest,
    ManifestEntry,
    Requirements,
    Signature,
    golden_digest,
    parse_executorch_backends,
    parse_provenance,
    parse_source_digest,
)
from fatpte.manifest.rules import consistency_problems, golden_problems


def _program(s: Any, src: Any, label: str) -> Any:
    """The ProgramFacts of a specialization whose payload is an ExecuTorch program, else None. A
    payload that says `ET12` but does not read as a program is opaque bytes, unless the
    specialization claims a program (executorch_backends, or a recorded program digest): then the
    reader's error stands."""
    from fatpte.ops import program_entry as pe

    if not pe.is_program(src.buf):
        return None
    source = os.fspath(s.payload) if isinstance(s.payload, (str, os.PathLike)) else f"{label}.payload"
    try:
        return pe.program_facts(src.buf, source=source)
    except FatpteError:
        claims = s.executorch_backends is not None or pe.SHA256_KEY in dict(s.provenance or {})
        if claims:
            raise
        return None


def manifest_for_pack(specs: Sequence[Any], sources: Sequence[Any], nd: Any) -> bytes:
    """The manifest bytes `pack` writes, or b"" when no specialization asks for one."""
    import hashlib

    programs = [_program(s, src, f"specialization[{i}]") for i, (s, src) in enumerate(zip(specs, sources))]
    wanted = bool(nd.segments) or any(p is not None for p in programs) or any(
        s.requires or s.named_data or s.signature or s.source_digest or s.provenance or s.payload_sha256
        or s.executorch_backends is not None or s.golden for s in specs)
    if not wanted:
        warn_ranking_ties([(s.entry_name, s.priority, Requirements(), None) for s in specs])
        return b""
    names = [s.entry_name for s in specs]
    stated = [None if s.signature is None else Signature.from_mapping(s.signature, f"specialization[{i}].signature")
              for i, s in enumerate(specs)]
    entries: list[ManifestEntry] = []
    for i, (s, src) in enumerate(zip(specs, sources)):
        label = f"specialization[{i}]"
        digest = parse_source_digest(s.source_digest, f"{label}.source_digest")
        prov = parse_provenance(s.provenance, f"{label}.provenance")
        backends = parse_executorch_backends(s.executorch_backends, f"{label}.executorch_backends")
        signature = stated[i]
        if programs[i] is not None:
            signature, backends, prov = _program_record(i, s, programs[i], nd.entry_keys[i], stated, programs,
                                                        names, backends, prov)
        elif prov:
            signature = _decided_signature(i, prov, stated, programs, names)
        sha = None
        if s.payload_sha256 and programs[i] is not None:
            sha = bytes.fromhex(programs[i].sha256)  # the program's digest is the payload's, computed once
        elif s.payload_sha256:
            h = hashlib.sha256()
            view = memoryview(src.buf)
            try:
                for pos in range(0, src.size, 8 << 20):
                    h.update(view[pos : pos + (8 << 20)])
            finally:
                view.release()
            sha = h.digest()
        # Golden calls need a signature to be checked against (specs/nfat-manifest.md 11.2): an entry
        # that states none (not a program, or packed without one) is given none.
        golden = tuple(s.golden) if signature is not None else ()
        if golden:
            prov = (*((k, v) for k, v in prov if k != GOLDEN_DIGEST_KEY), (GOLDEN_DIGEST_KEY, golden_digest(golden)))
        requires = Requirements.from_mapping(s.requires, f"{label}.requires")
        if programs[i] is not None:
            from fatpte.ops.program_entry import with_compiled_devices

            requires = with_compiled_devices(requires, programs[i])
        entries.append(ManifestEntry(
            name=s.entry_name,
            requires=requires,
            signature=signature,
            named_data=nd.entry_keys[i], source_digest=digest, payload_sha256=sha, provenance=prov,
            executorch_backends=backends, golden=golden))
    if any(s.golden for s in specs) and not any(e.golden for e in entries):
        raise FatpteError(ErrorCode.NO_GOLDEN_CALLS, "golden calls were given, but no entry states a program "
                          "signature to check them against (an ExecuTorch program states one, unless packed with "
                          "--no-signature-check)", field="golden")
    named = tuple(sorted(nd.key_segment.items(), key=lambda kv: kv[0].encode("utf-8")))
    layouts = tuple(sorted(nd.key_layout.items(), key=lambda kv: kv[0].encode("utf-8")))
    manifest = Manifest(1, tuple(entries), named, layouts)  # encode states the revision the fields need
    problems = consistency_problems(manifest, [s.entry_name for s in specs],
                                    [seg.source.size for seg in nd.segments]) + golden_problems(manifest).found
    if problems:
        code, path, message, _ = problems[0]
        if code is ErrorCode.SIGNATURE_MISMATCH and _adapter_bridges(entries):
            message += (" (they differ only in float16 or bfloat16 against float32: pack with --adapt-io, pack.toml "
                        "adapt_io = true, to state the float32 signature with a signature adapter before those "
                        "programs; the loader converts at the edge, specs/nfat-manifest.md 5.3)")
        raise FatpteError(code, message, field=path.replace("manifest.entries", "specialization"))
    warn_ranking_ties([(e.name, s.priority, e.requires, e.executorch_backends) for s, e in zip(specs, entries)])
    data = encode(manifest)
    if len(data) > L.MAX_MANIFEST_SIZE:
        raise FatpteError(ErrorCode.MANIFEST_TOO_LARGE, f"the manifest would be {len(data)} bytes, above the "
                          f"limit of {L.MAX_MANIFEST_SIZE}", field="manifest", actual=len(data))
    return data


def _adapter_bridges(entries: Sequence[ManifestEntry]) -> bool:
    """Whether signature adapters would make the entries' signatures agree."""
    from fatpte.manifest.adapters import adapt_all

    return adapt_all([e.signature for e in entries]) is not None


def _decided_signature(i: int, prov: Sequence[tuple[str, str]], stated: Sequence[Signature | None],
                       programs: Sequence[Any], names: Sequence[str]) -> Signature | None:
    """The signature entry `i` states under its recorded signature decision (program_entry)."""
    from fatpte.ops import program_entry as pe

    decision = pe.signature_decision(prov)
    if decision is None:
        return stated[i]
    source = pe.check_decision(decision, names, f"specialization[{i}].provenance")
    if source is None:
        return None
    k = names.index(source)
    own = stated[k] if stated[k] is not None else (None if programs[k] is None else programs[k].signature)
    if own is None:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"specialization[{i}]: {SIGNATURE_CHECK_KEY} takes the "
                          f"signature of entry {source!r}, which states none and is no ExecuTorch program",
                          field=f"specialization[{i}].provenance", actual=decision)
    return own


def _program_record(i: int, s: Any, facts: Any, keys: Sequence[str], stated: Sequence[Signature | None],
                    programs: Sequence[Any], names: Sequence[str], backends: tuple[str, ...] | None,
                    prov: tuple[tuple[str, str], ...]) -> tuple[Signature | None, tuple[str, ...],
                                                             tuple[tuple[str, str], ...]]:
    """(signature, executorch_backends, provenance) of entry `i`, whose payload is a program:
    derived from it, what was stated checked against it (specs/executorch.md section 7)."""
    from fatpte.ops import program_entry as pe

    label = f"specialization[{i}]"

    def refuse(code: ErrorCode, field: str, why: str) -> FatpteError:
        return FatpteError(code, f"{label} ({names[i]!r}): {why}", field=f"{label}.{field}")

    why = pe.backend_problem(s.backend_id, facts.executorch_backends)
    if why is not None:
        raise refuse(ErrorCode.BACKEND_ID_CONTRADICTS_PROGRAM, "backend_id", why)
    if backends is None:
        backends = facts.executorch_backends
    elif tuple(sorted(backends)) != facts.executorch_backends:
        raise refuse(ErrorCode.EXECUTORCH_BACKENDS_MISMATCH, "executorch_backends",
                     f"executorch_backends {', '.join(backends) or 'none'} are not its program's delegates "
                     f"({', '.join(facts.executorch_backends) or 'none'})")
    why = pe.digest_problem(prov, facts)
    if why is not None:
        raise refuse(ErrorCode.PROGRAM_DIGEST_MISMATCH, "provenance", why)
    if pe.SHA256_KEY not in dict(prov):
        prov = (*prov, (pe.SHA256_KEY, facts.sha256))
    why = pe.named_data_problem(keys, facts)
    if why is not None:
        warnings.warn(FatpteWarning(ErrorCode.NAMED_DATA_UNUSED, f"{label} ({names[i]!r}): {why}",
                                    field=f"{label}.named_data"), stacklevel=2)
    decision = pe.signature_decision(prov)
    given = stated[i]
    if decision is None and given is not None:
        why = pe.stated_signature_problem(given, facts.signature)
        if why is not None:
            raise refuse(ErrorCode.PROGRAM_SIGNATURE_MISMATCH, "signature", why)
    signature = _decided_signature(i, prov, stated, programs, names)
    if decision is None and signature is None:
        signature = facts.signature
    if decision is not None and decision != pe.FROM + names[i] and signature is not None:
        _warn_taken_signature(signature, facts.signature, label, names[i], decision)
    return signature, backends, prov


def _warn_taken_signature(taken: Signature, own: Signature, label: str, name: str, decision: str) -> None:
    """E1106 (a warning) when a signature taken from another entry (`--signature-from`) differs
    from the entry's own program in a dtype, a shape or a count: its calls will be refused. The
    user may know better (the rule's exception), so the entry is packed as asked."""
    from fatpte.manifest.adapters import adapted, dtype_or_shape_difference

    diff = dtype_or_shape_difference(taken, own)
    if diff is None:
        return
    fix = ("pack with --adapt-io instead (pack.toml: adapt_io = true): the entry then states the float32 "
           "signature with its program's dtypes behind it, and the loader converts at the edge"
           if adapted(taken, own) is not None else "pack it from a program of the same signature")
    warnings.warn(FatpteWarning(ErrorCode.SIGNATURE_TAKEN_DIFFERS,
                                f"{label} ({name!r}): {SIGNATURE_CHECK_KEY} = {decision} gives it a signature its program does not "
                                f"have ({diff}): every call of it will be refused; {fix}", field=f"{label}.signature"),
                  stacklevel=3)


def _together(a: Requirements, b: Requirements) -> bool:
    """Whether one device can meet both `a` and `b` (specs/nfat-manifest.md 6.2): their os lists and
    arch lists overlap where both state one, and some allowed architecture has every CPU feature
    either requires and a core both core requirements accept. Accelerators, memory, ABI and `soc`
    never keep two entries apart (one device may list several SoC words, and as much memory as asked)."""
    from fatpte.format.vocabulary import ARCHES, CPU_FEATURES

    if a.os and b.os and not set(a.os) & set(b.os):
        return False
    arches = set(ARCHES)
    for r in (a, b):
        if r.arch:
            arches &= set(r.arch)
    features = set(a.cpu_features) | set(b.cpu_features)
    return any(features <= CPU_FEATURES[arch] and _a_core_for_both(a, b, arch) for arch in sorted(arches))


def _a_core_for_both(a: Requirements, b: Requirements, arch: str) -> bool:
    """Whether a device of `arch` can list cores that meet the `cpu_cores` and `min_core` of both
    (specs/nfat-manifest.md 4.4): every core it lists must be in each `cpu_cores` list and meet
    each `min_core`, and it lists at least one, so one core word meeting all of them is needed and
    enough. Two disjoint `cpu_cores` lists never meet together, even on a part with both kinds of
    core: such a part meets neither."""
    from fatpte.format.vocabulary import CORES, is_core_word, meets_min_core

    lists = [set(r.cpu_cores) for r in (a, b) if r.cpu_cores]
    floors = [r.min_core for r in (a, b) if r.min_core is not None]
    if not lists and not floors:
        return True
    words = set.intersection(*lists) if lists else {c.name for c in CORES}
    return any(is_core_word(w, arch) and all(meets_min_core(w, f) for f in floors) for w in words)


# At most this many E0709 warnings name their pair; the rest are counted in one more. A tie is looked
# for among the first TIE_SCAN entries of equal priority, delegation and specificity, so a table of
# 65,536 entries costs linear work (the warning is advice: a tie past them is not named).
TIE_WARNINGS = 16
TIE_SCAN = 64


def warn_ranking_ties(rows: Sequence[tuple[str, int, Requirements, Sequence[str] | None]]) -> None:
    """A FatpteWarning (E0709) for each pair of entries one device can make eligible together that
    tie on priority, delegation and specificity: only their place in the table would choose. The
    first TIE_WARNINGS pairs are named; one more warning counts the rest."""
    first: dict[tuple[int, bool, int], list[tuple[str, Requirements]]] = {}
    ties = 0
    for name, priority, req, backends in rows:
        key = (priority, bool(backends), req.specificity)
        group = first.setdefault(key, [])
        other = next((n for n, r in group if _together(r, req)), None)
        if len(group) < TIE_SCAN:
            group.append((name, req))
        if other is None:
            continue
        ties += 1
        if ties > TIE_WARNINGS:
            continue
        delegation = "both delegate to a backend" if key[1] else "neither delegates to a backend"
        warnings.warn(FatpteWarning(
            ErrorCode.RANKING_TIE, f"entries {other!r} and {name!r} can both be eligible on one device and tie on "
            f"priority ({priority}), delegation ({delegation}) and specificity ({key[2]}): only their place in "
            f"the table chooses {other!r}; give the one to prefer a higher priority (`fatpte pack --priority "
            f"NAME=N`, `priority = N` in a pack.toml)", field="specialization"),
            stacklevel=2)
    if ties > TIE_WARNINGS:
        warnings.warn(FatpteWarning(
            ErrorCode.RANKING_TIE, f"{ties - TIE_WARNINGS} more entries tie with an earlier entry in the same way "
            f"({ties} in all; the first {TIE_WARNINGS} are named above)", field="specialization"), stacklevel=2)
