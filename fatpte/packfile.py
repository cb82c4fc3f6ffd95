"""`fatpte.pack_from_file`: pack a container from a pack.toml description (docs/pack-toml.md).

The file is read strictly: an unknown key, a value of the wrong type or a missing file is
BAD_PACK_FILE naming the file and the key path, never a silent default. Paths are relative to the
directory of the pack.toml. Every setting that affects the bytes written (order of entries and of
named data, per-entry and per-key alignment) can be stated, so a pack.toml written from a
container reproduces it byte for byte.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fatpte.errors import ErrorCode, FatpteError
from fatpte.named_data import NamedData
from fatpte.packing import Specialization, pack
from fatpte.streams import Progress

_TOP = ("version", "alignment", "segment_alignment", "signature", "source_digest", "named_data",
        "specialization")
_SPEC = ("backend_id", "payload", "name", "priority", "alignment", "requires", "named_data", "signature",
         "source_digest", "provenance", "payload_sha256")


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
                raise self.bad(f"{path}.{k}" if path else k, f"unknown key {k!r}; allowed: {', '.join(allowed)}", k)
        return table

    def file(self, value: Any, path: str) -> Path:
        if not isinstance(value, str) or not value:
            raise self.bad(path, "must be a file path (relative to the pack.toml)", value)
        p = self.base / value
        if not p.is_file():
            raise self.bad(path, f"{value!r} is not a file (looked for {p})", value)
        return p

    def integer(self, value: Any, path: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.bad(path, "must be an integer", value)
        return value


def _named_value(ctx: _Ctx, value: Any, path: str) -> Any:
    if isinstance(value, Mapping):
        ctx.keys(value, ("path", "alignment"), path)
        if "path" not in value:
            raise ctx.bad(f"{path}.path", "is missing")
        align = value.get("alignment")
        return NamedData(ctx.file(value["path"], f"{path}.path"),
                         None if align is None else ctx.integer(align, f"{path}.alignment"))
    return ctx.file(value, path)


def load(toml_path: str | os.PathLike[str]) -> tuple[list[Specialization], dict[str, Any]]:
    """The specializations and pack() keyword arguments a pack.toml describes."""
    toml = Path(toml_path)
    ctx = _Ctx(toml)
    try:
        with toml.open("rb") as f:
            doc = tomllib.load(f)
    except OSError as exc:
        raise FatpteError(ErrorCode.IO_ERROR, f"cannot read {toml}: {exc.strerror or exc}", source=str(toml)) from exc
    except tomllib.TOMLDecodeError as exc:
        raise FatpteError(ErrorCode.BAD_PACK_FILE, f"not valid TOML: {exc}", source=str(toml)) from exc
    ctx.keys(doc, _TOP, "")
    kwargs: dict[str, Any] = {}
    for key in ("version", "alignment", "segment_alignment"):
        if key in doc:
            kwargs[key] = ctx.integer(doc[key], key)
    shared = ctx.keys(doc.get("named_data", {}), tuple(doc.get("named_data", {})), "named_data")
    kwargs["named_data"] = {k: _named_value(ctx, v, f"named_data.{k}") for k, v in shared.items()} or None
    specs_raw = doc.get("specialization")
    if not isinstance(specs_raw, list) or not specs_raw:
        raise ctx.bad("specialization", "at least one [[specialization]] table is required", specs_raw)
    specs: list[Specialization] = []
    for i, s in enumerate(specs_raw):
        p = f"specialization[{i}]"
        ctx.keys(s, _SPEC, p)
        for req in ("backend_id", "payload"):
            if req not in s:
                raise ctx.bad(f"{p}.{req}", "is missing")
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
        ))
    return specs, kwargs


def pack_from_file(
    toml_path: str | os.PathLike[str], dest: str | os.PathLike[str], *, progress: Progress | None = None
) -> Path:
    """Pack the container a pack.toml describes into `dest`; `progress` as for `fatpte.pack`."""
    specs, kwargs = load(toml_path)
    try:
        return pack(specs, dest, progress=progress, **kwargs)
    except FatpteError as exc:
        if exc.code is ErrorCode.INVALID_ARGUMENT and exc.source is None:
            # Name the file: the field path (specializations[i].requires...) is the table's.
            exc.source = str(toml_path)
        raise
