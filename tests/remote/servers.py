"""Servers the remote tests read from, all on 127.0.0.1 on free ports, started and stopped here.

- `Nginx`: the real nginx (Debian's nginx-light, which `make venv` installs), from a generated
  configuration: it serves a folder, and optionally proxies to an S3 server so that S3 traffic is
  counted too. Its access log records, per request, the status, the body bytes sent and the
  Range header: what the tests count transfers with.
- `MotoServer`: moto's standalone S3 server (`moto[server]`, pinned in the dev extras).
- `Misbehaving`: a small server of our own that serves one file with Range support and can
  misbehave in each way a real server does: ignore Range, change the file between requests,
  cut a response short, stall, redirect in a loop, refuse access, fail transiently.
- `Scripted`: a server whose every byte on the wire the test writes (malformed headers, chunked
  bodies that stop, resets, drips), recording every request's headers.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for_port(port: int, proc: subprocess.Popen[bytes], what: str, log: Path | None = None) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            detail = log.read_text(errors="replace")[-2000:] if log is not None and log.exists() else ""
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening: {detail}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within 30 s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------------------------------------
# nginx
# ---------------------------------------------------------------------------------------------


class Request(NamedTuple):
    """One line of nginx's access log."""

    method: str
    path: str
    status: int
    body_bytes: int
    range: str  # the Range header, "-" when none


NGINX_CONFIG = """\
master_process off;
daemon off;
pid {work}/nginx.pid;
error_log {work}/error.log;
events {{ worker_connections 256; }}
http {{
    log_format ranged '$request_method $uri $status $body_bytes_sent "$http_range"';
    client_body_temp_path {work}/body;
    proxy_temp_path {work}/proxy;
    fastcgi_temp_path {work}/fastcgi;
    uwsgi_temp_path {work}/uwsgi;
    scgi_temp_path {work}/scgi;
    server {{
        listen 127.0.0.1:{port};
        access_log {work}/access.log ranged;
        root {root};
    }}
{proxy}}}
"""

TLS = """\
    server {{
        listen 127.0.0.1:{port} ssl;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        access_log {work}/access.log ranged;
        root {root};
    }}
"""

PROXY = """\
    server {{
        listen 127.0.0.1:{port};
        access_log {work}/proxy-access.log ranged;
        client_max_body_size 0;
        location / {{
            proxy_pass http://127.0.0.1:{upstream};
            proxy_set_header Host $http_host;
            proxy_http_version 1.1;
            proxy_request_buffering off;
            proxy_buffering off;
        }}
    }}
"""


def nginx_binary() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if found is None:
        pytest.fail("nginx is not installed: `make venv` installs Debian's nginx-light (the remote tests need it)")
    return found


class Nginx:
    """nginx serving `root` at `url`, with `tls` (certificate and key files) also at `https_url`,
    and with `upstream`, proxying to it at `proxy_url`."""

    def __init__(self, root: Path, work: Path, upstream: int | None = None,
                 tls: tuple[Path, Path] | None = None) -> None:
        self.root = root
        self.work = work
        self.port = free_port()
        self.proxy_port = free_port() if upstream is not None else None
        proxy = "" if upstream is None else PROXY.format(port=self.proxy_port, work=work, upstream=upstream)
        self.tls_port = free_port() if tls is not None else None
        if tls is not None:
            proxy += TLS.format(port=self.tls_port, work=work, root=root, cert=tls[0], key=tls[1])
        config = work / "nginx.conf"
        config.write_text(NGINX_CONFIG.format(work=work, port=self.port, root=root, proxy=proxy))
        self.log = work / "access.log"
        self.proxy_log = work / "proxy-access.log"
        out = work / "nginx.out"
        with open(out, "wb") as sink:
            self.proc = subprocess.Popen([nginx_binary(), "-c", str(config), "-p", str(work)], stdout=sink,
                                         stderr=subprocess.STDOUT)
        wait_for_port(self.port, self.proc, "nginx", work / "error.log")
        if self.proxy_port is not None:
            wait_for_port(self.proxy_port, self.proc, "nginx", work / "error.log")
        if self.tls_port is not None:
            wait_for_port(self.tls_port, self.proc, "nginx", work / "error.log")

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def https_url(self, name: str) -> str:
        """`name` over TLS, with the certificate given as `tls` (started with one)."""
        return f"https://127.0.0.1:{self.tls_port}/{name}"

    @property
    def proxy_url(self) -> str:
        return f"http://127.0.0.1:{self.proxy_port}"

    def mark(self, proxy: bool = False) -> int:
        """Where the access log ends now: `requests(since=mark)` reads what came after."""
        log = self.proxy_log if proxy else self.log
        return log.stat().st_size if log.exists() else 0

    def requests(self, since: int = 0, proxy: bool = False) -> list[Request]:
        log = self.proxy_log if proxy else self.log
        # nginx writes each line when the request ends: a line may lag the client by a moment.
        time.sleep(0.05)
        if not log.exists():
            return []
        with open(log, "rb") as f:
            f.seek(since)
            lines = f.read().decode().splitlines()
        out = []
        for line in lines:
            method, path, status, sent, rng = line.split(" ", 4)
            out.append(Request(method, path, int(status), int(sent), rng.strip('"')))
        return out

    def close(self) -> None:
        stop(self.proc)


