"""`describe(path_or_bytes)`: what an ExecuTorch file is and holds, as typed data and as text.

Recognises a file by its identifier at bytes 4..8 (ET12 program, FT01 data file, NPTG native
payload, XH00 or XN01 XNNPACK payload), or as a native package (.ptn: a zip whose first member
is program.ptg), and decodes it with the matching reader; inside a
program, NPTG and XNNPACK delegate payloads are described too and any other payload stays
opaque bytes. Everything returned is plain data detached from the input bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fatpte.container.reader import Container
from fatpte.errors import ErrorCode, FatpteError, clipped, out_of_memory
from fatpte.executorch import nptg, ptd, pte, ptn, xnnpack
from fatpte.executorch.keys import program_keys
from fatpte.executorch.signature import native_signature, program_signature
from fatpte.fileio.mapping import map_view
from fatpte.format.layout import MAGIC as NFAT_MAGIC

KINDS = {pte.IDENTIFIER: "pte", ptd.IDENTIFIER: "ptd", nptg.IDENTIFIER: "nptg", xnnpack.MAGIC: "xnnpack",
         xnnpack.FLATBUFFER_IDENTIFIER: "xnnpack"}


SNIFF_SIZE = 64  # the bytes `sniff` needs: a .ptn's first member name ends at byte 41


def sniff(head: bytes | memoryview) -> str | None:
    """The kind of ExecuTorch file whose first bytes are `head` ("pte", "ptd", "nptg", "xnnpack",
    or "ptn" when `head` holds the first SNIFF_SIZE bytes), or None."""
    if ptn.looks_like_ptn(head):
        return "ptn"
    return KINDS.get(bytes(head[4:8])) if len(head) >= 8 else None


def _kind_text(kind: bytes) -> str:
    if kind == b"\0\0\0\0":
        return "-"
    return kind.decode("ascii") if all(0x21 <= c < 0x7F for c in kind) else kind.hex()


@dataclass(frozen=True, slots=True)
class Description:
    """One ExecuTorch file: `kind` says which, `detail` holds what its reader found, as JSON data."""

    kind: str  # "pte" | "ptd" | "ptn" | "nptg" | "xnnpack"
    source: str | None
    size: int
    detail: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "source": self.source, "size": self.size, **self.detail}

    def text(self) -> str:
        return "\n".join(_lines(self.to_json()))


def describe(path_or_bytes: str | Path | bytes | bytearray | memoryview, *, source: str | None = None) -> Description:
    """Describe a .pte, .ptd, .ptn, NPTG or XNNPACK payload file (or its bytes); FatpteError on any defect."""
    try:
        if isinstance(path_or_bytes, (str, Path)):
            # Mapped, not read: a program with its weights inline is many GB, and describing it
            # touches only the flatbuffer and the headers of its delegate payloads.
            return _describe(map_view(path_or_bytes), source or str(path_or_bytes))
        return _describe(bytes(path_or_bytes), source)
    except MemoryError:
        raise out_of_memory(source or (None if not isinstance(path_or_bytes, (str, Path)) else str(path_or_bytes)),
                            "describing an ExecuTorch file") from None


def _describe(data: bytes | memoryview, source: str | None) -> Description:
    kind = sniff(data)
    if kind is None:
        found = bytes(data[4:8]) if len(data) >= 8 else b""
        raise FatpteError(ErrorCode.ET_BAD_IDENTIFIER, f"bytes 4..8 are {found!r}: not an ExecuTorch program, "
                          "data file or known delegate payload", source=source, offset=4 if found else None,
                          field="file_identifier", actual=found)
    if kind == "pte":
        detail = _program(pte.read_program(data, source=source))
    elif kind == "ptd":
        detail = _data_file(ptd.read_ptd(data, source=source))
    elif kind == "ptn":
        detail = _package(ptn.read_ptn(data, source=source))
    elif kind == "nptg":
        detail = _native(nptg.read_nptg(data, source=source))
    else:
        detail = _xnn(xnnpack.read_xnnpack(data, source=source))
    return Description(kind, source, len(data), detail)


def _program(p: pte.Program) -> dict[str, Any]:
    methods = []
    for m in p.methods:
        delegates = []
        for d in m.delegates:
            payload = p.payload(d)
            kind = bytes(payload[4:8]) if len(payload) >= 8 else b"\0\0\0\0"
            entry: dict[str, Any] = {**d.to_json(), "payload_kind": _kind_text(kind)}
            sub = KINDS.get(kind)
            if bytes(payload[:4]) == NFAT_MAGIC:
                entry["payload_kind"] = "NFAT"
                entry["payload"] = _nfat(payload, f"{p.source or '<pte>'}[delegate {d.index}]", d.offset)
            elif sub == "nptg":
                entry["payload"] = _native(nptg.read_nptg(payload, source=p.source, base=d.offset))
            elif sub == "xnnpack":
                entry["payload"] = _xnn(xnnpack.read_xnnpack(payload, source=p.source, base=d.offset))
            delegates.append(entry)
        methods.append({"name": m.name, "values": len(m.value_kinds), "inputs": list(m.inputs),
                        "outputs": list(m.outputs), "operators": list(m.operators),
                        "instructions": len(m.kernel_calls) + len(m.delegate_calls), "delegates": delegates})
    header = None if p.header is None else {
        "length": p.header.length, "program_size": p.header.program_size,
        "segment_base_offset": p.header.segment_base_offset, "segment_data_size": p.header.segment_data_size}
    return {
        "version": p.version,
        "extended_header": header,
        "executorch_backends": sorted({d.backend_id for m in p.methods for d in m.delegates}),
        "external_keys": list(program_keys(p).external),
        "methods": methods,
        "signature": program_signature(p),
        "segments": [{"index": s.index, "offset": s.offset, "size": s.size} for s in p.segments],
        "named_data": [{"key": n.key, "segment_index": n.segment_index, "offset": n.offset, "size": n.size}
                       for n in p.named_data],
        "constant_buffers": p.constant_buffer_count,
        "constant_segment": None if p.constant_segment is None else
        {"segment_index": p.constant_segment[0], "tensors": p.constant_segment[1]},
        "mutable_data_segments": [{"segment_index": i, "tensors": n} for i, n in p.mutable_data_segments],
    }


def _nfat(payload: memoryview, label: str, base: int) -> dict[str, Any]:
    """A fat delegate: the NFAT container's entries, each NPTG or XNNPACK one described inside."""
    c = Container.from_buffer(bytes(payload), source=label)
    manifest = c.manifest if c.header.manifest_size else None
    entries = []
    for e in c.entries:
        item: dict[str, Any] = {"name": e.name, "backend_id": e.backend_id, "payload_kind": e.payload_kind_text,
                                "offset": e.offset, "size": e.size, "priority": e.priority}
        m = None if manifest is None else manifest.entry(e.name)
        item["requires"] = "-" if m is None else m.requires.text()
        item["signature"] = None if m is None or m.signature is None else m.signature.to_json()
        item["named_data"] = [] if m is None else list(m.named_data)
        item["provenance"] = {} if m is None else dict(m.provenance)
        body = bytes(c.payload(e))
        sub = KINDS.get(body[4:8])
        if sub == "nptg":
            item["payload"] = _native(nptg.read_nptg(body, source=label, base=base + e.offset))
        elif sub == "xnnpack":
            item["payload"] = _xnn(xnnpack.read_xnnpack(body, source=label, base=base + e.offset))
        entries.append(item)
    return {"format": "NFAT", "version": c.version, "entries": entries}


