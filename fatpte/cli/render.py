"""Text renderings for the command line: tables for `info`, `info --map` and `diff`.

Each renderer takes the JSON-ready dict the library returns (fatpte.info, fatpte.diff), so the
text and the --json output are two views of one value. Text is for people: sizes are human
(`3.4 KiB`; --json keeps exact bytes), long keys are shortened (`short`), and every string that
comes from a file goes through `shown`, the one place such strings are made safe to print:
fatpte.errors.clipped, the escaping the library's messages and the C++ loader's tools use too
(control characters, the backslash and bidirectional controls as `\\xNN`/`\\uNNNN`; cut after
1 KiB with its size), so a file can neither drive the terminal nor forge a line. Lists a file
can make as long as it likes (entries sharing a payload) are cut by `names`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fatpte.errors import clipped, listed

SHORT = 40  # keys longer than this are shortened in text (64 hex digits would wrap every table)


def shown(text: object) -> str:
    """A string from a file as text prints it: control characters escaped (`\\x1b`), so a name or
    key cannot move the cursor or hide what follows, and cut after 1 KiB (errors.clipped)."""
    return clipped(str(text))


def names(items: Sequence[str], total: int | None = None) -> str:
    """Names from a file in one line: `a, b and 3 more`, `-` when none; `total` counts the items
    a list left out (info's shared_with holds the first 8 of shared_count)."""
    listed_names = [shown(n) for n in items]
    if total is not None and total > len(listed_names):
        return ", ".join(listed_names) + f" and {total - len(listed_names)} more"
    return listed(listed_names) or "-"


def short(text: str, width: int = SHORT) -> str:
    """`shown(text)`, cut to its first and last characters around `...` when longer than
    `width`: the same text always gets the same abbreviation, and --json has the whole."""
    text = shown(text)
    if len(text) <= width:
        return text
    tail = (width - 3) // 3
    return f"{text[: width - 3 - tail]}...{text[-tail:]}"


def size(n: int) -> str:
    """A byte count for people: `908 B`, `3.4 KiB`, `23.5 GiB`."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        value /= 1024
        if value < 1024 or unit == "PiB":
            break
    return f"{value:.1f} {unit}"


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
    head = (f"{shown(info['path'])}: NFAT version {info['version']}, {entries}, "
            f"{plural(info['segment_count'], 'named-data segment')}, {manifest}, {size(info['size'])}")
    rows = [(shown(e["name"]), shown(e["backend_id"]), shown(e["payload_kind"]), f"{e['offset']:#x}",
             size(e["size"]), e["alignment"], e["priority"], e["checksum"] or "-", shown(e["requires_text"]))
            for e in info["entries"]]
    header = ("name", "backend", "kind", "offset", "size", "align", "priority", "crc32c", "requires")
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
        out.append(f"  identical payloads are stored once: {size(saved)} saved")
    for e in info["entries"]:
        out += _entry_lines(e)
    if info["named_data"]:
        keys = info["named_data"]
        shared = info["named_data_bytes"] - info["named_data_bytes_stored"]
        out.append(f"  named data: {plural(len(keys), 'key')} in {plural(info['segment_count'], 'segment')}, "
                   f"{size(info['named_data_bytes'])} referenced, {size(info['named_data_bytes_stored'])} stored"
                   + (f" ({size(shared)} saved by sharing)" if shared > 0 else ""))
        out.append(table(("key", "segment", "size", "alias of"),
                         [(short(k["key"]), k["segment"], size(k["size"]) if k["size"] is not None else "-",
                           short(k["alias_of"]) if k["alias_of"] else "-") for k in keys], indent="    "))
    if info["segments"]:
        seg_rows = [(s["index"], f"{s['offset']:#x}", size(s["size"]), s["alignment"], s["checksum"])
                    for s in info["segments"]]
        out.append(table(("segment", "offset", "size", "align", "crc32c"), seg_rows, indent="  "))
    return "\n".join(out)


def _tensor(t: dict[str, Any]) -> str:
    dims = ", ".join(shown(str(d)) for d in t["shape"])
    name = f"{shown(t['name'])}: " if t.get("name") else ""
    behind = f" (program {shown(t['program_dtype'])})" if t.get("program_dtype") else ""
    return f"{name}{shown(t['dtype'])}[{dims}]{behind}"


def signature_lines(signature: dict[str, Any]) -> list[str]:
    """One line per method: `forward(float32[1, 4]) -> float32[1, 3]; state: total: float32[2, 3]`."""
    lines = []
    for m in signature["methods"]:
        text = (f"{shown(m['name'])}({', '.join(_tensor(t) for t in m['inputs'])}) -> "
                f"{', '.join(_tensor(t) for t in m['outputs']) or '()'}")
        if m["buffers"]:
            text += f"; state: {', '.join(_tensor(t) for t in m['buffers'])}"
        lines.append(text)
    return lines


def _entry_lines(e: dict[str, Any]) -> list[str]:
    """What an entry needs and where it comes from, under the table: only what is known."""
    lines = []
    if e["signature"] is not None:
        methods = signature_lines(e["signature"])
        lines += [f"    signature: {methods[0]}"] + [f"               {m}" for m in methods[1:]]
    backends = e["executorch_backends"]
    if backends is not None:
        lines.append("    ExecuTorch backends: " + (", ".join(shown(b) for b in backends)
                                                     or "none (portable kernels only)"))
    keys = e["named_data"]
    if e["needs_data_file"]:
        lines.append(f"    named data: {plural(len(keys), 'key')} kept in this container, not in the payload; fatpte-run "
                     "serves them from the container, an extracted program needs them as a .ptd (fatpte extract "
                     "--data-out): " + ", ".join(short(k) for k in keys))
    elif keys:
        lines.append(f"    named data: {plural(len(keys), 'key')} kept in this container, put back into the package "
                     "by fatpte extract: " + ", ".join(short(k) for k in keys))
    if e["shared_with"]:
        lines.append(f"    same payload bytes as: {names(e['shared_with'], e.get('shared_count'))}")
    if e.get("golden"):
        methods = list(dict.fromkeys(shown(c["method"]) for c in e["golden"]))
        tolerances = [(o["atol"], o["rtol"]) for c in e["golden"] for o in c["outputs"]]
        widest = f", outputs within atol {max(a for a, _ in tolerances):.3g}, rtol {max(r for _, r in tolerances):.3g}" \
            if tolerances else ""
        lines.append(f"    golden calls: {len(e['golden'])} of {', '.join(methods)}{widest} (fatpte check; docs/golden.md)")
    provenance = [f"{shown(k)}={short(v)}" for k, v in e["provenance"].items()]
    if e["source_digest"] is not None:
        provenance.insert(0, f"source {short(e['source_digest'])}")
    if e["payload_sha256"] is not None:
        provenance.append(f"payload sha256 {short(e['payload_sha256'])} (checked by validate)")
    if provenance:
        lines.append("    provenance: " + ", ".join(provenance))
    return [f"  {shown(e['name'])}:", *lines] if lines else []


def map_text(rows: Sequence[dict[str, Any]]) -> str:
    body = [(f"{r['start']:#010x}", f"{r['end']:#010x}", r["size"], r["kind"], r["label"]) for r in rows]
    return table(("start", "end", "size", "kind", "what"), body)


def diff_text(d: dict[str, Any]) -> str:
    lines = [f"--- {shown(d['a'])} (version {d['version']['old']}, {d['size']['old']} bytes)",
             f"+++ {shown(d['b'])} (version {d['version']['new']}, {d['size']['new']} bytes)"]
    for e in d["removed"]:
        lines.append(f"- {shown(e['name'])} ({shown(e['backend_id'])}, {e['size']} bytes, crc32c {e['checksum']})")
    for e in d["added"]:
        lines.append(f"+ {shown(e['name'])} ({shown(e['backend_id'])}, {e['size']} bytes, crc32c {e['checksum']})")
    for e in d["changed"]:
        what = ", ".join(f"{k} {_short(v['old'])} -> {_short(v['new'])}" for k, v in e["fields"].items())
        lines.append(f"~ {shown(e['name'])}: {what}")
    if d["reordered"]:
        lines.append("~ entries are in a different order")
    nd = d["named_data"]
    for k in nd["removed"]:
        lines.append(f"- named data '{shown(k['key'])}' ({k['size']} bytes)")
    for k in nd["added"]:
        lines.append(f"+ named data '{shown(k['key'])}' ({k['size']} bytes)")
    for k in nd["changed"]:
        what = ", ".join(f"{f} {v['old']} -> {v['new']}" for f, v in k["fields"].items())
        lines.append(f"~ named data '{shown(k['key'])}': {what}")
    delta = d["size"]["delta"]
    lines.append("no entry changed" if d["unchanged"] else f"size {'+' if delta >= 0 else ''}{delta} bytes")
    return "\n".join(lines)


def coverage_text(c: dict[str, Any]) -> str:
    rows = [(shown(r["device"]), shown(r["entry"]) if r["entry"] else "NONE", shown(r["backend_id"] or "-"),
             size(r["download_bytes"]) if r["download_bytes"] is not None else "-",
             f"{100 * r['download_bytes'] / c['size']:.0f}%" if r["download_bytes"] is not None else "-")
            for r in c["devices"]]
    out = [f"{shown(c['path'])}: {size(c['size'])}, {plural(len(c['devices']), 'device')}",
           table(("device", "entry", "backend", "download", "of container"), rows, indent="  ")]
    if c["uncovered"]:
        out.append(f"  no entry fits: {names(c['uncovered'])} (`fatpte select --explain` says why)")
    if c["unused_entries"]:
        out.append(f"  chosen by no device: {names(c['unused_entries'])}")
    return "\n".join(out)


def receipts_text(o: dict[str, Any]) -> str:
    """`coverage --receipts`: planned against observed, per load receipt of the container."""
    rows = [(shown(r["device"]), shown((r["fingerprint"] or "")[:12]), shown(r["planned"] or "NONE"),
             shown(r["observed"] or "NONE"), "yes" if r["agrees"] else "NO") for r in o["rows"]]
    out = [(f"receipts: {plural(o['loads'], 'load')} ({o['of_this_container']} of this container), "
            f"{plural(o['fallbacks'], 'fallback')}")]
    if rows:
        out.append(table(("device", "fingerprint", "planned", "observed", "agrees"), rows, indent="  "))
    for d in o["differences"]:
        why = ", ".join(f"{shown(x['name'])}: {shown(x['reason_code'])}" + (f" ({x['error_code']})" if x["error_code"]
                                                                             else "") for x in d["rejected"])
        out.append(f"  difference: {shown(d['device'])} planned {shown(d['planned'] or 'NONE')}, ran "
                   f"{shown(d['observed'] or 'NONE')}" + (f"; rejected {why}" if why else ""))
    if not o["differences"]:
        out.append("  every device ran the entry planned for it")
    return "\n".join(out)


def _short(value: Any) -> str:
    """A field value in a diff line: JSON for structures, cut to keep the line readable."""
    if isinstance(value, (dict, list)):
        import json

        text = shown(json.dumps(value, separators=(",", ":")))
        return text if len(text) <= 60 else text[:57] + "..."
    return shown(value)