# ---------------------------------------------------------------------------------------------
# moto's S3 server
# ---------------------------------------------------------------------------------------------


class MotoServer:
    def __init__(self, work: Path) -> None:
        self.port = free_port()
        server = Path(sys.executable).parent / "moto_server"
        log = work / "moto.log"
        with open(log, "wb") as sink:
            self.proc = subprocess.Popen([str(server), "-H", "127.0.0.1", "-p", str(self.port)], stdout=sink,
                                         stderr=subprocess.STDOUT)
        wait_for_port(self.port, self.proc, "moto_server", log)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        stop(self.proc)


# ---------------------------------------------------------------------------------------------
# a server that misbehaves on purpose
# ---------------------------------------------------------------------------------------------


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up on purpose (it saw a 200 to a range request) is no error here."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class Misbehaving:
    """Serves `data` at /file with Range support, misbehaving as `mode` says:

    - `ok`: a correct server (ETag `etag` and Last-Modified, If-Match honoured with 412)
    - `no-range`: ignores Range, answers 200 with the whole file
    - `wrong-range`: answers 206 with a range other than the one asked for
    - `change-etag`: after the first request, the file's ETag changes (same size, no If-Match)
    - `change-size`: after the first request, the file is one byte longer
    - `truncate`: responses of more than `small` bytes stop halfway and close
    - `slow`: responses of more than `small` bytes stall after their headers
    - `redirect-loop`: every request is redirected to another URL, without end
    - `redirect`: a request for anything but /moved is redirected to /moved, which serves the file
      (or, when `redirect_to` is set, every request is redirected there)
    - `auth`: 401 unless the Authorization header is `Bearer let-me-in`
    - `not-found`: 404
    - `flaky`: every request whose number is odd answers 503 (the retry succeeds)
    - `always-503`: 503
    Every request is recorded in `requests` as (range header, status, body bytes sent), and its
    Authorization header (None when absent) in `authorizations`."""

    def __init__(self, data: bytes, mode: str, *, small: int = 64 << 10, stall: float = 5.0) -> None:
        self.data = data
        self.mode = mode
        self.small = small
        self.stall = stall
        self.etag = '"v1"'
        self.requests: list[tuple[str | None, int, int]] = []
        self.authorizations: list[str | None] = []
        self.redirect_to: str | None = None
        self.lock = threading.Lock()
        self.stalled = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                owner.handle(self)

            def do_HEAD(self) -> None:
                owner.handle(self, head=True)

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/file"

    def close(self) -> None:
        self.stalled.set()
        self.server.shutdown()
        self.server.server_close()

    def _record(self, rng: str | None, status: int) -> int:
        """Record a request before its answer is sent (a test may look as soon as it has the
        answer); its body bytes are filled in as they go."""
        with self.lock:
            self.requests.append((rng, status, 0))
            return len(self.requests) - 1

    def _sent(self, index: int, sent: int) -> None:
        with self.lock:
            rng, status, _ = self.requests[index]
            self.requests[index] = (rng, status, sent)

    def handle(self, h: BaseHTTPRequestHandler, head: bool = False) -> None:
        mode = self.mode
        rng = h.headers.get("Range")
        with self.lock:
            number = len(self.requests) + 1
            self.authorizations.append(h.headers.get("Authorization"))
        data = self.data
        etag = self.etag
        if number > 1 and mode == "change-etag":
            etag = '"v2"'
        if number > 1 and mode == "change-size":
            data = data + b"\0"
        if mode == "redirect-loop":
            self._send(h, 302, {"Location": f"/file?hop={number}", "Content-Length": "0"}, b"", rng)
            return
        if mode == "redirect" and (self.redirect_to is not None or not h.path.startswith("/moved")):
            self._send(h, 302, {"Location": self.redirect_to or "/moved", "Content-Length": "0"}, b"", rng)
            return
        if mode == "not-found":
            self._send(h, 404, {"Content-Length": "0"}, b"", rng)
            return
        if mode == "auth" and h.headers.get("Authorization") != "Bearer let-me-in":
            self._send(h, 401, {"Content-Length": "0", "WWW-Authenticate": "Bearer"}, b"", rng)
            return
        if mode == "always-503" or (mode == "flaky" and number % 2 == 1):
            self._send(h, 503, {"Content-Length": "0"}, b"", rng)
            return
        headers = {"ETag": etag, "Last-Modified": "Mon, 02 Nov 2026 10:00:00 GMT", "Accept-Ranges": "bytes"}
        if_match = h.headers.get("If-Match")
        if if_match is not None and mode == "ok" and if_match != etag:
            self._send(h, 412, {"Content-Length": "0"}, b"", rng)
            return
        if rng is None or mode == "no-range":
            self._send(h, 200, {**headers, "Content-Length": str(len(data))}, data, rng, head=head)
            return
        start_text, _, end_text = rng.removeprefix("bytes=").partition("-")
        start = int(start_text)
        end = min(int(end_text) + 1, len(data))
        if start >= len(data):
            self._send(h, 416, {"Content-Range": f"bytes */{len(data)}", "Content-Length": "0"}, b"", rng)
            return
        if mode == "wrong-range":
            start += 1
        body = data[start:end]
        headers.update({"Content-Range": f"bytes {start}-{end - 1}/{len(data)}", "Content-Length": str(len(body))})
        if mode == "truncate" and len(body) > self.small:
            self._send(h, 206, headers, body[: len(body) // 2], rng, close=True)
            return
        if mode == "slow" and len(body) > self.small:
            self._send(h, 206, headers, b"", rng, stall=True)
            return
        self._send(h, 206, headers, body, rng, head=head)

    def _send(self, h: BaseHTTPRequestHandler, status: int, headers: dict[str, str], body: bytes, rng: str | None, *,
              head: bool = False, close: bool = False, stall: bool = False) -> None:
        sent = 0
        index = self._record(rng, status)
        try:
            h.send_response(status)
            for k, v in headers.items():
                h.send_header(k, v)
            if close:
                h.send_header("Connection", "close")
            h.end_headers()
            if stall:
                h.wfile.flush()
                self.stalled.wait(self.stall)
            elif not head:
                for pos in range(0, len(body), 1 << 16):
                    h.wfile.write(body[pos : pos + (1 << 16)])
                    sent += min(1 << 16, len(body) - pos)
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            self._sent(index, sent)
            if close or stall:
                h.close_connection = True




# ---------------------------------------------------------------------------------------------
# a server whose every byte on the wire a test writes
# ---------------------------------------------------------------------------------------------


class Asked(NamedTuple):
    """One request a `Scripted` server read: its number (from 1, over all connections), path,
    and headers (names in lower case)."""

    number: int
    path: str
    headers: dict[str, str]

    def span(self, size: int) -> tuple[int, int] | None:
        """[start, end) of its `Range: bytes=a-b`, clipped to `size`; None without one."""
        text = self.headers.get("range")
        if text is None:
            return None
        first, _, last = text.removeprefix("bytes=").partition("-")
        return int(first), min(int(last) + 1, size)


class Wire:
    """The connection a `Scripted` server answers on: raw bytes, a well-formed answer, a reset."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.closed = False

    def raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def answer(self, status: int, headers: list[tuple[str, str]], body: bytes = b"", *, close: bool = False) -> None:
        """A response with exactly these header lines (latin-1, as HTTP carries them), `body`
        after them; `close` ends the connection after it."""
        lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase if status in _PHRASES else 'Whatever'}"]
        lines += [f"{k}: {v}" for k, v in headers]
        if close:
            lines.append("Connection: close")
        self.raw(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        if close:
            self.close()

    def reset(self) -> None:
        """Close with a TCP reset (SO_LINGER 0): the client sees ECONNRESET."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
            self.sock.close()


_PHRASES = {s.value for s in HTTPStatus}


class Scripted:
    """A server on 127.0.0.1 that reads each request (keep-alive, several per connection) and
    hands it to `script(asked, wire)`, which writes the answer: any bytes at all, a reset, a
    stall. `asked` lists every request; `headers_seen` their headers."""

    def __init__(self, script: Callable[[Asked, Wire], None], tls: tuple[Path, Path] | None = None) -> None:
        self.script = script
        self.tls = None
        if tls is not None:  # https, with this certificate and key
            import ssl

            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.load_cert_chain(tls[0], tls[1])
        self.asked: list[Asked] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def url(self, path: str = "/file") -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}{path}"

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        if self.tls is not None:
            try:
                sock = self.tls.wrap_socket(sock, server_side=True)
            except OSError:
                sock.close()
                return
        wire = Wire(sock)
        reader = sock.makefile("rb")
        try:
            while not wire.closed and not self.stop.is_set():
                line = reader.readline(65536)
                if not line:
                    break
                parts = line.decode("latin-1").split()
                headers: dict[str, str] = {}
                while True:
                    h = reader.readline(65536)
                    if h in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = h.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                with self.lock:
                    asked = Asked(len(self.asked) + 1, parts[1] if len(parts) > 1 else "/", headers)
                    self.asked.append(asked)
                self.script(asked, wire)
        except OSError:
            pass
        finally:
            reader.close()
            wire.close()

    def close(self) -> None:
        self.stop.set()
        self.listener.close()


CLIENTS = ("http.client", "aiohttp")


def use_client(name: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Make http URLs read through client `name` of CLIENTS for the rest of the test: a storage
    option other than `headers` (an empty `client_kwargs` here) sends them through fsspec's
    aiohttp session."""
    from fatpte.fileio import remote as remote_module

    if name == "aiohttp":
        real = remote_module._open_backend
        monkeypatch.setattr(remote_module, "_open_backend",
                            lambda remote, options: real(remote, {"client_kwargs": {}, **options}))
    return name

