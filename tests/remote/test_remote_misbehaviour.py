"""One table of server misbehaviours, each with one expected outcome, run on both http(s) clients
(fatpte/fileio/remote.py: http.client for plain URLs, fsspec's aiohttp session for any other
storage option): the same server behaviour gives the same error code whichever client reads it
(docs/remote.md, "Servers that misbehave"; specs/remote.md section 3).

Every answer is written byte by byte by the test (`Scripted`, tests/remote/servers.py), so a
case can be what no well-behaved server library would send: a Content-Length of `²`, a chunked
body that stops, a reset, a drip.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

import fatpte
from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.remote import PREFIX_SIZE, Policy
from tests.remote.servers import CLIENTS, Asked, Scripted, Wire, use_client

QUICK = Policy(timeout=0.5, attempts=3, backoff=0.01, deadline=60.0)

# The containers served: BIG has an entry past the first 64 KiB (so reading it makes later
# requests), SMALL is shorter than the first request.


def _packed(size: int) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        return fatpte.pack([fatpte.Specialization("portable", os.urandom(1000)),
                            fatpte.Specialization("xnnpack", os.urandom(size), priority=1)],
                           Path(folder) / "c.nfat").read_bytes()


BIG = _packed(300_000)
SMALL = _packed(20_000)
assert len(BIG) > PREFIX_SIZE > len(SMALL)

Script = Callable[[bytes, Asked, Wire], None]


def ranged(data: bytes, asked: Asked, wire: Wire, *, total: int | None = None, shift: int = 0,
           length: str | None = None, extra: list[tuple[str, str]] | None = None, cut: int | None = None,
           trailing: bytes = b"") -> None:
    """The correct answer to `asked`, changed as told: `total` (the size Content-Range states),
    `shift` (the range moved), `length` (the Content-Length header's text), `cut` (the body stops
    after that many bytes and the connection closes), `trailing` (bytes sent after the body)."""
    span = asked.span(len(data))
    if span is None:
        wire.answer(200, [("Content-Length", str(len(data)))], data)
        return
    start, end = span
    if start >= len(data):
        wire.answer(416, [("Content-Range", f"bytes */{len(data)}"), ("Content-Length", "0")])
        return
    start, end = start + shift, end + shift
    body = data[start:end]
    headers = [("Content-Range", f"bytes {start}-{end - 1}/{len(data) if total is None else total}"),
               ("Content-Length", str(len(body)) if length is None else length), ("ETag", '"v1"'),
               *(extra or [])]
    if cut is not None:
        wire.answer(206, headers, body[:cut], close=True)
        return
    wire.answer(206, headers, body + trailing)


def unframed(data: bytes, asked: Asked, wire: Wire) -> None:
    """A correct 206 without Content-Length: the body ends where the connection does."""
    span = asked.span(len(data))
    assert span is not None
    start, end = span
    wire.answer(206, [("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")], data[start:end], close=True)


def whole(data: bytes, asked: Asked, wire: Wire, *, cut: int | None = None) -> None:
    """200 with the whole file, whatever was asked (`cut`: the body stops there, once)."""
    body = data if cut is None else data[:cut]
    wire.answer(200, [("Content-Length", str(len(data)))], body, close=cut is not None)


def chunked(data: bytes, asked: Asked, wire: Wire, *, stop: bool = False, length: bool = False) -> None:
    span = asked.span(len(data))
    assert span is not None
    start, end = span
    body = data[start:end]
    headers = [("Content-Range", f"bytes {start}-{end - 1}/{len(data)}"), ("Transfer-Encoding", "chunked")]
    if length:
        headers.append(("Content-Length", str(len(body))))
    out = b"".join(b"%x\r\n%s\r\n" % (len(body[p : p + 4096]), body[p : p + 4096]) for p in range(0, len(body), 4096))
    if stop:
        wire.answer(206, headers, out[: len(out) // 2], close=True)
    else:
        wire.answer(206, headers, out + b"0\r\n\r\n")


def status(code: int, *extra: tuple[str, str]) -> Script:
    return lambda data, asked, wire: wire.answer(code, [("Content-Length", "0"), *extra])


def once(bad: Script, then: Script = ranged, *, request: int = 1) -> Script:
    """`bad` for request number `request`, `then` for every other."""
    return lambda data, asked, wire: (bad if asked.number == request else then)(data, asked, wire)


def later(bad: Script) -> Script:
    """A correct first answer, then `bad` for every later request."""
    return lambda data, asked, wire: (ranged if asked.number == 1 else bad)(data, asked, wire)


def stall(data: bytes, asked: Asked, wire: Wire) -> None:
    span = asked.span(len(data))
    assert span is not None
    wire.raw(f"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {span[0]}-{span[1] - 1}/{len(data)}\r\n"
             f"Content-Length: {span[1] - span[0]}\r\n\r\n".encode())
    time.sleep(3)
    wire.close()


def drip(data: bytes, asked: Asked, wire: Wire) -> None:
    """A correct answer, one byte at a time, each well within the per-read timeout: only an
    overall deadline ends it."""
    span = asked.span(len(data))
    assert span is not None
    start, end = span
    wire.raw(f"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {start}-{end - 1}/{len(data)}\r\n"
             f"Content-Length: {end - start}\r\n\r\n".encode())
    for i in range(start, end):
        time.sleep(0.2)
        wire.raw(data[i : i + 1])


class Case(NamedTuple):
    what: str
    script: Script
    expected: ErrorCode | None  # None: the read succeeds, with the right bytes
    data: bytes = BIG
    policy: Policy = QUICK


TABLE = [
    Case("a correct server", ranged, None),
    Case("a correct server, for a file shorter than the first request", ranged, None, SMALL),
    # redirects
    Case("redirects in a loop", lambda d, a, w: w.answer(302, [("Location", f"/file?hop={a.number}"),
                                                             ("Content-Length", "0")]),
         ErrorCode.REMOTE_TOO_MANY_REDIRECTS),
    Case("redirects to file://", status(302, ("Location", "file:///etc/passwd")),
         ErrorCode.REMOTE_TOO_MANY_REDIRECTS),
    Case("redirects to ftp://", status(301, ("Location", "ftp://127.0.0.1/file")),
         ErrorCode.REMOTE_TOO_MANY_REDIRECTS),
    Case("redirects to a URL that is no URL", status(307, ("Location", "http://[::1/file")),
         ErrorCode.REMOTE_TOO_MANY_REDIRECTS),
    Case("a redirect status without Location", status(302), ErrorCode.REMOTE_FAILED),
    Case("redirects to a URL naming a user", status(302, ("Location", "http://mallory:pw@127.0.0.1:9/file")),
         ErrorCode.REMOTE_TOO_MANY_REDIRECTS),
    # Content-Range
    Case("206 without Content-Range", lambda d, a, w: w.answer(206, [("Content-Length", "10")], d[:10]),
         ErrorCode.REMOTE_RANGE_IGNORED),
    Case("206 with a malformed Content-Range",
         lambda d, a, w: w.answer(206, [("Content-Range", "bytes 0-x/12"), ("Content-Length", "0")]),
         ErrorCode.REMOTE_RANGE_IGNORED),
    Case("Content-Range in digits that are not ASCII",
         lambda d, a, w: w.answer(206, [("Content-Range", f"bytes 0-{PREFIX_SIZE - 1}/\xb2"),
                                        ("Content-Length", str(PREFIX_SIZE))], d[:PREFIX_SIZE]),
         ErrorCode.REMOTE_RANGE_IGNORED),
    Case("the first answer does not state the size",
         lambda d, a, w: w.answer(206, [("Content-Range", f"bytes 0-{PREFIX_SIZE - 1}/*"),
                                        ("Content-Length", str(PREFIX_SIZE))], d[:PREFIX_SIZE]),
         ErrorCode.REMOTE_RANGE_IGNORED),
    Case("another range than asked", lambda d, a, w: ranged(d, a, w, shift=1), ErrorCode.REMOTE_RANGE_IGNORED),
    Case("another range than asked, after the first", later(lambda d, a, w: ranged(d, a, w, shift=1)),
         ErrorCode.REMOTE_RANGE_IGNORED),
    Case("the size changes after the first answer", later(lambda d, a, w: ranged(d, a, w, total=len(d) + 1)),
         ErrorCode.REMOTE_CHANGED),
    # Content-Length and the body
    Case("Content-Length larger than the range", lambda d, a, w: ranged(d, a, w, length=str(PREFIX_SIZE + 1)),
         ErrorCode.REMOTE_RANGE_IGNORED),
    Case("Content-Length smaller than the range (and the body as long as it says)",
         lambda d, a, w: w.answer(206, [("Content-Range", f"bytes 0-{PREFIX_SIZE - 1}/{len(d)}"),
                                        ("Content-Length", "100")], d[:100]),
         ErrorCode.REMOTE_RANGE_IGNORED),
    Case("Content-Length: \\xb2 (a digit to str.isdigit, not to int)", lambda d, a, w: ranged(d, a, w, length="\xb2"),
         ErrorCode.REMOTE_FAILED),
    Case("Content-Length: -1", lambda d, a, w: ranged(d, a, w, length="-1"), ErrorCode.REMOTE_FAILED),
    Case("Content-Length: +65536", lambda d, a, w: ranged(d, a, w, length=f"+{PREFIX_SIZE}"),
         ErrorCode.REMOTE_FAILED),
    Case("Content-Length: 65_536", lambda d, a, w: ranged(d, a, w, length=f"{PREFIX_SIZE // 1000}_{PREFIX_SIZE % 1000}"),
         ErrorCode.REMOTE_FAILED),
    Case("two Content-Length headers that differ",
         lambda d, a, w: ranged(d, a, w, extra=[("Content-Length", "7")]), ErrorCode.REMOTE_FAILED),
    Case("a body cut short, every time", lambda d, a, w: ranged(d, a, w, cut=1000), ErrorCode.REMOTE_SHORT_READ),
    Case("the first answer cut short once, for a file shorter than the first request",
         once(lambda d, a, w: ranged(d, a, w, cut=1000)), None, SMALL),
    Case("a later answer cut short once", once(lambda d, a, w: ranged(d, a, w, cut=1000), request=2), None),
    Case("bytes after the body", lambda d, a, w: ranged(d, a, w, trailing=b"HTTP/1.1 200 OK\r\n\r\njunk"), None),
    Case("a body delimited by closing the connection (no Content-Length)", unframed, None),
    # 200 instead of 206
    Case("200 with the whole file", whole, ErrorCode.REMOTE_RANGE_IGNORED),
    Case("200 with the whole file, for a file shorter than the first request", whole, None, SMALL),
    Case("200 with the whole file cut short once, for a file shorter than the first request",
         once(lambda d, a, w: whole(d, a, w, cut=1000), whole), None, SMALL),
    # chunked transfer coding
    Case("a chunked 206", chunked, None),
    Case("a chunked 206 that stops", lambda d, a, w: chunked(d, a, w, stop=True), ErrorCode.REMOTE_SHORT_READ),
    Case("chunked and Content-Length both", lambda d, a, w: chunked(d, a, w, length=True), ErrorCode.REMOTE_FAILED),
    # statuses
    Case("416 to the first request, stating a size", status(416, ("Content-Range", "bytes */5000000")),
         ErrorCode.REMOTE_RANGE_IGNORED),
    Case("416 to a later request", later(status(416, ("Content-Range", f"bytes */{len(BIG)}"))),
         ErrorCode.REMOTE_CHANGED),
    Case("401", status(401), ErrorCode.REMOTE_DENIED),
    Case("403", status(403), ErrorCode.REMOTE_DENIED),
    Case("404", status(404), ErrorCode.REMOTE_NOT_FOUND),
    Case("410", status(410), ErrorCode.REMOTE_NOT_FOUND),
    Case("412 to a later request", later(status(412)), ErrorCode.REMOTE_CHANGED),
    Case("503, every time", status(503), ErrorCode.REMOTE_FAILED),
    Case("503 once", once(status(503)), None),
    Case("429, every time", status(429), ErrorCode.REMOTE_FAILED),
    Case("a status no rule names (299)", status(299), ErrorCode.REMOTE_FAILED),
    # the connection
    Case("a reset instead of an answer, every time", lambda d, a, w: w.reset(), ErrorCode.REMOTE_FAILED),
    Case("a reset instead of an answer, once", once(lambda d, a, w: w.reset()), None),
    Case("closes without answering, every time", lambda d, a, w: w.close(), ErrorCode.REMOTE_FAILED),
    Case("garbage instead of a status line", lambda d, a, w: w.raw(b"HELLO\r\n\r\n"), ErrorCode.REMOTE_FAILED),
    Case("stalls after the headers", stall, ErrorCode.REMOTE_TIMEOUT),
    Case("drips a byte per 0.2 s (the per-read timeout is 0.5 s)", drip, ErrorCode.REMOTE_TIMEOUT,
         policy=QUICK._replace(deadline=1.0)),
]


@pytest.fixture(params=CLIENTS)
def client(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which client reads http URLs (servers.use_client)."""
    return use_client(request.param, monkeypatch)


