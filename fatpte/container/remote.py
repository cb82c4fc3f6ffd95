"""`open_remote`: a container at a URL, read by planned byte ranges (docs/remote.md, specs/remote.md).

Opening makes one request, for the first `PREFIX_SIZE` bytes: the header and, for nearly every
container, the tables and the manifest. When they lie past it, `structure.metadata_ranges` (the
ranges that the structural pass and the manifest reader read, sized from the header by the
checks that guard those reads) names what is missing, and one more request fetches it: the
tables and the manifest together when the manifest follows the tables, as every writer of
fatpte places it. Only a file whose tables overflow the prefix and whose manifest lies far from
them costs a third. The same checks as a local open then run on those bytes, so `select` and
`info` transfer nothing more.

Payload and named-data bytes come only when asked for, through `read`, `stream` and
`copy_range`, with range requests of at most `Policy.range_size` bytes each, every response
checked (fatpte/fileio/remote.py).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from fatpte.container.integrity import check_integrity, scan_questions
from fatpte.container.reader import Container
from fatpte.container.validation import Report
from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.ranges import ScannedRanges
from fatpte.fileio.remote import PREFIX_SIZE, Policy, RemoteFile, Stats, coalesce
from fatpte.fileio.streams import Progress, progress_counter, write_crc
from fatpte.format.structure import metadata_ranges, read_structure

if TYPE_CHECKING:
    from fatpte.manifest.model import Manifest


class RemoteContainer(Container):
    """A container at a URL: the metadata API of `Container`; payload bytes by range requests.

    `payload()` and `named_data()` return the bytes in memory (one request per range of
    `Policy.range_size`); `stream()` and `copy_range()` hold at most a few MiB whatever the size.
    `buffer` and `fileno` do not exist: nothing is mapped."""

    is_remote = True

    def __init__(self, remote: RemoteFile) -> None:
        self.remote = remote
        self._manifest_range: tuple[int, bytes] | None = None
        head = remote.head(PREFIX_SIZE)
        size = remote.size
        assert size is not None
        meta, separate = _metadata(remote, head, size)
        self._manifest_range = separate
        # Every byte fetched so far, (offset, bytes): the first request's (a payload that starts
        # in it is not asked for again) and a manifest read on its own.
        self._held: list[tuple[int, bytes]] = [(0, meta)] + ([separate] if separate is not None else [])
        super().__init__(meta, source=remote.source, size=size)

    @property
    def stats(self) -> Stats:
        """Requests made and bytes received so far."""
        return self.remote.stats

    @property
    def buffer(self) -> Any:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT,
                          "a container at a URL is read by ranges and has no buffer: use read(), stream() or "
                          "copy_range()", source=self.source)

    @functools.cached_property
    def manifest(self) -> Manifest | None:
        from fatpte.manifest.rules import read_manifest

        if self._manifest_range is not None:
            base, data = self._manifest_range
            return read_manifest(data, self.header, source=self.source, base=base)
        return read_manifest(self._metadata(), self.header, source=self.source)

    def _metadata(self) -> bytes:
        buf = self._buf
        if buf is None:
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, "the container is closed", source=self.source)
        assert isinstance(buf, bytes)
        return buf

    def read(self, offset: int, size: int) -> memoryview:
        self._check_range(offset, size)
        self._metadata()
        for at, data in self._held:
            if at <= offset and offset + size <= at + len(data):
                return memoryview(data)[offset - at : offset - at + size]
        return memoryview(b"".join(chunk for _, chunk in _pieces(self.remote, [(offset, offset + size)], self._held)))

    def stream(self, offset: int, size: int, step: int = 1 << 20) -> Iterator[memoryview]:
        """The bytes in order: those already fetched from memory, the rest by range requests."""
        self._check_range(offset, size)
        self._metadata()
        for _, chunk in _pieces(self.remote, [(offset, offset + size)], self._held):
            view = memoryview(chunk)
            for pos in range(0, len(view), step):
                yield view[pos : pos + step]

    def copy_ranges(self, copies: Sequence[tuple[int, int, int]], dst_fd: int) -> list[int]:
        """`copy_range` of each (offset, size, dst_offset), near ranges in one request: ranges
        at most `GAP` apart whose group spans at most a range request (`Policy.range_size`) come
        in one response, held in memory and written piece by piece; a longer range streams on
        its own. Bytes already fetched are not asked for again."""
        crcs = [0] * len(copies)
        spans = [(offset, offset + size) for offset, size, _ in copies]
        for group in coalesce(spans, self.remote.policy.range_size):
            if len(group) == 1:
                offset, size, dst = copies[group[0]]
                crcs[group[0]] = self.copy_range(offset, size, dst_fd, dst)
                continue
            start = min(spans[i][0] for i in group)
            end = max(spans[i][1] for i in group)
            data = self.read(start, end - start)
            for i in group:
                offset, size, dst = copies[i]
                crcs[i] = write_crc([data[offset - start : offset - start + size]], dst_fd, dst)
        return crcs

    def hold(self, offset: int, size: int) -> bytes:
        """The bytes [offset, offset + size), fetched once and kept: later reads, streams and
        copies of them (and `local_copy`) make no request."""
        data = bytes(self.read(offset, size))
        self._held.append((offset, data))
        return data

    def local_copy(self, regions: Sequence[tuple[int, int]]) -> Container:
        """A `Container` over a scratch file that holds the bytes fetched so far (the metadata,
        what `hold` kept) and those of `regions` (offset, size), fetched now as `copy_ranges`
        asks for them: for code written against a mapped container (a signature check) that
        reads nothing else. Every other byte reads as zero, so the caller MUST name every byte
        that code may read. The file is unlinked at once and sparse: it takes the disk space of
        the bytes written, in the temporary folder, and goes with the container's close."""
        import mmap
        import tempfile

        from fatpte.fileio.atomic import io_error
        from fatpte.fileio.streams import write_all

        try:
            fd, name = tempfile.mkstemp(prefix="fatpte-remote-")
            os.unlink(name)
        except OSError as exc:
            raise io_error(exc, tempfile.gettempdir(), "cannot make a scratch file in") from exc
        try:
            os.ftruncate(fd, self.size)
            for at, data in self._held:
                write_all(fd, data, at)
            self.copy_ranges([(offset, size, offset) for offset, size in regions if size], fd)
            buf = mmap.mmap(fd, self.size, access=mmap.ACCESS_READ)
        except OSError as exc:
            os.close(fd)
            raise io_error(exc, tempfile.gettempdir(), "cannot write a scratch file in") from exc
        except BaseException:
            os.close(fd)
            raise
        return Container(buf, source=self.source, fd=fd)

    def close(self) -> None:
        super().close()
        self.remote.close()

    def __repr__(self) -> str:
        return f"<fatpte.RemoteContainer {self.source!r} v{self.version} {len(self.entries)} entries>"


