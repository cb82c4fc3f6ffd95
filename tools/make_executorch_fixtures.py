"""Export the ExecuTorch fixtures under tests/fixtures/executorch/ with the real toolchain.

Runs only in the separate environment .venv-et that `make test-executorch` creates (torch and
executorch are never dependencies of fatpte itself):

    .venv-et/bin/python tools/make_executorch_fixtures.py [--out tests/fixtures/executorch]

Four small models (an add, an MLP, a model whose buffer is mutated in forward, a KV-cache-like
model using index_copy_) are each lowered four ways: portable (no delegate), XNNPACK, the native
backend (payload identifier NPTG) and, when the installed executorch has the native backend, a
fat native delegate whose payload is an NFAT container of two NPTG specializations (packed by
fatpte inside a BackendDetails.preprocess, laid out in the .pte by ExecuTorch itself). Two more files
keep weights outside the program in a .ptd. Each model, and one with tied weights, is also saved
as an ExecuTorch native package (.ptn) by `to_native(...).save()`, when the release has it. Next to the binaries, `fixtures.json` records for
every file what torch.export said about the program (user inputs and outputs with dtype and
shape, mutated buffers), the sample inputs and the eager outputs of two successive calls, so the
tests can check what our readers derive from the bytes against what the exporter knew, without
torch. The output is deterministic for fixed versions; VERSIONS.txt records them.

Those files keep the names of mutable buffers (emit_mutable_buffer_names=True). The stateful
models are also exported as users export them, with ExecuTorch's defaults, which record no such
name (`<model>_<backend>_default.pte`: buffer, kvcache and kvpair, a model with two caches and a
counter, portable, XNNPACK and native), kvpair also with names kept, and kvpair16 (kvpair with 16
cache rows) as a program that must not pack with kvpair. `buffer_names` in fixtures.json says
which export made a file.

Feature tiers (issue 29): mlp and kvcache are also lowered to XNNPACK fp16 (cast inside forward, so
inputs, outputs and state stay float32 and the program signature is the fp32 one) and XNNPACK static
int8 (pt2e, XNNPACKQuantizer), with ExecuTorch's default settings, beside their portable and fp32
XNNPACK default exports (`<model>_xnnpack_{fp16,int8}[_default].pte`). fixtures.json "tiers" records
their calls with the fp32 eager outputs, each variant's own eager reference and its tolerance, and
`<model>_tiers.pack.toml` packs them into a container whose entries target CPU feature levels
(tools/tier_matrix.py runs it on emulated ARM CPUs). These files are not in "files", whose tests
compare every program with the fp32 eager outputs at fp32 tolerance.

Signature adapters and vendor runtimes (issues 39, 40): mlp and kvcache are also exported as
`model.half()` programs with float16 inputs, outputs and state (`<model>_xnnpack_fp16io_default.pte`,
fixtures.json "fp16io") and lowered with OpenVINO's partitioner for its CPU device
(`<model>_openvino_default.pte`, fixtures.json "openvino"), both with ExecuTorch's defaults.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import importlib.metadata
import json
import platform
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.exir import (
    ExecutorchBackendConfig,
    ExecutorchProgramManager,
    to_edge,
    to_edge_transform_and_lower,
)
from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
from executorch.exir.backend.partitioner import DelegationSpec
from executorch.exir.passes.init_mutable_pass import InitializedMutableBufferPass
from torch.export import ExportedProgram, export
from torch.export.graph_signature import InputKind, OutputKind

try:  # the native backend is recent; older executorch releases do not ship it
    from executorch.backends.native.partitioner import NativePartitioner
    from executorch.backends.native.preprocess import NativeBackend
except ImportError:  # pragma: no cover - depends on the installed release
    NativePartitioner = None

try:  # the native package (.ptn) writer: executorch.exir.native.to_native(...).save()
    from executorch.exir.native import to_native
except ImportError:  # pragma: no cover - depends on the installed release
    to_native = None

AVX2 = {"arch": ["x86_64"], "cpu_features": ["avx2", "fma"]}


class NfatNativeBackend(BackendDetails):
    """The native backend's graph shipped as a fat delegate: an NFAT container (packed by fatpte)
    of two specializations of the same NPTG payload, one for AVX2 machines and a generic one.
    ExecuTorch itself lays the delegate out in the .pte, as it would any backend's payload."""

    @staticmethod
    def preprocess(edge_program: ExportedProgram, compile_specs: list[Any]) -> PreprocessResult:
        import fatpte

        inner = NativeBackend.preprocess(edge_program, compile_specs)
        with tempfile.TemporaryDirectory() as tmp:
            dest = fatpte.pack(
                [
                    fatpte.Specialization("native", inner.processed_bytes, name="native-avx2", priority=10,
                                          requires=AVX2),
                    fatpte.Specialization("native", inner.processed_bytes, name="native-generic"),
                ],
                Path(tmp) / "delegate.nfat",
            )
            blob = dest.read_bytes()
        return dataclasses.replace(inner, processed_bytes=blob)