def read_all(url: str, policy: Policy) -> tuple[bytes, bytes]:
    """What a reader of the container does: open it, read its last entry."""
    with fatpte.open_remote(url, policy=policy) as c:
        entry = c.entry("xnnpack")
        return bytes(c.payload(entry, verify=True)), bytes(c.read(0, 64))


@pytest.mark.parametrize("case", TABLE, ids=[c.what for c in TABLE])
def test_one_code_per_misbehaviour_on_both_clients(client: str, case: Case) -> None:
    server = Scripted(lambda asked, wire: case.script(case.data, asked, wire))
    try:
        if case.expected is None:
            with fatpte.Container.from_buffer(case.data) as local:
                entry = local.entry("xnnpack")
                assert read_all(server.url(), case.policy) == (case.data[entry.offset : entry.end], case.data[:64])
            return
        with pytest.raises(FatpteError) as info:
            read_all(server.url(), case.policy)
        assert info.value.code is case.expected, info.value
        assert info.value.source == server.url()
    finally:
        server.close()


def _fatpte(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fatpte", *args], capture_output=True, text=True, check=False,
                          env={**os.environ, "FATPTE_REMOTE_TIMEOUT": "0.5", **(env or {})})


@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_dripping_server_ends_at_the_deadline_on_the_command_line(how: str) -> None:
    """A byte every 0.2 s never trips the per-read timeout (0.5 s); the deadline ends the
    command, with E0809 and exit 4, whichever way it is set (the option goes through click, the
    variable through the launcher's plain `info`)."""
    server = Scripted(lambda asked, wire: drip(BIG, asked, wire))
    try:
        if how == "option":
            done = _fatpte("--remote-deadline", "1", "info", server.url())
        else:
            done = _fatpte("info", server.url(), env={"FATPTE_REMOTE_DEADLINE": "1"})
    finally:
        server.close()
    assert done.returncode == 4, done.stderr
    assert done.stderr.startswith(f"{server.url()}: E0809: the deadline of 1 s for reading this URL passed "
                                  f"while reading bytes "), done.stderr
    assert len(server.asked) == 1  # not tried again: the time is spent


