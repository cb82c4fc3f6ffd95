"""Line coverage of fatpte reached by replaying a corpus through a fuzz target (no atheris, no
third-party tool: `sys.settrace` records the lines run, code objects give the lines there are).

    python fuzz/coverage.py TARGET PATH... [--modules structure,integrity,manifest]

Prints, per fatpte module, the lines run out of the executable lines, and the total; the figures
in docs/reliability.md come from it, run over each target's corpus after a long fuzzing run.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
import types
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _harness  # puts the repository root on sys.path
from replay import inputs

PACKAGE = _harness.ROOT / "fatpte"


def _function_lines(code: types.CodeType) -> Iterator[int]:
    # Module and class bodies run at import, before tracing starts: only function bodies count.
    if code.co_flags & inspect.CO_NEWLOCALS:
        for _, _, line in code.co_lines():
            if line is not None:
                yield line
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _function_lines(const)


def executable_lines(path: Path) -> set[int]:
    return set(_function_lines(compile(path.read_text(), str(path), "exec")))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target")
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--modules", default="", help="comma-separated fatpte modules to report (default: all run)")
    args = parser.parse_args(argv)
    target = importlib.import_module(f"fuzz_{args.target}")
    _harness.load_fatpte()
    seen: dict[str, set[int]] = {}
    prefix = str(PACKAGE) + "/"

    def tracer(frame: types.FrameType, event: str, arg: object) -> object:
        name = frame.f_code.co_filename
        if not name.startswith(prefix):
            return None
        lines = seen.setdefault(name, set())

        def local(frame: types.FrameType, event: str, arg: object) -> object:
            if event == "line":
                lines.add(frame.f_lineno)
            return local

        lines.add(frame.f_lineno)
        return local

    files = inputs(args.paths)
    escaped = 0
    sys.settrace(tracer)  # type: ignore[arg-type]
    try:
        for path in files:
            try:
                target.test_one_input(path.read_bytes())
            except Exception:  # noqa: BLE001 - counted here; replay.py shows the tracebacks
                escaped += 1
    finally:
        sys.settrace(None)
    if escaped:
        print(f"{escaped} inputs escaped with an exception: run fuzz/replay.py on them", file=sys.stderr)
    wanted = {m for m in args.modules.split(",") if m}
    total_run = total = 0
    print(f"{args.target}: {len(files)} inputs")
    for name in sorted(seen):
        module = Path(name).stem
        if wanted and module not in wanted:
            continue
        lines = executable_lines(Path(name))
        run = len(seen[name] & lines)
        total_run, total = total_run + run, total + len(lines)
        print(f"  {module:14} {run:5d} / {len(lines):5d} lines  {100 * run / max(1, len(lines)):5.1f}%")
    print(f"  {'total':14} {total_run:5d} / {total:5d} lines  {100 * total_run / max(1, total):5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