def _nfat_partitioner() -> Any:
    part = NativePartitioner(external_constants_tag=None)
    part.delegation_spec = DelegationSpec(NfatNativeBackend.__name__, part.delegation_spec.compile_specs)
    return part

COMMAND = "make test-executorch  (runs: .venv-et/bin/python tools/make_executorch_fixtures.py)"


class Add(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


class Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


class Counter(torch.nn.Module):
    """State updated in forward: each call adds its input to a running total."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("total", torch.zeros(2, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.total.add_(x)
        return self.total * 2.0


class KvCache(torch.nn.Module):
    """A KV-cache-like model: writes the new row at `pos`, returns attention-like scores."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("k_cache", torch.zeros(1, 8, 4))
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        k = self.proj(x)
        self.k_cache.index_copy_(1, pos, k)
        return torch.matmul(k, self.k_cache.transpose(1, 2))


class KvPair(torch.nn.Module):
    """Two caches written at a position (`index_put_` and `index_copy_`) and a step counter,
    registered in another order than they are used, so that the order of the state is tested."""

    def __init__(self, rows: int = 8) -> None:
        super().__init__()
        self.register_buffer("v_cache", torch.zeros(1, rows, 4))
        self.register_buffer("k_cache", torch.zeros(1, rows, 4))
        self.register_buffer("a_step", torch.zeros(1))
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        k = self.proj(x)
        self.k_cache.index_put_((torch.zeros_like(pos), pos), k[0])
        self.v_cache.index_copy_(1, pos, k * 2.0)
        self.a_step.add_(1.0)
        return torch.matmul(k, self.k_cache.transpose(1, 2)) + self.v_cache.sum() + self.a_step


def _models() -> dict[str, tuple[Callable[[], torch.nn.Module], list[tuple[torch.Tensor, ...]]]]:
    """Name -> (constructor, the inputs of two successive calls)."""
    g = torch.Generator().manual_seed(0)

    def r(*shape: int) -> torch.Tensor:
        return torch.rand(*shape, generator=g)

    return {
        "add": (Add, [(r(2, 3), r(2, 3)), (r(2, 3), r(2, 3))]),
        "mlp": (Mlp, [(r(1, 4),), (r(1, 4),)]),
        "buffer": (Counter, [(r(2, 3),), (r(2, 3),)]),
        "kvcache": (
            KvCache,
            [(r(1, 1, 4), torch.tensor([0], dtype=torch.long)), (r(1, 1, 4), torch.tensor([1], dtype=torch.long))],
        ),
    }


def _tensor_json(t: torch.Tensor) -> dict[str, Any]:
    return {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape), "values": t.flatten().tolist()}


def _spec_json(node_meta: Any) -> dict[str, Any]:
    val = node_meta["val"]
    return {"dtype": str(val.dtype).removeprefix("torch."), "shape": [int(d) for d in val.shape]}


def _signature(ep: ExportedProgram) -> dict[str, Any]:
    """What torch.export knows: user inputs/outputs and the buffers written back, by kind."""
    nodes = {n.name: n for n in ep.graph.nodes}
    sig = ep.graph_signature
    user_inputs = [
        _spec_json(nodes[s.arg.name].meta) for s in sig.input_specs if s.kind == InputKind.USER_INPUT
    ]
    output_node = next(n for n in ep.graph.nodes if n.op == "output")
    out_args = output_node.args[0]
    user_outputs = []
    mutated = []
    for spec, arg in zip(sig.output_specs, out_args, strict=True):
        if spec.kind == OutputKind.USER_OUTPUT:
            user_outputs.append(_spec_json(arg.meta))
        elif spec.kind == OutputKind.BUFFER_MUTATION:
            mutated.append({"name": spec.target, **_spec_json(arg.meta)})
    return {"user_inputs": user_inputs, "user_outputs": user_outputs, "mutable_buffers": mutated}


def _lower(ep: ExportedProgram, backend: str, external: bool) -> ExecutorchProgramManager:
    # Mutable buffers get their initial value stored in the program (otherwise ExecuTorch treats
    # their start state as undefined and two calls could not be compared with eager PyTorch), and
    # their names are emitted so readers can name the state.
    config = ExecutorchBackendConfig(
        external_constants=external and backend == "portable",
        emit_mutable_buffer_names=True,
        passes=[InitializedMutableBufferPass(["total", "k_cache"])],
    )
    if backend == "portable":
        return to_edge(ep).to_executorch(config)
    if backend == "xnnpack":
        return to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch(config)
    if backend == "nfat":
        return to_edge_transform_and_lower(ep, partitioner=[_nfat_partitioner()]).to_executorch(config)
    if backend == "native":
        tag = "native_weights" if external else None
        part = NativePartitioner(external_constants_tag=tag)
        return to_edge_transform_and_lower(ep, partitioner=[part]).to_executorch(config)
    raise ValueError(backend)