@pytest.mark.parametrize("aiohttp", [False, True])
def test_a_redirect_to_file_is_the_same_error_and_exit_on_both_clients(aiohttp: bool) -> None:
    """Issue 33 R1: a redirect to file:// was E0702 (exit 2) on one client, E0810 on the other."""
    server = Scripted(lambda asked, wire: wire.answer(302, [("Location", "file:///etc/passwd"),
                                                            ("Content-Length", "0")]))
    try:
        done = _fatpte("info", server.url(), env={"FSSPEC_HTTP": '{"client_kwargs": {}}'} if aiohttp else None)
    finally:
        server.close()
    assert done.returncode == 4, done.stderr
    assert done.stderr == (f"{server.url()}: E0808: redirected to 'file:///etc/passwd': only redirects to http:// "
                           "and https:// URLs are followed\n")


@pytest.mark.parametrize("aiohttp", [False, True])
def test_a_redirect_naming_a_user_is_refused_alike_and_shows_no_credential(aiohttp: bool) -> None:
    """Issue 42: a Location carrying `user:pw@` was E0810 on http.client (the user information
    taken as a host name) and followed, with Basic auth, on aiohttp: refused on both, E0808, exit
    4, the password never printed."""
    server = Scripted(lambda asked, wire: wire.answer(
        302, [("Location", f"http://mallory:hunter2@127.0.0.1:{port}/other"), ("Content-Length", "0")]))
    port = server.port
    try:
        done = _fatpte("info", server.url(), env={"FSSPEC_HTTP": '{"client_kwargs": {}}'} if aiohttp else None)
    finally:
        server.close()
    assert done.returncode == 4, done.stderr
    assert done.stderr == (f"{server.url()}: E0808: redirected to 'http://***@127.0.0.1:{port}/other', which names "
                           "a user (user:password@): a redirect that carries credentials is not followed; give them "
                           "in the URL itself\n")
    assert [a.path for a in server.asked] == ["/file"], "the redirect is not followed"


