"""Value references ExecuTorch's runtime aborts on (issue 42, point 9; specs/executorch.md sections 4
and 8). Fuzzing the fat delegate found nested programs `fatpte validate` called valid on which
ExecuTorch aborted the process (`ET_CHECK` in `Method::get_value`): a value index of the method's
inputs or outputs past its values, which ExecuTorch's own load takes as it is. The reader now
checks every value index a method uses (int list items, chains, each instruction kind's fields,
the method's inputs and outputs), and validate reads the nested programs of a fat delegate, so
such a program is an error of the file, at the table holding the index. The C++ loader's half
(the same code and place, and no abort) is in tests/loader/test_fat_delegate_runtime.py and
loader/tests/executorch_test.cpp; the conformance vectors `v2-program-*` hold both to it."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import fatpte
from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.pte import read_program
from fatpte.ops.fat_delegate import validate_nfat_delegates
from tests.paths import ROOT
from tests.support import hostile

FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
NESTED = FIXTURES / "mlp_portable.pte"  # 20 values, input 4, output 17, five kernel calls, two int lists
FAT = FIXTURES / "mlp_fat.pte"
FATPTE = [sys.executable, "-m", "fatpte"]
PLAN = "root.execution_plan[0]"


def _refused(data: bytes) -> tuple[ErrorCode, int | None, str | None]:
    with pytest.raises(FatpteError) as e:
        read_program(data)
    return e.value.code, e.value.offset, e.value.field


@pytest.mark.parametrize(("where", "value", "path"), [
    ("inputs[0]", 20, f"{PLAN}.inputs[0]"),
    ("inputs[0]", -1, f"{PLAN}.inputs[0]"),
    ("outputs[0]", 20, f"{PLAN}.outputs[0]"),
    ("outputs[0]", -(1 << 31), f"{PLAN}.outputs[0]"),
    ("instructions[1].args[2]", 20, f"{PLAN}.chains[0].instructions[1].instr_args.args[2]"),
])
def test_a_value_index_past_the_values_is_e1006_at_its_table(where: str, value: int, path: str) -> None:
    program = NESTED.read_bytes()
    at, table, count = hostile.value_index_site(program, where)
    assert count == 20 and 0 <= struct.unpack_from("<i", program, at)[0] < count
    changed, _ = hostile.with_value_index(program, where, value)
    assert _refused(changed) == (ErrorCode.ET_BAD_REFERENCE, table, path)
    last, _ = hostile.with_value_index(program, where, count - 1)
    read_program(last)  # the last value is a value


def test_a_delegate_calls_arguments_are_values() -> None:
    program = (FIXTURES / "add_xnnpack.pte").read_bytes()
    changed, table = hostile.with_value_index(program, "instructions[0].args[1]")
    assert _refused(changed) == (ErrorCode.ET_BAD_REFERENCE, table,
                                 f"{PLAN}.chains[0].instructions[0].instr_args.args[1]")


@pytest.mark.parametrize(("kind", "field"), [(3, "move_from"), (4, "cond_value_index"), (5, "value_index")])
def test_each_instruction_kinds_value_field_is_a_value(kind: int, field: str) -> None:
    """MoveCall, JumpFalseCall and FreeCall name values too (the second instruction read as each)."""
    program = NESTED.read_bytes()
    changed, table = hostile.with_instruction_kind(program, 1, kind, 20)
    assert _refused(changed) == (ErrorCode.ET_BAD_REFERENCE, table,
                                 f"{PLAN}.chains[0].instructions[1].instr_args.{field}")
    inside, _ = hostile.with_instruction_kind(program, 1, kind, 19)
    read_program(inside)


def test_an_int_lists_items_are_int_values() -> None:
    program = NESTED.read_bytes()
    plan = read_program(program).methods[0]
    ints = [i for i, k in enumerate(plan.value_kinds) if k == "int"]
    tensor = min(plan.tensors)
    _, table, path = hostile.with_int_list_item(program, ints[0])
    assert _refused(hostile.with_int_list_item(program, 20)[0]) == (ErrorCode.ET_BAD_REFERENCE, table, path)
    assert _refused(hostile.with_int_list_item(program, tensor)[0]) == (ErrorCode.ET_BAD_VALUE, table, path)
    read_program(hostile.with_int_list_item(program, ints[-1])[0])


@pytest.mark.parametrize("where", ["inputs[0]", "outputs[0]"])
def test_validate_refuses_a_nested_program_the_runtime_aborts_on(where: str, tmp_path: Path) -> None:
    """The issue's finding: a fat delegate's nested program whose method input (or output) is one
    past its values. validate said valid and ExecuTorch aborted in Method::get_value; now validate
    reports E1006 at the index's table, with the path to the nested program."""
    nested, table = hostile.with_value_index(NESTED.read_bytes(), where)
    tree = hostile.fat_with_program(FAT.read_bytes(), nested)
    at = tree.index(nested)
    found = [(f.code, f.offset, f.field) for _, r in validate_nfat_delegates(read_program(tree)) for f in r.findings]
    assert found == [(ErrorCode.ET_BAD_REFERENCE, at + table, "delegates[0].payload.entries[0].payload")]
    (tmp_path / "tree.pte").write_bytes(tree)
    proc = subprocess.run([*FATPTE, "validate", str(tmp_path / "tree.pte")], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"E1006 at {at + table:#x} (delegates[0].payload.entries[0].payload)" in proc.stdout
    assert f"({PLAN}.{where})" in proc.stdout
    # As the program entry of a container, the path starts at the entry.
    dest = fatpte.pack([fatpte.Specialization("fatpte", tree, name="fat")], tmp_path / "c.nfat")
    with fatpte.open(dest) as c:
        base = c.entries[0].offset
    report = fatpte.validate(dest)
    assert [(f.code, f.offset, f.field) for f in report.findings] == [
        (ErrorCode.ET_BAD_REFERENCE, base + at + table, "entries[0].payload.delegates[0].payload.entries[0].payload")]


def test_an_intact_nested_program_stays_valid() -> None:
    tree = hostile.fat_with_program(FAT.read_bytes(), NESTED.read_bytes())
    assert [r.findings for _, r in validate_nfat_delegates(read_program(tree))] == [()]


@pytest.mark.parametrize("refs", [1000, 4000, 16000])
def test_one_instruction_shared_by_many_references_is_bounded_by_the_work_budget(refs: int) -> None:
    """Checking every reference must not make a small file a large amount of work: a chain listing
    `refs` references to one instruction of 2000 arguments is refs * 2000 references in 4 * refs
    bytes. The reader's object budget (1,000,000 plus the size) ends it with E1005, as it ends the
    C++ reader's check (tests/loader/test_fat_delegate_runtime.py); 100 of 100 read."""
    assert len(read_program(hostile.pte_shared_instruction(100, 100)).methods[0].kernel_calls) == 100
    assert _refused(hostile.pte_shared_instruction(refs, 2000))[0] is ErrorCode.ET_FLATBUFFER_TOO_COMPLEX


@pytest.mark.parametrize(("name", "path"), [("processed", "processed"), ("key", "compile_specs[0].key"),
                                            ("value", "compile_specs[0].value")])
def test_a_delegate_field_executorch_dereferences_is_required(name: str, path: str) -> None:
    """ExecuTorch's Method::init dereferences a delegate's `processed` reference and each compile
    spec's key and value without looking: a nested fat program (mlp_fat.pte, whose delegate has a
    compile spec) lacking one crashed the process (SIGSEGV). Python required `processed` already;
    all three are E1008 at the table now, in both readers."""
    changed, table = hostile.without_delegate_field(FAT.read_bytes(), name)
    assert _refused(changed) == (ErrorCode.ET_BAD_VALUE, table, f"{PLAN}.delegates[0].{path}")


def _first_tensor(data: bytes) -> int:
    _, tensor = hostile._first_plan(data).tables(2, "values")[0].union(0, 1, "val")
    return int(tensor.pos)


@pytest.mark.parametrize(("shape", "field"), [
    ({"sizes": (-1,)}, ".sizes[0]"),
    ({"sizes": None}, ".sizes"),
    ({"sizes": (2**31 - 1, 2**31 - 1, 4)}, ".sizes"),  # the element count passes 2^63 - 1
    ({"sizes": (2**31 - 1, 2**31 - 1), "scalar_type": 7}, ".sizes"),  # float64: past 2^64 - 1 bytes
    ({"sizes": (1,), "scalar_type": 9}, ".scalar_type"),  # complex64: not a type fatpte reads
])
def test_a_tensor_executorch_cannot_size_is_e1008(shape: dict[str, Any], field: str) -> None:
    """ExecuTorch's verification (validate_tensor) refuses such a tensor, except a dynamic-shape
    method input, which it lets pass after searching the inputs for it: once per such value,
    quadratic in the inputs (fatpte-run took 10.5 s on a 4 MB program of 200,000), and set_input
    then aborts when MethodMeta cannot size the input. Every tensor is held to the rule now."""
    data = hostile.pte_dynamic_inputs(3, **shape)
    assert _refused(data) == (ErrorCode.ET_BAD_VALUE, _first_tensor(data), f"{PLAN}.values[0].val{field}")


def test_a_tensor_that_fits_reads() -> None:
    program = read_program(hostile.pte_dynamic_inputs(3, sizes=(2**31 - 1, 2**31 - 1)))  # 2^64 - 2^34 + 4 bytes
    assert program.methods[0].tensors[0].shape == (2**31 - 1, 2**31 - 1)


@pytest.mark.parametrize("inputs", [1000, 4000, 16000])
def test_many_inputs_executorch_would_search_for_are_refused_at_the_first(inputs: int) -> None:
    data = hostile.pte_dynamic_inputs(inputs)
    assert _refused(data) == (ErrorCode.ET_BAD_VALUE, _first_tensor(data), f"{PLAN}.values[0].val.sizes[0]")
