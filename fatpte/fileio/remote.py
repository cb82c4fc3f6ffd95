"""Reading a file at a URL by byte ranges: `RemoteFile`, checked response by response.

A range reader must see each response's status and headers before it reads a byte of the body:
a server that ignores `Range` answers 200 with the whole file, and a reader that reads first and
checks after has downloaded the 3 GiB it meant to avoid. So for `http://` and `https://` the
requests are made here, by one of two clients that make the same checks:
- the standard library's `http.client`, when the storage options are at most `headers` (and
  fsspec's own configuration, environment or files, says nothing of the scheme): one
  keep-alive connection, each body read straight from the socket in 1 MiB buffers. It is what
  makes a download over a fast link about as quick as curl's (2 to 3 times aiohttp's on loopback, with
  0.2 s less start-up: docs/performance.md), and it needs no extra package;
- the aiohttp session of fsspec's HTTPFileSystem, for every other storage option (auth,
  client_kwargs, ...), for URLs with credentials in them and where fsspec's configuration
  (FSSPEC_HTTPS=..., ~/.config/fsspec) applies: what fsspec's users configure applies unchanged.
For every other scheme (`s3://` through s3fs, `gs://`, `memory://`, ...) the scheme's fsspec
filesystem reads each range through its file object, uncached (s3fs sends `If-Match` with the
ETag it saw first, so a replaced object fails with 412 instead of mixing two versions).

What every response is checked for, and the error each failure raises (specs/remote.md):
- well-formed framing: Content-Length and Content-Range in ASCII digits only, one length, not
  both a length and chunked coding (E0810, retried: what aiohttp's own parser says of them);
- the range asked for, no other (`Content-Range`; a 200 with more bytes than asked is E0803);
- the same file as the first response (size, ETag, Last-Modified; E0804);
- as many body bytes as it announced (E0805, after the retries);
- access (401/403: E0806), existence (404/410: E0807), redirects (E0808), time (E0809).
Transient failures (a dropped connection, a short body, a timeout, 408, 429, 5xx) are retried,
`Policy.attempts` tries in all per range, resuming after the last byte received, with
exponential backoff from `Policy.backoff` seconds; the rest fail at once. Over all of it runs
`Policy.deadline`: a server that answers, slowly, within every per-read timeout still ends.

Both http clients follow redirects in the same loop (`_redirect_target`, `_forwarded`): at most
`Policy.max_redirects`, only to http and https, and a request to another origin than the URL's
carries none of the headers (nor auth, nor cookies) the caller gave, unless
`Policy.redirect_headers` names them. Every URL shown (`RemoteFile.source`, every message) has
its credentials redacted (fatpte/fileio/url.py).

fsspec, aiohttp and asyncio (http.client and ssl too) are imported only here, and this module
only when a URL is given: they cost more start-up than a whole local `fatpte info`.
"""

from __future__ import annotations

import os
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.url import redact

# The first request's size: the header (64 bytes), the tables and the manifest of a container
# with up to about a hundred entries and a thousand named-data keys (docs/remote.md measures the
# examples), in one round trip. At 1 Mbit/s it costs half a second; a container whose
# metadata is larger costs one more request, sized from the header.
PREFIX_SIZE = 64 << 10

# Bytes per range request while streaming a payload: each request is one retry's worth of work
# and one object a CDN caches; 16 MiB keeps requests per GiB at 64 (about a hundredth of a
# second of round trips on a LAN) while a retry repeats at most a fraction of a second.
RANGE_SIZE = 16 << 20

# Bytes per buffer handed to the reader, and how many may wait: what a streaming read holds.
CHUNK = 1 << 20
DEPTH = 4

# Ranges wanted together (the segments thin copies) that lie at most this far apart are asked
# for in one request, the bytes between them read and dropped: as for the metadata's second
# request (specs/remote.md section 2), 64 KiB costs less than a round trip.
GAP = PREFIX_SIZE


def coalesce(ranges: list[tuple[int, int]], limit: int, gap: int = GAP) -> list[list[int]]:
    """The [start, end) `ranges` grouped into requests: the indices of each group, in file
    order. A range joins the group before it when at most `gap` bytes lie between them and the
    group then spans at most `limit` bytes (a range longer than that stays alone, streamed)."""
    groups: list[list[int]] = []
    start = end = 0
    for i in sorted(range(len(ranges)), key=lambda k: ranges[k]):
        a, b = ranges[i]
        if groups and a - end <= gap and max(end, b) - start <= limit:
            groups[-1].append(i)
            end = max(end, b)
        else:
            groups.append([i])
            start, end = a, b
    return groups

