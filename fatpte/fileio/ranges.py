"""What the content checks ask of a file's bytes, answered from a buffer or from one streaming pass.

The content checks (fatpte/container/integrity.py, fatpte/manifest/rules.py) ask for the CRC32C
and SHA-256 of regions, the first non-zero byte of the padding between them, and a few bytes
(the manifest, the bytes 4..8 of a payload). `BufferRanges` answers from a buffer that holds the
whole file (a mapping), computing each answer when asked. `ScannedRanges` answers a file read
once, in order, in bounded chunks (a file at a URL): the questions are planned first, every chunk
is fed to the answers it concerns as it passes, and nothing but the planned small ranges is kept.
Both give the same answers, so the checks, their order and their messages exist once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple, Protocol

from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.buffers import BytesLike
from fatpte.fileio.checksum import crc32c

if TYPE_CHECKING:
    from fatpte.fileio.streams import Advance

_SCAN_CHUNK = 1 << 20
_ZEROS = bytes(_SCAN_CHUNK)


class RangeReader(Protocol):
    """What the content checks ask; [start, end) are absolute offsets in the file."""

    def crc32c(self, start: int, end: int, advance: Advance | None = None) -> int: ...

    def sha256(self, start: int, end: int) -> bytes: ...

    def first_nonzero(self, start: int, end: int) -> tuple[int, int] | None:
        """(offset, value) of the first byte in the range that is not zero, or None."""
        ...

    def bytes(self, start: int, end: int) -> bytes:
        """The bytes of a small range (a manifest, bytes 4..8 of a payload)."""
        ...


class BufferRanges:
    """Answers from a buffer holding the whole file, computed when asked."""

    def __init__(self, buf: BytesLike) -> None:
        self.buf = buf

    def crc32c(self, start: int, end: int, advance: Advance | None = None) -> int:
        return crc32c(self.buf, start, end, advance=advance)

    def sha256(self, start: int, end: int) -> bytes:
        import hashlib  # only a manifest that states a payload digest needs it

        digest = hashlib.sha256()
        view = memoryview(self.buf)
        try:
            for pos in range(start, end, 8 << 20):
                digest.update(view[pos : min(end, pos + (8 << 20))])
        finally:
            view.release()
        return digest.digest()

    def first_nonzero(self, start: int, end: int) -> tuple[int, int] | None:
        view = memoryview(self.buf)
        try:
            pos = start
            while pos < end:
                nxt = min(end, pos + _SCAN_CHUNK)
                chunk = bytes(view[pos:nxt])
                if chunk != _ZEROS[: nxt - pos]:  # memcmp: the common all-zero chunk costs a copy and a compare
                    at = nxt - len(chunk.lstrip(b"\0"))
                    return at, chunk[at - pos]
                pos = nxt
        finally:
            view.release()
        return None

    def bytes(self, start: int, end: int) -> bytes:
        return bytes(self.buf[start:end])


class Question(NamedTuple):
    """One answer to compute during a scan: `kind` is crc32c, sha256, first_nonzero or bytes."""

    kind: str
    start: int
    end: int


class ScannedRanges:
    """Answers to planned questions, computed while the file's bytes pass once, in order.

    `feed(offset, chunk)` takes the bytes of the file in increasing, non-overlapping pieces (the
    ranges `needed()` names, and any others, which are skipped); each piece goes to the
    answers whose range it crosses. Asking a question that was not planned is a programming
    error, reported as such."""

    def __init__(self, questions: Iterable[Question], source: str | None = None) -> None:
        self._source = source
        self._pending = sorted(set(questions), key=lambda q: (q.start, q.end))
        self._next = 0
        self._active: list[tuple[Question, _Answer]] = []
        self._answers: dict[Question, object] = {}
        self._reached = 0
        for q in self._pending:
            if q.kind not in _KINDS:
                raise ValueError(f"no such question: {q.kind}")
            if q.start == q.end:  # empty ranges are answered without bytes
                self._answers[q] = _KINDS[q.kind]().result()

    def needed(self) -> list[tuple[int, int]]:
        """The ranges the questions cover, merged, in file order."""
        out: list[tuple[int, int]] = []
        for q in self._pending:
            if q.start == q.end:
                continue
            if out and q.start <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], q.end))
            else:
                out.append((q.start, q.end))
        return out

    def feed(self, offset: int, chunk: BytesLike) -> None:
        end = offset + len(chunk)
        if offset < self._reached:
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"bytes at {offset:#x} fed after {self._reached:#x}",
                              source=self._source)
        self._reached = end
        pending = self._pending
        while self._next < len(pending) and pending[self._next].start < end:
            q = pending[self._next]
            self._next += 1
            if q.start < q.end:
                if q.start < offset:
                    raise FatpteError(ErrorCode.INVALID_ARGUMENT,
                                      f"the scan skipped bytes {q.start:#x}..{offset:#x} that {q.kind} needs",
                                      source=self._source)
                self._active.append((q, _KINDS[q.kind]()))
        view = memoryview(chunk)
        still: list[tuple[Question, _Answer]] = []
        for q, state in self._active:
            lo, hi = max(q.start, offset), min(q.end, end)
            if lo < hi:
                state.update(lo, view[lo - offset : hi - offset])
            if q.end <= end:
                self._answers[q] = state.result()
            else:
                still.append((q, state))
        self._active = still

    def _answer(self, kind: str, start: int, end: int) -> object:
        q = Question(kind, start, end)
        if q not in self._answers:
            raise FatpteError(ErrorCode.INVALID_ARGUMENT,
                              f"no planned answer for {kind} of bytes {start:#x}..{end:#x} (a bug in the scan plan)",
                              source=self._source)
        return self._answers[q]

    def crc32c(self, start: int, end: int, advance: Advance | None = None) -> int:
        value = self._answer("crc32c", start, end)
        assert isinstance(value, int)
        return value

    def sha256(self, start: int, end: int) -> bytes:
        value = self._answer("sha256", start, end)
        assert isinstance(value, bytes)
        return value

    def first_nonzero(self, start: int, end: int) -> tuple[int, int] | None:
        value = self._answer("first_nonzero", start, end)
        assert value is None or isinstance(value, tuple)
        return value

    def bytes(self, start: int, end: int) -> bytes:
        value = self._answer("bytes", start, end)
        assert isinstance(value, bytes)
        return value


# The running answer to each kind of question, fed the pieces of its range in order.


class _Crc:
    def __init__(self) -> None:
        self.value = 0

    def update(self, at: int, piece: memoryview) -> None:
        self.value = crc32c(piece, value=self.value)

    def result(self) -> object:
        return self.value


class _Sha:
    def __init__(self) -> None:
        import hashlib

        self.digest = hashlib.sha256()

    def update(self, at: int, piece: memoryview) -> None:
        self.digest.update(piece)

    def result(self) -> object:
        return self.digest.digest()


class _FirstNonzero:
    def __init__(self) -> None:
        self.found: tuple[int, int] | None = None

    def update(self, at: int, piece: memoryview) -> None:
        if self.found is None:
            data = bytes(piece)
            rest = data.lstrip(b"\0")
            if rest:
                self.found = (at + len(data) - len(rest), rest[0])

    def result(self) -> object:
        return self.found


class _Keep:
    def __init__(self) -> None:
        self.data = bytearray()

    def update(self, at: int, piece: memoryview) -> None:
        self.data += piece

    def result(self) -> object:
        return bytes(self.data)


_Answer = _Crc | _Sha | _FirstNonzero | _Keep
_KINDS: dict[str, type[_Answer]] = {"crc32c": _Crc, "sha256": _Sha, "first_nonzero": _FirstNonzero, "bytes": _Keep}
