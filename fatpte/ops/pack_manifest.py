"""The manifest `pack` writes: one record per specialization (requirements, signature, named-data
keys, digests, provenance), checked with the same consistency rules `validate` applies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fatpte.errors import ErrorCode, FatpteError
from fatpte.format import layout as L
from fatpte.manifest.codec import encode
from fatpte.manifest.model import (
    Manifest,
    ManifestEntry,
    Requirements,
    Signature,
    parse_executorch_backends,
    parse_provenance,
    parse_source_digest,
)
from fatpte.manifest.rules import consistency_problems


def manifest_for_pack(specs: Sequence[Any], sources: Sequence[Any], nd: Any) -> bytes:
    """The manifest bytes `pack` writes, or b"" when no specialization asks for one."""
    import hashlib

    wanted = bool(nd.segments) or any(
        s.requires or s.named_data or s.signature or s.source_digest or s.provenance or s.payload_sha256
        or s.executorch_backends is not None for s in specs)
    if not wanted:
        return b""
    entries: list[ManifestEntry] = []
    for i, (s, src) in enumerate(zip(specs, sources)):
        label = f"specializations[{i}]"
        digest = parse_source_digest(s.source_digest, f"{label}.source_digest")
        prov = parse_provenance(s.provenance, f"{label}.provenance")
        backends = parse_executorch_backends(s.executorch_backends, f"{label}.executorch_backends")
        sha = None
        if s.payload_sha256:
            h = hashlib.sha256()
            view = memoryview(src.buf)
            try:
                for pos in range(0, src.size, 8 << 20):
                    h.update(view[pos : pos + (8 << 20)])
            finally:
                view.release()
            sha = h.digest()
        entries.append(ManifestEntry(
            name=s.entry_name,
            requires=Requirements.from_mapping(s.requires, f"{label}.requires"),
            signature=None if s.signature is None else Signature.from_mapping(s.signature, f"{label}.signature"),
            named_data=nd.entry_keys[i], source_digest=digest, payload_sha256=sha, provenance=prov,
            executorch_backends=backends))
    named = tuple(sorted(nd.key_segment.items(), key=lambda kv: kv[0].encode("utf-8")))
    layouts = tuple(sorted(nd.key_layout.items(), key=lambda kv: kv[0].encode("utf-8")))
    manifest = Manifest(1, tuple(entries), named, layouts)  # encode states the revision the fields need
    problems = consistency_problems(manifest, [s.entry_name for s in specs],
                                    [seg.source.size for seg in nd.segments])
    if problems:
        code, path, message, _ = problems[0]
        raise FatpteError(code, message, field=path.replace("manifest.entries", "specializations"))
    data = encode(manifest)
    if len(data) > L.MAX_MANIFEST_SIZE:
        raise FatpteError(ErrorCode.MANIFEST_TOO_LARGE, f"the manifest would be {len(data)} bytes, above the "
                          f"limit of {L.MAX_MANIFEST_SIZE}", field="manifest", actual=len(data))
    return data


