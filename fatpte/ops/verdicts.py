"""The verdict store (specs/verdicts.md): reading, listing and clearing what devices remembered
about the entries they tried. The C++ loader writes a store (loader/src/memory/verdict_store.cpp)
and reads it at each start; this module reads it by the same rules, so both refuse the same files
with the same code and field (specs/vectors/verdicts/), and writes it back, after a clear, in the
loader's canonical text.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.atomic import atomic_output
from fatpte.fileio.mapping import read_regular
from fatpte.fileio.strict_json import JsonRefused, JsonRules, loads

MAX_STORE_BYTES = 1 << 20
MAX_RECORDS = 256
MAX_LIBRARIES = 32
MAX_TEXT = 1024
VERSION = 1
FORMAT = "fatpte-verdicts"
SUFFIX = ".verdicts.json"
VERDICTS = ("pass", "fail", "crash", "loaded", "skipped", "attempt")
_RULES = JsonRules(max_bytes=MAX_STORE_BYTES, max_depth=8, depth_of="values", lone_surrogates=False)
_RECORD_KEYS = ("container", "entry", "name", "method", "device", "libraries", "verdict", "reason", "time")
_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True, slots=True)
class VerdictRecord:
    """One remembered verdict: its key (container .. libraries) and what it says."""

    container: str
    entry: int
    name: str
    method: str
    device: str
    libraries: tuple[str, ...]
    verdict: str
    reason: str
    time: int

    @property
    def key(self) -> tuple[Any, ...]:
        return (self.container, self.entry, self.name, self.method, self.device, self.libraries)

    def to_json(self) -> dict[str, Any]:
        return {"container": self.container, "entry": self.entry, "name": self.name, "method": self.method,
                "device": self.device, "libraries": list(self.libraries), "verdict": self.verdict,
                "reason": self.reason, "time": self.time}


def _refuse(source: str, field: str, rule: str) -> FatpteError:
    return FatpteError(ErrorCode.INVALID_ARGUMENT, f"verdict store {source}: {field} {rule}; the store is not used "
                       "(delete it, or `fatpte verdicts clear`, to start a new one)", source=source, field=field)


def _only_keys(source: str, obj: dict[str, Any], at: str, allowed: tuple[str, ...]) -> None:
    for key in obj:
        if key not in allowed:
            raise _refuse(source, f"{at}.{key}" if at else key, "is not a member of this version of the store")
    for key in allowed:
        if key not in obj:
            raise _refuse(source, f"{at}.{key}" if at else key, "is missing")


def _text(source: str, value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise _refuse(source, field, "must be a string")
    if len(value.encode("utf-8", "surrogatepass")) > MAX_TEXT:
        raise _refuse(source, field, f"is longer than {MAX_TEXT} bytes")
    return value


def _integer(source: str, value: Any, field: str, top: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
        raise _refuse(source, field, f"must be an integer from 0 to {top}")
    return value


def _record(source: str, item: Any, at: str) -> VerdictRecord:
    if not isinstance(item, dict):
        raise _refuse(source, at, "must be an object")
    _only_keys(source, item, at, _RECORD_KEYS)
    digests = {}
    for name in ("container", "device"):
        text = _text(source, item[name], f"{at}.{name}")
        if len(text) != 64 or not set(text) <= _HEX:
            raise _refuse(source, f"{at}.{name}", "must be 64 lowercase hex digits")
        digests[name] = text
    entry = _integer(source, item["entry"], f"{at}.entry", 0xFFFFFFFF)
    texts = {name: _text(source, item[name], f"{at}.{name}") for name in ("name", "method", "verdict", "reason")}
    if texts["verdict"] not in VERDICTS:
        raise _refuse(source, f"{at}.verdict", 'must be "pass", "fail", "crash", "loaded", "skipped" or "attempt"')
    libs = item["libraries"]
    if not isinstance(libs, list) or len(libs) > MAX_LIBRARIES:
        raise _refuse(source, f"{at}.libraries", f"must be a list of at most {MAX_LIBRARIES} strings")
    libraries = tuple(_text(source, lib, f"{at}.libraries[{i}]") for i, lib in enumerate(libs))
    if list(libraries) != sorted(libraries, key=lambda s: s.encode("utf-8", "surrogatepass")):
        raise _refuse(source, f"{at}.libraries", "must be sorted")
    time = _integer(source, item["time"], f"{at}.time", (1 << 63) - 1)
    return VerdictRecord(digests["container"], entry, texts["name"], texts["method"], digests["device"], libraries,
                         texts["verdict"], texts["reason"], time)


def parse_store(data: bytes, source: str) -> list[VerdictRecord]:
    """The records of a store's bytes, or FatpteError (INVALID_ARGUMENT naming the field) for the
    first rule of specs/verdicts.md section 4 it breaks, in the loader's order."""
    try:
        root = loads(data, _RULES)
    except JsonRefused as exc:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"verdict store {source} is not valid JSON: {exc}; the store "
                          "is not used", source=source, offset=exc.offset, field="") from None
    if not isinstance(root, dict):
        raise _refuse(source, "$", "must be an object")
    if root.get("format") != FORMAT:
        raise _refuse(source, "format", f'must be "{FORMAT}"')
    version = _integer(source, root.get("version"), "version", 0xFFFFFFFF)
    if version != VERSION:
        raise _refuse(source, "version", f"is {version}: this fatpte reads version 1 only (a newer fatpte wrote it; "
                      "it is neither used nor overwritten)")
    _only_keys(source, root, "", ("format", "version", "records"))
    records = root["records"]
    if not isinstance(records, list) or len(records) > MAX_RECORDS:
        raise _refuse(source, "records", f"must be a list of at most {MAX_RECORDS} records")
    out: list[VerdictRecord] = []
    seen: set[tuple[Any, ...]] = set()
    for i, item in enumerate(records):
        record = _record(source, item, f"records[{i}]")
        if record.key in seen:
            raise _refuse(source, f"records[{i}]", "has the key of an earlier record")
        seen.add(record.key)
        out.append(record)
    return out


