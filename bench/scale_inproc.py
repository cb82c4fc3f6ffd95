"""Inside one process: pack, validate and open(+select) of containers with N entries or N
named-data keys, the counts interleaved round by round (16, 256, 4096, 16, 256, ...) so that
drift of the shared machine hits every count alike. Prints JSON
{"select": bool, "entries": {N: {op: median seconds}}, "keys": {...} or the reason it is absent}.

    scale_inproc.py FOLDER ROUNDS
"""

from __future__ import annotations

import gc
import inspect
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENTRY_COUNTS = (16, 256, 4096)
KEY_COUNTS = (1000, 10_000, 100_000)


def interleaved(cases: dict[int, dict[str, Callable[[], object]]], rounds: int) -> dict[int, dict[str, float]]:
    samples: dict[int, dict[str, list[float]]] = {n: {op: [] for op in ops} for n, ops in cases.items()}
    for _ in range(rounds):
        for n, ops in cases.items():
            for op, fn in ops.items():
                t = time.perf_counter()
                fn()
                samples[n][op].append(time.perf_counter() - t)
    return {n: {op: statistics.median(v) for op, v in ops.items()} for n, ops in samples.items()}


def without_gc(fn: Callable[[], object]) -> Callable[[], None]:
    def run() -> None:
        gc.disable()
        try:
            fn()
        finally:
            gc.enable()

    return run


def main() -> int:
    folder, rounds = Path(sys.argv[1]), int(sys.argv[2])
    import fatpte

    select: Any = getattr(fatpte, "select", None) if "select" in dir(fatpte) else None
    device = None
    if select is not None:
        from fatpte.device.profile import DeviceProfile

        device = DeviceProfile.host()

    def opener(path: Path, key: str | None = None) -> Callable[[], None]:
        def run() -> None:
            with fatpte.open(path) as c:
                if key is not None:
                    c.named_data(key)
                if select is not None:
                    select(c, device)

        return run

    def case(specs: list[Any], path: Path, key: str | None = None) -> dict[str, Callable[[], object]]:
        fatpte.pack(specs, path)
        ops: dict[str, Callable[[], object]] = {
            "pack": lambda: fatpte.pack(specs, path),
            "validate": lambda: fatpte.validate(path),
            "open_select": opener(path, key),
        }
        if key is not None:
            # The same with the cyclic GC paused: separates collector cost from the decoding.
            ops["open_select, gc paused"] = without_gc(opener(path, key))
        return ops

    out: dict[str, object] = {"select": select is not None}
    out["entries"] = interleaved({
        n: case([fatpte.Specialization("xnnpack", i.to_bytes(4, "little") * 256, name=f"e{i}") for i in range(n)],
                folder / f"scale-{n}.nfat")
        for n in ENTRY_COUNTS}, rounds)
    if "named_data" not in inspect.signature(fatpte.Specialization).parameters:
        out["keys"] = "Specialization has no named_data parameter at bench time"
    else:
        try:
            out["keys"] = interleaved({
                n: case([fatpte.Specialization("xnnpack", b"\0" * 64, named_data={  # type: ignore[call-arg]
                    f"layer{i}.weight": i.to_bytes(4, "little") * 16 for i in range(n)})],
                    folder / f"keys-{n}.nfat", f"layer{n - 1}.weight")
                for n in KEY_COUNTS}, rounds)
        except Exception as exc:  # noqa: BLE001 - reported in the table instead of hiding the entry figures
            out["keys"] = f"named data could not be packed or read: {type(exc).__name__}: {exc}"
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
