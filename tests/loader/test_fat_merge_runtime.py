"""A fat program merged from lowered programs (`fatpte merge`, fatpte.ops.fat_merge) runs in a plain
ExecuTorch application (issue 32): et_module_runner, ExecuTorch's Module API, with
libexecutorch_backend_fatpte.so loaded like any backend library.

With the XNNPACK library loaded the XNNPACK entry runs and the outputs are the XNNPACK program's,
exactly; without it the nested portable program runs and the outputs are the portable program's,
exactly; both equal the recorded eager outputs. The merge itself needs no torch (it is not
installed in .venv): only the committed fixtures.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fatpte.executorch.pte import read_program
from fatpte.executorch.rewrite import rename_delegates
from tests.loader.test_fat_delegate_runtime import (
    FIXTURES,
    KERNELS,
    XNNPACK,
    _example,
    call_files,
    module_run,
    xnnpack_then_portable,
)

FATPTE = [sys.executable, "-m", "fatpte"]


def plain_run(folder: Path, program: Path, calls: list[str], libs: tuple[Path, ...]) -> str:
    """The outputs of `program` run on its own by `folder`'s et_module_runner, with `libs` and
    without the fat delegate library."""
    cmd = [str(folder / "et_module_runner")]
    for lib in libs:
        cmd += ["--lib", str(lib)]
    proc = subprocess.run([*cmd, str(program), *calls], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def merged(model: str, dest: Path) -> Path:
    """`fatpte merge` of the model's XNNPACK and portable programs, as a user runs it."""
    proc = subprocess.run([*FATPTE, "merge", "-o", str(dest), str(FIXTURES / f"{model}_xnnpack.pte"),
                           str(FIXTURES / f"{model}_portable.pte")], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"wrote {dest}: fat program")
    return dest


def test_no_torch_here() -> None:
    # The point of `merge`: lowered programs in, a fat program out, on a machine without torch.
    import importlib.util

    assert importlib.util.find_spec("torch") is None


@pytest.mark.parametrize("model", ["add", "mlp"])
def test_a_merged_program_runs_each_source_programs_computation(build: Path, tmp_path: Path,
                                                                model: str) -> None:
    program = merged(model, tmp_path / f"{model}_merged.pte")
    assert {d.backend_id for m in read_program(program.read_bytes()).methods for d in m.delegates} == {
        "FatpteBackend"}
    calls = call_files(model, tmp_path)
    with_xnnpack, alone = xnnpack_then_portable(build, program, calls, _example().recorded_outputs(model))
    # And each is exactly what the source program computes on its own.
    assert with_xnnpack == plain_run(build, FIXTURES / f"{model}_xnnpack.pte", calls, (KERNELS, XNNPACK))
    assert alone == plain_run(build, FIXTURES / f"{model}_portable.pte", calls, (KERNELS,))


def test_a_longer_delegate_id_moves_the_segments_and_still_runs(build: Path, tmp_path: Path) -> None:
    # The fat delegate registered under an id longer than the padding before the segments can
    # hold: rename_delegates moves every segment (the XNNPACK weights, the NFAT payload) later,
    # and ExecuTorch still finds them all.
    program = merged("mlp", tmp_path / "mlp_merged.pte")
    data = program.read_bytes()
    before = read_program(data)
    alias = "FatAlias" + "x" * 92  # 100 bytes: more than the padding holds, less than the registry takes (128)
    renamed = rename_delegates(data, alias, [(0, 0)])
    after = read_program(renamed)
    assert before.header is not None and after.header is not None
    assert after.header.segment_base_offset > before.header.segment_base_offset
    assert [d.backend_id for d in after.methods[0].delegates] == [alias]
    moved = tmp_path / "mlp_alias.pte"
    moved.write_bytes(renamed)
    calls = call_files("mlp", tmp_path)
    proc = module_run(build, moved, "--register", alias, libs=(KERNELS, XNNPACK), calls=calls)
    assert proc.returncode == 0, proc.stderr
    assert "running entry xnnpack [xnnpack]" in proc.stderr
    assert proc.stdout == plain_run(build, FIXTURES / "mlp_xnnpack.pte", calls, (KERNELS, XNNPACK))
