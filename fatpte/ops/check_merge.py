"""`fatpte check --merge`: the N shard reports of one check (`check --shard K/N --json`,
fatpte.ops.check_shards) joined into the report of one unsharded run: the same rows, pairs,
counts, gaps and exit status, byte for byte in `--json` apart from the timing fields (`seconds`).
It refuses reports of different containers (their SHA-256), options (--cpus, --allow-unchecked) or
shard counts, a report that is no shard, and missing or duplicate shards, naming the file.
"""

from __future__ import annotations

import base64
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fatpte.errors import ErrorCode, FatpteError, clipped
from fatpte.ops import check as C

# A shard report is read whole; its saved outputs ride in it as base64, so it may be large, not endless.
MAX_SHARD_REPORT = 1 << 30


def merge(paths: Sequence[str]) -> C.CheckReport:
    """The report of one unsharded run, from the reports of its N shards at `paths`."""
    docs = [_read(p) for p in paths]
    first_path, first = paths[0], docs[0]
    count = first["shard"]["count"]
    for p, d in zip(paths, docs):
        if d["shard_data"]["digest"] != first["shard_data"]["digest"]:
            raise _refused(p, "shard_data.digest", f"a shard of another container than {clipped(first_path)} "
                                                   f"(SHA-256 {d['shard_data']['digest'][:16]}..., not "
                                                   f"{first['shard_data']['digest'][:16]}...): merge the shards of one "
                                                   "check")
        for key, what in (("cpus", "--cpus"), ("allow_unchecked", "--allow-unchecked")):
            if d[key] != first[key]:
                raise _refused(p, key, f"a shard of another {what} than {clipped(first_path)} "
                                       f"({d[key]!r}, not {first[key]!r}): merge the shards of one check")
        if d["shard"]["count"] != count or d["shard_data"]["rows"] != first["shard_data"]["rows"]:
            raise _refused(p, "shard.count", f"shard {d['shard']['index']}/{d['shard']['count']} of another split "
                                             f"than {clipped(first_path)} (1 of {count})")
    seen: dict[int, str] = {}
    for p, d in zip(paths, docs):
        k = d["shard"]["index"]
        if k in seen:
            raise _refused(p, "shard.index", f"shard {k}/{count} is given twice (also {clipped(seen[k])})")
        seen[k] = p
    missing = [str(k) for k in range(1, count + 1) if k not in seen]
    if missing:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"shards {', '.join(missing)} of {count} are missing: "
                          f"give every shard's report", field="shard.index", source=first_path)
    return _joined(first, docs)


def _joined(first: dict[str, Any], docs: list[dict[str, Any]]) -> C.CheckReport:
    rows: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
    for d in docs:
        for e, extra in zip(d["entries"], d["shard_data"]["entries"]):
            rows[int(extra["row"])] = (e, extra)
    report = C.CheckReport(first["source"], [], [], sorted({r for d in docs for r in d["runtimes"]}),
                           cpus=first["cpus"], allow_unchecked=first["allow_unchecked"])
    with tempfile.TemporaryDirectory(prefix="fatpte-check-merge-") as scratch:
        for row in sorted(rows):
            e, extra = rows[row]
            report.entries.append(_entry(e, extra, Path(scratch) / str(row)))
        report.pairs = C._pairs(report.ran)
    return report


def _entry(e: dict[str, Any], extra: dict[str, Any], folder: Path) -> C.EntryCheck:
    """One row of a shard report, its saved outputs written to `folder` for the comparison."""
    code = extra["code"]
    result = C.EntryCheck(e["name"], e["backend_id"], e["state"], e["reason"] or "", e["runner"] or "",
                          [_output(o) for o in e["outputs"]], cpu=e["cpu"], call_errors=e["call_errors"],
                          seconds=e["seconds"], code=None if code is None else ErrorCode(int(code[1:])))
    result.inputs = {int(k): (v[0], tuple(v[1])) for k, v in extra["inputs"].items()}
    folder.mkdir()
    for key, text in extra["saved"].items():
        call, j = (int(x) for x in key.split(":"))
        path = folder / f"{call}-{j}.bin"
        path.write_bytes(base64.b64decode(text))
        result.files[(call, j)] = path
    return result


def _output(o: dict[str, Any]) -> C.OutputCheck:
    return C.OutputCheck(o["call"], o["output"], o["method"], o["key"], o["dtype"], tuple(o["shape"]),
                         o["max_abs"], o["max_rel"], o["max_want"], o["atol"], o["rtol"], o["bound"], o["passed"],
                         o["problem"])


def _read(path: str) -> dict[str, Any]:
    """A shard report (`check --shard K/N --json`); E0702 naming the file for anything else."""
    from fatpte.fileio.mapping import read_regular
    from fatpte.fileio.strict_json import JsonRefused, JsonRules, loads

    raw = read_regular(path, MAX_SHARD_REPORT, "the shard report")  # E0811 for a FIFO or a device
    try:
        doc = loads(raw, JsonRules(max_bytes=MAX_SHARD_REPORT, constants=True))
    except JsonRefused as exc:
        raise _refused(path, "", f"not a check report (JSON): {exc}") from None
    from fatpte.ops.check_schema import outside

    problem = outside(doc)
    if problem is not None:
        raise _refused(path, "", f"not a report of `fatpte check --json` (specs/check_report.schema.json): {problem}")
    if doc["shard"] is None or "shard_data" not in doc:
        raise _refused(path, "shard", "a report of an unsharded check: merge the reports of `check --shard K/N "
                                      "--json`")
    return dict(doc)


def _refused(path: str, field: str, message: str) -> FatpteError:
    return FatpteError(ErrorCode.INVALID_ARGUMENT, message, field=field or None, source=path)
