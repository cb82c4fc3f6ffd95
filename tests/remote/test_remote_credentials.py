"""A URL's credentials (`https://user:password@host/...`) are used, never shown: not in an error
line, not in --json, not in a report's path, not in a progress label (issue 33 R2;
fatpte/fileio/url.py `redact`, the one helper every place that shows a URL goes through)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import fatpte
from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.remote import Policy
from fatpte.fileio.url import redact
from tests.remote.servers import Asked, Scripted, Wire
from tests.remote.test_remote_misbehaviour import BIG, ranged

PASSWORD = "s3cret-pw"  # the test's own server's
GOOD = "Basic " + base64.b64encode(f"reader:{PASSWORD}".encode()).decode()


@pytest.mark.parametrize(("text", "shown"), [
    ("https://reader:pw@models.example.com/a.nfat", "https://***@models.example.com/a.nfat"),
    ("https://reader@models.example.com/a.nfat", "https://***@models.example.com/a.nfat"),
    ("https://reader:p@ss@models.example.com/a.nfat?x=1", "https://***@models.example.com/a.nfat?x=1"),
    ("s3://KEY:SECRET@bucket/a.nfat", "s3://***@bucket/a.nfat"),
    ("HTTP://u:p@h:8080", "HTTP://***@h:8080"),
    ("redirected to 'https://u:p@cdn/x' from http://a:b@origin/y", "redirected to 'https://***@cdn/x' from http://***@origin/y"),
    ("https://models.example.com/a@b.nfat", "https://models.example.com/a@b.nfat"),
    ("https://models.example.com/a.nfat?user=a@b", "https://models.example.com/a.nfat?user=a@b"),
    ("./models/a@b.nfat", "./models/a@b.nfat"),
    ("mailto:someone@example.com", "mailto:someone@example.com"),
    # Signed and tokenised URLs: the credential parameters' values, whatever their case; the rest kept.
    (("https://b.s3.amazonaws.com/m.nfat?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20261126"
      "&X-Amz-Date=20261126T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=0a1b2c"),
     ("https://b.s3.amazonaws.com/m.nfat?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=***"
      "&X-Amz-Date=20261126T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=***")),
    ("https://a.blob.core.windows.net/c/m.nfat?sv=2022-11-02&se=2026-12-01&sp=r&sig=AbC%2Bd%3D",
     "https://a.blob.core.windows.net/c/m.nfat?sv=2022-11-02&se=2026-12-01&sp=r&sig=***"),
    ("https://u:p@h/a.nfat?KEY=k1&x=1#frag", "https://***@h/a.nfat?KEY=***&x=1#frag"),
    ("reading 'https://h/a.nfat?token=t0k' failed (E0803)", "reading 'https://h/a.nfat?token=***' failed (E0803)"),
    ("https://h/a.nfat?monkey=1&tokens=2", "https://h/a.nfat?monkey=1&tokens=2"),
    ("./models/a.nfat?token=not-a-url", "./models/a.nfat?token=not-a-url"),
    # By the rule of specs/remote.md section 3, not by a list (issue 42 point 8): names a service
    # chose, whose parts (split at separators and case changes) include a credential word.
    ("https://h/a.nfat?private_token=glpat-1&ref=main", "https://h/a.nfat?private_token=***&ref=main"),
    (("https://h/a.nfat?x-api-key=k&X-Api-Key=k&apiKey=k&APIKEY=k&AccessKeyId=k&sessionToken=t&my.secret=s"
      "&Client-Password=p&X-Auth=a&JWT=j&GoogleAccessId=g&design=1&author=2&monkey=3"),
     ("https://h/a.nfat?x-api-key=***&X-Api-Key=***&apiKey=***&APIKEY=***&AccessKeyId=***&sessionToken=***"
      "&my.secret=***&Client-Password=***&X-Auth=***&JWT=***&GoogleAccessId=***&design=1&author=2&monkey=3")),
])
def test_redact(text: str, shown: str) -> None:
    assert redact(text) == shown


@pytest.fixture
def server() -> Iterator[Scripted]:
    def script(asked: Asked, wire: Wire) -> None:
        if asked.headers.get("authorization") != GOOD:
            wire.answer(401, [("Content-Length", "0"), ("WWW-Authenticate", "Basic")])
        elif asked.path.startswith("/missing"):
            wire.answer(404, [("Content-Length", "0")])
        elif asked.path.startswith("/loop"):
            # back to itself, credentials and all: the Location is shown redacted too
            wire.answer(302, [("Location", f"http://reader:{PASSWORD}@127.0.0.1:{port}/loop?{asked.number}"),
                              ("Content-Length", "0")])
        else:
            ranged(BIG, asked, wire)

    s = Scripted(script)
    port = s.port
    yield s
    s.close()


def fatpte_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FATPTE_REMOTE_ATTEMPTS": "1", "FATPTE_REMOTE_TIMEOUT": "2"}
    return subprocess.run([sys.executable, "-m", "fatpte", *args], capture_output=True, text=True, check=False,
                          env=env)


def test_the_password_of_a_url_is_used_and_never_shown(server: Scripted, tmp_path: Path) -> None:
    url = server.url("/c.nfat").replace("http://", f"http://reader:{PASSWORD}@")
    shown = server.url("/c.nfat").replace("http://", "http://***@")
    runs = {
        "info": fatpte_cli("info", url, "--json"),
        "select": fatpte_cli("select", url, "--device", "host", "--json"),
        "validate": fatpte_cli("validate", url, "--json"),
        "coverage": fatpte_cli("coverage", url, "--json"),
        "diff": fatpte_cli("diff", url, url, "--json"),
        "extract": fatpte_cli("extract", url, "--name", "xnnpack", "-o", str(tmp_path / "x.bin")),
        "thin": fatpte_cli("thin", url, "--name", "xnnpack", "-o", str(tmp_path / "t.nfat")),
    }
    for verb, done in runs.items():
        assert done.returncode == 0, (verb, done.stderr)
        assert PASSWORD not in done.stdout + done.stderr, verb
    assert json.loads(runs["info"].stdout)["path"] == shown
    assert json.loads(runs["validate"].stdout.splitlines()[0])["path"] == shown
    diff = json.loads(runs["diff"].stdout)
    assert (diff["a"], diff["b"]) == (shown, shown)
    failing = {
        "not found": fatpte_cli("info", url.replace("/c.nfat", "/missing.nfat")),
        "redirect loop": fatpte_cli("info", url.replace("/c.nfat", "/loop")),
        "wrong password": fatpte_cli("info", url.replace(PASSWORD, PASSWORD + "x")),
        "validate --json": fatpte_cli("validate", url.replace("/c.nfat", "/missing.nfat"), "--json"),
    }
    for what, done in failing.items():
        assert done.returncode == 4, (what, done.stderr)
        assert PASSWORD not in done.stdout + done.stderr, what
        assert "***@" in done.stderr, (what, done.stderr)
    # a Location naming a user is not followed (issue 42), and is shown redacted
    assert "E0808: redirected to 'http://***@127.0.0.1:" in failing["redirect loop"].stderr
    assert json.loads(failing["validate --json"].stdout)["path"] == shown.replace("/c.nfat", "/missing.nfat")


def test_the_library_names_a_url_without_its_credentials(server: Scripted) -> None:
    url = server.url("/c.nfat").replace("http://", f"http://reader:{PASSWORD}@")
    with fatpte.open(url) as c:
        assert c.source == redact(url) and PASSWORD not in repr(c)
    assert fatpte.validate(url).source == redact(url)
    with pytest.raises(FatpteError) as info:
        fatpte.open_remote(url.replace("/c.nfat", "/missing.nfat"), policy=Policy(attempts=1))
    assert info.value.code is ErrorCode.REMOTE_NOT_FOUND
    assert PASSWORD not in str(info.value) and info.value.source == redact(url).replace("/c.nfat", "/missing.nfat")


def test_a_signed_urls_signature_is_used_and_never_shown(server: Scripted) -> None:
    """A signed URL carries its credential in the query (S3's X-Amz-Signature, ...): sent to the
    server as given, shown with `***` in its place (specs/remote.md section 3)."""
    signature, token = "5f2e0c9a7b1d", "FQoGZXIvYXdzEJr"
    query = (f"?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20261126T000000Z&X-Amz-Security-Token={token}"
             f"&X-Amz-Signature={signature}")
    url = server.url("/c.nfat").replace("http://", f"http://reader:{PASSWORD}@") + query
    shown = (server.url("/c.nfat").replace("http://", "http://***@") +
             "?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20261126T000000Z&X-Amz-Security-Token=***"
             "&X-Amz-Signature=***")
    ok = fatpte_cli("info", url, "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["path"] == shown
    assert all(query.split("?")[1] in a.path for a in server.asked), "the query reaches the server as given"
    failing = fatpte_cli("info", url.replace("/c.nfat", "/missing.nfat"))
    assert failing.returncode == 4, failing.stderr
    for done in (ok, failing):
        assert signature not in done.stdout + done.stderr and token not in done.stdout + done.stderr
    assert "X-Amz-Signature=***" in failing.stderr, failing.stderr



def test_credential_parameters_a_service_names_its_own_way_are_never_shown(server: Scripted) -> None:
    """`private_token=` (GitLab) and `x-api-key=`: hidden by the rule of specs/remote.md section 3
    (a part of the name is a credential word), not by a list that names them (issue 42 point 8)."""
    secrets = ("glpat-AbCdEf0123", "k3y-0f-th3-api")
    query = f"?private_token={secrets[0]}&x-api-key={secrets[1]}&ref=main"
    url = server.url("/c.nfat").replace("http://", f"http://reader:{PASSWORD}@") + query
    ok = fatpte_cli("info", url, "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["path"].endswith("?private_token=***&x-api-key=***&ref=main")
    failing = fatpte_cli("info", url.replace("/c.nfat", "/missing.nfat"))
    assert failing.returncode == 4, failing.stderr
    for done in (ok, failing):
        assert not any(s in done.stdout + done.stderr for s in (*secrets, PASSWORD)), done.stdout + done.stderr


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "executorch"
FATPTE_RUN = Path(__file__).resolve().parents[2] / "build" / "loader" / "fatpte-run"


def golden_container(tmp_path: Path) -> bytes:
    """mlp's portable program with the tier calls of fixtures.json as golden calls (their eager
    outputs, within the tolerance given): what `fatpte check` runs."""
    tiers = json.loads((FIXTURES / "fixtures.json").read_text())["tiers"]["models"]["mlp"]
    out = tmp_path / "golden.nfat"
    fatpte.pack([fatpte.Specialization("portable", FIXTURES / "mlp_portable.pte", name="portable",
                                       golden_tolerance={"atol": 1e-3, "rtol": 1e-3})], out, golden=tiers["calls"])
    return out.read_bytes()


def test_check_of_a_url_fetches_it_privately_and_never_shows_or_passes_its_credentials(tmp_path: Path) -> None:
    """`fatpte check URL` (issue 42 R4): the container is fetched through fatpte's reader to a
    private temporary file (0600 in a 0700 folder, gone afterwards) that fatpte-run reads; the
    password and the signature are in no line of its text, its --json, nor fatpte-run's argv."""
    from tests.builds import missing_build

    if not FATPTE_RUN.exists():
        missing_build("build/loader/fatpte-run is not built: run `make loader`")
    data = golden_container(tmp_path)
    signature = "9d8c7b6a5f4e3d2c"

    def script(asked: Asked, wire: Wire) -> None:
        if asked.headers.get("authorization") != GOOD:
            wire.answer(401, [("Content-Length", "0"), ("WWW-Authenticate", "Basic")])
        else:
            ranged(data, asked, wire)

    server = Scripted(script)
    log = tmp_path / "argv.log"
    wrapper = tmp_path / "fatpte-run"  # records each command line and the mode of the file it reads
    wrapper.write_text(f'#!/bin/sh\necho "ARGV $*" >> {log}\n'
                       f'[ -f "$1" ] && stat -c "MODE %a %n" "$1" "$(dirname "$1")" >> {log}\n'
                       f'exec {FATPTE_RUN} "$@"\n')
    wrapper.chmod(0o755)
    try:
        url = (server.url("/golden.nfat").replace("http://", f"http://reader:{PASSWORD}@")
               + f"?X-Amz-Date=20261126T000000Z&X-Amz-Signature={signature}")
        shown = server.url("/golden.nfat").replace("http://", "http://***@") + \
            "?X-Amz-Date=20261126T000000Z&X-Amz-Signature=***"
        text = fatpte_cli("--runtime", str(wrapper), "check", url)
        as_json = fatpte_cli("--runtime", str(wrapper), "check", url, "--json")
        wrong = fatpte_cli("--runtime", str(wrapper), "check", url.replace(PASSWORD, "wrong-pw"), "--json")
    finally:
        server.close()
    for done in (text, as_json, wrong):
        assert PASSWORD not in done.stdout + done.stderr and signature not in done.stdout + done.stderr
    assert text.returncode == 0, text.stdout + text.stderr
    assert text.stdout.startswith(shown + ": 1 of 1 entries ran their golden calls"), text.stdout
    report = json.loads(as_json.stdout)
    assert as_json.returncode == 0 and report["ok"] and report["source"] == shown, as_json.stdout
    assert wrong.returncode == 4 and "***@" in wrong.stderr, wrong.stderr
    argv = log.read_text()
    assert PASSWORD not in argv and signature not in argv and "127.0.0.1" not in argv, argv
    runs = [line.split()[1] for line in argv.splitlines() if line.startswith("ARGV") and "--golden-report" in line]
    assert len(runs) == 2, argv  # text and --json: one method each
    modes = [line.split()[1] for line in argv.splitlines() if line.startswith("MODE")]
    assert modes == ["600", "700"] * len(runs), argv  # the file, then its folder, at each run
    assert not any(os.path.exists(r) or os.path.exists(os.path.dirname(r)) for r in runs), "left behind"
