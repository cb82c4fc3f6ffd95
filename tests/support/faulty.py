"""Programs whose one delegate call goes to the test backend that fails on purpose (issue 38):
loader/backends/faulty.cpp, built as build/loader/fault-backends/libexecutorch_backend_faulty.so
(ExecuTorch backend id FaultyBackend) with the loader's tests.

A faulty program is a fixture's XNNPACK lowering with its delegate renamed to FaultyBackend and its
delegate payload replaced by "FAULTY1 <mode>[@N]", so it has the same method signature as the
fixture's portable program, and a container can hold [faulty entry (preferred), portable entry].
The modes (the backend's own comment lists what each does): good, segv_init, sigill_init,
newer_core_init, execute_error, nan, hang; "@N" makes the mode apply from call N on.

No torch: the program is rewritten in place by fatpte/executorch/rewrite.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fatpte.executorch.pte import read_program
from fatpte.executorch.rewrite import rename_delegates, replace_segment
from tests.paths import ET_FIXTURES

BACKEND_ID = "FaultyBackend"
LIBRARY = "libexecutorch_backend_faulty.so"
FOLDER = "fault-backends"  # under the loader's build folder
MODES = ("good", "segv_init", "sigill_init", "newer_core_init", "execute_error", "nan", "hang")
# The fixtures whose XNNPACK lowering is one delegate call over the method's inputs and outputs.
# add: out = x + y (what `good` computes too); buffer: a stateful program (a mutable buffer).
FIXTURES = ("add", "buffer")


def payload(mode: str, from_call: int | None = None) -> bytes:
    """The delegate payload that makes the faulty backend act as `mode` (from call `from_call`)."""
    if mode not in MODES:
        raise ValueError(f"unknown faulty mode {mode!r}; one of {', '.join(MODES)}")
    return b"FAULTY1 " + mode.encode() + (b"" if from_call is None else b"@%d" % from_call)


def program(fixture: str, mode: str, from_call: int | None = None) -> bytes:
    """The bytes of `fixture`'s XNNPACK program with its delegate going to FaultyBackend in `mode`."""
    if fixture not in FIXTURES:
        raise ValueError(f"no faulty program of {fixture!r}; one of {', '.join(FIXTURES)}")
    data = (ET_FIXTURES / f"{fixture}_xnnpack.pte").read_bytes()
    (method,) = read_program(data).methods
    (delegate,) = method.delegates
    data = rename_delegates(data, BACKEND_ID, [(0, delegate.index)])
    return replace_segment(data, delegate.data_index, payload(mode, from_call))


def portable(fixture: str) -> Path:
    """The fixture's portable program: the entry a faulty one falls back to."""
    return ET_FIXTURES / f"{fixture}_portable.pte"


def container(out: Path, fixture: str, modes: list[str | tuple[str, int]], *, portable_last: bool = True,
              golden: Path | None = None) -> Path:
    """A container at `out` with one faulty entry per mode, in rank order (`faulty0`, `faulty1`,
    ...: backend id `faulty`), then (`portable_last`) the fixture's portable program (`cpu`,
    backend id `portable`), packed with `fatpte pack` as a user would; with `golden`, that
    calls.json as every entry's golden calls."""
    out.parent.mkdir(parents=True, exist_ok=True)
    specs = []
    for i, mode in enumerate(modes):
        name, at = (mode, None) if isinstance(mode, str) else mode
        pte = out.parent / f"{out.stem}.faulty{i}.pte"
        pte.write_bytes(program(fixture, name, at))
        specs.append(f"faulty{i}:faulty={pte}")
    if portable_last:
        specs.append(f"cpu:portable={portable(fixture)}")
    extra = ["--golden", str(golden)] if golden is not None else []
    subprocess.run([sys.executable, "-m", "fatpte", "pack", "-q", "-o", str(out), *extra, *specs], check=True,
                   capture_output=True)
    return out


def library(build: Path) -> Path:
    """The faulty backend library of a loader build folder."""
    return build / FOLDER / LIBRARY
