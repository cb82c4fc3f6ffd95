"""Remote containers (issue 17): the bytes and requests each verb transfers from nginx over
loopback, counted from nginx's access log, and `fatpte extract URL` against `curl -r` of the same
byte range to a file (target: at most 1.1x). nginx is the tests' (tests/remote/servers.py):
Debian's nginx-light from a generated configuration, on 127.0.0.1 on a free port."""

from __future__ import annotations

import os
import shutil

from bench import fixtures
from bench.commands import FATPTE
from bench.harness import (
    PYTHON,
    Context,
    Pair,
    Section,
    alternate,
    fmt_bytes,
    gib,
    run_cmd,
    runs,
    sync,
    verdict,
)

LIMIT = 1.1

PACK = ("import fatpte,sys; a=sys.argv; fatpte.pack(["
        "fatpte.Specialization('portable', a[2], named_data=['w.small']), "
        "fatpte.Specialization('xnnpack', a[3], name='big', requires={'accelerators': [{'kind': 'npu'}]}), "
        "fatpte.Specialization('cuda', a[4], name='huge', requires={'accelerators': [{'kind': 'cuda'}]})], "
        "a[1], named_data={'w.small': a[5]})")


def measure(ctx: Context) -> Section:
    section = Section(
        "remote containers",
        "A container served by nginx on 127.0.0.1 (Debian's nginx-light, the tests' generated configuration); "
        "bytes and requests are counted from nginx's access log. `extract` of the big entry is timed as a whole "
        "process against `curl -r` of the same byte range to a file, in alternating rounds; each output is deleted "
        "and dirty pages flushed (untimed) between rounds. The container stays warm in the page cache.",
    )
    if shutil.which("nginx") is None and not os.path.exists("/usr/sbin/nginx"):
        section.lines.append("**Not measured**: nginx is not installed (`make test` installs nginx-light).")
        return section
    if shutil.which("curl") is None:
        section.lines.append("**Not measured**: curl is not installed.")
        return section
    from tests.remote.servers import Nginx

    www = ctx.work / "remote-www"
    www.mkdir(exist_ok=True)
    size = gib(1)
    small = fixtures.payload(ctx.work / "remote-small.bin", 256 << 10, seed=31)
    weights = fixtures.payload(ctx.work / "remote-weights.bin", 128 << 10, seed=32)
    big = fixtures.payload(ctx.work / "remote-big.bin", size, seed=33)
    huge = fixtures.sparse(ctx.work / "remote-huge.bin", 2 * size)
    container = www / "model.nfat"
    run_cmd([PYTHON, "-c", PACK, str(container), str(small), str(big), str(huge), str(weights)])
    fixtures.warm(container)
    work = ctx.work / "remote-nginx"
    work.mkdir(exist_ok=True)
    server = Nginx(www, work)
    try:
        url = server.url(container.name)
        dest = ctx.work / "remote-out.bin"
        verbs = [
            ("info", [FATPTE, "info", url]),
            ("select --device host", [FATPTE, "select", url, "--device", "host"]),
            ("coverage", [FATPTE, "coverage", url]),
            ("extract --name big", [FATPTE, "extract", url, "--name", "big", "-q", "-f", "-o", str(dest)]),
            ("thin --device host", [FATPTE, "thin", url, "--device", "host", "-q", "-f", "-o", str(dest)]),
            ("validate", [FATPTE, "validate", "-q", url]),
        ]
        rows = ["| verb | requests | bytes transferred | of the container |", "|---|---|---|---|"]
        total = container.stat().st_size
        for name, argv in verbs:
            mark = server.mark()
            run_cmd(argv)
            log = server.requests(mark)
            sent = sum(r.body_bytes for r in log)
            rows.append(f"| `{name}` | {len(log)} | {sent:,} ({fmt_bytes(sent)}) | {sent / total:.4%} |")
            dest.unlink(missing_ok=True)
        section.lines += [(f"Bytes and requests per verb, on a container of {total:,} bytes ({fmt_bytes(total)}: "
                          f"a 256 KiB entry with 128 KiB of named data, a {fmt_bytes(size)} entry, a "
                          f"{fmt_bytes(2 * size)} sparse entry):"), "", *rows, ""]
        import fatpte

        with fatpte.open(container) as c:
            entry = c.find("big")
        first, last = entry.offset, entry.offset + entry.size - 1

        def clean() -> None:
            dest.unlink(missing_ok=True)
            sync()

        curl = ["curl", "-s", "-f", "-r", f"{first}-{last}", "-o", str(dest), url]
        extract = [FATPTE, "extract", url, "--name", "big", "-q", "-o", str(dest)]
        pair = Pair(f"extract {fmt_bytes(size)} over loopback (whole process)",
                    "curl -r of the same range to a file", f"<= {LIMIT}x")
        alternate(pair, lambda: run_cmd(curl), lambda: run_cmd(extract), rounds=4 * runs(), between=clean)
        pair.verdict = verdict(pair.ratio <= LIMIT, f"{pair.ratio:.2f}x")
        pair.note = ("http.client (a plain URL): fatpte makes 1 + ceil(size / 16 MiB) range requests on one "
                     "kept-alive connection, checks each response's range and the file's identity, hashes the "
                     "payload as it arrives, writes it in 16 KiB writes as curl does (larger ones let the page cache "
                     "take large folios, whose allocation is erratic in this VM: streams.WRITE_STEP) and renames the "
                     "output into place; curl makes one request and checks nothing. Each round's time swings with "
                     "how fast the kernel finds memory for the new file's 1 GiB of page cache, for both tools")
        section.pairs.append(pair)
        # The same through fsspec's aiohttp session, which any storage option beyond `headers`
        # selects (here fsspec's environment configuration): what those users get.
        via_fsspec = {**os.environ, "FSSPEC_HTTP": '{"client_kwargs": {}}'}
        slow = Pair(f"extract {fmt_bytes(size)} over loopback through fsspec's aiohttp (whole process)",
                    "curl -r of the same range to a file", "none (the default client is the row above)")
        alternate(slow, lambda: run_cmd(curl), lambda: run_cmd(extract, env=via_fsspec), rounds=2 * runs(),
                  between=clean)
        slow.note = ("storage options beyond `headers` (FSSPEC_HTTP here) send the requests through fsspec's "
                     "HTTPFileSystem: aiohttp receives on its event loop's thread, and importing fsspec and aiohttp "
                     "adds about 0.2 s of start-up")
        section.pairs.append(slow)
    finally:
        server.close()
    return section