class Policy(NamedTuple):
    """How patient a remote read is, how large its range requests, and which of the caller's
    headers may follow a redirect to another origin. The environment sets them for the command
    line: FATPTE_REMOTE_TIMEOUT (seconds), FATPTE_REMOTE_DEADLINE (seconds),
    FATPTE_REMOTE_ATTEMPTS, FATPTE_REMOTE_MAX_REDIRECTS, FATPTE_REMOTE_RANGE_SIZE (bytes),
    FATPTE_REMOTE_REDIRECT_HEADERS (names, comma-separated; `*` for all)."""

    timeout: float = 30.0  # seconds to connect, and between two reads of a response; 0: none
    attempts: int = 4  # tries per range request, the first included
    backoff: float = 0.25  # seconds before the first retry; doubled before each next one
    max_redirects: int = 5
    range_size: int = RANGE_SIZE
    # Seconds for everything read from one URL, from its first request; 0: none. The timeout
    # bounds a silence, not a drip: a server sending a byte every timeout - 1 seconds would keep
    # a 64 KiB prefix coming for 22 days. An hour is a 4 GiB container at 10 Mbit/s.
    deadline: float = 3600.0
    # The caller's headers (case-insensitive names; "*": all) still sent when a redirect leads
    # to another scheme, host or port; by default none are (Authorization, Cookie, X-Api-Key...).
    redirect_headers: tuple[str, ...] = ()

    @classmethod
    def from_environment(cls) -> Policy:
        """The defaults, changed by the environment variables above."""
        base = cls()
        names = os.environ.get("FATPTE_REMOTE_REDIRECT_HEADERS")
        return cls(timeout=_env_number("FATPTE_REMOTE_TIMEOUT", base.timeout, float, 0.0),
                   attempts=int(_env_number("FATPTE_REMOTE_ATTEMPTS", base.attempts, int, 1)),
                   max_redirects=int(_env_number("FATPTE_REMOTE_MAX_REDIRECTS", base.max_redirects, int, 0)),
                   range_size=int(_env_number("FATPTE_REMOTE_RANGE_SIZE", base.range_size, int, CHUNK)),
                   deadline=_env_number("FATPTE_REMOTE_DEADLINE", base.deadline, float, 0.0),
                   redirect_headers=base.redirect_headers if names is None else
                   tuple(n.strip() for n in names.split(",") if n.strip()))

    def forwards(self, name: str) -> bool:
        """Whether the caller's header `name` goes with a request to another origin."""
        allowed = {n.lower() for n in self.redirect_headers}
        return "*" in allowed or name.lower() in allowed


def _env_number(name: str, default: float, kind: Callable[[str], float], minimum: float) -> float:
    text = os.environ.get(name)
    if text is None:
        return default
    try:
        value = kind(text)
    except ValueError:
        value = minimum - 1
    if not minimum <= value < float("inf"):
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{name}={text!r} is not a number of at least {minimum:g}",
                          field=name, actual=text)
    return value


class Stats:
    """What a RemoteFile asked for and received."""

    __slots__ = ("received", "requests", "retries")

    def __init__(self) -> None:
        self.requests = 0
        self.received = 0  # body bytes
        self.retries = 0

    def __repr__(self) -> str:
        return f"Stats(requests={self.requests}, received={self.received}, retries={self.retries})"