def _package(p: ptn.NativePackage) -> dict[str, Any]:
    return {
        "members": [{"name": m.name, "offset": m.offset, "size": m.size, "crc32": f"{m.crc32:08x}"}
                    for m in p.members],
        "program": _native(p.program),
        "signature": native_signature(p.program),
        "tensors": [t.to_json() for t in p.tensors],
        "missing_keys": list(p.missing_keys),
        "metadata": dict(p.metadata),
    }


def _native(n: nptg.NativeProgram) -> dict[str, Any]:
    return {
        "format": "NPTG",
        "version": n.version,
        "methods": [{
            "name": m.name,
            "nodes": m.node_count,
            "inputs": [t.to_json() for t in m.inputs],
            "outputs": [t.to_json() for t in m.outputs],
            "buffers": [{"name": b.name, "fqn": b.fqn, "dtype": b.dtype,
                         "shape": None if b.shape is None else list(b.shape)} for b in m.buffers],
            "output_specs": [{"name": s.name, "kind": s.kind, "target": s.target} for s in m.output_specs],
            "named_data_keys": list(m.named_data_keys),
        } for m in n.methods],
        "named_data_keys": list(n.named_data_keys),
    }


def _xnn(g: xnnpack.XnnGraph) -> dict[str, Any]:
    h = g.header
    return {
        "format": "XH00" if h is not None else "XN01",
        "header": None if h is None else {
            "length": h.length, "flatbuffer_offset": h.flatbuffer_offset, "flatbuffer_size": h.flatbuffer_size,
            "constant_data_offset": h.constant_data_offset, "constant_data_size": h.constant_data_size},
        "version": g.version,
        "nodes": g.node_count,
        "values": g.value_count,
        "num_externs": g.num_externs,
        "input_ids": list(g.input_ids),
        "output_ids": list(g.output_ids),
        "constants": [{"index": c.index, "offset": c.offset, "size": c.size, "named_key": c.named_key}
                      for c in g.constants],
        "named_data_keys": list(g.named_data_keys),
    }


