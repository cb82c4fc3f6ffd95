"""Isolated qualification on an emulated core (issue 38): under `qemu-aarch64 -cpu cortex-a53`
(ARMv8.0, no dot product), an entry whose backend library runs an instruction of a newer core
(the test backend's `newer_core_init`: SDOT, ARMv8.2) is demoted by SIGILL in the child process,
and the portable entry serves; on a Cortex-A76, which has the instruction, the same entry
qualifies and serves. The child runs under the same emulated core (--isolate-launcher)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.loader import aarch64_builds
from tests.scripts import load_script
from tests.support import faulty


def _run(cpu_model: str, tmp_path: Path) -> dict[str, object]:
    aarch64_builds.require()
    matrix = aarch64_builds.MATRIX
    library = faulty.library(matrix.AARCH64_BUILD)
    if not library.exists():
        aarch64_builds.missing(f"{library} is not built")
    cpu = matrix.emulated_cpu(cpu_model)
    container = faulty.container(tmp_path / "c.nfat", "add", ["newer_core_init"])
    calls = load_script("loader/examples/executorch_example.py").write_calls("add", tmp_path / "calls.json")
    launcher = [word for w in cpu.prefix for word in ("--isolate-launcher", w)]
    done = cpu.run("fatpte-run", str(container), "--inputs", str(calls), "--json", "--isolate", *launcher,
                   "--backend-lib", f"{faulty.BACKEND_ID}={library}")
    assert done.returncode == 0, done.stderr
    doc: dict[str, object] = json.loads(done.stdout)
    return doc


def test_a_newer_core_instruction_is_demoted_by_sigill(tmp_path: Path) -> None:
    doc = _run("cortex-a53", tmp_path)
    assert doc["chosen"] == "cpu"
    dispatch = doc["dispatch"]
    assert isinstance(dispatch, list)
    assert any(line.startswith("dispatch: faulty0 [faulty]: isolated qualification: crashed (SIGILL)")
               for line in dispatch), dispatch


@pytest.mark.parametrize("model", ["cortex-a76"])
def test_the_core_that_has_it_keeps_the_entry(tmp_path: Path, model: str) -> None:
    assert _run(model, tmp_path)["chosen"] == "faulty0"