class Tied(torch.nn.Module):
    """Two layers holding identical weights: a .ptn stores identical immutable tensors once, the
    other keys aliased to the first in aliases.json."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(4, 4)
        self.b = torch.nn.Linear(4, 4)
        self.b.load_state_dict(self.a.state_dict())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))


# 1980-01-01 00:00:00 UTC, the earliest time a zip member can carry, and the one zipfile gives the
# members ExecuTorch writes with ZipFile.open (program.safetensors).
PTN_EPOCH = 315532800


def _save_ptn(manager: Any, path: Path) -> None:
    """ExecuTorch's own .ptn writer (NativeProgramManager.save, exir/_serialize/_ptn.py), with the
    clock held at PTN_EPOCH in UTC while it runs: zipfile stamps the member it writes with
    writestr (program.ptg) with the current local time, which would change the fixture's bytes on
    every run. Nothing else about the file is touched."""
    import time
    from unittest import mock

    with mock.patch.object(time, "time", return_value=float(PTN_EPOCH)), \
            mock.patch.object(time, "localtime", time.gmtime):
        manager.save(str(path))


def write_ptn_fixtures(out: Path, index: dict[str, Any]) -> None:
    """ExecuTorch native packages (.ptn): each model lowered whole by `to_native` and saved by
    ExecuTorch (a stored zip: program.ptg, an NPTG flatbuffer; program.safetensors, the constants
    and the initial state; aliases.json when identical tensors are stored once). Recorded in
    fixtures.json under "packages", with what torch.export said and the eager outputs."""
    models = dict(_models())
    g = torch.Generator().manual_seed(1)
    models["tied"] = (Tied, [(torch.rand(1, 4, generator=g),), (torch.rand(1, 4, generator=g),)])
    index["packages"] = {}
    for model_name, (ctor, calls) in models.items():
        torch.manual_seed(0)
        ep = export(ctor().eval(), calls[0], strict=True)
        signature = _signature(ep.run_decompositions({}))
        torch.manual_seed(0)
        eager = ctor().eval()
        expected = [_tensor_json(eager(*c)) for c in calls]
        path = out / f"{model_name}.ptn"
        _save_ptn(to_native(ep), path)
        index["packages"][path.name] = {
            "model": model_name,
            "signature": signature,
            "calls": [{"inputs": [_tensor_json(t) for t in c], "outputs": [e]} for c, e in zip(calls, expected)],
        }
        print(f"wrote {path} ({path.stat().st_size} bytes)")


def _versions() -> dict[str, str]:
    names = ["torch", "executorch", "torchao", "flatbuffers", "numpy", "openvino", "nncf"]
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for n in names:
        out[n] = importlib.metadata.version(n)
    return out


def _write_fixture(out: Path, index: dict[str, Any], stem: str, model_name: str, backend: str,
                   ctor: Callable[[], torch.nn.Module], calls: list[tuple[torch.Tensor, ...]],
                   lower: Callable[[ExportedProgram], ExecutorchProgramManager], *, buffer_names: bool,
                   **extra: Any) -> None:
    """Export `ctor()` on the first call's inputs, lower it with `lower`, write `stem`.pte (and
    its .ptd files) and record it in `index` with the exporter's signature and eager outputs."""
    torch.manual_seed(0)  # identical weights for every lowering of one model
    model = ctor().eval()
    ep = export(model, calls[0], strict=True)
    # Export keeps in-place ops; the functional form (what to_edge lowers) lists the
    # buffer-mutation outputs that the signature must put among the buffers.
    signature = _signature(ep.run_decompositions({}))
    torch.manual_seed(0)
    eager = ctor().eval()
    expected = [_tensor_json(eager(*c)) for c in calls]

    prog = lower(ep)
    pte = out / f"{stem}.pte"
    pte.write_bytes(prog.buffer)
    data_files = []
    with tempfile.TemporaryDirectory() as tmp:
        prog.write_tensor_data_to_file(tmp)
        for written in sorted(Path(tmp).glob("*.ptd")):
            # The runtime finds a .ptd by the name the program records, not the file name,
            # so prefixing the stem keeps fixtures of different models apart safely.
            ptd = out / f"{stem}.{written.name}"
            ptd.write_bytes(written.read_bytes())
            data_files.append(ptd.name)
    index["files"][pte.name] = {
        "model": model_name,
        "backend": backend,
        "external_data": data_files,
        "signature": signature,
        "buffer_names": buffer_names,
        "calls": [{"inputs": [_tensor_json(t) for t in c], "outputs": [e]} for c, e in zip(calls, expected)],
        **extra,
    }
    print(f"wrote {pte} ({pte.stat().st_size} bytes)" + "".join(f" + {d}" for d in data_files))


