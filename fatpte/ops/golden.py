"""Golden calls at pack time (specs/nfat-manifest.md section 11): reading the calls a packer gives
(the `calls` list `fatpte-run --inputs` takes, each with its expected `outputs`), recording the
outputs by running one entry of the container with the real runtime (`golden_from`), and turning
them into what `pack` writes: one named-data key per distinct tensor (`fatpte.golden/` and a
digest of its layout and bytes, so equal tensors are one key and one segment), and each entry's
`GoldenCall`s with a tolerance per output.

A tolerance is the larger of the one the call gives an output (`"atol"`, `"rtol"` beside its
values), else the default of its dtype, and the one the packer gives the entry (`golden_tolerance`,
wider for a quantized or fp16 entry): the stored figure is final, readers apply no default.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, NamedTuple

from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.mapping import read_regular
from fatpte.fileio.strict_json import JsonRefused, JsonRules, loads
from fatpte.manifest.model import LAYOUT_DTYPES, SIGNATURE_CHECK_KEY, GoldenCall, GoldenOutput, TensorLayout
from fatpte.ops.golden_warnings import CallView, warn_calls
from fatpte.ops.specialization import NamedData, Specialization
from fatpte.value.canonical import CanonicalWriter
from fatpte.value.dtypes import CALLS_DTYPES, INTEGER_RANGES
from fatpte.value.tensors import as_float, decode, encode

KEY_PREFIX: Final = "fatpte.golden/"
# Tolerances by dtype when a call gives none (specs/nfat-manifest.md 11.1); integers and bool: exact.
DEFAULT_TOLERANCE: Final[dict[str, tuple[float, float]]] = {
    "float32": (1e-5, 1e-5), "float16": (1e-3, 1e-3), "bfloat16": (1e-2, 1.6e-2), "float64": (1e-7, 1e-7),
}
MAX_CALLS_FILE: Final = 1 << 30  # a calls.json read whole: its values become tensors in memory
# calls.json as C++ reads it (loader/src/common/json.cpp, `parse(text, source)`, the reader of
# `fatpte-run --inputs`): UTF-8, no key twice, values 64 deep with the document at 1, NaN, Infinity
# and -Infinity as numbers, integers of at most MAX_INTEGER_DIGITS digits (a longer one is a float
# as strtod reads it), no lone surrogate (issue 42 P2; specs/vectors/calls/); a refusal at the byte
# where C++ refuses it (as_loader).
CALLS_JSON: Final = JsonRules(max_bytes=MAX_CALLS_FILE, max_depth=64, depth_of="values", constants=True,
                              lone_surrogates=False, huge_as_float=True, as_loader=True)


class Tensor(NamedTuple):
    """A golden tensor: its dtype, sizes and bytes (row-major, little-endian)."""

    dtype: str
    sizes: tuple[int, ...]
    data: bytes

    @property
    def layout(self) -> TensorLayout:
        return TensorLayout(self.dtype, self.sizes)

    @property
    def key(self) -> str:
        """`fatpte.golden/` and the first 16 bytes of the SHA-256 of str(dtype), list(i32 size) and
        the bytes, in hex (specs/nfat-manifest.md 11.1)."""
        w = CanonicalWriter()
        w.text(self.dtype)
        w.seq(self.sizes, w.i32)
        h = hashlib.sha256(w.result())
        h.update(self.data)
        return KEY_PREFIX + h.hexdigest()[:32]


class Call(NamedTuple):
    """One golden call as given: `outputs` None until recorded; a tolerance per output, None parts
    taking the dtype's default."""

    method: str
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...] | None
    tolerances: tuple[tuple[float | None, float | None], ...] = ()


def _arg(path: str, message: str, actual: Any = None) -> FatpteError:
    return FatpteError(ErrorCode.INVALID_ARGUMENT, f"{path}: {message}", field=path, actual=_shown(actual))


def _shown(value: Any) -> Any:
    """A value a caller gave, as an error may hold it: a scalar, a string clipped, an integer
    past 64 bits by its size (its digits could be too many to print), anything else by its type
    (a list may nest deeper than repr recurses)."""
    if value is None or isinstance(value, (bool, float)):
        return value
    if isinstance(value, int):
        return value if value.bit_length() <= 64 else f"an integer of {value.bit_length()} bits"
    if isinstance(value, str):
        return ascii(value[:80])[1:-1]
    return type(value).__name__