def read_store(path: str | os.PathLike[str]) -> list[VerdictRecord]:
    """The records of the store file at `path` ([] when it does not exist)."""
    source = os.fspath(path)
    try:  # a FIFO, a device or a folder under the store's name is E0811 at once, as the loader says
        data = read_regular(source, MAX_STORE_BYTES, "the verdict store")
    except FatpteError as exc:
        if isinstance(exc.__cause__, FileNotFoundError):
            return []
        raise
    return parse_store(data, source)


def store_text(records: list[VerdictRecord]) -> str:
    """The loader's canonical text of a store (loader/src/memory/verdict_store.cpp, store_text)."""
    lines = ",\n  ".join(json.dumps(r.to_json()) for r in records)
    return f'{{"format": "{FORMAT}", "version": {VERSION}, "records": [' + (f"\n  {lines}\n]}}\n" if records
                                                                             else "]}\n")


def store_files(folder: str | os.PathLike[str]) -> list[Path]:
    """The store files of a folder (`NAME.verdicts.json`), by name; [] when there is no folder."""
    base = Path(folder)
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if p.name.endswith(SUFFIX) and not p.name.startswith("."))


def clear(folder: str | os.PathLike[str], *, app: str | None = None, entry: str | None = None) -> int:
    """Forget remembered verdicts in `folder`: every one, or those of the application `app`
    (its file NAME.verdicts.json), or of the entries named `entry`; the number forgotten. A store
    that cannot be read is removed whole only when no `entry` is given (it is not used anyway)."""
    forgotten = 0
    for path in store_files(folder):
        if app is not None and path.name != app + SUFFIX:
            continue
        try:
            records = read_store(path)
        except FatpteError:
            if entry is None:
                path.unlink(missing_ok=True)
            continue
        keep = [] if entry is None else [r for r in records if r.name != entry]
        forgotten += len(records) - len(keep)
        if keep:
            with atomic_output(path) as f:
                f.write(store_text(keep).encode())
        else:
            path.unlink(missing_ok=True)
    return forgotten
