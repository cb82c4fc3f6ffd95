"""Receipts (specs/receipts.md, specs/receipt.schema.json): the JSON lines a loader writes, one per
load and per fallback event (`fatpte-run --receipt FILE`, LoadOptions::receipt, C
fatpte_load_options_set_receipt), read here, and compared with the choice selection plans for
each device (`fatpte coverage FILE --receipts FILES`): a receipt carries the device profile the
load chose with and the caller's words, so the planned entry is recomputed with the same rule
(`fatpte.select`) and set beside the entry the device actually ran.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from typing import Any

from fatpte.container.reader import Container
from fatpte.device.profile import DeviceProfile, canonical_text
from fatpte.device.selection import select
from fatpte.errors import ErrorCode, FatpteError, SelectionError
from fatpte.fileio import strict_json
from fatpte.fileio.mapping import open_regular

VERSION = 2  # what fatpte's loader writes; a reader takes version 1 too (VERSIONS)
VERSIONS = (1, 2)
KINDS = ("load", "fallback")
# What a reader takes of one line (specs/receipts.md): a load receipt lists every entry of its
# container (at most 65,536, each a few hundred bytes with its reason's words), and a receipt nests
# a few levels (the profile's accelerators are the deepest). A line over either is refused: a file
# of receipts is read a line at a time, never whole.
MAX_LINE_BYTES = 64 << 20
_RULES = strict_json.JsonRules(max_bytes=MAX_LINE_BYTES, max_depth=16)


def container_digest(c: Container) -> str:
    """The container's digest as receipts and verdict stores give it: SHA-256 of its header and
    tables (specs/verdicts.md section 3)."""
    return hashlib.sha256(bytes(c.buffer[: c.header.table_end])).hexdigest()


def _shape(doc: Any, where: str) -> dict[str, Any]:
    """The fields this module reads, checked (the whole schema is held to real receipts by
    tests/loader/test_receipts_runtime.py)."""
    if not isinstance(doc, dict) or doc.get("receipt") not in KINDS or doc.get("version") not in VERSIONS:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{where}: not a receipt (`receipt` load or fallback, `version` "
                          "1 or 2)", source=where)
    container = doc.get("container")
    if not isinstance(container, dict) or not isinstance(container.get("digest"), str):
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{where}: a receipt names its container's digest",
                          source=where, field="container.digest")
    if doc["receipt"] == "load":
        device, chosen = doc.get("device"), doc.get("chosen")
        if not isinstance(device, dict) or not isinstance(device.get("profile"), dict):
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{where}: a load receipt holds its device profile",
                              source=where, field="device.profile")
        digest = device.get("fingerprint")
        if not (digest is None and doc["version"] != 1) and not (isinstance(digest, str) and _is_digest(digest)):
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{where}: device.fingerprint is a SHA-256 in lowercase hex"
                              + (" or null" if doc["version"] != 1 else " in a version 1 receipt"), source=where,
                              field="device.fingerprint")
        runtime = doc.get("runtime")
        libraries = runtime.get("libraries") if isinstance(runtime, dict) else None
        if not isinstance(libraries, list) or not all(isinstance(line, str) and "\n" not in line for line in libraries):
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{where}: runtime.libraries is a list of lines",
                              source=where, field="runtime.libraries")
        if chosen is not None and not (isinstance(chosen, dict) and isinstance(chosen.get("name"), str)):
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{where}: chosen is null or names an entry",
                              source=where, field="chosen")
        for words in ("prefer", "exclude"):
            if not isinstance(doc.get(words), list) or not all(isinstance(w, str) for w in doc[words]):
                raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{where}: {words} is a list of words", source=where,
                                  field=words)
    return doc


def _is_digest(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def fingerprint(receipt: dict[str, Any]) -> str:
    """The device fingerprint of a load receipt (specs/verdicts.md section 3): the one it names, or,
    where it names none (version 2 without a verdict store), SHA-256 of its profile in canonical
    form and its runtime lines, the text the loader would have hashed."""
    named: str | None = receipt["device"].get("fingerprint")
    if named is not None:
        return named
    text = canonical_text(receipt["device"]["profile"]) + "\n" + "".join(
        line + "\n" for line in receipt["runtime"]["libraries"])
    return hashlib.sha256(text.encode()).hexdigest()


def read_receipts(paths: Sequence[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """Every receipt of the files, in order. A last line without its newline is what a crash during
    its write leaves: it is skipped. Any other line that is not a receipt is an error naming it."""
    out: list[dict[str, Any]] = []
    for path in paths:
        source = os.fspath(path)
        fd = open_regular(source, "the receipts file")  # a FIFO or a device: E0811 before a byte is read
        try:
            with os.fdopen(fd, "rb") as f:
                number = 0
                while line := f.readline(MAX_LINE_BYTES + 1):
                    number += 1
                    if not line.endswith(b"\n"):
                        if len(line) <= MAX_LINE_BYTES:
                            break  # the last line, cut short by a crash
                        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{source}:{number}: a line longer than "
                                          f"{MAX_LINE_BYTES} bytes is no receipt", source=f"{source}:{number}")
                    if line.strip():
                        out.append(_receipt(line, f"{source}:{number}"))
        except OSError as exc:
            raise FatpteError(ErrorCode.IO_ERROR, f"cannot read receipts: {exc.strerror or exc}", source=source) from None
    return out


def _receipt(line: bytes, where: str) -> dict[str, Any]:
    """One whole line of a receipts file, read as strict JSON under _RULES and checked."""
    try:
        doc = strict_json.loads(line[:-1], _RULES)
    except strict_json.JsonRefused as exc:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{where}: not JSON: {exc}", source=where) from None
    return _shape(doc, where)


def _planned(c: Container, r: dict[str, Any]) -> str | None:
    profile = DeviceProfile.from_json(r["device"]["profile"], source="a receipt's device profile")
    try:
        return select(c, profile, prefer=r["prefer"], exclude=r["exclude"]).chosen.name
    except SelectionError:
        return None


def compare(c: Container, receipts: list[dict[str, Any]]) -> dict[str, Any]:
    """The planned entry beside the observed one for every load receipt of this container (by its
    digest), and the differences: a device that ran another entry than selection plans for its
    profile (a library missing there, a failed self-test, a remembered verdict: each rejected entry
    with its reason code says why)."""
    digest = container_digest(c)
    rows = []
    loads = [r for r in receipts if r["receipt"] == "load"]
    for r in loads:
        if r["container"]["digest"] != digest:
            continue
        observed = r["chosen"]["name"] if r["chosen"] is not None else None
        planned = _planned(c, r)
        rejected = [{"name": e.get("name"), "reason_code": e.get("reason_code"), "error_code": e.get("error_code")}
                    for e in r.get("entries", []) if isinstance(e, dict) and e.get("outcome") == "rejected"
                    and e.get("reason_code") != "ineligible"]
        rows.append({"device": r["device"]["profile"].get("name"), "fingerprint": fingerprint(r),
                     "planned": planned, "observed": observed, "agrees": planned == observed, "rejected": rejected})
    return {"receipts": len(receipts), "loads": len(loads), "of_this_container": len(rows), "rows": rows,
            "differences": [row for row in rows if not row["agrees"]],
            "fallbacks": sum(1 for r in receipts if r["receipt"] == "fallback"
                             and r["container"]["digest"] == digest)}
