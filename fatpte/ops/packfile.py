"""`fatpte.pack_from_file`: pack a container from a pack.toml description (docs/pack-toml.md).

The file is read strictly: an unknown key, a value of the wrong type or a missing file is
BAD_PACK_FILE naming the file and the key path, never a silent default. Paths are relative to the
directory of the pack.toml. Every setting that affects the bytes written (order of entries and of
named data, per-entry and per-key alignment) can be stated, so a pack.toml written from a
container reproduces it byte for byte.

`signature = "from-payload"` makes an entry a whole ExecuTorch program
(fatpte.executorch.specialize.pte_specialization): its signature, and its backend id when not
stated, are read from the payload, which must then be a .pte; its `data` (.ptd files) and, with
`share_named_data`, the program's own named data become its named data. Opt-in, so that a
pack.toml stating everything (what `fatpte unpack` writes) packs exactly what it states.
"""

from __future__ import annotations

import dataclasses
import math
import os
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from fatpte.errors import ErrorCode, FatpteError, clipped, quoted
from fatpte.fileio.mapping import read_regular
from fatpte.fileio.streams import Progress
from fatpte.manifest.model import GoldenCall, GoldenOutput, TensorLayout
from fatpte.ops.packing import write
from fatpte.ops.specialization import NamedData, Specialization

_TOP = ("version", "alignment", "segment_alignment", "signature", "source_digest", "named_data",
        "specialization", "signature_from", "check_signatures", "golden", "golden_from", "adapt_io")
_SPEC = ("backend_id", "payload", "name", "priority", "alignment", "requires", "named_data", "signature",
         "source_digest", "provenance", "payload_sha256", "data", "share_named_data", "executorch_backends",
         "golden_tolerance", "golden")
FROM_PAYLOAD = "from-payload"  # `signature = "from-payload"`: read the signature from the .pte payload
_PROGRAM_ONLY = ("data", "share_named_data")  # keys that only an entry with a derived signature takes


