"""`fatpte coverage`: which entry each device profile gets, which devices get none, and what each
device would download after thinning.

The entry comes from `fatpte.select` (the one rule); the download size is the size of the
container `fatpte.thin(..., only_chosen=True)` writes for that entry alone, computed by thin's own layout planner from the
tables (`thinning.thinned_size`), so a many-GB container is never copied to be measured.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fatpte.container.locations import open as open_container
from fatpte.device.profile import HOST_NAME, SET_PREFIX, DeviceProfile, set_members
from fatpte.device.selection import select
from fatpte.errors import SelectionError
from fatpte.ops.thinning import thinned_size


def device_profiles(spec: str | None) -> list[DeviceProfile]:
    """The profiles `--devices` names: None for every named profile; a directory for every
    `*.json` file in it (sorted); else a comma-separated list of `host` (this machine, as
    `select --device host` takes it), sets of named profiles (`@fleet`, `@all`), names or paths,
    each profile once, in the order given."""
    if spec is None:
        return [DeviceProfile.load(n) for n in DeviceProfile.names()]
    if os.path.isdir(spec):
        return [DeviceProfile.load(str(p)) for p in sorted(Path(spec).glob("*.json"))]
    words: list[str] = []
    for w in (s.strip() for s in spec.split(",")):
        if w:
            words += set_members(w) if w.startswith(SET_PREFIX) else [w]
    return [DeviceProfile.host() if w == HOST_NAME else DeviceProfile.load(w) for w in dict.fromkeys(words)]


def coverage(path: str | os.PathLike[str], devices: Sequence[DeviceProfile], *, prefer: Sequence[str] = (),
             exclude: Sequence[str] = ()) -> dict[str, Any]:
    """For each device: the entry it gets (None when none fits, with the reason) and the bytes of
    the thinned container it would download."""
    rows: list[dict[str, Any]] = []
    with open_container(path) as c:
        size, source = c.size, c.source  # a URL without its credentials (fileio/url.py)
        names = [e.name for e in c.entries]
        backends = {e.name: e.backend_id for e in c.entries}
        for d in devices:
            try:
                chosen: str | None = select(c, d, prefer=prefer, exclude=exclude).chosen.name
                reason = None
            except SelectionError as exc:
                chosen, reason = None, exc.message
            rows.append({"device": d.name, "entry": chosen, "backend_id": backends.get(chosen or ""),
                         "reason": reason})
        thinned = {name: thinned_size(c, [name])
                   for name in dict.fromkeys(r["entry"] for r in rows if r["entry"] is not None)}
    for r in rows:
        r["download_bytes"] = thinned.get(r["entry"]) if r["entry"] is not None else None
    used = {r["entry"] for r in rows}
    return {
        "path": source,
        "size": size,
        "devices": rows,
        "uncovered": [r["device"] for r in rows if r["entry"] is None],
        "unused_entries": [n for n in names if n not in used],
    }