class _Transient(Exception):
    """A failure worth another try: (code of the last one, message)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _timed_out(remote: RemoteFile, start: int, end: int) -> _Transient:
    """A response that stalled, in the same words from both http clients."""
    return _Transient(ErrorCode.REMOTE_TIMEOUT,
                      f"no answer for {remote.policy.timeout:g} s while reading bytes {start}-{end - 1}")


def _cut_short(start: int, end: int, detail: str) -> _Transient:
    """A response whose body ended before its range did, in the same words from both clients."""
    return _Transient(ErrorCode.REMOTE_SHORT_READ, f"the response for bytes {start}-{end - 1} ended early: {detail}")


def _malformed(detail: str) -> _Transient:
    """A response whose framing cannot be trusted: what aiohttp's parser reports as a
    ClientResponseError (retried: a broken proxy may be in between), in the same words."""
    return _Transient(ErrorCode.REMOTE_FAILED, f"a malformed response: {detail}")


class RemoteFile:
    """A file at a URL, read by byte ranges. `head()` makes the first request, which also
    learns the file's size and identity; every later response must match them.

    `url` is what is asked for; `source`, the URL without its credentials, is what every error
    and every report names."""

    def __init__(self, url: str, *, policy: Policy | None = None, **storage_options: Any) -> None:
        self.url = url
        self.source = redact(url)
        self.policy = policy or Policy()
        self.stats = Stats()
        self.size: int | None = None
        self.whole_answers = False  # the first answer was a 200 with the whole (small) file
        self._identity: dict[str, str] = {}
        deadline = self.policy.deadline
        self._expires = time.monotonic() + deadline if deadline > 0 else None
        self._backend: _HttpClient | _Http | _Fsspec = _open_backend(self, storage_options)

    def error(self, code: ErrorCode, message: str, **kw: Any) -> FatpteError:
        return FatpteError(code, redact(message), source=self.source, **kw)

    def left(self) -> float | None:
        """Seconds until the deadline (at least 0), None without one."""
        return None if self._expires is None else max(0.0, self._expires - time.monotonic())

    def expired(self) -> bool:
        return self._expires is not None and time.monotonic() >= self._expires

    def past_deadline(self, start: int, end: int) -> FatpteError:
        return self.error(ErrorCode.REMOTE_TIMEOUT,
                          f"the deadline of {self.policy.deadline:g} s for reading this URL passed while reading "
                          f"bytes {start}-{max(start, end) - 1} (FATPTE_REMOTE_DEADLINE or fatpte "
                          "--remote-deadline sets it)", expected=self.policy.deadline)

    def head(self, count: int = PREFIX_SIZE) -> bytes:
        """The first `count` bytes (fewer when the file is shorter): the first request."""
        if self.size is not None:
            return self.read(0, min(count, self.size))
        return b"".join(self._retrying(0, count, first=True))

    def read(self, offset: int, size: int) -> bytes:
        """Exactly `size` bytes from `offset`, in one request when they fit one range."""
        if size == 0:
            return b""
        return b"".join(self.stream(offset, size))

    def stream(self, offset: int, size: int) -> Iterator[bytes]:
        """The bytes [offset, offset + size) in order, in buffers of at most CHUNK bytes, with
        range requests of at most `policy.range_size` bytes; at most DEPTH buffers wait."""
        if self.size is None:
            self.head(0)
        assert self.size is not None
        if size < 0 or offset < 0 or size > self.size or offset > self.size - size:
            raise self.error(ErrorCode.INVALID_ARGUMENT,
                             f"bytes {offset:#x}..{offset + size:#x} lie outside the file of {self.size} bytes",
                             offset=offset)
        end = offset + size
        pos = offset
        while pos < end:
            stop = min(end, pos + self.policy.range_size)
            yield from self._retrying(pos, stop, first=False)
            pos = stop

    def _retrying(self, start: int, end: int, *, first: bool) -> Iterator[bytes]:
        """One range, retried from the last byte received while the failures are transient
        and the deadline has not passed."""
        pos = start
        attempt = 0
        while True:
            if self.expired():
                raise self.past_deadline(pos, end)
            try:
                for chunk in self._backend.fetch(pos, end, first):
                    pos += len(chunk)
                    yield chunk
                    first = False
                return
            except _Transient as exc:
                if self.expired():  # what failed was most likely the deadline closing the connection
                    raise self.past_deadline(pos, end) from None
                attempt += 1
                if attempt >= self.policy.attempts:
                    tries = f"{attempt} {'try' if attempt == 1 else 'tries'}"
                    raise self.error(exc.code, f"{exc.message} ({tries}, the limit)") from None
                self.stats.retries += 1
                pause = self.policy.backoff * (1 << (attempt - 1))
                left = self.left()
                time.sleep(pause if left is None else min(pause, left))
                if self.size is not None:
                    # The first answer came (its body perhaps not): the next try asks for what
                    # is left of the range within the file, never past its end.
                    first, end = False, min(end, self.size)
                    if pos >= end:
                        return

    @property
    def identity(self) -> dict[str, str]:
        """What the first response said identifies the file (ETag, Last-Modified, ...)."""
        return dict(self._identity)

    # -- called by the backends ---------------------------------------------------------------

    def learn(self, size: int, identity: dict[str, str]) -> None:
        """Record what the first response said of the file."""
        self.size = size
        self._identity = {k: v for k, v in identity.items() if v}

    def check_same(self, size: int | None, identity: dict[str, str]) -> None:
        """Raise E0804 when a later response describes another file than the first did."""
        if size is not None and self.size is not None and size != self.size:
            raise self.error(ErrorCode.REMOTE_CHANGED,
                             f"the file was {self.size} bytes at the first request and is now {size}: it "
                             "changed while being read", expected=self.size, actual=size)
        for key, was in self._identity.items():
            now = identity.get(key)
            if now and now != was:
                raise self.error(ErrorCode.REMOTE_CHANGED,
                                 f"the file's {key} was {was} at the first request and is now {now}: it changed "
                                 "while being read", field=key, expected=was, actual=now)

    def close(self) -> None:
        self._backend.close()


def _open_backend(remote: RemoteFile, storage_options: dict[str, Any]) -> _HttpClient | _Http | _Fsspec:
    scheme = remote.url.split("://", 1)[0].lower()
    if (scheme in ("http", "https") and set(storage_options) <= {"headers"} and not _has_credentials(remote.url)
            and not _fsspec_configured(scheme)):
        return _HttpClient(remote, dict(storage_options.get("headers") or {}))
    try:
        import fsspec
    except ImportError as exc:
        raise remote.error(ErrorCode.REMOTE_UNSUPPORTED,
                           f"reading {scheme}:// URLs needs fsspec: pip install 'fatpte[remote]' ({exc})") from exc
    try:
        fs, path = fsspec.core.url_to_fs(remote.url, **storage_options)
    except (ImportError, ValueError) as exc:
        # fsspec names the package a scheme needs (s3fs, gcsfs, ...) in its message.
        raise remote.error(ErrorCode.REMOTE_UNSUPPORTED, f"cannot read {scheme}:// URLs here: {exc}") from exc
    if scheme in ("http", "https"):
        return _Http(remote, fs)
    return _Fsspec(remote, fs, path)


# ---------------------------------------------------------------------------------------------
# what both http clients share: redirects, the caller's headers, the checks of every response
# ---------------------------------------------------------------------------------------------

_REDIRECTS = (301, 302, 303, 307, 308)
# A kept-alive connection the server has closed shows as one of these before any byte of an
# answer (http.client's RemoteDisconnected is a ConnectionResetError): the request is sent again
# once on a new connection, which is not a retry.
_STALE = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


def _fsspec_configured(scheme: str) -> bool:
    """Whether fsspec's own configuration may set options for `scheme`: an environment variable
    FSSPEC_<SCHEME> or FSSPEC_<SCHEME>_<OPTION>, or a file in its configuration folder
    (FSSPEC_CONFIG_DIR, else ~/.config/fsspec). Such URLs go through fsspec, which applies it."""
    prefix = f"FSSPEC_{scheme.upper()}"
    if any(key == prefix or key.startswith(prefix + "_") for key in os.environ):
        return True
    folder = os.environ.get("FSSPEC_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".config", "fsspec")
    try:
        return any(name.endswith((".json", ".ini")) for name in os.listdir(folder))
    except OSError:
        return False


def _origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of `url`, the port made explicit."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(scheme)


def _has_credentials(url: str) -> bool:
    """Whether `url` names a user (user:password@host), which fsspec's aiohttp session turns into
    Basic auth; a URL urllib cannot split goes to fsspec too, which reports it."""
    from urllib.parse import urlsplit

    try:
        return urlsplit(url).username is not None
    except ValueError:
        return True


def _redirect_target(remote: RemoteFile, url: str, r: Any, location: str, hop: int) -> str:
    """The URL a redirect from `url` to `location` leads to, when it may be followed: at most
    `max_redirects` of them, only to http or https (a redirect to file:// would read a local
    file, to ftp:// another protocol), and never to one naming a user (`user:password@`: the
    server would choose the credentials sent). E0808 otherwise, the same from both clients."""
    from urllib.parse import urljoin, urlsplit

    limit = remote.policy.max_redirects
    if hop >= limit:
        if limit == 0:
            said = f"HTTP {r.status} {r.reason or ''}".rstrip()
            raise remote.error(ErrorCode.REMOTE_TOO_MANY_REDIRECTS,
                               f"{said} to {location}, but redirects are not followed (max_redirects is 0)",
                               expected=0)
        raise remote.error(ErrorCode.REMOTE_TOO_MANY_REDIRECTS,
                           f"redirected more than {limit} times (the last to {location})", expected=limit)
    try:
        target = urljoin(url, location)
        parts = urlsplit(target)
        parts.port  # noqa: B018 - raises ValueError for a port that is no number
    except ValueError as exc:
        raise remote.error(ErrorCode.REMOTE_TOO_MANY_REDIRECTS,
                           f"redirected to {location!r}, which is not a valid URL: {exc}", actual=location) from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise remote.error(ErrorCode.REMOTE_TOO_MANY_REDIRECTS,
                           f"redirected to {location!r}: only redirects to http:// and https:// URLs are followed",
                           actual=redact(location))
    if "@" in parts.netloc:
        # http.client took the user information for a host name (E0810) while aiohttp sent it as
        # Basic auth: a server's answer chose the credentials. Neither follows it (issue 42).
        raise remote.error(ErrorCode.REMOTE_TOO_MANY_REDIRECTS,
                           f"redirected to {location!r}, which names a user (user:password@): a redirect that "
                           "carries credentials is not followed; give them in the URL itself", actual=redact(location))
    return target


def _forwarded(remote: RemoteFile, headers: dict[str, str], same_origin: bool) -> dict[str, str]:
    """The caller's headers a request carries: all of them to the URL's own origin; to another
    origin (a redirect to a CDN, to a signed object-store URL) only those
    `Policy.redirect_headers` names: a credential may be any header (Authorization, Cookie,
    X-Api-Key, ...), so none is sent where the caller did not say it may go."""
    if same_origin:
        return headers
    return {k: v for k, v in headers.items() if remote.policy.forwards(k)}


_NUMBER = r"[0-9]{1,19}"  # ASCII digits (str.isdigit also says yes to "²"), at most 2**63
_CONTENT_RANGE = re.compile(rf"[ \t]*bytes[ \t]+(?:({_NUMBER})-({_NUMBER})|\*)/({_NUMBER}|\*)[ \t]*",
                            re.IGNORECASE | re.ASCII)
_LENGTH = re.compile(rf"[ \t]*({_NUMBER})[ \t]*", re.ASCII)
_IDENTITY = ("ETag", "Last-Modified")
_DONE = object()


def _values(r: Any, name: str) -> list[str]:
    """Every value of header `name` of an http.client or an aiohttp response."""
    headers = r.headers
    found = headers.get_all(name) if hasattr(headers, "get_all") else headers.getall(name, [])
    return [str(v) for v in found or []]


def _length(r: Any) -> int | None:
    """The response's Content-Length, None when it has none. Read strictly, as aiohttp's
    parser reads it: ASCII digits only, one value (repeats allowed when equal), and not beside
    chunked transfer coding; anything else is a malformed response (E0810)."""
    values = _values(r, "Content-Length")
    chunked = any("chunked" in v.lower() for v in _values(r, "Transfer-Encoding"))
    if not values:
        return None
    if chunked:
        raise _malformed("it has both Content-Length and Transfer-Encoding: chunked")
    numbers = set()
    for v in values:
        m = _LENGTH.fullmatch(v)
        if m is None:
            raise _malformed(f"Content-Length {v!r} is not a number of bytes")
        numbers.add(int(m.group(1)))
    if len(numbers) > 1:
        raise _malformed(f"it states {len(values)} different Content-Lengths {values}")
    return numbers.pop()


def _check_response(remote: RemoteFile, r: Any, start: int, end: int, first: bool) -> tuple[int, int]:
    """(bytes of the body to skip, bytes to read then), after every check a response must pass.
    `r` is an aiohttp or an http.client response: `status`, `reason` and `headers`."""
    status = r.status
    length = _length(r)
    identity = {k: r.headers.get(k, "") for k in _IDENTITY}
    asked = f"bytes {start}-{end - 1}"
    content_range = r.headers.get("Content-Range")
    if status == 206:
        m = None if content_range is None else _CONTENT_RANGE.fullmatch(content_range)
        if m is None or m.group(1) is None:
            raise remote.error(ErrorCode.REMOTE_RANGE_IGNORED,
                               f"asked for {asked}, the server answered 206 with Content-Range {content_range!r}",
                               expected=asked, actual=content_range)
        got_start, got_end = int(m.group(1)), int(m.group(2)) + 1
        total = None if m.group(3) == "*" else int(m.group(3))
        if first:
            if total is None:
                raise remote.error(ErrorCode.REMOTE_RANGE_IGNORED,
                                   f"the server's first answer does not state the file's size (Content-Range "
                                   f"{content_range!r})")
            remote.learn(total, identity)
            end = min(end, total)
        else:
            remote.check_same(total, identity)
        if (got_start, got_end) != (start, end):
            raise remote.error(ErrorCode.REMOTE_RANGE_IGNORED,
                               f"asked for bytes {start}-{end - 1}, the server answered bytes "
                               f"{got_start}-{got_end - 1}", expected=f"{start}-{end - 1}",
                               actual=f"{got_start}-{got_end - 1}")
        if length is not None and length != end - start:
            raise remote.error(ErrorCode.REMOTE_RANGE_IGNORED,
                               f"the response announces {length} bytes for a range of {end - start}",
                               expected=end - start, actual=length)
        return 0, end - start
    if status == 200:
        if first and length is not None and length <= end - start:
            # A server that ignores Range, for a file no larger than the bytes asked for: the
            # whole file is exactly what the plan would read.
            remote.learn(length, identity)
            remote.whole_answers = True
            return 0, length
        if not first and remote.whole_answers and length == remote.size:
            # The same server again (a retry of that first answer): the whole file once more,
            # of which the bytes already received are skipped. Bounded by the first request.
            remote.check_same(length, identity)
            return start, end - start
        raise remote.error(ErrorCode.REMOTE_RANGE_IGNORED,
                           f"asked for {asked}, the server answered 200 with the whole file "
                           f"({'unknown' if length is None else length} bytes): it ignores Range requests; nothing "
                           "more was read", expected=asked, actual=f"200, {length} bytes")
    if status == 416:
        m = None if content_range is None else _CONTENT_RANGE.fullmatch(content_range)
        if first and m is not None and m.group(3) == "0":
            remote.learn(0, identity)  # an empty file: the reader reports it as truncated
            return 0, 0
        if first:
            # Bytes from 0 of a file that is not empty are always satisfiable.
            raise remote.error(ErrorCode.REMOTE_RANGE_IGNORED,
                               f"asked for {asked}, the server answered 416 (range not satisfiable) with "
                               f"Content-Range {content_range!r}", expected=asked, actual=content_range)
        raise remote.error(ErrorCode.REMOTE_CHANGED,
                           f"asked for {asked} of a file of {remote.size} bytes, the server answered 416 "
                           "(range not satisfiable): the file changed while being read",
                           expected=asked, actual=content_range)
    reason = f"HTTP {status} {r.reason or ''}".rstrip()
    if status in (401, 403):
        raise remote.error(ErrorCode.REMOTE_DENIED, f"{reason}: the server refused access; check the "
                           "credentials or headers given", actual=status)
    if status in (404, 410):
        raise remote.error(ErrorCode.REMOTE_NOT_FOUND, f"{reason}: the server has nothing at this URL",
                           actual=status)
    if status == 412:
        raise remote.error(ErrorCode.REMOTE_CHANGED,
                           f"{reason}: the file no longer has the ETag {remote.identity.get('ETag')} it had "
                           "at the first request: it changed while being read", actual=status)
    if status in (408, 429) or status >= 500:
        raise _Transient(ErrorCode.REMOTE_FAILED, f"{reason} for {asked}")
    raise remote.error(ErrorCode.REMOTE_FAILED, f"{reason} for {asked}", actual=status)


def _asked_end(start: int, end: int, first: bool) -> int:
    """The end of the range to ask for: `head(0)` asks for one byte, to learn the size."""
    return start + 1 if end <= start and first else end


def _range_headers(remote: RemoteFile, start: int, end: int, first: bool) -> dict[str, str]:
    """fatpte's own headers of a request: Range, and If-Match with the first response's strong
    ETag (a replaced file then answers 412, not other bytes)."""
    headers = {"Range": f"bytes={start}-{end - 1}"}
    etag = remote.identity.get("ETag") if not first else None
    if etag and not etag.startswith("W/"):
        headers["If-Match"] = etag
    return headers


# ---------------------------------------------------------------------------------------------
# http(s) through the standard library's http.client: no storage option but headers
# ---------------------------------------------------------------------------------------------


class _HttpClient:
    """Range requests on one keep-alive connection of `http.client`; each body is read from the
    socket in CHUNK-sized buffers as the caller takes them, so nothing waits in between.

    The deadline is kept by a timer that shuts the connection's socket down when it passes: a
    read blocked in the middle of a dripping body returns at once, and `RemoteFile` says why."""

    def __init__(self, remote: RemoteFile, headers: dict[str, str]) -> None:
        self._remote = remote
        self._headers = {str(k): str(v) for k, v in headers.items()}
        self._conn: Any = None
        self._conn_key: tuple[str, str] | None = None
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._give_up = 0.0  # when the timer stops waiting for a connection being opened

    def close(self) -> None:
        """Stop the deadline's timer and close the connection (RemoteFile.close)."""
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        self._drop()

    def _drop(self) -> None:
        """Close the connection: the next request opens another."""
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _arm(self) -> None:
        """Start the deadline's timer with the first request."""
        left = self._remote.left()
        if left is None or self._timer is not None:
            return
        timer = threading.Timer(left, self._expire)
        timer.daemon = True
        self._timer = timer
        self._give_up = time.monotonic() + left + (self._remote.policy.timeout or 60.0) + 1.0
        timer.start()

    def _expire(self) -> None:
        import socket

        with self._lock:
            if self._timer is None:
                return  # closed meanwhile
            conn = self._conn
            sock = None if conn is None else conn.sock
            if sock is not None:
                try:
                    # The plain socket's shutdown, under TLS too: the blocked read sees the end.
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)
                except OSError:
                    pass
            elif conn is not None and self._remote.left() == 0 and time.monotonic() < self._give_up:
                # A connection being opened has no socket yet: look again in a moment, for as
                # long as opening one may take (no new request starts once the deadline has
                # passed: RemoteFile._retrying).
                self._timer = threading.Timer(0.05, self._expire)
                self._timer.daemon = True
                self._timer.start()

    def _connection(self, scheme: str, netloc: str) -> tuple[Any, bool]:
        """The open connection to scheme://netloc, or a new one; True when it was used before."""
        import http.client

        if self._conn is not None and self._conn_key == (scheme, netloc):
            return self._conn, True
        self._drop()
        timeout = self._remote.policy.timeout or None
        try:
            if scheme == "https":
                import ssl

                conn: Any = http.client.HTTPSConnection(netloc, timeout=timeout,
                                                        context=ssl.create_default_context())
            else:
                conn = http.client.HTTPConnection(netloc, timeout=timeout)
        except (http.client.InvalidURL, ValueError) as exc:
            raise self._remote.error(ErrorCode.INVALID_ARGUMENT, f"{self._remote.url} is not a valid URL: {exc}") \
                from None
        with self._lock:
            self._conn, self._conn_key = conn, (scheme, netloc)
        return conn, False

    def _respond(self, url: str, headers: dict[str, str]) -> Any:
        """The response to GET `url`, sent again once on a new connection when a kept-alive one
        turns out closed."""
        from urllib.parse import quote, urlsplit

        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.netloc:
            raise self._remote.error(ErrorCode.INVALID_ARGUMENT, f"{url} is not a valid http(s) URL")
        target = quote(parts.path or "/", safe="/%:@!$&'()*+,;=-._~") + (f"?{parts.query}" if parts.query else "")
        for _ in range(2):
            conn, reused = self._connection(scheme, parts.netloc)
            try:
                conn.request("GET", target, headers=headers)
                return conn.getresponse()
            except _STALE:
                self._drop()
                if not reused:
                    raise
            except BaseException:
                self._drop()
                raise
        raise AssertionError("unreachable")  # the second try uses a new connection

    def fetch(self, start: int, end: int, first: bool) -> Iterator[bytes]:
        """One GET of [start, end) (following redirects); its body in buffers as it is read."""
        import http.client

        end = _asked_end(start, end, first)
        if end <= start:
            return
        remote = self._remote
        remote.stats.requests += 1
        self._arm()
        done = False
        try:
            r = self._follow(_range_headers(remote, start, end, first))
            skip, left = _check_response(remote, r, start, end, first)
            if skip and len(r.read(skip)) < skip:
                raise _cut_short(start, end, "the connection closed before the bytes already received")
            while left:
                chunk = r.read(min(CHUNK, left))
                if not chunk:
                    raise _cut_short(start, end, f"the connection closed with {left} bytes to come")
                left -= len(chunk)
                remote.stats.received += len(chunk)
                yield chunk
            done = not r.will_close
        except (FatpteError, _Transient):
            raise
        except TimeoutError:
            raise _timed_out(remote, start, end) from None
        except http.client.IncompleteRead as exc:
            raise _cut_short(start, end, repr(exc)) from None
        except (http.client.HTTPException, OSError, ValueError) as exc:
            # ValueError: what http.client raises for some malformed answers (a chunk size that
            # is no number is its IncompleteRead; a status line of junk, its BadStatusLine).
            raise _Transient(ErrorCode.REMOTE_FAILED, f"{type(exc).__name__}: {exc}") from None
        finally:
            if not done:
                self._drop()  # a body not read to its end leaves the connection unusable

    def _follow(self, own: dict[str, str]) -> Any:
        """The response at the end of the redirects `_redirect_target` allows, each request with
        fatpte's headers `own` and the caller's that `_forwarded` lets go there."""
        remote = self._remote
        url = remote.url
        origin = _origin(url)
        hop = 0
        while True:
            r = self._respond(url, {**_forwarded(remote, self._headers, _origin(url) == origin), **own})
            location = r.headers.get("Location")
            if r.status not in _REDIRECTS or not location:
                return r  # _check_response says what a redirect without a Location means
            r.read(1 << 16)  # what a redirect says is small; the connection is closed if more is left
            if not r.isclosed():
                self._drop()
            url = _redirect_target(remote, url, r, location, hop)
            hop += 1