def _is_number(value: Any, dtype: str) -> bool:
    """Whether `value` (a decoded JSON value) is an element of `dtype` as C++ takes it: bool true,
    false, 0 or 1; an integer within an integer dtype's range; any number for a float dtype
    (never true or false)."""
    if dtype == "bool":
        return isinstance(value, bool) or (type(value) is int and value in (0, 1))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if dtype in INTEGER_RANGES:
        low, high = INTEGER_RANGES[dtype]
        return isinstance(value, int) and low <= value <= high
    return True


def _text(value: Any, path: str, what: str) -> str:
    """A string of calls.json, refused when it is not one or holds a lone surrogate (a Python
    caller can give one; UTF-8 cannot hold it)."""
    if not isinstance(value, str):
        raise _arg(path, f"must be {what}", value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _arg(path, f"must be {what}: it holds a lone surrogate", value) from None
    return value


def tensor_from_mapping(obj: Any, path: str) -> Tensor:
    """A calls.json tensor, `{"dtype": "float32", "shape": [2, 3], "values": [...]}`, as bytes:
    the checks of C++'s reader (loader/src/value/tensor.cpp), in its order, on the same fields."""
    if not isinstance(obj, Mapping):
        raise _arg(path, "a tensor is {\"dtype\", \"shape\", \"values\"}", obj)
    dtype = _text(obj.get("dtype"), f"{path}.dtype", "a string")
    if dtype not in CALLS_DTYPES:
        raise _arg(f"{path}.dtype", f"{dtype!r} is not one of {', '.join(CALLS_DTYPES)}", dtype)
    shape = obj.get("shape")
    if not isinstance(shape, list):
        raise _arg(f"{path}.shape", "must be a list of sizes ([] for a scalar)", shape)
    for d, size in enumerate(shape):
        if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size < 1 << 31:
            raise _arg(f"{path}.shape[{d}]", "must be a size from 0 to 2^31 - 1", size)
    values = obj.get("values")
    if not isinstance(values, list):
        raise _arg(f"{path}.values", "must be a flat list of the elements in row-major order", values)
    count = math.prod(shape)
    if count >= (1 << 64) - 1:  # C++ counts elements in 64 bits (loader/src/value/tensor.cpp)
        raise _arg(f"{path}.shape", f"{shape} has more elements than 64 bits count")
    if len(values) != count:
        raise _arg(f"{path}.values", f"holds {len(values)} elements, but shape {shape} has {count}", len(values))
    for k, v in enumerate(values):
        if not _is_number(v, dtype):
            raise _arg(f"{path}.values[{k}]", f"{_shown(v)!r} is not a {dtype} value", v)
    return Tensor(dtype, tuple(shape), encode(dtype, values))


def _tolerance(value: Any, path: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(as_float(value)) \
            or value < 0:
        raise _arg(path, "a tolerance is a finite number at least 0", value)
    return float(value)


def tolerance_from_mapping(obj: Any, path: str) -> tuple[float, float] | None:
    """An entry's golden tolerance, `{"atol": 1e-5, "rtol": 0.04}` (either may be left out: 0)."""
    if obj is None:
        return None
    if not isinstance(obj, Mapping) or set(obj) - {"atol", "rtol"}:
        raise _arg(path, "must be a mapping with atol and/or rtol", obj)
    return (_tolerance(obj.get("atol", 0.0), f"{path}.atol") or 0.0,
            _tolerance(obj.get("rtol", 0.0), f"{path}.rtol") or 0.0)


def read_calls(source: Any, *, need_outputs: bool) -> list[Call]:
    """The golden calls of a calls.json document: a path, or its decoded list. Each call is
    `{"inputs": [tensor, ...], "outputs": [tensor, ...], "method": "forward"}`; an output tensor
    may carry its own `"atol"` and `"rtol"`. `need_outputs`: each call must state its outputs (no
    entry records them). Calls without `method` call `forward`."""
    label = "golden"
    if isinstance(source, (str, os.PathLike)):
        label = os.fspath(source)
        raw = read_regular(source, MAX_CALLS_FILE, "the golden calls")  # E0811 for a FIFO or a device
        try:
            source = loads(raw, CALLS_JSON)
        except JsonRefused as exc:
            # At the byte where fatpte-run refuses it too (no field: the text is not yet a value).
            at = "" if exc.offset is None else f" at byte {exc.offset}"
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{label} is not valid JSON{at} ({exc.kind}): {exc}",
                              offset=exc.offset, source=label) from None
    if not isinstance(source, list):  # E0702 at `calls`, as fatpte-run --inputs refuses it
        raise _arg(label, "must be a JSON list with one {\"inputs\": [...], \"outputs\": [...]} object per call",
                   source)
    if not source:
        raise FatpteError(ErrorCode.NO_GOLDEN_CALLS, f"{label}: golden calls are a non-empty list of "
                          "{\"inputs\": [...], \"outputs\": [...]}", field=label)
    calls = []
    for c, obj in enumerate(source):
        path = f"{label}[{c}]"
        if not isinstance(obj, Mapping):  # C++ finds no inputs in it
            raise _arg(f"{path}.inputs", "a call is {\"inputs\": [...], \"outputs\": [...], \"method\": ...}", obj)
        ins = obj.get("inputs")  # read first, as C++ reads it (C++ reads nothing else)
        if not isinstance(ins, list):
            raise _arg(f"{path}.inputs", "must be a list of tensors", ins)
        inputs = tuple(tensor_from_mapping(t, f"{path}.inputs[{j}]") for j, t in enumerate(ins))
        method = _text(obj.get("method", "forward"), f"{path}.method", "a method name")
        if not method or len(method.encode("utf-8")) > 4096:
            raise _arg(f"{path}.method", "must be a method name (1 to 4096 bytes)", method[:80])
        outs = obj.get("outputs")
        outputs = None
        tolerances: tuple[tuple[float | None, float | None], ...] = ()
        if outs is not None:
            if not isinstance(outs, list):
                raise _arg(f"{path}.outputs", "must be a list of tensors", outs)
            outputs = tuple(tensor_from_mapping(t, f"{path}.outputs[{j}]") for j, t in enumerate(outs))
            tolerances = tuple((_tolerance(t.get("atol"), f"{path}.outputs[{j}].atol"),
                                _tolerance(t.get("rtol"), f"{path}.outputs[{j}].rtol")) for j, t in enumerate(outs))
        elif need_outputs:
            raise FatpteError(ErrorCode.NO_GOLDEN_CALLS, f"{path}: the call states no outputs; give them, or record "
                              "them from an entry (--golden-from NAME)", field=f"{path}.outputs")
        calls.append(Call(method, inputs, outputs, tolerances))
    return calls


def golden_calls(calls: Sequence[Call], entry_tolerance: tuple[float, float] | None) -> tuple[GoldenCall, ...]:
    """The manifest's calls for one entry: each tensor by its key, each output's tolerance the larger
    of the call's (or its dtype's default) and the entry's."""
    out = []
    widen = entry_tolerance or (0.0, 0.0)
    for call in calls:
        assert call.outputs is not None
        outputs = []
        for j, t in enumerate(call.outputs):
            atol, rtol = call.tolerances[j] if j < len(call.tolerances) else (None, None)
            default = DEFAULT_TOLERANCE.get(t.dtype, (0.0, 0.0))
            outputs.append(GoldenOutput(t.key, max(default[0] if atol is None else atol, widen[0]),
                                        max(default[1] if rtol is None else rtol, widen[1])))
        out.append(GoldenCall(call.method, tuple(t.key for t in call.inputs), tuple(outputs)))
    return tuple(out)


def golden_named_data(calls: Sequence[Call]) -> dict[str, NamedData]:
    """Every tensor of `calls` as named data under its key, with its layout."""
    out: dict[str, NamedData] = {}
    for call in calls:
        for t in (*call.inputs, *(call.outputs or ())):
            if t.dtype not in LAYOUT_DTYPES:  # every dtype of CALLS_DTYPES is one
                raise _arg("golden", f"dtype {t.dtype!r} has no layout")
            out.setdefault(t.key, NamedData(t.data, layout=t.layout))
    return out


# pack([spec], dest, named_data=...): how `record` writes its scratch container (fatpte.ops.packing
# hands its own pack in, which imports this module).
PackOne = Callable[[Specialization, Path, Any], Path]


def prepare(specs: list[Specialization], golden: Any, golden_from: str | None, named_data: Any,
            dest: Path, pack_one: PackOne, *, runtime: str | None = None, aarch64_runtime: str | None = None,
            ) -> tuple[list[Specialization], dict[str, Any]]:
    """`specs` with their golden calls, and `named_data` with the golden tensors: what `pack` writes
    for `pack(golden=..., golden_from=...)`. Every entry gets the calls; those that state no program
    signature (nothing to check a call against) are given none by the manifest writer."""
    calls = read_calls(golden, need_outputs=golden_from is None)
    if golden_from is not None:
        calls = record(specs, golden_from, calls, named_data, dest, pack_one, runtime=runtime,
                       aarch64_runtime=aarch64_runtime)
    warn_calls([CallView(c.method, tuple((t.dtype, t.data) for t in c.inputs), tuple(t.key for t in c.outputs or ()))
                for c in calls], "the golden calls")
    merged: dict[str, Any] = dict(named_data or {})
    for key, value in golden_named_data(calls).items():
        if key in merged:
            raise FatpteError(ErrorCode.NAMED_DATA_CONFLICT, f"named-data key {key!r} is given by the caller and is a "
                              f"golden tensor's; keys starting with {KEY_PREFIX!r} are the golden tensors'",
                              field="named_data", actual=key)
        merged[key] = value
    out = []
    for i, s in enumerate(specs):
        tolerance = tolerance_from_mapping(s.golden_tolerance, f"specialization[{i}].golden_tolerance")
        out.append(dataclasses.replace(s, golden=golden_calls(calls, tolerance)))
    return out, merged


def record(specs: Sequence[Specialization], name: str, calls: Sequence[Call], named_data: Any, dest: Path,
           pack_one: PackOne, *, runtime: str | None = None, aarch64_runtime: str | None = None) -> list[Call]:
    """`calls` with the outputs entry `name` gives on them, run by the real runtime: the entry (and
    the named data) packed alone into a scratch container beside `dest`, run once per method by
    fatpte-run (fatpte.ops.runner), its outputs read back byte for byte."""
    from fatpte.device.fatpte_run import read_report
    from fatpte.ops import runner

    chosen = [s for s in specs if s.entry_name == name]
    if not chosen:
        names = ", ".join(repr(s.entry_name) for s in specs)
        raise FatpteError(ErrorCode.ENTRY_NOT_FOUND, f"golden_from names no entry: {name!r} is not one of {names}",
                          field="golden_from", actual=name)
    # Alone in the scratch container, the entry's signature is its own program's: a decision to take
    # another entry's (`signature_from`, recorded in its provenance) names an entry not packed here.
    provenance = {k: v for k, v in (chosen[0].provenance or {}).items() if k != SIGNATURE_CHECK_KEY}
    spec = dataclasses.replace(chosen[0], golden=(), golden_tolerance=None, provenance=provenance or None)
    work = Path(tempfile.mkdtemp(prefix=".fatpte-golden-", dir=dest.parent))
    try:
        scratch = pack_one(spec, work / "entry.nfat", named_data)
        from fatpte.container.locations import open as open_container

        with open_container(scratch) as c:
            entry = c.entries[0]
            me = c.manifest.entries[0] if c.manifest is not None else None
        place = runner.placement(entry, me, runtime=runtime, aarch64_runtime=aarch64_runtime)
        if place.runtime is None:
            raise FatpteError(ErrorCode.NO_SPECIALIZATION_FITS, f"golden_from: entry {name!r} cannot run on this "
                              f"machine: {place.reason}", field="golden_from", actual=name)
        methods = list(dict.fromkeys(call.method for call in calls))
        outputs: dict[int, tuple[Tensor, ...]] = {}
        for m, method in enumerate(methods):
            mine = [k for k, call in enumerate(calls) if call.method == method]
            doc = [{"inputs": [_tensor_json(t) for t in calls[k].inputs]} for k in mine]
            (work / f"calls-{m}.json").write_text(json.dumps(doc))
            saved = work / f"out-{m}"
            saved.mkdir()
            done = place.runtime.run([str(scratch), "--entry", name, "--method", method, "--inputs",
                                      str(work / f"calls-{m}.json"), "--json", "--save-outputs", str(saved)])
            report = read_report(done, place.runtime)
            if done.returncode != 0:
                why = list(report.dispatch) or [done.stderr.strip()]
                raise FatpteError(ErrorCode.NO_SPECIALIZATION_FITS, f"golden_from: entry {name!r} did not run its "
                                  f"calls of method {method!r} ({place.runtime.describe()}, exit {done.returncode}): "
                                  + " | ".join(str(w) for w in why[-3:]), field="golden_from", actual=name)
            for k, ran in zip(mine, report.calls):
                outputs[k] = tuple(Tensor(o["dtype"], tuple(o["shape"]), (saved / o["file"]).read_bytes())
                                   for o in ran["outputs"])
        return [call._replace(outputs=outputs[k]) for k, call in enumerate(calls)]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _tensor_json(t: Tensor) -> dict[str, Any]:
    """A tensor as calls.json writes it, its values exact."""
    return {"dtype": t.dtype, "shape": list(t.sizes), "values": decode(t.dtype, t.data)}