# ---------------------------------------------------------------------------------------------
# the caller's headers and a redirect to another origin (issue 33 R2)
# ---------------------------------------------------------------------------------------------

CREDENTIALS = {"Authorization": "Bearer secret", "Cookie": "session=secret", "X-Api-Key": "secret"}


def _redirecting(to: str) -> Scripted:
    return Scripted(lambda asked, wire: wire.answer(302, [("Location", to), ("Content-Length", "0")]))


def _seen(server: Scripted) -> set[str]:
    """The credential headers any request to `server` carried."""
    return {name for name in CREDENTIALS for a in server.asked if name.lower() in a.headers}


@pytest.mark.parametrize(("allowed", "forwarded"), [
    ((), set()),
    (("x-api-key",), {"X-Api-Key"}),
    (("*",), set(CREDENTIALS)),
])
def test_no_header_of_the_caller_follows_a_redirect_to_another_origin(client: str, allowed: tuple[str, ...],
                                                                      forwarded: set[str]) -> None:
    """Every header the caller gave goes to the URL's own origin, on both clients; to another
    origin (here another port) only those Policy.redirect_headers names."""
    target = Scripted(lambda asked, wire: ranged(BIG, asked, wire))
    origin = _redirecting(target.url())
    try:
        policy = QUICK._replace(redirect_headers=allowed)
        with fatpte.open_remote(origin.url(), policy=policy, headers=CREDENTIALS) as c:
            assert [e.name for e in c.entries] == ["portable", "xnnpack"]
        assert _seen(origin) == set(CREDENTIALS)
        assert target.asked and _seen(target) == forwarded
        assert all("range" in a.headers for a in target.asked)  # fatpte's own headers go on
    finally:
        origin.close()
        target.close()


