"""Making fat delegates with ExecuTorch's own toolchain: one partition lowered several ways.

`fat_partitioner(partitioner, lowerings)` wraps any ExecuTorch partitioner (XnnpackPartitioner,
...): the partitions it chooses are delegated to backend id `FatpteBackend`, whose `preprocess`
lowers each partition once per `Lowering` and packs the payloads into one NFAT container, the
delegate's payload (specs/executorch.md, "Fat delegates"):

- a backend lowering (`Lowering("xnnpack", backend="XnnpackBackend")`) runs that backend's
  `BackendDetails.preprocess` on the partition; its payload is the entry, which the fat delegate
  library forwards `init`/`execute`/`destroy` to at run time;
- `Lowering("portable", backend=None)` makes the partition a whole program of its own (ET12, the
  portable operators), which the fat delegate runs as a nested program ("ET-within-ET", as
  upstream's specialization recipes pack MLX).

Each lowering has a priority and requirements, written into the container's manifest like any
entry's. At run time the library (`libexecutorch_backend_fatpte.so`) validates the container,
selects with fatpte's rule among the entries whose backends are registered and available in the
process, and runs the chosen one.

This is upstream's `NativePartitioner(specializations=...)` idea with every backend ExecuTorch has.
torch and executorch are imported only when a partitioner is made; they are not dependencies of
fatpte.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.pte import read_program
from fatpte.ops.packing import pack
from fatpte.ops.specialization import RequirementsMapping, Specialization

FAT_BACKEND_ID = "FatpteBackend"  # the id the fat delegate library registers (et_fat_backend.hpp)
PLAN_KEY = "fatpte_lowerings"  # the compile spec that carries the plan to preprocess


@dataclasses.dataclass(frozen=True)
class Lowering:
    """One way to lower the partition: `backend` is an ExecuTorch backend id whose BackendDetails
    preprocesses it (e.g. "XnnpackBackend"), or None for a nested portable program."""

    name: str
    backend: str | None = None
    priority: int = 0
    requires: RequirementsMapping | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "backend": self.backend, "priority": self.priority,
                "requires": dict(self.requires) if self.requires else None}


def _backend_details(name: str) -> Any:
    from executorch.exir.backend.backend_details import BackendDetails

    def walk(cls: Any) -> Any:
        for sub in cls.__subclasses__():
            if sub.__name__ == name:
                return sub
            found = walk(sub)
            if found is not None:
                return found
        return None

    found = walk(BackendDetails)
    if found is None:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"no BackendDetails named {name!r} is imported; import the "
                          "backend's partitioner module first", field="lowerings")
    return found


def _nested_program(edge_program: Any) -> bytes:
    """The partition as a whole ExecuTorch program of portable operators."""
    from executorch.exir import EdgeCompileConfig, EdgeProgramManager, ExecutorchBackendConfig

    # The partition is in the edge dialect already, with the operators the partitioner asked
    # to keep whole (aten.linear for XNNPACK); the runtime's kernels run those as they are.
    manager = EdgeProgramManager({"forward": copy.deepcopy(edge_program)},
                                 compile_config=EdgeCompileConfig(_check_ir_validity=False))
    return bytes(manager.to_executorch(ExecutorchBackendConfig()).buffer)


def _program_backends(payload: bytes) -> list[str]:
    program = read_program(payload)
    return sorted({d.backend_id for m in program.methods for d in m.delegates})


def fat_payload(edge_program: Any, lowerings: Sequence[Lowering],
                compile_specs: Mapping[str, Sequence[Any]] | None = None) -> tuple[bytes, Any]:
    """The NFAT container of `edge_program` lowered each way of `lowerings`, in their order, and
    the named data the backend payloads look up at run time (a NamedDataStoreOutput: XNNPACK keeps
    its weights there), which the outer program stores and the fat delegate passes on."""
    if not lowerings:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "a fat delegate needs at least one lowering", field="lowerings")
    from executorch.exir._serialize._named_data_store import NamedDataStore

    store = NamedDataStore()
    specs = []
    for lowering in lowerings:
        if lowering.backend is None:
            payload = _nested_program(edge_program)
            specs.append(Specialization("portable", payload, name=lowering.name, priority=lowering.priority,
                                        requires=lowering.requires, executorch_backends=_program_backends(payload)))
        else:
            details = _backend_details(lowering.backend)
            inner = (compile_specs or {}).get(lowering.backend, [])
            result = details.preprocess(copy.deepcopy(edge_program), list(inner))
            if result.data_store_output is not None:
                store.merge_named_data_store(result.data_store_output)
            specs.append(Specialization(lowering.name, bytes(result.processed_bytes), name=lowering.name,
                                        priority=lowering.priority, requires=lowering.requires,
                                        executorch_backends=[lowering.backend]))
    with tempfile.TemporaryDirectory() as tmp:
        return pack(specs, Path(tmp) / "delegate.nfat").read_bytes(), store.get_named_data_store_output()


def _fat_backend_class() -> Any:
    """The BackendDetails ExecuTorch finds by the delegate id FatpteBackend (made once)."""
    from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult

    for sub in BackendDetails.__subclasses__():
        if sub.__name__ == FAT_BACKEND_ID:
            return sub

    class FatpteBackend(BackendDetails):  # type: ignore[misc]
        @staticmethod
        def preprocess(edge_program: Any, compile_specs: list[Any]) -> Any:
            plan = next((json.loads(bytes(s.value)) for s in compile_specs if s.key == PLAN_KEY), None)
            if plan is None:
                raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"the fat delegate's compile specs carry no {PLAN_KEY}",
                                  field="compile_specs")
            lowerings = [Lowering(p["name"], p["backend"], p["priority"], p["requires"]) for p in plan]
            payload, named_data = fat_payload(edge_program, lowerings)
            return PreprocessResult(processed_bytes=payload, data_store_output=named_data)

    _made.append(FatpteBackend)  # BackendDetails.__subclasses__() holds classes weakly
    return FatpteBackend


_made: list[Any] = []


def fat_partitioner(partitioner: Any, lowerings: Sequence[Lowering]) -> Any:
    """`partitioner` (an ExecuTorch Partitioner) whose partitions become fat delegates of
    `lowerings`: pass the result to `to_edge_transform_and_lower(..., partitioner=[...])`."""
    if not lowerings:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "a fat delegate needs at least one lowering", field="lowerings")
    from executorch.exir.backend.compile_spec_schema import CompileSpec
    from executorch.exir.backend.partitioner import DelegationSpec

    _fat_backend_class()
    plan = json.dumps([lw.to_json() for lw in lowerings], sort_keys=True).encode()
    wrapped = copy.copy(partitioner)
    wrapped.delegation_spec = DelegationSpec(FAT_BACKEND_ID, [CompileSpec(PLAN_KEY, plan)])
    return wrapped