def _metadata(remote: RemoteFile, head: bytes, size: int) -> tuple[bytes, tuple[int, bytes] | None]:
    """The file's first bytes through the end of its tables (and of its manifest when that
    follows them closely), and the manifest's range read on its own when it lies elsewhere."""
    ranges = metadata_ranges(head, size)
    end = ranges[0][1]
    manifest = ranges[1] if len(ranges) > 1 else None
    # A manifest that starts within one prefix of the bytes fetched anyway comes in the same
    # request: the gap costs less than a round trip.
    if manifest is not None and manifest[0] <= max(end, len(head)) + PREFIX_SIZE:
        end = max(end, manifest[1])
        manifest = None
    meta = head if end <= len(head) else head + remote.read(len(head), end - len(head))
    separate = None
    if manifest is not None and manifest[1] > len(meta):
        separate = (manifest[0], remote.read(manifest[0], manifest[1] - manifest[0]))
    return meta, separate


def open_remote(url: str, *, policy: Policy | None = None, **storage_options: Any) -> RemoteContainer:
    """Open the container at `url` (`https://`, `s3://`, any scheme fsspec reads); raises
    `FatpteError` on the first error, as `fatpte.open` does. `storage_options` go to the fsspec
    filesystem (`headers=`, `client_kwargs=` for http; `key=`, `secret=`, `endpoint_url=` for
    s3); `policy` sets timeouts, retries and redirects (fatpte/fileio/remote.py)."""
    remote = RemoteFile(url, policy=policy or Policy.from_environment(), **storage_options)
    try:
        return RemoteContainer(remote)
    except BaseException:
        remote.close()
        raise


def validate_remote(url: str, *, progress: Progress | None = None, policy: Policy | None = None,
                    **storage_options: Any) -> Report:
    """`fatpte.validate` of the container at `url`: every rule, every byte read once.

    The metadata comes as `open_remote` fetches it; the content checks' questions are then
    planned (`integrity.scan_questions`: the padding, every region's CRC32C, the SHA-256 digests
    the manifest states) and the bytes they cover stream past once, in file order, in range
    requests of bounded size; only the manifest and the bytes 4..8 of each payload are kept.
    `progress(done, total)` follows the bytes read. Raises `FatpteError` only when the file
    cannot be read."""
    remote = RemoteFile(url, policy=policy or Policy.from_environment(), **storage_options)
    source = remote.source  # the URL without its credentials: what the report names
    try:
        head = remote.head(PREFIX_SIZE)
        size = remote.size
        assert size is not None
        meta, separate = _metadata(remote, head, size)
        st = read_structure(meta, source=source, size=size)
        manifest = None
        h = st.header
        if h is not None and st.manifest_placed:
            from fatpte.manifest.rules import read_manifest

            base, data = separate if separate is not None else (0, meta)
            try:
                manifest = read_manifest(data, h, source=source, base=base)
            except FatpteError:
                manifest = None  # check_integrity reports it
        scan = ScannedRanges(scan_questions(st, manifest), source=source)
        needed = scan.needed()
        advance = None if progress is None else progress_counter(progress, sum(b - a for a, b in needed))
        held = [(0, meta)] + ([separate] if separate is not None else [])
        for offset, chunk in _pieces(remote, needed, held):
            scan.feed(offset, chunk)
            if advance is not None:
                advance(len(chunk))
        check_integrity(scan, st)
        return Report(source=source, version=None if h is None else h.version, size=size, findings=tuple(st.findings))
    finally:
        remote.close()


def _pieces(remote: RemoteFile, needed: list[tuple[int, int]],
            held: list[tuple[int, bytes]]) -> Iterator[tuple[int, bytes | memoryview]]:
    """The bytes of the `needed` ranges in file order: from `held` (offset, bytes) where they
    were fetched already, else streamed from `remote`."""
    held = sorted(held, key=lambda piece: piece[0])
    for start, end in needed:
        pos = start
        for at, data in held:
            stop = at + len(data)
            if stop <= pos or at >= end:
                continue
            if pos < at:
                for chunk in remote.stream(pos, at - pos):
                    yield pos, chunk
                    pos += len(chunk)
            upto = min(end, stop)
            yield pos, memoryview(data)[pos - at : upto - at]
            pos = upto
        if pos < end:
            for chunk in remote.stream(pos, end - pos):
                yield pos, chunk
                pos += len(chunk)
