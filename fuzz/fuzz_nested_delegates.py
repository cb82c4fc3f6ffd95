"""Fuzz target, nested fat delegates (issue 33, F1): libFuzzer's bytes drive the generator
tests/strategies.hostile_fat_trees (tests/fixtures/executorch/mlp_fat.pte with its fat delegate
wrapped in levels of version 1 or 2 containers mixing fat payloads, nested programs and junk,
each kind sharing the level below; now and then one byte changed), validated as `fatpte validate`
validates a .pte and, packed as a program entry, a container. Fails when:

- anything but FatpteError escapes;
- for an unchanged tree, E1010 is reported when the fat delegates nest at most
  MAX_FAT_DELEGATE_DEPTH deep, or missed when they nest deeper, or names another container than
  the first one past the limit in table order (its path, and `NFAT` at its offset);
- the walk reads more containers than MAX_FAT_DELEGATE_DEPTH times the NFAT containers the file
  holds (each region once per depth, however many paths reach it);
- Python's work leaves fuzz_hostile.py's budgets.

With FATPTE_FUZZ_RUNTIME set to a loader build folder (build/loader-asan), each input is also
run by that build's et_module_runner with the fat delegate's library (the C++ runtime, which the
libFuzzer build cannot link): it must run an unchanged tree that fits the limit and give the
model's outputs, refuse one that does not (E1010 at most once per container the file holds), log
lines in proportion to the file and no byte a terminal should not get, and never report a
sanitizer error. A damaged nested program that both verifiers pass and ExecuTorch's own
Method::init then crashes on (frame #0 in libexecutorch.so) is ExecuTorch's to refuse: it is
counted in UPSTREAM, not failed. `fuzz/replay.py
nested_delegates DIR` with it set replays a corpus that way (tests/loader/test_fat_delegate_runtime.py
does for sixteen inputs).
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _harness
from fuzz_hostile import run_within, safe_text

Levels = tuple[tuple[int, tuple[str, ...]], ...]
_READS = [0]
UPSTREAM: list[str] = []  # crashes inside libexecutorch on a damaged nested program (check_runtime)


@functools.cache
def _counted() -> None:
    """Count the containers the nesting walk reads (fatpte.ops.fat_delegate.read_structure)."""
    from fatpte.ops import fat_delegate

    read = fat_delegate.read_structure

    def counted(buf: Any, *args: Any, **kwargs: Any) -> Any:
        _READS[0] += 1
        return read(buf, *args, **kwargs)

    fat_delegate.read_structure = counted  # type: ignore[assignment]


def _too_deep(findings: Any) -> list[tuple[int | None, str | None]]:
    from fatpte.errors import ErrorCode

    return [(f.offset, f.field) for f in findings if f.code == ErrorCode.FAT_DELEGATE_TOO_DEEP]


def check_validate(data: bytes, levels: Levels, pristine: bool) -> None:
    from fatpte.errors import FatpteError
    from fatpte.executorch.pte import read_program
    from fatpte.format.layout import MAGIC, MAX_FAT_DELEGATE_DEPTH
    from fatpte.ops.fat_delegate import validate_nfat_delegates
    from tests.support import hostile

    _counted()
    _READS[0] = 0

    def validate() -> list[tuple[int | None, str | None]]:
        try:
            reports = validate_nfat_delegates(read_program(data))
        except FatpteError as exc:
            safe_text("the error", str(exc), len(data))
            return []
        findings = [f for _, r in reports for f in r.findings]
        safe_text("validate", "\n".join(f.describe() for f in findings), len(data))
        return _too_deep(findings)

    found = run_within(validate, len(data))
    bound = MAX_FAT_DELEGATE_DEPTH * (data.count(MAGIC) + 2)
    if _READS[0] > bound:
        raise AssertionError(f"the nesting walk read {_READS[0]} containers of a file holding {data.count(MAGIC)}")
    for offset, _ in found:
        if offset is None or data[offset : offset + 4] != MAGIC:
            raise AssertionError(f"E1010 at {offset}, where no container starts")
    if not pristine:
        return
    want = hostile.fat_tree_first_too_deep(levels, 0)
    if [field for _, field in found] != ([] if want is None else [want]):
        raise AssertionError(f"depth {hostile.fat_tree_depth(levels)}: E1010 at {found}, expected {want}")
    if want is not None and len(levels) % 3 == 0:  # and as a program entry of a container, now and then
        check_container(data, want, found[0][0])


def check_container(data: bytes, path: str, offset: int | None) -> None:
    import fatpte
    from fatpte.errors import FatpteError

    with tempfile.TemporaryDirectory() as tmp:
        try:
            dest = fatpte.pack([fatpte.Specialization("fatpte", data, name="fat")], Path(tmp) / "c.nfat")
        except FatpteError:
            return  # a program pack refuses
        with fatpte.open(dest) as c:
            at = c.entries[0].offset
        found = _too_deep(fatpte.validate(dest).findings)
    want = [(None if offset is None else at + offset, "entries[0].payload." + path)]
    if found != want:
        raise AssertionError(f"in a container: E1010 at {found}, expected {want}")


def check_runtime(build: Path, data: bytes, levels: Levels, pristine: bool) -> None:
    """The C++ fat delegate, through ExecuTorch's own Module runner (et_module_runner)."""
    import json
    import struct

    from fatpte.format.layout import MAGIC, MAX_FAT_DELEGATE_DEPTH
    from tests.paths import ET_FIXTURES
    from tests.support import hostile

    sdk = _harness.ROOT / "build" / "executorch-sdk" / "executorch" / "lib"
    call = json.loads((ET_FIXTURES / "fixtures.json").read_text())["files"]["mlp_portable.pte"]["calls"][0]
    with tempfile.TemporaryDirectory() as tmp:
        program, inputs = Path(tmp) / "tree.pte", Path(tmp) / "in0.bin"
        program.write_bytes(data)
        values = call["inputs"][0]["values"]
        inputs.write_bytes(struct.pack(f"<{len(values)}f", *values))
        proc = subprocess.run([str(build / "et_module_runner"), "--lib", str(sdk / "libexecutorch_kernels_optimized.so"),
                               "--lib", str(build / "libexecutorch_backend_fatpte.so"), str(program), str(inputs)],
                              capture_output=True, timeout=600, check=False)
    raw = proc.stderr
    if not pristine and re.search(rb"#0 0x[0-9a-f]+ in [^\n]*\(\S*libexecutorch\.so|#0 0x[0-9a-f]+ +\(\S*libexecutorch\.so", raw):
        # ExecuTorch's own Method::init reading a damaged nested program that passed both verifiers
        # (fatpte's and Program::load's): the runtime's to refuse (docs/reliability.md, out of scope).
        UPSTREAM.append(raw[raw.find(b"SUMMARY"):][:200].decode("ascii", "replace"))
        return
    control = re.search(rb"[\x00-\x08\x0b-\x1f\x7f-\xff]", raw)
    if control:
        raise AssertionError(f"the log holds {control.group()!r}, a byte of the file unescaped:\n{raw[-3000:]!r}")
    log = raw.decode("ascii")
    if "Sanitizer" in log or "runtime error" in log or proc.returncode not in (0, 1):
        raise AssertionError(f"et_module_runner exited {proc.returncode}:\n{log[-3000:]}")
    fan = max((len(kinds) for _, kinds in levels), default=1)
    containers = data.count(MAGIC) + 1
    if len(log.splitlines()) > 8 * (MAX_FAT_DELEGATE_DEPTH + 1) * containers * (fan + 4):
        raise AssertionError(f"{len(log.splitlines())} log lines for a file of {containers} containers")
    if log.count("E1010") > containers:
        raise AssertionError(f"{log.count('E1010')} E1010 refusals for a file of {containers} containers")
    if not pristine:
        return
    fits = all(hostile.FAT in k or hostile.PROGRAM in k for _, k in levels) and \
        hostile.fat_tree_depth(levels) <= MAX_FAT_DELEGATE_DEPTH
    if fits != (proc.returncode == 0):
        raise AssertionError(f"depth {hostile.fat_tree_depth(levels)}: exit {proc.returncode}\n{log[-3000:]}")
    if fits:
        want = call["outputs"][0]["values"]
        got = [float(v) for v in proc.stdout.decode("ascii").splitlines()[0].split("]", 1)[1].split()]
        if len(got) != len(want) or any(abs(g - w) > 1e-5 * max(1.0, abs(w)) for g, w in zip(got, want)):
            raise AssertionError(f"the tree computed {got}, the model {want}")


@functools.cache
def _property() -> Callable[[bytes], Any]:
    from tests.strategies import hostile_fat_trees

    runtime = os.environ.get("FATPTE_FUZZ_RUNTIME")

    @_harness.driven(hostile_fat_trees())
    def prop(case: tuple[bytes, Levels, bool]) -> None:
        check_validate(*case)
        if runtime:
            check_runtime(Path(runtime), *case)

    return prop


def test_one_input(data: bytes) -> None:
    _property()(data)


if __name__ == "__main__":
    _harness.fuzz(test_one_input)