# -- stateful models as users export them (issue 14) -------------------------------------------


def _lower_state(ep: ExportedProgram, backend: str, keep_names: bool) -> ExecutorchProgramManager:
    """ExecuTorch's default export (`keep_names` False: no emit_mutable_buffer_names, so the
    program records no name for its own mutable buffers), or the same with names kept. The one
    pass added either way stores each buffer's initial value, which calls compared with eager
    PyTorch need; it records no name."""
    config = ExecutorchBackendConfig(
        emit_mutable_buffer_names=keep_names,
        passes=[InitializedMutableBufferPass(["total", "k_cache", "v_cache", "a_step"])],
    )
    if backend == "portable":
        return to_edge(ep).to_executorch(config)
    if backend == "xnnpack":
        return to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch(config)
    if backend == "native":
        part = NativePartitioner(external_constants_tag=None)
        return to_edge_transform_and_lower(ep, partitioner=[part]).to_executorch(config)
    raise ValueError(backend)


def _state_models() -> dict[str, tuple[Callable[[], torch.nn.Module], list[tuple[torch.Tensor, ...]]]]:
    """The models only the state fixtures use, as _models(): name -> (constructor, two calls)."""
    g = torch.Generator().manual_seed(1)
    step = [(torch.rand(1, 1, 4, generator=g), torch.tensor([p], dtype=torch.long)) for p in (0, 1)]
    return {"kvpair": (KvPair, step), "kvpair16": (lambda: KvPair(rows=16), step)}


def _state_fixtures(out: Path, index: dict[str, Any], backends: list[str]) -> None:
    """Every model with state, exported with ExecuTorch's defaults (`<model>_<backend>_default.pte`)
    for each lowering, `kvpair` also with names kept (`kvpair_<backend>.pte`, as the older models'
    files are), and `kvpair16`, the same model with 16 cache rows instead of 8, for refusals."""
    models = {**_models(), **_state_models()}
    lowerings = [b for b in backends if b != "nfat"]
    for model_name in ("buffer", "kvcache", "kvpair"):
        ctor, calls = models[model_name]
        for backend in lowerings:
            _write_fixture(out, index, f"{model_name}_{backend}_default", model_name, backend, ctor, calls,
                           lambda ep, b=backend: _lower_state(ep, b, False), buffer_names=False)
    ctor, calls = models["kvpair"]
    for backend in lowerings:
        _write_fixture(out, index, f"kvpair_{backend}", "kvpair", backend, ctor, calls,
                       lambda ep, b=backend: _lower_state(ep, b, True), buffer_names=True)
    ctor, calls = models["kvpair16"]
    _write_fixture(out, index, "kvpair16_xnnpack_default", "kvpair16", "xnnpack", ctor, calls,
                   lambda ep: _lower_state(ep, "xnnpack", False), buffer_names=False, variant_of="kvpair")


# -- fat delegates (issue 20) --------------------------------------------------------------------


def _fat_fixtures(out: Path, index: dict[str, Any]) -> None:
    """`<model>_fat.pte` for add, mlp and the stateful models: the partitions XNNPACK takes become
    fat delegates (backend id FatpteBackend, fatpte.ops.fat_lowering) holding the XNNPACK payload
    (priority 10) and the same partition as a nested portable program; the rest of the program,
    the mutable state included, stays in the outer program as ExecuTorch lowers it."""
    from fatpte.ops.fat_lowering import Lowering, fat_partitioner

    lowerings = [Lowering("xnnpack", "XnnpackBackend", priority=10), Lowering("portable")]

    def lower(ep: ExportedProgram) -> ExecutorchProgramManager:
        config = ExecutorchBackendConfig(emit_mutable_buffer_names=True,
                                         passes=[InitializedMutableBufferPass(["total", "k_cache"])])
        part = fat_partitioner(XnnpackPartitioner(), lowerings)
        return to_edge_transform_and_lower(ep, partitioner=[part]).to_executorch(config)

    for model_name in ("add", "mlp", "buffer", "kvcache"):
        ctor, calls = _models()[model_name]
        _write_fixture(out, index, f"{model_name}_fat", model_name, "fat", ctor, calls, lower, buffer_names=True,
                       fat_entries=[lw.name for lw in lowerings])