def test_a_redirect_within_the_origin_keeps_the_headers(client: str) -> None:
    def script(asked: Asked, wire: Wire) -> None:
        if asked.path == "/file":
            wire.answer(307, [("Location", "/moved"), ("Content-Length", "0")])
        else:
            ranged(BIG, asked, wire)

    server = Scripted(script)
    try:
        with fatpte.open_remote(server.url(), policy=QUICK, headers=CREDENTIALS):
            pass
        assert [a.path for a in server.asked] == ["/file", "/moved"]
        assert all(a.headers.get(k.lower()) == v for a in server.asked for k, v in CREDENTIALS.items())
    finally:
        server.close()


def test_aiohttp_auth_cookies_and_session_headers_stay_with_the_origin() -> None:
    """Through fsspec's aiohttp session: `auth` and `cookies` are credentials like headers and
    are left out of a request to another origin; the session's own headers (client_kwargs), which
    aiohttp sends with every request, make such a redirect an error unless allowed."""
    import aiohttp

    target = Scripted(lambda asked, wire: ranged(BIG, asked, wire))
    origin = _redirecting(target.url())
    try:
        with fatpte.open_remote(origin.url(), policy=QUICK, auth=aiohttp.BasicAuth("user", "secret"),
                                cookies={"session": "secret"}):
            pass
        assert _seen(origin) == {"Authorization", "Cookie"}
        assert target.asked and _seen(target) == set()
        session = {"client_kwargs": {"headers": {"X-Api-Key": "secret"}}}
        with pytest.raises(FatpteError) as info:
            fatpte.open_remote(origin.url(), policy=QUICK, **session)
        assert info.value.code is ErrorCode.REMOTE_TOO_MANY_REDIRECTS
        assert "session's own headers (X-Api-Key, from client_kwargs)" in info.value.message
        asked = len(target.asked)
        with fatpte.open_remote(origin.url(), policy=QUICK._replace(redirect_headers=("X-Api-Key",)), **session):
            pass
        assert len(target.asked) > asked and _seen(target) == {"X-Api-Key"}
    finally:
        origin.close()
        target.close()