def _data_file(f: ptd.DataFile) -> dict[str, Any]:
    h = f.header
    return {
        "version": f.version,
        "header": {"length": h.length, "flatbuffer_offset": h.flatbuffer_offset, "flatbuffer_size": h.flatbuffer_size,
                   "segment_base_offset": h.segment_base_offset, "segment_data_size": h.segment_data_size},
        "segments": [{"offset": o, "size": s} for o, s in f.segments],
        "named_data": [{"key": t.key, "segment_index": t.segment_index, "offset": t.offset, "size": t.size,
                        "dtype": t.dtype, "shape": None if t.shape is None else list(t.shape)}
                       for t in f.named_data],
    }


def _t(value: object) -> str:
    """A value from the file as the text view shows it: control characters escaped, long text cut
    (errors.clipped); the JSON view keeps it exact."""
    return clipped(str(value))


def _tensor_text(t: dict[str, Any]) -> str:
    name = f"{_t(t['name'])}: " if t.get("name") else ""
    return f"{name}{_t(t['dtype'])}[{', '.join(_t(d) for d in t['shape'] or [])}]"


def _native_lines(d: dict[str, Any], pad: str) -> list[str]:
    out = []
    for m in d["methods"]:
        out.append(f"{pad}method {_t(m['name'])} ({m['nodes']} nodes)")
        out.append(f"{pad}  inputs:  " + ", ".join(_tensor_text(t) for t in m["inputs"]))
        out.append(f"{pad}  outputs: " + ", ".join(_tensor_text(t) for t in m["outputs"]))
        bufs = [f"{_t(b['fqn'])}: {_t(b['dtype'])}[{', '.join(_t(x) for x in b['shape'] or [])}]"
                for b in m["buffers"]]
        out.append(f"{pad}  mutable buffers: " + (", ".join(bufs) or "none"))
        out.append(f"{pad}  named data keys: " + (", ".join(map(_t, m["named_data_keys"])) or "none"))
    return out


def _xnn_lines(d: dict[str, Any], pad: str) -> list[str]:
    h = d["header"]
    out = []
    if h is not None:
        out.append(f"{pad}XH00 header: flatbuffer {h['flatbuffer_size']} bytes at {h['flatbuffer_offset']:#x}, "
                   f"constant data {h['constant_data_size']} bytes at {h['constant_data_offset']:#x}")
    out.append(f"{pad}XN01 graph: {d['nodes']} nodes, {d['values']} values, inputs {d['input_ids']}, "
               f"outputs {d['output_ids']}")
    out.append(f"{pad}named data keys: " + (", ".join(map(_t, d["named_data_keys"])) or "none"))
    return out


def _payload_lines(p: dict[str, Any], pad: str) -> list[str]:
    return _native_lines(p, pad) if p["format"] == "NPTG" else _xnn_lines(p, pad)


