"""Text renderings for the command line: tables for `info`, `info --map` and `diff`.

Each renderer takes the JSON-ready dict the library returns (fatpte.info, fatpte.diff), so the
text and the --json output are two views of one value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def plural(n: int, one: str, many: str | None = None) -> str:
    """`1 entry`, `3 entries`."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def table(header: Sequence[str], rows: Sequence[Sequence[object]], *, indent: str = "") -> str:
    """Left-aligned columns, two spaces apart; numbers right-aligned."""
    cells = [[str(c) for c in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    numeric = [all(isinstance(r[i], int) for r in rows) and bool(rows) for i in range(len(header))]
    lines = []
    for row in cells:
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(row, widths, numeric)]
        lines.append(indent + "  ".join(parts).rstrip())
    return "\n".join(lines)


def info_text(info: dict[str, Any]) -> str:
    manifest = "a manifest" if info["manifest"] else "no manifest"
    entries = plural(info["entry_count"], "entry", "entries")
    head = (f"{info['path']}: NFAT version {info['version']}, {entries}, "
            f"{plural(info['segment_count'], 'named-data segment')}, {manifest}, {info['size']} bytes")
    rows = [(e["name"], e["backend_id"], e["payload_kind"], f"{e['offset']:#x}", e["size"], e["alignment"],
             e["priority"], e["checksum"] or "-", ", ".join(e["shared_with"]) or "-", e["requires_text"],
             ", ".join(e["named_data"]) or "-")
            for e in info["entries"]]
    header = ("name", "backend", "kind", "offset", "size", "align", "priority", "crc32c", "shares with",
              "requires", "named data")
    out = [head, table(header, rows, indent="  ")]
    checks = {e["signature_check"] for e in info["entries"] if e.get("signature_check")}
    for check in sorted(checks):
        who = [e["name"] for e in info["entries"] if e.get("signature_check") == check]
        what = ("no signature stored or checked" if check == "skipped" else
                f"the signature of {check.removeprefix('from:')!r} given to every entry, not checked against "
                "their programs" if check.startswith("from:") else f"{check!r}")
        out.append(f"  signature check: {what} (packed so on purpose; entries {', '.join(who)})")
    saved = info["payload_bytes"] - info["payload_bytes_stored"]
    if saved:
        out.append(f"  identical payloads are stored once: {saved} bytes saved")
    if info["named_data"]:
        keys = info["named_data"]
        shared = info["named_data_bytes"] - info["named_data_bytes_stored"]
        out.append(f"  named data: {plural(len(keys), 'key')} in {plural(info['segment_count'], 'segment')}, "
                   f"{info['named_data_bytes']} bytes referenced, {info['named_data_bytes_stored']} stored"
                   + (f" ({shared} saved by sharing)" if shared > 0 else ""))
        out.append(table(("key", "segment", "size", "alias of"),
                         [(k["key"], k["segment"], k["size"] if k["size"] is not None else "-",
                           k["alias_of"] or "-") for k in keys], indent="    "))
    if info["segments"]:
        seg_rows = [(s["index"], f"{s['offset']:#x}", s["size"], s["alignment"], s["checksum"])
                    for s in info["segments"]]
        out.append(table(("segment", "offset", "size", "align", "crc32c"), seg_rows, indent="  "))
    return "\n".join(out)


def map_text(rows: Sequence[dict[str, Any]]) -> str:
    body = [(f"{r['start']:#010x}", f"{r['end']:#010x}", r["size"], r["kind"], r["label"]) for r in rows]
    return table(("start", "end", "size", "kind", "what"), body)


def diff_text(d: dict[str, Any]) -> str:
    lines = [f"--- {d['a']} (version {d['version']['old']}, {d['size']['old']} bytes)",
             f"+++ {d['b']} (version {d['version']['new']}, {d['size']['new']} bytes)"]
    for e in d["removed"]:
        lines.append(f"- {e['name']} ({e['backend_id']}, {e['size']} bytes, crc32c {e['checksum']})")
    for e in d["added"]:
        lines.append(f"+ {e['name']} ({e['backend_id']}, {e['size']} bytes, crc32c {e['checksum']})")
    for e in d["changed"]:
        what = ", ".join(f"{k} {_short(v['old'])} -> {_short(v['new'])}" for k, v in e["fields"].items())
        lines.append(f"~ {e['name']}: {what}")
    if d["reordered"]:
        lines.append("~ entries are in a different order")
    nd = d["named_data"]
    for k in nd["removed"]:
        lines.append(f"- named data {k['key']!r} ({k['size']} bytes)")
    for k in nd["added"]:
        lines.append(f"+ named data {k['key']!r} ({k['size']} bytes)")
    for k in nd["changed"]:
        what = ", ".join(f"{f} {v['old']} -> {v['new']}" for f, v in k["fields"].items())
        lines.append(f"~ named data {k['key']!r}: {what}")
    delta = d["size"]["delta"]
    lines.append("no entry changed" if d["unchanged"] else f"size {'+' if delta >= 0 else ''}{delta} bytes")
    return "\n".join(lines)


def coverage_text(c: dict[str, Any]) -> str:
    rows = [(r["device"], r["entry"] or "NONE", r["backend_id"] or "-",
             r["download_bytes"] if r["download_bytes"] is not None else "-",
             f"{100 * r['download_bytes'] / c['size']:.0f}%" if r["download_bytes"] is not None else "-")
            for r in c["devices"]]
    out = [f"{c['path']}: {c['size']} bytes, {plural(len(c['devices']), 'device')}",
           table(("device", "entry", "backend", "download bytes", "of container"), rows, indent="  ")]
    if c["uncovered"]:
        out.append(f"  no entry fits: {', '.join(c['uncovered'])} (`fatpte select --explain` says why)")
    if c["unused_entries"]:
        out.append(f"  chosen by no device: {', '.join(c['unused_entries'])}")
    return "\n".join(out)


def _short(value: Any) -> str:
    """A field value in a diff line: JSON for structures, cut to keep the line readable."""
    if isinstance(value, (dict, list)):
        import json

        text = json.dumps(value, separators=(",", ":"))
        return text if len(text) <= 60 else text[:57] + "..."
    return str(value)