# -- feature tiers (issue 29) --------------------------------------------------------------------
# One stateless model (mlp) and one stateful model (kvcache), each lowered four ways that one
# container can hold under one program signature: portable, XNNPACK fp32, XNNPACK fp16 and XNNPACK
# static int8, all with ExecuTorch's default export settings (the stateful model's initial cache
# is stored in the program, as for the other `_default` files, so calls can be compared with eager
# PyTorch). The fp32 and portable programs are the `<model>_xnnpack.pte` / `<model>_portable.pte`
# (mlp) and `kvcache_<backend>_default.pte` files, checked here to be exactly what the default
# export writes; fp16 and int8 are new files. `fixtures.json` records under "tiers" the calls (with
# the fp32 eager outputs), each variant's own eager reference (the half-precision model, the
# quantized GraphModule) over the same calls, and each variant's tolerance; `<model>_tiers.pack.toml`
# packs the variants into a container whose entries target CPU feature levels.

TIER_MODELS = ("mlp", "kvcache")

# The rule every tolerance below follows, per output tensor of a call:
#   max |got - want| <= atol + rtol * max |want|
# Measured with tools/tier_matrix.py --each-variant (every variant run alone, fatpte-run cross-built
# for aarch64 under qemu 7.2 -cpu cortex-a53, cortex-a76, neoverse-n1, a64fx, max,sme=off, and natively
# on an x86-64 host), as max|got - want| / max|want| over the calls:
# - fp32 XNNPACK and portable against the fp32 eager outputs: at most 1.2e-7 (bit-identical across
#   the ARM models; x86 within 1e-7 of them);
# - fp16 against its half-precision eager model: 9.3e-4 (mlp) and 1.6e-3 (kvcache) on the cores
#   with fp16 arithmetic; 1e-9 to 4.6e-4 where XNNPACK rewrites it to fp32 (cortex-a53, x86);
#   against the fp32 eager outputs at most 1.2e-3;
# - int8 against its quantized GraphModule: at most 4e-8; against the fp32 eager outputs 7e-3 (mlp)
#   and 2.1e-2 (kvcache, whose scores multiply two quantized values), the same on every CPU;
# - under -cpu max (SME on), int8 is 87 to 257% off: qemu 7.2 computes SME's SMOPA wrongly.
# The tolerances leave about twice the largest figure; an int8 reference tolerance of 1e-2 also
# admits one quantization step of difference where another CPU's kernels round a tie the other way.
TIER_TOLERANCE = {
    "fp32": {"reference": {"rtol": 1e-6, "atol": 1e-7}, "eager": {"rtol": 1e-6, "atol": 1e-7}},
    "fp16": {"reference": {"rtol": 3e-3, "atol": 1e-5}, "eager": {"rtol": 5e-3, "atol": 1e-5}},
    "int8": {"reference": {"rtol": 1e-2, "atol": 1e-5}, "eager": {"rtol": 4e-2, "atol": 1e-5}},
}
TOLERANCE_RULE = "per output tensor: max|got - want| <= atol + rtol * max|want|"

# The container's entries, first to last: (entry name, variant, priority, requirements). Each ARM
# entry states the CPU feature its variant needs to run as meant (XNNPACK runs an fp16 program on a
# CPU without fp16 arithmetic too, silently rewritten to fp32; int8 wants the dot product
# instructions); the x86 entry is the fp32 XNNPACK program for AVX2 + FMA machines; portable last.
TIER_ENTRIES: tuple[tuple[str, str, int, dict[str, list[str]] | None], ...] = (
    ("xnnpack-int8-asimddp", "xnnpack-int8", 40, {"arch": ["aarch64"], "cpu_features": ["asimddp"]}),
    ("xnnpack-fp16-asimdhp", "xnnpack-fp16", 30, {"arch": ["aarch64"], "cpu_features": ["asimdhp"]}),
    ("xnnpack-fp32-aarch64", "xnnpack-fp32", 20, {"arch": ["aarch64"]}),
    ("xnnpack-fp32-avx2", "xnnpack-fp32", 10, {"arch": ["x86_64"], "cpu_features": ["avx2", "fma"]}),
    ("portable", "portable", 0, None),
)


