"""`fatpte unpack`: a container taken apart into files and a pack.toml that packs it again.

The directory holds `pack.toml` (docs/pack-toml.md), `payloads/` (one file per distinct payload
region: entries that share bytes share a file, named after the entry with the suffix of what the
payload is: `.pte`, `.ptd`, `.ptn` for ExecuTorch files, `.bin` otherwise) and `named_data/` (one
`.bin` file per segment: aliases share a file). The pack.toml states everything that decides the bytes (order, names, backend ids,
priorities, alignments, requirements, signatures, named-data keys, golden calls), so `fatpte pack --from
DIR/pack.toml` writes the same bytes for any container in the layout `fatpte.pack` writes.

A container written otherwise (another packer's padding, a version 1 file with gaps or
overlapping payloads) still unpacks exactly, file by file; only the repacked layout differs. So
unpacking repacks to a temporary file and compares (`verify`), and says when bytes would differ.

The directory appears whole or not at all: it is built beside its destination under a temporary
name and renamed into place.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fatpte.container.reader import Container, key_segments, segment_of
from fatpte.container.reader import open as open_container
from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.atomic import io_error, terminations_raise
from fatpte.fileio.streams import copy_range
from fatpte.fileio.url import is_url
from fatpte.format import layout as L

PACK_TOML = "pack.toml"
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


@dataclass(frozen=True, slots=True)
class Unpacked:
    """What `unpack_to_dir` wrote."""

    directory: Path
    pack_toml: Path
    payload_files: int
    named_data_files: int
    reproducible: bool | None  # None when not verified

    def to_json(self) -> dict[str, Any]:
        return {"directory": str(self.directory), "pack_toml": str(self.pack_toml),
                "payload_files": self.payload_files, "named_data_files": self.named_data_files,
                "reproducible": self.reproducible}


# ---------------------------------------------------------------------------------------------
# TOML writing: the few value types a pack.toml holds, written so tomllib reads them back equal.
# ---------------------------------------------------------------------------------------------


def toml_string(text: str) -> str:
    # JSON escapes are TOML escapes, except that TOML also forbids a raw DEL and has no
    # surrogates; ensure_ascii=False keeps non-ASCII text as UTF-8 rather than \ud83d pairs.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_key(key: str) -> str:
    """A bare key when TOML allows one, else a quoted key (dots would nest tables)."""
    bare = bool(key) and all(c.isascii() and (c.isalnum() or c in "_-") for c in key)
    return key if bare else toml_string(key)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):  # repr is exact; TOML spells the non-finite ones differently
        return {"inf": "inf", "-inf": "-inf", "nan": "nan"}.get(repr(value), repr(value))
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{toml_key(str(k))} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML form for {type(value).__name__}")


# ---------------------------------------------------------------------------------------------


# ExecuTorch file kinds (fatpte.executorch.describe.sniff) with a suffix of their own.
_SUFFIXES = {"pte": ".pte", "ptd": ".ptd", "ptn": ".ptn"}


def payload_suffix(head: bytes | memoryview) -> str:
    """`.pte`, `.ptd` or `.ptn` for a payload that is that ExecuTorch file, else `.bin`."""
    from fatpte.executorch.describe import sniff

    return _SUFFIXES.get(sniff(head) or "", ".bin")


def _file_name(label: str, used: set[str], suffix: str = ".bin") -> str:
    """A file name made from an entry name or key: safe characters only, unique in `used`."""
    stem = "".join(c if c in _SAFE else "_" for c in label)[:100].strip(".") or "data"
    name, n = f"{stem}{suffix}", 1
    while name.lower() in used:  # lower(): distinct on case-insensitive file systems too
        n += 1
        name = f"{stem}-{n}{suffix}"
    used.add(name.lower())
    return name


def _write_range(container: Container, start: int, size: int, dest: Path) -> None:
    src_fd = container.fileno
    try:
        with dest.open("wb") as out:
            if src_fd is None:
                out.write(memoryview(container.buffer)[start : start + size])
            else:
                copy_range(src_fd, start, out.fileno(), 0, size)
    except OSError as exc:
        raise io_error(exc, dest, "cannot write") from exc


def _toml_lines(container: Container, payload_files: dict[int, str],
                segment_files: dict[int, str]) -> list[str]:
    lines = ["# Written by `fatpte unpack`; `fatpte pack -o OUT --from pack.toml` packs the container again.",
             "# Format: docs/pack-toml.md. Paths are relative to this file.", "",
             f"version = {container.version}"]
    manifest = container.manifest if container.version == L.VERSION_2 else None
    if manifest is not None and manifest.named_data:
        lines += ["", "[named_data]"]
        by_segment: dict[int, list[str]] = {}
        layouts = dict(manifest.layouts)  # one pass: manifest.layout(key) would scan them all each time
        for key, seg in manifest.named_data:
            by_segment.setdefault(seg, []).append(key)
        # Segments are created in the order their first key appears: list them by index.
        for seg_index in sorted(by_segment):
            alignment = segment_of(container, by_segment[seg_index][0]).alignment
            for key in by_segment[seg_index]:
                value: dict[str, Any] = {"path": f"named_data/{segment_files[seg_index]}", "alignment": alignment}
                layout = layouts.get(key)
                if layout is not None:
                    value["layout"] = layout.to_json()
                lines.append(f"{toml_key(key)} = {toml_value(value)}")
    described = {} if manifest is None else manifest.by_name()
    for e in container.entries:
        lines += ["", "[[specialization]]"]
        if container.version == L.VERSION_2:
            lines.append(f"name = {toml_string(e.name)}")
        lines.append(f"backend_id = {toml_string(e.backend_id)}")
        lines.append(f"payload = {toml_string('payloads/' + payload_files[e.index])}")
        if container.version == L.VERSION_2:
            lines.append(f"alignment = {e.alignment}")
            if e.priority:
                lines.append(f"priority = {e.priority}")
        m = described.get(e.name)
        if m is None:
            continue
        requires = m.requires.to_json()
        if requires:
            lines.append(f"requires = {toml_value(requires)}")
        if m.named_data:
            lines.append(f"named_data = {toml_value(list(m.named_data))}")
        if m.signature is not None:
            lines.append(f"signature = {toml_value(m.signature.to_json())}")
        if m.source_digest is not None:
            lines.append(f"source_digest = {toml_string(m.source_digest)}")
        if m.provenance:
            lines.append(f"provenance = {toml_value(dict(m.provenance))}")
        if m.payload_sha256 is not None:
            lines.append("payload_sha256 = true")
        if m.executorch_backends is not None:
            lines.append(f"executorch_backends = {toml_value(list(m.executorch_backends))}")
        if m.golden:
            lines.append(f"golden = {toml_value([c.to_json() for c in m.golden])}")
    return lines


def _write_tree(container: Container, root: Path) -> tuple[int, int]:
    by_key = key_segments(container) if container.version == L.VERSION_2 else {}  # E0414 before any write
    used: set[str] = set()
    payload_files: dict[int, str] = {}
    by_region: dict[tuple[int, int], str] = {}
    (root / "payloads").mkdir()
    for e in container.entries:
        # Verified before it is written: an unpacked tree never holds silently damaged bytes.
        view = container.payload(e, verify=True)
        suffix = payload_suffix(view[:64])
        view.release()
        name = by_region.get((e.offset, e.size))
        if name is None:
            name = by_region[(e.offset, e.size)] = _file_name(e.name, used, suffix)
            _write_range(container, e.offset, e.size, root / "payloads" / name)
        payload_files[e.index] = name
    segment_files: dict[int, str] = {}
    manifest = container.manifest if container.version == L.VERSION_2 else None
    if manifest is not None and manifest.named_data:
        (root / "named_data").mkdir()
        seg_used: set[str] = set()
        first_key: dict[int, str] = {}
        for key, seg in manifest.named_data:
            first_key.setdefault(seg, key)
        for seg_index, key in sorted(first_key.items()):
            segment = by_key[key]
            name = segment_files[seg_index] = _file_name(key, seg_used)
            _write_range(container, segment.offset, segment.size, root / "named_data" / name)
    text = "\n".join(_toml_lines(container, payload_files, segment_files)) + "\n"
    (root / PACK_TOML).write_text(text, encoding="utf-8")
    return len(by_region), len(segment_files)


def _same_file(a: Path, b: Path) -> bool:
    if a.stat().st_size != b.stat().st_size:
        return False
    with a.open("rb") as fa, b.open("rb") as fb:
        while True:
            ca, cb = fa.read(1 << 20), fb.read(1 << 20)
            if ca != cb:
                return False
            if not ca:
                return True


def _reproduces(original: Path, toml: Path, scratch: Path) -> bool:
    import warnings

    from fatpte.errors import FatpteWarning
    from fatpte.ops.packfile import pack_from_file

    out = scratch / ".repacked.nfat"
    try:
        # A check of the files written, not a pack the caller asked for: what pack would warn
        # about is the container's as it is, and unpack changes nothing of it.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FatpteWarning)
            pack_from_file(toml, out)
        return _same_file(original, out)
    finally:
        with contextlib.suppress(OSError):
            out.unlink()


def _is_empty_dir(path: Path) -> bool:
    return path.is_dir() and not any(path.iterdir())


def unpack_to_dir(path: str | os.PathLike[str], dest: str | os.PathLike[str], *, force: bool = False,
                  verify: bool = True) -> Unpacked:
    """Unpack the container at `path` into the directory `dest`.

    `dest` must not exist, or be empty, unless `force` (then it is replaced whole). With
    `verify`, the written pack.toml is packed to a temporary file and compared with the
    container; `Unpacked.reproducible` says whether the bytes were the same."""
    target = Path(dest)
    if target.exists() and not force and not _is_empty_dir(target):
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "the output directory exists and is not empty; pass "
                          "--force to replace it", source=str(target))
    if target.exists() and not target.is_dir():
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "the output exists and is not a directory",
                          source=str(target))
    remote = is_url(path)
    if target.exists():
        # Replacing a directory deletes what it holds: never the container itself, never the
        # directory the command runs in.
        held = target.resolve()
        guarded = ((Path.cwd(), "the current directory"),) if remote else (
            (Path(path).resolve(), f"the container {path}"), (Path.cwd(), "the current directory"))
        for inside, what in guarded:
            if inside == held or held in inside.parents:
                raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"refusing to replace this directory: it holds "
                                  f"{what}", source=str(target))
    parent = target.parent if str(target.parent) else Path(".")
    try:
        scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=parent))
    except OSError as exc:
        raise io_error(exc, target, "cannot create a temporary directory beside") from exc
    try:
        with terminations_raise():
            # A URL (docs/remote.md): unpacking writes every payload and segment, and checking
            # the repack compares every byte, so the file is fetched whole, once, beside them.
            local = _download(os.fspath(path), scratch / ".container.nfat") if remote else Path(path)
            with open_container(local) as container:
                payloads, segments = _write_tree(container, scratch)
            reproducible = _reproduces(local, scratch / PACK_TOML, scratch) if verify else None
            if remote:
                local.unlink()
            _move_into_place(scratch, target)
    except BaseException:  # SIGTERM and SIGHUP too (terminations_raise), as Ctrl-C
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return Unpacked(target, target / PACK_TOML, payloads, segments, reproducible)


def _download(url: str, dest: Path) -> Path:
    """The container at `url`, every byte, into `dest` (range requests of bounded size)."""
    from fatpte.container.remote import open_remote

    with open_remote(url) as c:
        try:
            with dest.open("wb") as out:
                c.copy_range(0, c.size, out.fileno(), 0)
        except OSError as exc:
            raise io_error(exc, dest, "cannot write") from exc
    return dest


def _move_into_place(scratch: Path, target: Path) -> None:
    try:
        if not target.exists():
            os.rename(scratch, target)
            return
        # Replace an existing directory: set it aside, move the new one in, then delete the old.
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
        os.rename(target, old / "d")
        try:
            os.rename(scratch, target)
        except OSError:
            os.rename(old / "d", target)  # put the original back
            raise
        shutil.rmtree(old, ignore_errors=True)
    except OSError as exc:
        raise io_error(exc, target, "cannot move the unpacked directory into place at") from exc
