"""The two program readers agree on damaged programs: Python's `validate` and `fatpte-validate`
give the same first error (code, offset, field) for programs whose bytes were changed inside a
program entry's payload (the program's flatbuffer, its segments and its delegates' payloads), its CRC32C and the header checksum recomputed so that every container
rule passes and specs/executorch.md section 7 judges it.

The mutants (tests/support/program_mutants.py) are structure-aware: random bytes, tables'
soffsets, vtable sizes and field offsets, fields' words, uoffsets and lengths, strings made
invalid UTF-8, without their NUL or with longer lengths, in eight fixture programs (portable,
XNNPACK, native, fat delegates, state, two methods), seeded, run in one batch of fatpte-validate.
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from tests.loader.test_cpp_parity import expected_line, run_tool
from tests.support import program_mutants

COUNT = 2000  # 1171 of them were judged differently before the loader read programs as Python does


@pytest.mark.loader_build("fatpte-validate")
def test_damaged_programs_are_judged_alike(build: Path, tmp_path: Path) -> None:
    paths, labels, want = [], [], []
    for k, (label, data, _) in enumerate(program_mutants.mutants(COUNT, seed=6)):
        path = tmp_path / f"m{k:04d}.nfat"
        path.write_bytes(data)
        paths.append(path)
        labels.append(label)
        want.append(expected_line(data))
    said = collections.Counter(w.split(" ")[0] for w in want)
    # The mutants reach the reader's codes, not only the record's.
    assert {"E1003", "E1004", "E1006", "E1007", "E1008", "E1104"} <= set(said), said
    got = run_tool(build / "fatpte-validate", paths)
    differ = [f"{p.name} {label}: python {w!r}, loader {g!r}"
              for p, label, w, g in zip(paths, labels, want, got) if w != g]
    assert not differ, f"{len(differ)} of {COUNT} differ ({dict(said)}):\n" + "\n".join(differ[:60])


@pytest.mark.loader_build("fatpte-validate")
def test_the_readers_budgets_are_reached_alike(build: Path, tmp_path: Path) -> None:
    """The work budgets of specs/executorch.md section 3, each side of its limit, under a record
    that claims a program: 2,000 or 10 references to one operator with a 1 MiB name (the text
    budget: 16 bytes per byte plus 1 MiB), one instruction of 2,000 arguments listed 1,000 times or
    of 100 listed 100 times (the object budget: 1,000,000 plus the size). Both refuse the first of
    each pair with E1005 at the same offset, and judge the second alike."""
    from fatpte.ops.pte_specialize import pte_specialization
    from tests.loader.test_cpp_parity import _under_record, pack_to
    from tests.support import hostile

    record = pack_to(tmp_path, "record.nfat", [pte_specialization(program_mutants.FIXTURES / "add_portable.pte",
                                                                  name="e")])
    programs = {"text-over": hostile.pte_shared_operator(2000, 1 << 20), "text-under": hostile.pte_shared_operator(10, 1 << 20),
                "objects-over": hostile.pte_shared_instruction(1000, 2000),
                "objects-under": hostile.pte_shared_instruction(100, 100)}
    paths, want = [], []
    for name, program in programs.items():
        path = tmp_path / f"{name}.nfat"
        data = _under_record(record, program)
        path.write_bytes(data)
        paths.append(path)
        want.append(f"{name}: {expected_line(data)}")
    assert [w.split(" ")[1] for w in want[::2]] == ["E1005", "E1005"], want
    assert all(" E1005 " not in w for w in want[1::2]), want
    got = run_tool(build / "fatpte-validate", paths)
    assert want == [f"{p.stem}: {g}" for p, g in zip(paths, got)]


def _nptg(methods: list[tuple[str, list[str], list[str]]]) -> bytes:
    """An NPTG payload (native_graph.fbs) of `methods`, each (name, its tensor values' names, its
    graph inputs), every value a float32 scalar."""
    import flatbuffers

    b = flatbuffers.Builder(0)

    def strings(items: list[str]) -> int:
        offsets = [b.CreateString(s) for s in items]
        b.StartVector(4, len(offsets), 4)
        for o in reversed(offsets):
            b.PrependUOffsetTRelative(o)
        return b.EndVector()

    def tables(offsets: list[int]) -> int:
        b.StartVector(4, len(offsets), 4)
        for o in reversed(offsets):
            b.PrependUOffsetTRelative(o)
        return b.EndVector()

    built = []
    for name, values, inputs in methods:
        tvs = []
        for v in values:
            vname = b.CreateString(v)
            b.StartObject(2)  # TensorMeta: dtype (6: float32), sizes
            b.PrependInt8Slot(0, 6, 0)
            meta = b.EndObject()
            b.StartObject(2)  # TensorValue: name, meta
            b.PrependUOffsetTRelativeSlot(0, vname, 0)
            b.PrependUOffsetTRelativeSlot(1, meta, 0)
            tvs.append(b.EndObject())
        nodes, ins, values_vec = tables([]), strings(inputs), tables(tvs)
        b.StartObject(4)  # Graph: nodes, inputs, outputs, tensor_values
        b.PrependUOffsetTRelativeSlot(0, nodes, 0)
        b.PrependUOffsetTRelativeSlot(1, ins, 0)
        b.PrependUOffsetTRelativeSlot(3, values_vec, 0)
        graph = b.EndObject()
        mname = b.CreateString(name)
        b.StartObject(5)  # Method: name, graph, constants, output_specs, mutable_buffers
        b.PrependUOffsetTRelativeSlot(0, mname, 0)
        b.PrependUOffsetTRelativeSlot(1, graph, 0)
        built.append(b.EndObject())
    methods_vec = tables(built)
    b.StartObject(2)  # NativeProgram: version, methods
    b.PrependUOffsetTRelativeSlot(1, methods_vec, 0)
    b.Finish(b.EndObject(), b"NPTG")
    return bytes(b.Output())


@pytest.mark.loader_build("fatpte-validate")
def test_each_native_method_names_its_own_values(build: Path, tmp_path: Path) -> None:
    """mlp_native.pte with its native delegate's payload an NPTG graph of two methods, the second
    taking as input a value only the first names: Python's reader refuses it (E1006, at the second
    graph), and so does the loader's (whose names of values were once kept from method to method);
    with the second naming it too, both read it."""
    from fatpte.executorch.rewrite import replace_segment
    from fatpte.ops.pte_specialize import pte_specialization
    from tests.loader.test_cpp_parity import _under_record, pack_to
    from tests.support import hostile

    fixture = (program_mutants.FIXTURES / "mlp_native.pte").read_bytes()
    record = pack_to(tmp_path, "record.nfat", [pte_specialization(program_mutants.FIXTURES / "mlp_native.pte",
                                                                  name="e")])
    index = hostile.first_delegate(fixture).data_index
    cases = {"foreign": [("a", ["x"], ["x"]), ("b", ["y"], ["x"])], "own": [("a", ["x"], ["x"]), ("b", ["x"], ["x"])]}
    paths, want = [], []
    for name, methods in cases.items():
        data = _under_record(record, replace_segment(fixture, index, _nptg(methods)))
        path = tmp_path / f"{name}.nfat"
        path.write_bytes(data)
        paths.append(path)
        want.append(f"{name}: {expected_line(data)}")
    assert want[0].startswith("foreign: E1006 ") and " E1006 " not in want[1], want
    got = run_tool(build / "fatpte-validate", paths)
    assert want == [f"{p.stem}: {g}" for p, g in zip(paths, got)]