class HalfPrecision(torch.nn.Module):
    """`inner` computed in float16, its float32 input and output cast inside forward: the program
    keeps the float32 model's signature (`inner.half()` alone would take and return float16)."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner.half()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x.half()).float()


class KvCacheHalf(torch.nn.Module):
    """KvCache computed in float16. The cache stays a float32 buffer (the program's state is part
    of its signature); it holds float16 values, so it converts to float16 exactly."""

    def __init__(self, inner: KvCache) -> None:
        super().__init__()
        self.proj = inner.proj.half()
        self.register_buffer("k_cache", inner.k_cache.clone())

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        k = self.proj(x.half())
        self.k_cache.index_copy_(1, pos, k.float())
        return torch.matmul(k, self.k_cache.half().transpose(1, 2)).float()


Calls = list[tuple[torch.Tensor, ...]]


def _tier_calls() -> dict[str, tuple[Calls, Calls]]:
    """Model -> (the calls recorded and run, the calls int8 calibration sees): fixed inputs in
    [-1, 1), three successive calls (the KV cache fills rows 0, 1, 2), calibration on others (the
    KV cache's cycling through its 8 rows)."""
    g = torch.Generator().manual_seed(3)

    def r(*shape: int) -> torch.Tensor:
        return torch.rand(*shape, generator=g) * 2.0 - 1.0

    mlp_calls = [(r(1, 4),) for _ in range(3)]
    kv_calls = [(r(1, 1, 4), torch.tensor([p], dtype=torch.long)) for p in range(3)]
    # 256 calibration calls: with 8 the observed ranges miss what the recorded calls reach, and the
    # int8 models end 5 to 20% off the fp32 eager outputs instead of about 1%.
    return {"mlp": (mlp_calls, [(r(1, 4),) for _ in range(256)]),
            "kvcache": (kv_calls, [(r(1, 1, 4), torch.tensor([i % 8], dtype=torch.long)) for i in range(256)])}


def _eager_outputs(model: torch.nn.Module, calls: Calls) -> list[list[dict[str, Any]]]:
    """The outputs of `calls` run in order on a copy of `model` (its state left as it was)."""
    m = copy.deepcopy(model)
    with torch.no_grad():
        return [[_tensor_json(m(*c))] for c in calls]


def _quantized(model: torch.nn.Module, example: tuple[torch.Tensor, ...], calibration: Calls) -> torch.nn.Module:
    """Static int8 with the pt2e flow and XNNPACK's quantizer (symmetric, per-channel weights),
    calibrated on `calibration`. The mutable buffers get their initial values back afterwards:
    calibration runs the model, which writes its state."""
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))
    with torch.no_grad():
        graph = export(copy.deepcopy(model), example, strict=True).module()
        initial = {k: v.clone() for k, v in graph.named_buffers()}
        prepared = prepare_pt2e(graph, quantizer)
        for c in calibration:
            prepared(*c)
        converted = convert_pt2e(prepared)
        for name, buf in converted.named_buffers():
            if name in initial:
                buf.copy_(initial[name])
    return converted


def _lower_default(model: torch.nn.Module, example: tuple[torch.Tensor, ...], backend: str) -> bytes:
    """ExecuTorch's default export and lowering; the one pass added stores the KV cache's
    initial value in the program (it records no name). Exported with grad mode on, as the
    `_default` files are (under torch.no_grad() the XNNPACK program's flatbuffer differs)."""
    config = ExecutorchBackendConfig(passes=[InitializedMutableBufferPass(["k_cache"])])
    ep = export(model, example, strict=True)
    if backend == "portable":
        return bytes(to_edge(ep).to_executorch(config).buffer)
    return bytes(to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch(config).buffer)


def _tier_pack_toml(model_name: str, files: dict[str, str]) -> str:
    """The pack.toml (docs/pack-toml.md) of `model_name`'s tier container."""
    lines = [
        f"# The feature-tiered container of the {model_name} fixtures (issue 29), written by",
        "# tools/make_executorch_fixtures.py; pack with `fatpte pack -o OUT.nfat --from THIS`.",
        "# fixtures.json, \"tiers\", records each entry's variant, reference outputs and tolerance.",
        "version = 2",
    ]
    for name, variant, priority, requires in TIER_ENTRIES:
        lines += ["", "[[specialization]]", f'name = "{name}"', f'payload = "{files[variant]}"',
                  'signature = "from-payload"', f"priority = {priority}"]
        if variant != "portable":
            lines.append("share_named_data = true")
        if requires:
            parts = ", ".join(f"{k} = [{', '.join(json.dumps(w) for w in v)}]" for k, v in requires.items())
            lines.append(f"requires = {{ {parts} }}")
    return "\n".join(lines) + "\n"