# ---------------------------------------------------------------------------------------------
# http(s): requests made here, on fsspec's aiohttp session
# ---------------------------------------------------------------------------------------------


class _Http:
    def __init__(self, remote: RemoteFile, fs: Any) -> None:
        import asyncio

        import aiohttp

        self._asyncio = asyncio
        self._aiohttp = aiohttp
        self._remote = remote
        self._fs = fs
        self._loop = fs.loop
        self._session: Any = asyncio.run_coroutine_threadsafe(fs.set_session(), self._loop).result()
        self._options = dict(fs.kwargs)  # request options from the storage options
        self._headers = {str(k): str(v) for k, v in (self._options.pop("headers", None) or {}).items()}
        p = remote.policy
        self._timeout = aiohttp.ClientTimeout(total=None, sock_connect=p.timeout or None,
                                              sock_read=p.timeout or None)

    def close(self) -> None:
        pass  # the session belongs to the fsspec filesystem, which fsspec caches and closes

    def fetch(self, start: int, end: int, first: bool) -> Iterator[bytes]:
        """One GET of [start, end); its body in buffers as they arrive."""
        end = _asked_end(start, end, first)
        if end <= start:
            return
        remote = self._remote
        slots = self._asyncio.Semaphore(DEPTH)
        out: queue.SimpleQueue[Any] = queue.SimpleQueue()
        task = self._asyncio.run_coroutine_threadsafe(self._get(start, end, first, slots, out), self._loop)
        try:
            while True:
                try:
                    item = out.get(timeout=remote.left())
                except queue.Empty:
                    raise remote.past_deadline(start, end) from None
                if item is _DONE:
                    return
                if isinstance(item, BaseException):
                    raise item
                self._loop.call_soon_threadsafe(slots.release)
                yield item
        finally:
            if not task.done():
                task.cancel()
                self._loop.call_soon_threadsafe(_release_all, slots)

    async def _get(self, start: int, end: int, first: bool, slots: Any, out: queue.SimpleQueue[Any]) -> None:
        try:
            await self._get_body(start, end, first, slots, out)
            out.put(_DONE)
        except BaseException as exc:  # every outcome goes to the reading thread, which raises it
            out.put(self._classify(exc, start, end))
            if isinstance(exc, self._asyncio.CancelledError):
                raise

    def _request_options(self, same_origin: bool) -> dict[str, Any]:
        """The storage options' request options for a request to the URL's origin, or to
        another: there, aiohttp's `auth` and `cookies` are credentials like any header, and the
        session's own headers (client_kwargs) cannot be left out of a request, so a redirect that
        would carry them elsewhere is refused (E0808) unless the caller allowed them."""
        if same_origin:
            return self._options
        remote = self._remote
        kept = [name for name in self._session.headers if not remote.policy.forwards(name)]
        if kept:
            raise remote.error(ErrorCode.REMOTE_TOO_MANY_REDIRECTS,
                               f"redirected to another origin, where the session's own headers "
                               f"({', '.join(sorted(kept))}, from client_kwargs) would go too: give them as "
                               "`headers`, which stay with the URL's origin, or allow them to follow "
                               "(Policy.redirect_headers, FATPTE_REMOTE_REDIRECT_HEADERS)")
        dropped = {"auth": "Authorization", "cookies": "Cookie"}
        return {k: v for k, v in self._options.items() if k not in dropped or remote.policy.forwards(dropped[k])}

    async def _get_body(self, start: int, end: int, first: bool, slots: Any, out: queue.SimpleQueue[Any]) -> None:
        remote = self._remote
        own = _range_headers(remote, start, end, first)
        remote.stats.requests += 1
        url = remote.url
        origin = _origin(url)
        hop = 0
        while True:
            same = _origin(url) == origin
            # Connection: close: a connection of fsspec's shared pool is never reused after one of
            # these answers, so bytes a server sent after a body (a second, smuggled answer) can
            # never be read as the answer to the next range request.
            async with self._session.get(self._fs.encode_url(url), headers={
                    **_forwarded(remote, self._headers, same), **own, "Connection": "close"}, timeout=self._timeout,
                    allow_redirects=False, read_bufsize=CHUNK, **self._request_options(same)) as r:
                location = r.headers.get("Location")
                if r.status in _REDIRECTS and location:
                    url = _redirect_target(remote, url, r, location, hop)
                    hop += 1
                    continue
                skip, left = _check_response(remote, r, start, end, first)
                if skip:
                    await r.content.readexactly(skip)
                while left:
                    await slots.acquire()
                    chunk = await r.content.readexactly(min(CHUNK, left))
                    left -= len(chunk)
                    remote.stats.received += len(chunk)
                    out.put(chunk)
                return

    def _classify(self, exc: BaseException, start: int, end: int) -> BaseException:
        """What the reading thread raises for `exc`: a FatpteError, or _Transient to retry."""
        aiohttp, asyncio = self._aiohttp, self._asyncio
        if isinstance(exc, (FatpteError, _Transient)):
            return exc
        if isinstance(exc, asyncio.TimeoutError):
            return _timed_out(self._remote, start, end)
        if isinstance(exc, (asyncio.IncompleteReadError, aiohttp.ClientPayloadError)):
            return _cut_short(start, end, str(exc))
        if isinstance(exc, aiohttp.InvalidURL):
            return self._remote.error(ErrorCode.INVALID_ARGUMENT, f"{self._remote.url} is not a valid URL: {exc}")
        if isinstance(exc, aiohttp.ClientResponseError) and exc.status == 400 and not exc.history:
            # aiohttp's parser refused the answer itself (no server sends a 400 this way)
            return _malformed(str(exc.message).splitlines()[0])
        if isinstance(exc, (aiohttp.ClientError, OSError)):
            return _Transient(ErrorCode.REMOTE_FAILED, f"{type(exc).__name__}: {exc}")
        return exc


