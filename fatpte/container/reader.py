"""`fatpte.open`: a read-only, zero-copy view of a container over an mmap.

Opening reads and checks the header and every table record (the structural pass) and raises the
first error; payload bytes are touched only when asked for, so opening a 100 GB container costs
what opening a 1 MB one does. `validate` runs the content checks too.

`Container` is also the base of a container read by byte ranges (fatpte/container/remote.py):
what the operations need of payload bytes goes through `read`, `stream` and `copy_range`, which
a remote container answers with range requests.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Self

from fatpte.errors import LIST_LIMIT, ErrorCode, FatpteError, listed, out_of_memory, printable, quoted
from fatpte.fileio.buffers import BytesLike
from fatpte.fileio.checksum import crc32c
from fatpte.fileio.mapping import map_file, release_mapping
from fatpte.format.model import Entry, Header, Segment
from fatpte.format.structure import Structure, read_structure

if TYPE_CHECKING:
    from fatpte.fileio.streams import Advance
    from fatpte.manifest.model import Manifest


class Container:
    """An open container. Use as a context manager; views it hands out stay valid until close."""

    # Whether payload bytes cost requests (a container at a URL): operations that would read
    # them only to describe the container leave them unread (fatpte/container/remote.py).
    is_remote = False

    def __init__(self, buf: BytesLike, *, source: str | None = None, fd: int | None = None,
                 size: int | None = None) -> None:
        """`buf` is the whole container; or, with `size`, the first bytes of a file of `size`
        bytes, holding at least the ranges `structure.metadata_ranges` names (a subclass reads
        the rest)."""
        self._buf: BytesLike | None = buf
        self._fd = fd
        self.source = source
        try:
            self._structure = read_structure(buf, source=source, size=size)
        except MemoryError:
            self.close()
            raise out_of_memory(source, "opening the container") from None
        errors = self._structure.errors
        if errors:
            self.close()
            raise FatpteError.from_finding(errors[0], source)
        assert self._structure.header is not None
        self.header: Header = self._structure.header
        self.entries: tuple[Entry, ...] = tuple(self._structure.entries)
        self.segments: tuple[Segment, ...] = tuple(self._structure.segments)
        self._by_name: dict[str, Entry] = {}
        for e in self.entries:
            self._by_name.setdefault(e.name, e)  # v1 ids may repeat: the first one wins (spec 3.4)

    @classmethod
    def from_buffer(cls, buf: BytesLike, *, source: str | None = None) -> Container:
        """A container over bytes already in memory (a slice of a .pte, a test vector)."""
        return cls(buf, source=source or "<buffer>")

    @property
    def version(self) -> int:
        return self.header.version

    @property
    def size(self) -> int:
        return self.header.container_size

    @property
    def structure(self) -> Structure:
        return self._structure

    @property
    def buffer(self) -> BytesLike:
        if self._buf is None:
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, "the container is closed", source=self.source)
        return self._buf

    @property
    def fileno(self) -> int | None:
        """The descriptor of the file behind the container, for kernel-side copies."""
        return self._fd

    def entry(self, name: str) -> Entry:
        """The entry with this name."""
        e = self._by_name.get(name)
        if e is None:
            raise self._not_found(name)
        return e

    def find(self, name_or_backend_id: str) -> Entry:
        """The entry with this name, else the only entry with this backend id."""
        e = self._by_name.get(name_or_backend_id)
        return e if e is not None else self.by_backend(name_or_backend_id)

    def by_backend(self, backend_id: str) -> Entry:
        """The only entry with this backend id (in version 1, the first: spec 3.4)."""
        matches = [e for e in self.entries if e.backend_id == backend_id]
        if self.version == 1 and matches:
            return matches[0]
        if len(matches) == 1:
            return matches[0]
        if matches:
            names = listed([quoted(m.name) for m in matches])
            raise FatpteError(ErrorCode.AMBIGUOUS_ENTRY,
                              f"backend id {quoted(backend_id)} matches entries {names}; name one of them",
                              source=self.source, actual=backend_id)
        raise self._not_found(backend_id)

    def _not_found(self, key: str) -> FatpteError:
        have = listed([f"{quoted(e.name)} ({printable(e.backend_id)})" for e in self.entries[:LIST_LIMIT]])
        if len(self.entries) > LIST_LIMIT:
            have += f" and {len(self.entries) - LIST_LIMIT} more"
        return FatpteError(ErrorCode.ENTRY_NOT_FOUND, f"no entry is named {quoted(key)} or has that backend id; "
                           f"the container holds {have}", source=self.source, actual=key)

    def payload(self, entry: str | Entry, *, verify: bool = False) -> memoryview:
        """The payload bytes, zero-copy and read-only. With verify, its CRC32C is checked first."""
        e = entry if isinstance(entry, Entry) else self.entry(entry)
        view = self.read(e.offset, e.size)
        if verify and e.checksum is not None:
            actual = crc32c(view)
            if actual != e.checksum:
                raise FatpteError(ErrorCode.PAYLOAD_CHECKSUM_MISMATCH,
                                  f"payload of {quoted(e.name)} has CRC32C {actual:08x}, but its entry says "
                                  f"{e.checksum:08x}", source=self.source, field=f"entries[{e.index}].checksum",
                                  expected=e.checksum, actual=actual)
        return view

    def read(self, offset: int, size: int) -> memoryview:
        """The bytes [offset, offset + size), read-only (zero-copy from a mapping)."""
        self._check_range(offset, size)
        return memoryview(self.buffer)[offset : offset + size].toreadonly()

    def stream(self, offset: int, size: int, step: int = 1 << 20) -> Iterator[memoryview]:
        """The bytes [offset, offset + size) in order, at most `step` at a time, never all held."""
        self._check_range(offset, size)
        view = memoryview(self.buffer)
        try:
            for pos in range(offset, offset + size, step):
                yield view[pos : min(offset + size, pos + step)].toreadonly()
        finally:
            view.release()

    def copy_range(self, offset: int, size: int, dst_fd: int, dst_offset: int, *,
                   advance: Advance | None = None) -> int:
        """Write the bytes [offset, offset + size) to `dst_fd` at `dst_offset` and return their
        CRC32C, hashed on the way (from a file: `streams.copy_range_crc`; else what `stream`
        gives, hashed and written as it comes: `streams.write_crc`)."""
        from fatpte.fileio.streams import copy_range_crc, write_crc

        self._check_range(offset, size)
        if self._fd is not None:
            return copy_range_crc(self._fd, offset, dst_fd, dst_offset, size, advance=advance)
        return write_crc(self.stream(offset, size), dst_fd, dst_offset, advance=advance)

    def copy_ranges(self, copies: Sequence[tuple[int, int, int]], dst_fd: int) -> list[int]:
        """`copy_range` of each (offset, size, dst_offset) of `copies`, and their CRC32Cs in the
        same order. A container at a URL asks for near ranges in one request
        (fatpte/container/remote.py)."""
        return [self.copy_range(offset, size, dst_fd, dst) for offset, size, dst in copies]

    def _check_range(self, offset: int, size: int) -> None:
        if size < 0 or offset < 0 or size > self.size or offset > self.size - size:
            raise FatpteError(ErrorCode.INVALID_ARGUMENT,
                              f"bytes {offset:#x}..{offset + size:#x} lie outside the container of {self.size} "
                              "bytes", source=self.source, offset=offset)

    @functools.cached_property
    def manifest(self) -> Manifest | None:
        """The decoded manifest (None when the container has none): CRC32C and every offset
        checked first, so a corrupt manifest raises FatpteError (specs/nfat-manifest.md)."""
        from fatpte.manifest.rules import read_manifest

        return read_manifest(self.buffer, self.header, source=self.source)

    @property
    def named_data_keys(self) -> tuple[str, ...]:
        """Every named-data key, sorted bytewise (aliases included)."""
        m = self.manifest
        return () if m is None else tuple(k for k, _ in m.named_data)

    def named_data(self, key: str) -> memoryview:
        """The bytes stored under `key`, zero-copy and read-only."""
        return lookup(self, key)

    def close(self) -> None:
        buf, self._buf = self._buf, None
        fd, self._fd = self._fd, None
        if buf is not None:
            release_mapping(buf, fd)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<fatpte.Container {self.source!r} v{self.version} {len(self.entries)} entries>"


def open(path: str | os.PathLike[str]) -> Container:
    """Map `path` and check its header and tables; raises `FatpteError` on the first error."""
    buf, fd = map_file(path)
    try:
        # The caller's spelling of the path (`./a.nfat` stays `./a.nfat`), as every reader reports it.
        return Container(buf, source=os.fspath(path), fd=fd)
    except FatpteError:
        raise  # Container.__init__ closed what it was given
    except BaseException:
        release_mapping(buf, fd)
        raise


def lookup(container: Container, key: str) -> memoryview:
    """The bytes of `key` in `container`, zero-copy and read-only."""
    seg = segment_of(container, key)
    return container.read(seg.offset, seg.size)


def segment_of(container: Container, key: str) -> Segment:
    """The segment that holds the named data `key`: NAMED_DATA_NOT_FOUND when no key is `key`,
    NAMED_DATA_BAD_SEGMENT when its segment index is past the segment table."""
    manifest = container.manifest
    index = None if manifest is None else manifest.keys.get(key)
    if index is None:
        have = [] if manifest is None else [k for k, _ in manifest.named_data]
        shown = ", ".join(quoted(k) for k in have[:LIST_LIMIT]) + (" ..." if len(have) > LIST_LIMIT else "")
        raise FatpteError(ErrorCode.NAMED_DATA_NOT_FOUND,
                          f"no named data has the key {quoted(key)}; the container holds "
                          f"{len(have)} keys{': ' + shown if have else ''}", source=container.source, actual=key)
    if index >= len(container.segments):
        assert manifest is not None
        position = next(i for i, (k, _) in enumerate(manifest.named_data) if k == key)
        raise _past_the_table(container, position, key, index)
    return container.segments[index]


def key_segments(container: Container) -> dict[str, Segment]:
    """Every named-data key with the segment that holds its bytes, in key order (empty without a
    manifest). A key whose segment index is past the segment table is NAMED_DATA_BAD_SEGMENT, at
    the offset and field `fatpte validate` reports it (specs/nfat-manifest.md section 7, step 5):
    an operation that reads, copies or hashes named data stops there, on every path."""
    manifest = container.manifest
    if manifest is None:
        return {}
    segments = container.segments
    out: dict[str, Segment] = {}
    for position, (key, index) in enumerate(manifest.named_data):
        if index >= len(segments):
            raise _past_the_table(container, position, key, index)
        out[key] = segments[index]
    return out


def _past_the_table(container: Container, position: int, key: str, index: int) -> FatpteError:
    return FatpteError(ErrorCode.NAMED_DATA_BAD_SEGMENT,
                       f"named-data key {quoted(key)} points at segment {index}, but the segment table has "
                       f"{len(container.segments)}", source=container.source,
                       offset=container.header.manifest_offset, field=f"manifest.named_data[{position}].segment",
                       actual=index)