def _tier_fixtures(out: Path, index: dict[str, Any]) -> None:
    """The fp16 and int8 files, the "tiers" records and the pack.toml of each model in TIER_MODELS."""
    ctors = {"mlp": (Mlp, HalfPrecision), "kvcache": (KvCache, KvCacheHalf)}
    index["tiers"] = {"tolerance_rule": TOLERANCE_RULE, "models": {}}
    for model_name, (calls, calibration) in _tier_calls().items():
        ctor, half = ctors[model_name]
        torch.manual_seed(0)  # the weights every other lowering of the model has
        base = ctor().eval()
        suffix = "_default" if model_name == "kvcache" else ""
        files = {"portable": f"{model_name}_portable{suffix}.pte", "xnnpack-fp32": f"{model_name}_xnnpack{suffix}.pte",
                 "xnnpack-fp16": f"{model_name}_xnnpack_fp16{suffix}.pte",
                 "xnnpack-int8": f"{model_name}_xnnpack_int8{suffix}.pte"}
        half_model = half(copy.deepcopy(base)).eval()
        int8_model = _quantized(base, calls[0], calibration)
        models = {"portable": base, "xnnpack-fp32": base, "xnnpack-fp16": half_model, "xnnpack-int8": int8_model}
        eager = _eager_outputs(base, calls)
        variants: dict[str, Any] = {}
        for variant, model in models.items():
            program = _lower_default(copy.deepcopy(model), calls[0],
                                     "portable" if variant == "portable" else "xnnpack")
            path = out / files[variant]
            if variant in ("portable", "xnnpack-fp32"):
                # Written above by the older export code: the default export must give the same bytes.
                if path.read_bytes() != program:
                    raise SystemExit(f"{path}: ExecuTorch's default export of {model_name} ({variant}) "
                                     "differs from the committed file")
            else:
                path.write_bytes(program)
                print(f"wrote {path} ({len(program)} bytes)")
            precision = variant.rsplit("-", 1)[-1] if variant != "portable" else "fp32"
            variants[variant] = {
                "file": path.name,
                "backend": "portable" if variant == "portable" else "xnnpack",
                "precision": precision,
                "reference": eager if precision == "fp32" else _eager_outputs(model, calls),
                "tolerance": TIER_TOLERANCE[precision],
            }
        variants["xnnpack-int8"]["quantization"] = (
            "pt2e XNNPACKQuantizer, symmetric, per-channel weights, static activations calibrated on "
            f"{len(calibration)} fixed inputs (not the recorded calls)")
        variants["xnnpack-fp16"]["half_precision"] = "float16 weights and compute, float32 inputs, outputs and state"
        pack_toml = out / f"{model_name}_tiers.pack.toml"
        pack_toml.write_text(_tier_pack_toml(model_name, files))
        index["tiers"]["models"][model_name] = {
            "calls": [{"inputs": [_tensor_json(t) for t in c], "outputs": e} for c, e in zip(calls, eager)],
            "variants": variants,
            "container": {"pack_toml": pack_toml.name,
                          "entries": [{"name": n, "variant": v, "priority": p, "requires": r or {}}
                                      for n, v, p, r in TIER_ENTRIES]},
        }
        print(f"wrote {pack_toml}")


# -- float16 I/O (issue 39) and OpenVINO (issue 40) ----------------------------------------------
# How users make these, with ExecuTorch's defaults and nothing added:
# - `model.half()` then XnnpackPartitioner gives a program whose float inputs, outputs and state are
#   float16 (`<model>_xnnpack_fp16io_default.pte`): a tier whose program signature differs from the
#   float32 tiers' in dtype only, the case signature adapters (specs/nfat-manifest.md) exist for.
#   fixtures.json "fp16io" records, per model, the float32 calls of "tiers" (what a container of
#   float32 signature is given), the program's own signature, the half-precision eager outputs
#   of the same calls (inputs rounded to float16, outputs widened to float32) and the tolerance.
# - OpenvinoPartitioner with the compile spec `device` = CPU (`<model>_openvino_default.pte`): the
#   payload is OpenVINO's compiled model for the CPU plugin. "openvino" records the float32 calls,
#   their eager outputs, the compile specs and the tolerance. OpenVINO's CPU plugin computes in
#   bfloat16 by default on CPUs with AVX-512 BF16 or AMX (its INFERENCE_PRECISION_HINT), in float32
#   elsewhere: measured with fatpte-run on a Xeon with AMX, max|got - want| / max|want| over the
#   calls is 6.6e-3 (mlp) and 4.7e-3 (kvcache); the tolerance leaves three times that.
#   The partitioner refuses `device` = GPU where OpenVINO lists no GPU, as on the machines these
#   files were made on.

FP16IO_TOLERANCE = TIER_TOLERANCE["fp16"]
OPENVINO_TOLERANCE = {"rtol": 2e-2, "atol": 1e-5}


def _half_calls(calls: Calls) -> Calls:
    """The calls as the float16 program takes them: float tensors rounded to float16."""
    return [tuple(t.half() if t.is_floating_point() else t for t in c) for c in calls]


def _widened_outputs(model: torch.nn.Module, calls: Calls) -> list[list[dict[str, Any]]]:
    """`model`'s outputs over `calls` in order (its state left as it was), widened to float32."""
    m = copy.deepcopy(model)
    with torch.no_grad():
        return [[_tensor_json(m(*c).float())] for c in calls]