def _lines(j: dict[str, Any]) -> list[str]:
    out = [f"{_t(j['source'] or '<bytes>')}: ExecuTorch {j['kind']} ({j['size']} bytes)"]
    if j["kind"] == "pte":
        h = j["extended_header"]
        if h is not None:
            out.append(f"extended header: program {h['program_size']} bytes, segments at "
                       f"{h['segment_base_offset']:#x} ({h['segment_data_size']} bytes)")
        out.append("ExecuTorch backends: " + (", ".join(map(_t, j["executorch_backends"]))
                                              or "none (portable kernels only)"))
        if j["external_keys"]:
            out.append(f"needs a .ptd: {len(j['external_keys'])} named-data keys it loads are not in the program: "
                       + ", ".join(map(_t, j["external_keys"])))
        for m, s in zip(j["methods"], j["signature"]["methods"], strict=True):
            out.append(f"method {_t(m['name'])}: {m['values']} values, {m['instructions']} instructions")
            out.append("  inputs:  " + ", ".join(_tensor_text(t) for t in s["inputs"]))
            out.append("  outputs: " + ", ".join(_tensor_text(t) for t in s["outputs"]))
            out.append("  mutable buffers: " + (", ".join(_tensor_text(t) for t in s["buffers"]) or "none"))
            if m["operators"]:
                out.append("  operators: " + ", ".join(map(_t, m["operators"])))
            for d in m["delegates"]:
                out.append(f"  delegate {d['index']}: {_t(d['backend_id'])}, {_t(d['payload_kind'])}, {d['size']} bytes "
                           f"{d['location']} at {d['offset']:#x}")
                p = d.get("payload")
                if p is not None and p["format"] == "NFAT":
                    for e in p["entries"]:
                        out.append(f"    entry {_t(e['name'])}: {_t(e['backend_id'])}, {_t(e['payload_kind'])}, "
                                   f"{e['size']} bytes, priority {e['priority']}, requires {_t(e['requires'])}")
                        if e["named_data"]:
                            out.append("      named data in the delegate's container: "
                                       + ", ".join(map(_t, e["named_data"])))
                        if e["provenance"]:
                            out.append("      provenance: " + ", ".join(f"{_t(k)}={_t(v)}"
                                                                       for k, v in e["provenance"].items()))
                        if "payload" in e:
                            out += _payload_lines(e["payload"], "      ")
                elif p is not None:
                    out += _payload_lines(p, "    ")
        out.append(f"segments: {len(j['segments'])}")
        for s in j["segments"]:
            out.append(f"  [{s['index']}] {s['size']} bytes at {s['offset']:#x}")
        out.append(f"named data: {len(j['named_data'])}")
        for n in j["named_data"]:
            out.append(f"  {_t(n['key'])}: {n['size']} bytes in segment {n['segment_index']}")
    elif j["kind"] == "ptd":
        out.append(f"named data: {len(j['named_data'])}")
        for n in j["named_data"]:
            shape = "" if n["dtype"] is None else f" {_t(n['dtype'])}[{', '.join(_t(x) for x in n['shape'])}]"
            out.append(f"  {_t(n['key'])}:{shape} {n['size']} bytes at {n['offset']:#x}")
    elif j["kind"] == "ptn":
        out.append("members: " + ", ".join(f"{_t(m['name'])} ({m['size']} bytes at {m['offset']:#x})"
                                            for m in j["members"]))
        out += _native_lines(j["program"], "")
        stored = sum(t["size"] for t in j["tensors"] if t["alias_of"] is None)
        out.append(f"tensors: {len(j['tensors'])} ({stored} bytes stored)")
        for t in j["tensors"]:
            where = (f"same bytes as {_t(t['alias_of'])}" if t["alias_of"] is not None
                     else f"{t['size']} bytes at {t['offset']:#x}")
            out.append(f"  {_t(t['key'])}: {_t(t['dtype'])}[{', '.join(_t(x) for x in t['shape'])}] {where}")
        if j["missing_keys"]:
            out.append("keys the program loads that the package lacks: " + ", ".join(map(_t, j["missing_keys"])))
    elif j["kind"] == "nptg":
        out += _native_lines(j, "")
    else:
        out += _xnn_lines(j, "")
    return out
