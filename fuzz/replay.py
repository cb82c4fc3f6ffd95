"""Replay files through a fuzz target without atheris: a corpus, crash artifacts, or vectors.

    python fuzz/replay.py TARGET PATH...     # TARGET: open, validate, select, manifest, structured, differential,
                                             # executorch, hostile, hostile_differential, signature,
                                             # trusted_keys, nested_delegates, calls

Each PATH is a file or a directory (every file in it, recursively). Every input is run through
the target's `test_one_input`; any exception escaping it is printed with its traceback and the
run exits 1. Use it to reproduce a crash the fuzzer saved, and to check a fix.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def inputs(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out.extend(sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p])
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    target = importlib.import_module(f"fuzz_{argv[0]}")
    files = inputs(argv[1:])
    failed = 0
    for path in files:
        try:
            target.test_one_input(path.read_bytes())
        except Exception:  # noqa: BLE001 - reporting any escape is the point
            failed += 1
            print(f"FAIL {path}", file=sys.stderr)
            traceback.print_exc()
    print(f"{argv[0]}: {len(files) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
