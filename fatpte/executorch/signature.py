"""The program signature of a .pte, derived from what the file records.

The result is the mapping fatpte.manifest.Signature.from_mapping reads:
`{"methods": [{"name", "inputs", "outputs", "buffers"}]}`, tensors as `{"dtype", "shape"}` and
buffers with a `name` when the program records one. The rule (specs/nfat-manifest.md section 5
and docs/executorch.md explain it):

- user inputs are the execution plan's inputs, user outputs its outputs;
- a mutable buffer of the program itself is a memory-planned tensor value (it has
  allocation_info, so it is state in a planned arena rather than constant data) that is not a
  plan input and that either is the in-place target of an `aten::copy_` kernel call (the
  write-back ExecuTorch's emitter inserts for each buffer-mutation output) or carries a fully
  qualified name in its extra_tensor_info (emitted for mutable buffers only);
- any plan output that is such a buffer is a write-back, not a user output;
- a delegate that owns state declares it in its payload: for an NPTG payload, each
  buffer-mutation output and each mutable_buffers entry is a buffer of the method that calls it;
  a fat delegate (an NFAT payload) declares it in the NPTG payloads of its entries.

The buffers are listed in the program's order, which every lowering of one export shares: the
program's own in value order (the emitter allocates them in the exported graph's order), then
those of each delegate in call order, each in the order its payload declares them (the graph's
buffer-mutation order). A buffer's name is the fully qualified name the file records; ExecuTorch
records none for the program's own buffers unless the export asks for them
(`emit_mutable_buffer_names=True`), and the buffer is then unnamed rather than given a name that
depends on the lowering.
"""

from __future__ import annotations

from typing import Any

from fatpte.container.reader import Container
from fatpte.executorch.nptg import IDENTIFIER as NPTG_IDENTIFIER
from fatpte.executorch.nptg import NativeProgram, read_nptg
from fatpte.executorch.nptg import TensorSpec as NativeTensor
from fatpte.executorch.pte import Delegate, MethodPlan, Program
from fatpte.format.layout import MAGIC as NFAT_MAGIC

_WRITE_BACK_OPS = ("aten::copy_",)


def mutable_buffer_values(plan: MethodPlan) -> dict[int, str | None]:
    """Value index -> buffer name (None when the file records none) for the program-level
    mutable buffers of one method, in value order."""
    inputs = set(plan.inputs)
    found: set[int] = set()
    for call in plan.kernel_calls:
        if call.operator.split(".")[0] in _WRITE_BACK_OPS and call.args and call.args[0] == call.args[-1]:
            target = call.args[0]
            t = plan.tensors.get(target)
            if t is not None and t.memory_planned and target not in inputs:
                found.add(target)
    for i, t in plan.tensors.items():
        if t.fqn and t.memory_planned and i not in inputs:
            found.add(i)
    return {i: plan.tensors[i].fqn for i in sorted(found)}


def _native_payloads(program: Program, delegate: Delegate) -> list[tuple[bytes | memoryview, int]]:
    """The NPTG payloads a delegate carries, with their offsets in the file: its own payload, or
    those of the entries of the NFAT container it carries (a fat delegate)."""
    payload = program.payload(delegate)
    if bytes(payload[4:8]) == NPTG_IDENTIFIER:
        return [(payload, delegate.offset)]
    if bytes(payload[:4]) != NFAT_MAGIC:
        return []
    container = Container.from_buffer(bytes(payload), source=f"{program.source or '<pte>'}[delegate "
                                      f"{delegate.index}]")
    return [(bytes(container.payload(e)), delegate.offset + e.offset) for e in container.entries
            if e.payload_kind == NPTG_IDENTIFIER]


def _value_spec(plan: MethodPlan, index: int) -> dict[str, Any]:
    t = plan.tensors.get(index)
    if t is None:  # a scalar or list input: its kind stands for the dtype, it has no shape
        return {"dtype": plan.value_kinds[index], "shape": []}
    return {"dtype": t.dtype, "shape": list(t.shape)}


def method_signature(program: Program, plan: MethodPlan) -> dict[str, Any]:
    buffers = mutable_buffer_values(plan)
    state: list[dict[str, Any]] = []
    named: set[str] = set()
    for index, name in buffers.items():
        state.append(({"name": name} if name else {}) | _value_spec(plan, index))
        if name:
            named.add(name)
    # Delegates in the order the method first calls them; a buffer declared by several delegates
    # (or by the entries of a fat delegate, each a specialization of one graph) counts once.
    called = list(dict.fromkeys(d for d, _ in plan.delegate_calls))
    for d in called:
        for payload, base in _native_payloads(program, plan.delegates[d]):
            native = read_nptg(payload, source=program.source, base=base)
            for m in native.methods:
                for b in m.buffers:
                    if b.dtype is not None and b.shape is not None and b.fqn not in named:
                        named.add(b.fqn)
                        state.append({"name": b.fqn, "dtype": b.dtype, "shape": list(b.shape)})
    return {
        "name": plan.name,
        "inputs": [_value_spec(plan, i) for i in plan.inputs],
        "outputs": [_value_spec(plan, i) for i in plan.outputs if i not in buffers],
        "buffers": state,
    }


def native_signature(native: NativeProgram) -> dict[str, Any]:
    """The signature of a native program (the NPTG of a .ptn): its graphs' user inputs and
    outputs, and as buffers the state it declares (buffer-mutation outputs, mutable buffers),
    named by fully qualified name; the same form as `program_signature`."""
    def tensor(t: NativeTensor) -> dict[str, Any]:
        return {"dtype": t.dtype, "shape": list(t.shape)}

    return {"methods": [{
        "name": m.name,
        "inputs": [tensor(t) for t in m.inputs],
        "outputs": [tensor(t) for t in m.outputs],
        "buffers": [{"name": b.fqn, "dtype": b.dtype, "shape": list(b.shape)}
                    for b in sorted(m.buffers, key=lambda b: b.fqn) if b.dtype is not None and b.shape is not None],
    } for m in native.methods]}


def program_signature(program: Program) -> dict[str, Any]:
    """The signature of every method of `program`, in the form Signature.from_mapping reads."""
    return {"methods": [method_signature(program, plan) for plan in program.methods]}
