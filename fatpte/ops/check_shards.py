"""Sharding `fatpte check` over a CI matrix (issue 36): `--shard K/N` runs a deterministic slice of
the rows (the (entry, CPU) pairs fatpte.ops.check.plan lists). The rows are dealt CPU by CPU: put in
the order (the CPU's place in --cpus, the row's place in the report; a row of no CPU first), then
cut into N runs of consecutive rows, as equal as whole rows allow (shard K gets positions
floor((K-1)R/N) to floor(KR/N) - 1 of R). So each shard meets few CPUs, and asks each emulated
runner for its device once (under qemu that probe costs 0.1 to 0.4 s) instead of every shard asking
every runner. A shard report carries what the merge (fatpte.ops.check_merge) needs beyond its rows
(`shard_data`): the container's SHA-256, the row numbers it ran, the number of rows, and each
row's golden inputs and saved outputs (base64), so that entries run in different shards are
compared with each other as one run compares them.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from typing import Any

from fatpte.errors import ErrorCode, FatpteError


def parse_shard(text: str) -> tuple[int, int]:
    """`K/N` (1 <= K <= N) as (K, N); E0702 otherwise."""
    m = re.fullmatch(r"([1-9][0-9]{0,5})/([1-9][0-9]{0,5})", text.strip())
    if m is None or int(m.group(1)) > int(m.group(2)):
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"--shard {text!r}: give K/N with 1 <= K <= N (e.g. 1/4)",
                          field="shard", actual=text)
    return int(m.group(1)), int(m.group(2))


def select(cpu_of_row: Sequence[int], shard: tuple[int, int] | None) -> set[int]:
    """The row numbers shard (K, N) runs, the rows' CPUs given by their place in --cpus (-1: a row
    of no CPU); every row without a shard."""
    rows = len(cpu_of_row)
    if shard is None:
        return set(range(rows))
    k, n = shard
    order = sorted(range(rows), key=lambda i: (cpu_of_row[i], i))
    return set(order[(k - 1) * rows // n : k * rows // n])


def shard_data(entries: Sequence[Any], rows: list[int], total: int, digest: str) -> dict[str, Any]:
    """What the merge needs of a shard's rows `entries` (fatpte.ops.check.EntryCheck, row numbers
    `rows` of `total`, of the container whose SHA-256 is `digest`), read from their saved outputs
    while they exist."""
    data = []
    for row, e in zip(rows, entries):
        saved = {f"{call}:{j}": base64.b64encode(path.read_bytes()).decode("ascii")
                 for (call, j), path in sorted(e.files.items()) if path.exists()}
        inputs = {str(k): [method, list(keys)] for k, (method, keys) in sorted(e.inputs.items())}
        data.append({"row": row, "code": None if e.code is None else e.code.tag, "inputs": inputs,
                     "saved": saved})
    return {"digest": digest, "rows": total, "entries": data}