class _Ctx:
    def __init__(self, toml: Path) -> None:
        self.toml = toml
        self.base = toml.parent

    def bad(self, path: str, message: str, actual: Any = None) -> FatpteError:
        return FatpteError(ErrorCode.BAD_PACK_FILE, f"{path}: {message}", source=str(self.toml), field=path,
                           actual=actual)

    def keys(self, table: Any, allowed: tuple[str, ...], path: str) -> Mapping[str, Any]:
        if not isinstance(table, Mapping):
            raise self.bad(path, f"must be a table, not {type(table).__name__}", table)
        for k in table:
            if k not in allowed:
                raise self.bad(f"{path}.{k}" if path else k, f"unknown key {quoted(k)}; allowed: {', '.join(allowed)}", k)
        return table

    def file(self, value: Any, path: str) -> Path:
        if not isinstance(value, str) or not value or "\0" in value:
            raise self.bad(path, "must be a file path (relative to the pack.toml)", value)
        p = self.base / value
        try:
            found = p.is_file()
        except OSError as e:  # a name too long for the system, a loop of links: not a file either
            raise self.bad(path, f"{quoted(value)} is not a file ({e.strerror})", value) from None
        if not found:
            raise self.bad(path, f"{quoted(value)} is not a file (looked for {clipped(str(p))})", value)
        return p

    def integer(self, value: Any, path: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.bad(path, "must be an integer", value)
        return value


def _named_value(ctx: _Ctx, value: Any, path: str) -> Any:
    if isinstance(value, Mapping):
        ctx.keys(value, ("path", "alignment", "layout"), path)
        if "path" not in value:
            raise ctx.bad(f"{path}.path", "is missing")
        align = value.get("alignment")
        layout = None
        if "layout" in value:
            try:
                layout = TensorLayout.from_mapping(value["layout"], f"{path}.layout")
            except FatpteError as exc:
                where = exc.field or f"{path}.layout"
                raise ctx.bad(where, exc.message.removeprefix(f"{where}: "), value["layout"]) from None
        return NamedData(ctx.file(value["path"], f"{path}.path"),
                         None if align is None else ctx.integer(align, f"{path}.alignment"), layout)
    return ctx.file(value, path)


def load(toml_path: str | os.PathLike[str]) -> tuple[list[Specialization], dict[str, Any]]:
    """The specializations and pack() keyword arguments a pack.toml describes."""
    toml = Path(toml_path)
    ctx = _Ctx(toml)
    doc = _parse(ctx, _read(toml))
    try:
        return _load(ctx, doc)
    except FatpteError as exc:
        if exc.code is not ErrorCode.INVALID_ARGUMENT or exc.source is not None:
            raise
        # A value the records refuse (requires, signature, provenance, ...): E0708 at its key path.
        where = exc.field or "$"
        raise ctx.bad(where, exc.message.removeprefix(f"{where}: "), exc.actual) from None


# pack.toml files are written by people and by `fatpte unpack`; one larger than this is not one.
MAX_PACK_FILE_BYTES = 64 << 20


def _read(toml: Path) -> bytes:
    data = read_regular(toml, MAX_PACK_FILE_BYTES)  # a FIFO, device or directory: E0811 at once
    if len(data) > MAX_PACK_FILE_BYTES:
        raise FatpteError(ErrorCode.BAD_PACK_FILE, f"is larger than {MAX_PACK_FILE_BYTES} bytes: not a pack.toml",
                          source=str(toml), field="$")
    return data


def _parse(ctx: _Ctx, data: bytes) -> dict[str, Any]:
    """The TOML document, or BAD_PACK_FILE at field `$` (the document as a whole) saying where it
    breaks: bytes that are not UTF-8, TOML syntax, nesting deeper than the parser's stack."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ctx.bad("$", f"not UTF-8: byte {data[exc.start]:#04x} at offset {exc.start} (line {line})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ctx.bad("$", f"not valid TOML: {exc}") from None
    except RecursionError:
        raise ctx.bad("$", "not a pack.toml: arrays or tables nest too deeply to read") from None


def _load(ctx: _Ctx, doc: dict[str, Any]) -> tuple[list[Specialization], dict[str, Any]]:
    ctx.keys(doc, _TOP, "")
    kwargs: dict[str, Any] = {}
    for key in ("version", "alignment", "segment_alignment"):
        if key in doc:
            kwargs[key] = ctx.integer(doc[key], key)
    if "signature_from" in doc:
        if not isinstance(doc["signature_from"], str):
            raise ctx.bad("signature_from", "must be the name of an entry", doc["signature_from"])
        kwargs["signature_from"] = doc["signature_from"]
    if "check_signatures" in doc:
        if not isinstance(doc["check_signatures"], bool):
            raise ctx.bad("check_signatures", "must be true or false", doc["check_signatures"])
        kwargs["check_signatures"] = doc["check_signatures"]
    if "adapt_io" in doc:
        if not isinstance(doc["adapt_io"], bool):
            raise ctx.bad("adapt_io", "must be true or false", doc["adapt_io"])
        kwargs["adapt_io"] = doc["adapt_io"]
    if "golden" in doc:
        kwargs["golden"] = ctx.file(doc["golden"], "golden")
    if "golden_from" in doc:
        if not isinstance(doc["golden_from"], str):
            raise ctx.bad("golden_from", "must be the name of an entry", doc["golden_from"])
        kwargs["golden_from"] = doc["golden_from"]
    shared_raw = doc.get("named_data", {})
    shared = ctx.keys(shared_raw, tuple(shared_raw) if isinstance(shared_raw, Mapping) else (), "named_data")
    kwargs["named_data"] = {k: _named_value(ctx, v, f"named_data.{k}") for k, v in shared.items()} or None
    specs_raw = doc.get("specialization")
    if not isinstance(specs_raw, list) or not specs_raw:
        raise ctx.bad("specialization", "at least one [[specialization]] table is required", specs_raw)
    specs: list[Specialization] = []
    for i, s in enumerate(specs_raw):
        p = f"specialization[{i}]"
        ctx.keys(s, _SPEC, p)
        derive = s.get("signature") == FROM_PAYLOAD
        for req in ("payload",) if derive else ("backend_id", "payload"):
            if req not in s:
                raise ctx.bad(f"{p}.{req}", "is missing")
        if isinstance(s.get("signature"), str) and not derive:
            raise ctx.bad(f"{p}.signature", f"must be a table, or the string {FROM_PAYLOAD!r}", s["signature"])
        for key in _PROGRAM_ONLY:
            if key in s and not derive:
                raise ctx.bad(f"{p}.{key}", f"applies to ExecuTorch programs only: it needs signature = "
                              f"{FROM_PAYLOAD!r}, which reads the program", s[key])
        nd = s.get("named_data")
        if isinstance(nd, Mapping):
            nd = {k: _named_value(ctx, v, f"{p}.named_data.{k}") for k, v in nd.items()}
        elif nd is not None and not (isinstance(nd, list) and all(isinstance(k, str) for k in nd)):
            raise ctx.bad(f"{p}.named_data", "must be a list of keys of [named_data] or a table of key = path", nd)
        sha = s.get("payload_sha256", False)
        if not isinstance(sha, bool):
            raise ctx.bad(f"{p}.payload_sha256", "must be true or false", sha)
        for key in ("name", "backend_id", "source_digest"):
            if key in s and not isinstance(s[key], str):
                raise ctx.bad(f"{p}.{key}", "must be a string", s[key])
        if derive and "executorch_backends" in s:
            raise ctx.bad(f"{p}.executorch_backends", f"comes from the program with signature = {FROM_PAYLOAD!r}; "
                          "state it only for an entry whose signature is written out", s["executorch_backends"])
        golden = _golden_calls(ctx, s.get("golden"), f"{p}.golden")
        tolerance = s.get("golden_tolerance")
        if tolerance is not None:
            from fatpte.ops.golden import tolerance_from_mapping

            tolerance_from_mapping(tolerance, f"{p}.golden_tolerance")  # E0708 at its path when it is wrong
        if derive:
            spec = _program_spec(ctx, s, p, nd, kwargs["named_data"], doc.get("source_digest"), sha)
            specs.append(dataclasses.replace(spec, golden_tolerance=tolerance, golden=golden))
            continue
        specs.append(Specialization(
            s["backend_id"], ctx.file(s["payload"], f"{p}.payload"),
            name=s.get("name"),
            priority=ctx.integer(s.get("priority", 0), f"{p}.priority"),
            alignment=None if "alignment" not in s else ctx.integer(s["alignment"], f"{p}.alignment"),
            requires=s.get("requires"),
            named_data=nd,
            signature=s.get("signature", doc.get("signature")),
            source_digest=s.get("source_digest", doc.get("source_digest")),
            provenance=s.get("provenance"),
            payload_sha256=sha,
            executorch_backends=s.get("executorch_backends"),
            golden_tolerance=tolerance,
            golden=golden,
        ))
    return specs, kwargs


def _golden_calls(ctx: _Ctx, value: Any, path: str) -> tuple[GoldenCall, ...]:
    """An entry's own golden calls as the manifest states them (what `fatpte unpack` writes):
    `[{ method, inputs = [keys], outputs = [{ key, atol, rtol }] }]`, keys of `[named_data]`."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ctx.bad(path, "must be a list of { method, inputs, outputs } tables", value)
    calls = []
    for c, call in enumerate(value):
        cp = f"{path}[{c}]"
        ctx.keys(call, ("method", "inputs", "outputs"), cp)
        method, inputs, outputs = call.get("method"), call.get("inputs", []), call.get("outputs", [])
        if not isinstance(method, str) or not method:
            raise ctx.bad(f"{cp}.method", "must be a method name", method)
        if not isinstance(inputs, list) or not all(isinstance(k, str) and k for k in inputs):
            raise ctx.bad(f"{cp}.inputs", "must be a list of named-data keys", inputs)
        if not isinstance(outputs, list):
            raise ctx.bad(f"{cp}.outputs", "must be a list of { key, atol, rtol } tables", outputs)
        outs = []
        for j, o in enumerate(outputs):
            op = f"{cp}.outputs[{j}]"
            ctx.keys(o, ("key", "atol", "rtol"), op)
            if not isinstance(o.get("key"), str) or not o["key"]:
                raise ctx.bad(f"{op}.key", "must be a named-data key", o.get("key"))
            tol = []
            for name in ("atol", "rtol"):
                v = o.get(name, 0.0)
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                    raise ctx.bad(f"{op}.{name}", "must be a finite number at least 0", v)
                tol.append(float(v))
            outs.append(GoldenOutput(o["key"], tol[0], tol[1]))
        calls.append(GoldenCall(method, tuple(inputs), tuple(outs)))
    return tuple(calls)


def _program_spec(ctx: _Ctx, s: Mapping[str, Any], p: str, nd: Any, shared: Mapping[str, Any] | None,
                  digest: Any, sha: bool) -> Specialization:
    """The entry of a `signature = "from-payload"` table: pte_specialization of its payload, or
    ptn_specialization of a native package."""
    from fatpte.executorch.describe import SNIFF_SIZE, sniff
    from fatpte.ops.pte_specialize import pte_specialization, ptn_specialization

    payload = ctx.file(s["payload"], f"{p}.payload")
    try:
        with payload.open("rb") as f:
            head = f.read(SNIFF_SIZE)
    except OSError as exc:
        raise FatpteError(ErrorCode.IO_ERROR, f"cannot read: {exc.strerror or exc}", source=str(payload)) from exc
    kind = sniff(head)
    if kind not in ("pte", "ptn"):
        raise ctx.bad(f"{p}.signature", f"{FROM_PAYLOAD!r} reads the signature of an ExecuTorch program (.pte, "
                      f"bytes 4..8 ET12) or native package (.ptn), and the payload {quoted(s['payload'])} is neither: "
                      f"its bytes 4..8 are {head[4:8]!r} (state the signature as a table instead)", s["signature"])
    data = s.get("data", [])
    if not isinstance(data, list):
        raise ctx.bad(f"{p}.data", "must be a list of .ptd or .ptn file paths", data)
    share = s.get("share_named_data", False)
    if not isinstance(share, bool):
        raise ctx.bad(f"{p}.share_named_data", "must be true or false", share)
    if kind == "ptn" and data:
        raise ctx.bad(f"{p}.data", "applies to .pte programs: a .ptn package holds its tensors itself", data)
    provenance = s.get("provenance")
    try:
        common: dict[str, Any] = {"backend_id": s.get("backend_id"), "name": s.get("name"),
                  "priority": ctx.integer(s.get("priority", 0), f"{p}.priority"),
                  "alignment": None if "alignment" not in s else ctx.integer(s["alignment"], f"{p}.alignment"),
                  "requires": s.get("requires"),
                  "provenance": provenance if isinstance(provenance, Mapping) else None}
        if kind == "ptn":
            spec = ptn_specialization(payload, **common, share_named_data=share)
        else:
            spec = pte_specialization(
                payload, **common, data_files=[ctx.file(d, f"{p}.data[{i}]") for i, d in enumerate(data)],
                share_named_data=share)
    except FatpteError as exc:
        if exc.source is None:
            exc.source = str(ctx.toml)
        raise
    named: dict[str, Any] = dict(spec.named_data) if isinstance(spec.named_data, Mapping) else {}
    derived = set(named)
    if isinstance(nd, Mapping):
        for key, value in nd.items():
            if key in derived:
                raise ctx.bad(f"{p}.named_data.{key}", "this key already comes from the program or its data "
                              "files; give it once", key)
            named[key] = value
    elif nd is not None:
        for key in nd:
            if key in derived:
                continue  # pack compares the program's bytes with the top-level [named_data] ones
            if shared is None or key not in shared:
                raise ctx.bad(f"{p}.named_data", f"key {quoted(key)} is not in the top-level [named_data]", key)
            named[key] = shared[key]
    return dataclasses.replace(
        spec,
        named_data=named or None,
        source_digest=s.get("source_digest", digest),
        provenance=spec.provenance if provenance is None or isinstance(provenance, Mapping) else provenance,
        payload_sha256=sha,
    )


def pack_from_file(
    toml_path: str | os.PathLike[str], dest: str | os.PathLike[str], *, progress: Progress | None = None,
    inspect: Callable[[list[Specialization]], None] | None = None, aarch64_runtime: str | None = None,
) -> Path:
    """Pack the container a pack.toml describes into `dest`; `progress` as for `fatpte.pack`.
    `inspect(specs)` is shown the specializations before they are packed (the command line
    warns from them), so nothing is read twice. The file states what each entry is (a program's
    record is read only with `signature = "from-payload"`), so its specializations are written
    as they are (`packing.write`), not through the packing policy of arguments (pack_policy):
    `fatpte unpack`'s pack.toml gives back the container it came from. `aarch64_runtime`: the
    aarch64 fatpte-run that records the golden calls of a `golden_from` entry made for aarch64."""
    specs, kwargs = load(toml_path)
    if inspect is not None:
        inspect(specs)
    try:
        return write(specs, dest, progress=progress, aarch64_runtime=aarch64_runtime, **kwargs)
    except FatpteError as exc:
        if exc.code is ErrorCode.INVALID_ARGUMENT and exc.source is None:
            # A value of the file pack refuses (requires, signature, provenance): E0708 naming the
            # file and the key path, `specializations[i]...` of the API being `specialization[i]...` there.
            where = (exc.field or "$").replace("specializations[", "specialization[", 1)
            message = exc.message.removeprefix(f"{exc.field}: ")
            raise FatpteError(ErrorCode.BAD_PACK_FILE, f"{where}: {message}", source=str(toml_path), field=where,
                              actual=exc.actual) from None
        raise