def _export_signature(model: torch.nn.Module, example: tuple[torch.Tensor, ...]) -> dict[str, Any]:
    return _signature(export(copy.deepcopy(model), example, strict=True).run_decompositions({}))


def _fp16io_fixtures(out: Path, index: dict[str, Any]) -> None:
    """`<model>_xnnpack_fp16io_default.pte` of each TIER_MODELS model and its "fp16io" record."""
    ctors = {"mlp": Mlp, "kvcache": KvCache}
    index["fp16io"] = {"tolerance_rule": TOLERANCE_RULE, "models": {}}
    for model_name, (calls, _) in _tier_calls().items():
        torch.manual_seed(0)  # the weights every other lowering of the model has
        half = ctors[model_name]().eval().half()
        half_calls = _half_calls(calls)
        program = _lower_default(copy.deepcopy(half), half_calls[0], "xnnpack")
        path = out / f"{model_name}_xnnpack_fp16io_default.pte"
        path.write_bytes(program)
        print(f"wrote {path} ({len(program)} bytes)")
        index["fp16io"]["models"][model_name] = {
            "file": path.name,
            "export": "model.half(), torch.export on float16 inputs, XnnpackPartitioner, ExecuTorch defaults",
            "signature": _export_signature(half, half_calls[0]),
            "calls": [{"inputs": [_tensor_json(t) for t in c]} for c in calls],
            "reference": _widened_outputs(half, half_calls),
            "tolerance": FP16IO_TOLERANCE,
        }


def _openvino_fixtures(out: Path, index: dict[str, Any]) -> None:
    """`<model>_openvino_default.pte` of each TIER_MODELS model and its "openvino" record."""
    from executorch.backends.openvino.partitioner import OpenvinoPartitioner
    from executorch.exir.backend.compile_spec_schema import CompileSpec

    ctors = {"mlp": Mlp, "kvcache": KvCache}
    specs = {"device": "CPU"}
    index["openvino"] = {"tolerance_rule": TOLERANCE_RULE, "openvino": importlib.metadata.version("openvino"),
                         "models": {}}
    for model_name, (calls, _) in _tier_calls().items():
        torch.manual_seed(0)
        model = ctors[model_name]().eval()
        config = ExecutorchBackendConfig(passes=[InitializedMutableBufferPass(["k_cache"])])
        partitioner = OpenvinoPartitioner([CompileSpec(k, v.encode()) for k, v in specs.items()])
        ep = export(copy.deepcopy(model), calls[0], strict=True)
        program = bytes(to_edge_transform_and_lower(ep, partitioner=[partitioner]).to_executorch(config).buffer)
        path = out / f"{model_name}_openvino_default.pte"
        path.write_bytes(program)
        print(f"wrote {path} ({len(program)} bytes)")
        eager = _eager_outputs(model, calls)
        index["openvino"]["models"][model_name] = {
            "file": path.name,
            "export": "OpenvinoPartitioner(compile spec device=CPU), ExecuTorch defaults",
            "compile_specs": specs,
            "signature": _export_signature(model, calls[0]),
            "calls": [{"inputs": [_tensor_json(t) for t in c], "outputs": e} for c, e in zip(calls, eager)],
            "tolerance": OPENVINO_TOLERANCE,
        }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("tests/fixtures/executorch"))
    args = ap.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)

    backends = ["portable", "xnnpack"] + (["native", "nfat"] if NativePartitioner is not None else [])
    index: dict[str, Any] = {"versions": _versions(), "command": COMMAND, "files": {}}
    jobs: list[tuple[str, str, bool]] = [(m, b, False) for m in _models() for b in backends]
    jobs.append(("mlp", "portable", True))
    if NativePartitioner is not None:
        jobs.append(("mlp", "native", True))

    for model_name, backend, external in jobs:
        ctor, calls = _models()[model_name]
        stem = f"{model_name}_{backend}" + ("_external" if external else "")
        _write_fixture(out, index, stem, model_name, backend, ctor, calls,
                       lambda ep, b=backend, x=external: _lower(ep, b, x), buffer_names=True)
    _state_fixtures(out, index, backends)
    _fat_fixtures(out, index)
    _tier_fixtures(out, index)
    _fp16io_fixtures(out, index)
    _openvino_fixtures(out, index)

    if to_native is not None:
        write_ptn_fixtures(out, index)

    (out / "fixtures.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    versions = index["versions"]
    lines = [f"{k}=={v}" for k, v in sorted(versions.items()) if k not in ("python", "platform")]
    lines += [f"python {versions['python']} on {versions['platform']}"]
    (out / "VERSIONS.txt").write_text(
        "Generated by tools/make_executorch_fixtures.py with:\n  " + COMMAND + "\n\n" + "\n".join(lines) + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
