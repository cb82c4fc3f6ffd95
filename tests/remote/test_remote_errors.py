"""Servers that misbehave are errors, not downloads: each case with its exact error code, and
nothing partial left at the destination (tests/remote/servers.py, `Misbehaving`). Every case runs
on both http(s) clients (fatpte/fileio/remote.py): http.client, which plain URLs and `headers`
get, and fsspec's aiohttp session, which any other storage option selects."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import fatpte
from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.remote import PREFIX_SIZE, Policy, RemoteFile
from tests.remote.servers import CLIENTS, Misbehaving, use_client

QUICK = Policy(timeout=0.5, attempts=3, backoff=0.01)


@pytest.fixture(autouse=True, params=CLIENTS)
def client(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which client reads http URLs (servers.use_client)."""
    return use_client(request.param, monkeypatch)


def test_each_client_is_the_one_asked_for(client: str, serve: object) -> None:
    server = serve("ok")  # type: ignore[operator]
    remote = RemoteFile(server.url, policy=QUICK)
    assert type(remote._backend).__name__ == {"http.client": "_HttpClient", "aiohttp": "_Http"}[client]
    # Credentials in the URL are aiohttp's Basic auth: such a URL goes through fsspec on either.
    user, _, rest = server.url.partition("//")
    assert type(RemoteFile(f"{user}//reader:secret@{rest}", policy=QUICK)._backend).__name__ == "_Http"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A container whose second entry lies past the prefix, so extract needs more requests."""
    path = fatpte.pack([fatpte.Specialization("portable", os.urandom(1000)),
                        fatpte.Specialization("xnnpack", os.urandom(300_000), priority=1)],
                       tmp_path_factory.mktemp("data") / "c.nfat")
    return path.read_bytes()


@pytest.fixture
def serve(data: bytes) -> Iterator[object]:
    servers: list[Misbehaving] = []

    def start(mode: str) -> Misbehaving:
        server = Misbehaving(data, mode)
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.close()


def _extract(url: str, dest: Path, policy: Policy = QUICK) -> FatpteError:
    from fatpte.ops.extraction import extract_entry

    with pytest.raises(FatpteError) as info, fatpte.open_remote(url, policy=policy) as c:
        extract_entry(c, c.entry("xnnpack"), dest)
    assert not dest.exists()
    assert not [p for p in dest.parent.iterdir() if p.name.endswith(".partial")]
    return info.value


def test_a_correct_server_serves(serve: object, data: bytes, tmp_path: Path) -> None:
    server = serve("ok")  # type: ignore[operator]
    with fatpte.open_remote(server.url, policy=QUICK) as c:
        from fatpte.ops.extraction import extract_entry

        extract_entry(c, c.entry("xnnpack"), tmp_path / "x.bin")
        entry = c.entry("xnnpack")
    assert (tmp_path / "x.bin").read_bytes() == data[entry.offset : entry.end]


def test_a_server_that_ignores_range_is_refused_before_the_body_is_read(serve: object) -> None:
    server = serve("no-range")  # type: ignore[operator]
    with pytest.raises(FatpteError) as info:
        fatpte.open_remote(server.url, policy=QUICK)
    err = info.value
    assert err.code is ErrorCode.REMOTE_RANGE_IGNORED
    assert err.source == server.url
    assert "answered 200 with the whole file" in err.message and f"bytes 0-{PREFIX_SIZE - 1}" in err.message
    assert len(server.requests) == 1  # no retry: a server that ignores Range keeps ignoring it
    remote = RemoteFile(server.url, policy=QUICK)
    with pytest.raises(FatpteError):
        remote.head()
    assert remote.stats.received == 0  # the headers said it all: not a byte of the body was read


def test_a_server_that_answers_another_range(serve: object) -> None:
    server = serve("wrong-range")  # type: ignore[operator]
    with pytest.raises(FatpteError) as info:
        fatpte.open_remote(server.url, policy=QUICK)
    assert info.value.code is ErrorCode.REMOTE_RANGE_IGNORED
    assert f"asked for bytes 0-{PREFIX_SIZE - 1}, the server answered bytes 1-" in info.value.message


def test_a_file_whose_etag_changes_between_requests(serve: object, tmp_path: Path) -> None:
    err = _extract(serve("change-etag").url, tmp_path / "x.bin")  # type: ignore[operator]
    assert err.code is ErrorCode.REMOTE_CHANGED
    assert 'ETag was "v1" at the first request and is now "v2"' in err.message


def test_a_file_whose_size_changes_between_requests(serve: object, data: bytes, tmp_path: Path) -> None:
    err = _extract(serve("change-size").url, tmp_path / "x.bin")  # type: ignore[operator]
    assert err.code is ErrorCode.REMOTE_CHANGED
    assert (err.expected, err.actual) == (len(data), len(data) + 1)


def test_a_replaced_file_fails_its_if_match(serve: object, tmp_path: Path) -> None:
    server = serve("ok")  # type: ignore[operator]
    with fatpte.open_remote(server.url, policy=QUICK) as c:
        server.etag = '"v2"'  # the file is replaced: a correct server answers If-Match "v1" with 412
        with pytest.raises(FatpteError) as info:
            c.payload("xnnpack")
    assert info.value.code is ErrorCode.REMOTE_CHANGED
    assert 'HTTP 412 Precondition Failed: the file no longer has the ETag "v1"' in info.value.message
    assert [status for _, status, _ in server.requests] == [206, 412]


def test_a_response_cut_short_is_retried_then_an_error(serve: object, tmp_path: Path) -> None:
    server = serve("truncate")  # type: ignore[operator]
    # Two tries: each resumes after the bytes received, and the server cuts only answers of more
    # than 64 KiB (the payload's bytes past the prefix, 236 KiB, then 118 KiB).
    err = _extract(server.url, tmp_path / "x.bin", QUICK._replace(attempts=2))
    assert err.code is ErrorCode.REMOTE_SHORT_READ
    assert "ended early" in err.message and "(2 tries, the limit)" in err.message
    assert len(server.requests) == 1 + 2


def test_a_server_that_stalls_times_out(serve: object, tmp_path: Path) -> None:
    server = serve("slow")  # type: ignore[operator]
    err = _extract(server.url, tmp_path / "x.bin")
    assert err.code is ErrorCode.REMOTE_TIMEOUT
    assert "no answer for 0.5 s" in err.message and "(3 tries, the limit)" in err.message


def test_a_redirect_is_followed_unless_redirects_are_off(serve: object, data: bytes) -> None:
    server = serve("redirect")  # type: ignore[operator]
    with fatpte.open_remote(server.url, policy=QUICK) as c:
        entry = c.entry("xnnpack")
        assert bytes(c.payload("xnnpack", verify=True)) == data[entry.offset : entry.end]
    assert [status for _, status, _ in server.requests] == [302, 206, 302, 206]
    with pytest.raises(FatpteError) as info:
        fatpte.open_remote(server.url, policy=QUICK._replace(max_redirects=0))
    assert info.value.code is ErrorCode.REMOTE_TOO_MANY_REDIRECTS
    assert "HTTP 302 Found to /moved, but redirects are not followed" in info.value.message


def test_credentials_do_not_follow_a_redirect_to_another_server(serve: object) -> None:
    """The Authorization header goes to the URL's own server and to redirects on it, never to
    another origin a redirect names (as browsers, requests and aiohttp do)."""
    target = serve("ok")  # type: ignore[operator]
    server = serve("redirect")  # type: ignore[operator]
    server.redirect_to = target.url
    with fatpte.open_remote(server.url, policy=QUICK, headers={"Authorization": "Bearer secret"}) as c:
        assert [e.name for e in c.entries] == ["portable", "xnnpack"]
    assert server.authorizations and set(server.authorizations) == {"Bearer secret"}
    assert target.authorizations and set(target.authorizations) == {None}


def test_a_redirect_loop_stops_at_the_limit(serve: object) -> None:
    server = serve("redirect-loop")  # type: ignore[operator]
    with pytest.raises(FatpteError) as info:
        fatpte.open_remote(server.url, policy=QUICK._replace(max_redirects=3))
    assert info.value.code is ErrorCode.REMOTE_TOO_MANY_REDIRECTS
    assert "redirected more than 3 times" in info.value.message
    assert len(server.requests) == 4


def test_auth_failure_then_credentials_from_the_storage_options(serve: object) -> None:
    server = serve("auth")  # type: ignore[operator]
    with pytest.raises(FatpteError) as info:
        fatpte.open_remote(server.url, policy=QUICK)
    assert info.value.code is ErrorCode.REMOTE_DENIED and "HTTP 401" in info.value.message
    assert len(server.requests) == 1  # refused access is not retried
    with fatpte.open_remote(server.url, policy=QUICK, headers={"Authorization": "Bearer let-me-in"}) as c:
        assert [e.name for e in c.entries] == ["portable", "xnnpack"]


def test_not_found(serve: object) -> None:
    server = serve("not-found")  # type: ignore[operator]
    with pytest.raises(FatpteError) as info:
        fatpte.open_remote(server.url, policy=QUICK)
    assert info.value.code is ErrorCode.REMOTE_NOT_FOUND and "HTTP 404" in info.value.message


def test_transient_failures_are_retried(serve: object, data: bytes, tmp_path: Path) -> None:
    server = serve("flaky")  # type: ignore[operator]
    with fatpte.open_remote(server.url, policy=QUICK) as c:
        payload = bytes(c.payload("xnnpack", verify=True))
        assert c.stats.retries == 2
    assert [status for _, status, _ in server.requests] == [503, 206, 503, 206]
    assert len(payload) == 300_000


def test_a_server_that_keeps_failing(serve: object) -> None:
    server = serve("always-503")  # type: ignore[operator]
    with pytest.raises(FatpteError) as info:
        fatpte.open_remote(server.url, policy=QUICK)
    assert info.value.code is ErrorCode.REMOTE_FAILED
    assert "HTTP 503" in info.value.message and "(3 tries, the limit)" in info.value.message
    assert len(server.requests) == 3


def test_the_command_line_reports_it_and_leaves_nothing(serve: object, tmp_path: Path) -> None:
    server = serve("truncate")  # type: ignore[operator]
    dest = tmp_path / "x.bin"
    env = {**os.environ, "FATPTE_REMOTE_TIMEOUT": "1", "FATPTE_REMOTE_ATTEMPTS": "2"}
    done = subprocess.run([sys.executable, "-m", "fatpte", "extract", server.url, "--name", "xnnpack", "-q", "-o",
                           str(dest)], capture_output=True, text=True, check=False, env=env)
    assert done.returncode == 4, done.stderr
    assert done.stderr.startswith(f"{server.url}: E0805: ") and "(2 tries, the limit)" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_missing_scheme_package_is_named(tmp_path: Path) -> None:
    with pytest.raises(FatpteError) as info:
        fatpte.open("nosuchscheme://bucket/model.nfat")
    assert info.value.code is ErrorCode.REMOTE_UNSUPPORTED


def test_fsspec_configuration_from_the_environment_applies(client: str, serve: object) -> None:
    """FSSPEC_HTTP (JSON storage options, read by fsspec) reaches an http URL: such a URL goes
    through fsspec whichever client the test asked for."""
    server = serve("auth")  # type: ignore[operator]
    env = {**os.environ, "FSSPEC_HTTP": '{"headers": {"Authorization": "Bearer let-me-in"}}'}
    done = subprocess.run([sys.executable, "-m", "fatpte", "info", server.url], capture_output=True, text=True,
                          check=False, env=env)
    assert done.returncode == 0, done.stderr
    assert "xnnpack" in done.stdout
    plain = subprocess.run([sys.executable, "-m", "fatpte", "info", server.url], capture_output=True, text=True,
                           check=False, env={k: v for k, v in env.items() if not k.startswith("FSSPEC_")})
    assert plain.returncode == 4 and "E0806" in plain.stderr
