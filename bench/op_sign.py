"""Signed containers (issue 18): `fatpte verify` of a 3 GiB container against `sha256sum` on the same
bytes (target: at least 0.9x its speed, alternating in one run), and what `fatpte-run
--require-signature` adds to a run: the hashing of the selected entry and its named data, not of
the whole file (a 1 GiB entry the device does not select is never read)."""

from __future__ import annotations

import shutil
import statistics
import subprocess
from pathlib import Path

from bench import fixtures
from bench.harness import PYTHON, ROOT, Context, Pair, Section, alternate, fmt_bytes, gib, run_cmd, verdict
from bench.op_pack import payloads

MIN_FRACTION = 0.9
FATPTE = str(ROOT / ".venv" / "bin" / "fatpte")
RUNNER = ROOT / "build" / "loader" / "fatpte-run"
BACKENDS = ROOT / "build" / "loader" / "backends"


def _keys(work: Path) -> tuple[Path, Path]:
    private, public = work / "sign-key.pem", work / "sign-key.pub.pem"
    run_cmd([PYTHON, "-c", (
        "import sys; from cryptography.hazmat.primitives.asymmetric import ed25519; "
        "from cryptography.hazmat.primitives import serialization as s; k = ed25519.Ed25519PrivateKey.generate(); "
        "open(sys.argv[1], 'wb').write(k.private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, s.NoEncryption())); "
        "open(sys.argv[2], 'wb').write(k.public_key().public_bytes(s.Encoding.PEM, "
        "s.PublicFormat.SubjectPublicKeyInfo))"), str(private), str(public)])
    return private, public


def measure(ctx: Context) -> Section:
    private, public = _keys(ctx.work)
    container = ctx.work / "sign-3.nfat"
    items = payloads(ctx)
    run_cmd([PYTHON, "-c", ("import fatpte,sys; a=sys.argv[2:]; fatpte.pack([fatpte.Specialization(a[i], a[i+1]) "
             "for i in range(0, len(a), 2)], sys.argv[1])"), str(container),
             *[x for b, p in items for x in (b, str(p))]])
    signed = ctx.work / "sign-3-signed.nfat"
    sign_time = run_cmd([FATPTE, "sign", str(container), "--key", str(private), "-o", str(signed), "-q"]).seconds
    container.unlink()
    size = signed.stat().st_size
    fixtures.warm(signed)
    pair = Pair(f"verify {fmt_bytes(size)}", "`sha256sum` of the same file", f">= {MIN_FRACTION}x its speed")
    alternate(pair, lambda: run_cmd(["sha256sum", str(signed)]),
              lambda: run_cmd([FATPTE, "verify", str(signed), "--key", str(public), "-q"]))
    fraction = 1 / pair.ratio
    speed = size / statistics.median(s.seconds for s in pair.cand)
    pair.verdict = verdict(fraction >= MIN_FRACTION, f"{fraction:.2f}x sha256sum")
    pair.note = (f"verify {speed / 1e9:.2f} GB/s, {fraction:.2f}x sha256sum: every payload hashed once, distinct "
                 "regions on as many threads as cores (hashlib releases the GIL), read from the mapping")
    lines = [(f"`fatpte sign` of the same container took {sign_time:.2f} s (hash every region, copy the file "
              "with its regions moved past the grown header, append the bundle).")]
    pairs = [pair]
    signed.unlink()
    if RUNNER.exists() and (BACKENDS / "libfatpte_backend_dense_ref.so").exists():
        pairs.append(_loader(ctx, private, public, lines))
    else:
        lines.append(f"**Loader not measured**: {RUNNER.relative_to(ROOT)} is not built (`make loader`).")
    return Section(
        "sign and verify",
        "A signed container of three 1 GiB payloads, warm in the page cache. `fatpte verify` (signature, "
        "statement, every entry's record, then the SHA-256 of every payload and named-data segment) alternates "
        "with `sha256sum` over the same file; a ratio below 1.11 means verify runs at more than 0.9x its speed. "
        "The loader row runs the dense example network with an extra 1 GiB entry no host selects, with and "
        "without `--require-signature`.",
        pairs,
        lines,
    )


def _loader(ctx: Context, private: Path, public: Path, lines: list[str]) -> Pair:
    """fatpte-run with and without --require-signature on a container whose unselected entry is
    large: the difference is the hashing of what is loaded, nothing of the 1 GiB entry."""
    folder = ctx.work / "sign-loader"
    folder.mkdir(exist_ok=True)
    run_cmd([PYTHON, str(ROOT / "loader" / "examples" / "dense_example.py"), str(folder)])
    spare = fixtures.payload(ctx.work / "sign-spare.bin", gib(1), seed=18)
    grown = folder / "with-spare.nfat"
    run_cmd([FATPTE, "add", str(folder / "dense.nfat"), f"spare:dense_ref={spare}", "-o", str(grown), "-q"])
    # The spare entry is never chosen: it ties with the example's `dense_ref` entry, which comes
    # first in the table (the last key of the ranking), and `dense_avx2` outranks both where it runs.
    signed = folder / "with-spare-signed.nfat"
    run_cmd([FATPTE, "sign", str(grown), "--key", str(private), "-o", str(signed), "-q"])
    fixtures.warm(signed)
    base = [str(RUNNER), str(signed), "--backend-path", str(BACKENDS), "--input", str(folder / "dense-input.txt"),
]
    pair = Pair(f"fatpte-run, {fmt_bytes(gib(1))} unselected entry", "the same run without --require-signature",
                "adds the hashing of the selected entry only")
    alternate(pair, lambda: run_cmd(base), lambda: run_cmd([*base, "--require-signature", "--trusted-key",
                                                            str(public)]))
    added = statistics.median(c.seconds - b.seconds for b, c in zip(pair.base, pair.cand))
    whole = statistics.median(run_cmd(["sha256sum", str(signed)]).seconds for _ in range(3))
    ok = added < 0.1 * whole
    pair.verdict = verdict(ok, f"adds {added * 1e3:.1f} ms, sha256sum of the file takes {whole * 1e3:.0f} ms")
    pair.note = (f"--require-signature adds {added * 1e3:.2f} ms; hashing the whole {fmt_bytes(signed.stat().st_size)}"
                 f" file takes {whole * 1e3:.0f} ms (sha256sum), so the unselected entry is not read")
    lines.append(f"Loader: the signed file is {fmt_bytes(signed.stat().st_size)}; the selected entry and its named "
                 "data are a few KiB.")
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run(["rm", "-f", str(spare)], check=False)
    return pair