# ---------------------------------------------------------------------------------------------
# the same over https
# ---------------------------------------------------------------------------------------------

OVER_TLS = ["a correct server", "a correct server, for a file shorter than the first request",
            "a reset instead of an answer, once", "a body cut short, every time",
            "the first answer cut short once, for a file shorter than the first request",
            "Content-Length: \\xb2 (a digit to str.isdigit, not to int)", "a chunked 206", "redirects to file://",
            "drips a byte per 0.2 s (the per-read timeout is 0.5 s)"]


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from tests.remote.test_remote_http import _self_signed

    return _self_signed(tmp_path_factory.mktemp("tls"))


@pytest.mark.parametrize("aiohttp", [False, True], ids=["http.client", "aiohttp"])
@pytest.mark.parametrize("what", OVER_TLS)
def test_over_https_the_same_codes(what: str, aiohttp: bool, certificate: tuple[Path, Path],
                                   tmp_path: Path) -> None:
    """Rows of the table over TLS, through the command line (the certificate trusted through
    SSL_CERT_FILE, which each client reads when it starts): the same code on both clients, and
    the deadline cuts a TLS connection as it cuts a plain one."""
    case = next(c for c in TABLE if c.what == what)
    server = Scripted(lambda asked, wire: case.script(case.data, asked, wire), tls=certificate)
    env = {"SSL_CERT_FILE": str(certificate[0]), "FATPTE_REMOTE_ATTEMPTS": str(case.policy.attempts),
           "FATPTE_REMOTE_DEADLINE": f"{case.policy.deadline:g}"}
    if aiohttp:
        env["FSSPEC_HTTPS"] = '{"client_kwargs": {}}'
    try:
        done = _fatpte("extract", server.url(), "--name", "xnnpack", "-q", "-o", str(tmp_path / "x.bin"), env=env)
    finally:
        server.close()
    if case.expected is None:
        assert done.returncode == 0, done.stderr
        with fatpte.Container.from_buffer(case.data) as local:
            entry = local.entry("xnnpack")
            assert (tmp_path / "x.bin").read_bytes() == case.data[entry.offset : entry.end]
    else:
        assert done.returncode == 4, done.stderr
        assert done.stderr.startswith(f"{server.url()}: {case.expected.tag}: "), done.stderr


def test_the_timeout_option_and_the_environment_it_stands_for(tmp_path: Path) -> None:
    """--remote-timeout is FATPTE_REMOTE_TIMEOUT for one command: a server that stalls is E0809
    after that many seconds; the variable is as it was once the command is done."""
    from click.testing import CliRunner

    from fatpte.cli.main import main

    server = Scripted(lambda asked, wire: stall(BIG, asked, wire))
    try:
        done = _fatpte("--remote-timeout", "0.3", "info", server.url(), env={"FATPTE_REMOTE_TIMEOUT": "30",
                                                                          "FATPTE_REMOTE_ATTEMPTS": "1"})
    finally:
        server.close()
    assert done.returncode == 4, done.stderr
    assert "E0809: no answer for 0.3 s while reading bytes 0-65535 (1 try, the limit)" in done.stderr
    before = os.environ.get("FATPTE_REMOTE_DEADLINE")
    local = tmp_path / "c.nfat"
    local.write_bytes(BIG)
    result = CliRunner().invoke(main, ["--remote-deadline", "5", "info", str(local)])
    assert result.exit_code == 0, result.output
    assert os.environ.get("FATPTE_REMOTE_DEADLINE") == before
    bad = CliRunner().invoke(main, ["--remote-deadline", "-1", "info", str(local)])
    assert bad.exit_code == 2 and "-1.0 is not a number of seconds" in bad.output