def _release_all(slots: Any) -> None:
    for _ in range(DEPTH):
        slots.release()


# ---------------------------------------------------------------------------------------------
# every other scheme: the fsspec filesystem's own file object, uncached
# ---------------------------------------------------------------------------------------------


class _Fsspec:
    def __init__(self, remote: RemoteFile, fs: Any, path: str) -> None:
        self._remote = remote
        self._fs = fs
        self._path = path
        self._file: Any = None

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _open(self) -> Any:
        remote = self._remote
        try:
            remote.stats.requests += 1  # the file's metadata (a HEAD for s3://)
            f = self._fs.open(self._path, "rb", cache_type="none", block_size=remote.policy.range_size)
        except BaseException as exc:
            raise self._classify(exc) from exc
        details = getattr(f, "details", None) or {}
        identity = {k: str(details[k]) for k in ("ETag", "LastModified", "mtime", "VersionId") if details.get(k)}
        remote.learn(int(f.size), identity)
        self._file = f
        return f

    def _read(self, f: Any, start: int, end: int) -> bytes:
        self._remote.stats.requests += 1
        try:
            f.seek(start)
            data: bytes = f.read(end - start)
        except BaseException as exc:
            raise self._classify(exc) from exc
        self._remote.stats.received += len(data)
        return data

    def fetch(self, start: int, end: int, first: bool) -> Iterator[bytes]:
        f = self._file if self._file is not None else self._open()
        remote = self._remote
        assert remote.size is not None
        end = min(end, remote.size)
        if end <= start:
            return
        data = self._read(f, start, end)
        if len(data) != end - start:
            raise _Transient(ErrorCode.REMOTE_SHORT_READ,
                             f"asked for bytes {start}-{end - 1}, received {len(data)} bytes")
        view = memoryview(data)
        for pos in range(0, len(data), CHUNK):
            yield bytes(view[pos : pos + CHUNK])

    def _classify(self, exc: BaseException) -> BaseException:
        remote = self._remote
        if isinstance(exc, FatpteError):
            return exc
        name = type(exc).__name__
        text = f"{name}: {exc}"
        if isinstance(exc, FileNotFoundError):
            return remote.error(ErrorCode.REMOTE_NOT_FOUND, f"no such file: {exc}")
        if isinstance(exc, PermissionError):
            return remote.error(ErrorCode.REMOTE_DENIED, f"access refused: {exc}")
        if name == "FileExpired" or "PreconditionFailed" in str(exc) or "pre-conditions" in str(exc):
            return remote.error(ErrorCode.REMOTE_CHANGED,
                                f"the object changed while being read (its ETag no longer matches): {exc}")
        if "Timeout" in name or isinstance(exc, TimeoutError):
            return _Transient(ErrorCode.REMOTE_TIMEOUT, text)
        if isinstance(exc, OSError):
            return _Transient(ErrorCode.REMOTE_FAILED, text)
        return exc
