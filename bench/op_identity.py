"""Device identity (issue 39 point 3): what reading the device's cores, system, machine and SoC
adds to a selection on this host.

Whole processes, `fatpte-run --select-only --device host` on two containers of the same two
entries: one whose entry states `min_core` (the probe then reads the identity: cpuid on x86_64,
/etc/os-release, the device tree and /sys/devices/soc0) against one that states none (the probe
reads no identity, as before). And Python's probe in process: `fatpte.device.host.probe()` (every
fact, the identity included) against `probe_linux.probe()` (features and memory). No target: the issue
asks for the facts; these say what they cost.
"""

from __future__ import annotations

import statistics
import subprocess

from bench.harness import PYTHON, ROOT, Context, Pair, Section, alternate, run_cmd, runs

BUILD = ROOT / "build" / "loader"


def _container(ctx: Context, name: str, require: str) -> str:
    payloads = []
    for i in range(2):
        p = ctx.work / f"identity-{i}.bin"
        p.write_bytes(bytes([i]) * 64)
        payloads.append(p)
    out = ctx.work / f"identity-{name}.nfat"
    subprocess.run([PYTHON, "-m", "fatpte", "pack", "-q", "-f", "-o", str(out), f"tuned:xnnpack={payloads[0]}",
                    f"portable:portable={payloads[1]}", "--priority", "portable=-1", *require.split()],
                   check=True, capture_output=True)
    return str(out)


def _python_probe_us() -> tuple[float, float]:
    code = ("from fatpte.device import host, probe_linux, probe_identity; import timeit\n"
            "a = min(timeit.repeat(lambda: probe_linux.probe('{arch}'), number=100, repeat=5)) / 100\n"
            "b = min(timeit.repeat(host.probe, number=100, repeat=5)) / 100\n"
            "print(a * 1e6, b * 1e6)")
    import platform

    arch = "aarch64" if platform.machine() in ("aarch64", "arm64") else "x86_64"
    out = subprocess.run([PYTHON, "-c", code.format(arch=arch)], check=True, capture_output=True, text=True).stdout
    linux, whole = (float(x) for x in out.split())
    return linux, whole


def measure(ctx: Context) -> Section:
    section = Section("Device identity: what the probe's new facts cost", "")
    if not (BUILD / "fatpte-run").exists():
        section.intro = "**Not measured**: build/loader is not built (`make loader`)."
        return section
    features = _container(ctx, "features", "")
    named = _container(ctx, "named", "--require tuned:min_core=nehalem")
    run = [str(BUILD / "fatpte-run"), "--select-only", "--device", "host"]
    pair = alternate(Pair("`fatpte-run --select-only --device host`, an entry stating min_core (identity probed)",
                          "the same, no identity requirement (none probed)", "reported (no bound)"),
                     lambda: run_cmd([*run, features]), lambda: run_cmd([*run, named]), rounds=20 * runs())
    added = statistics.median(s.seconds for s in pair.cand) - statistics.median(s.seconds for s in pair.base)
    pair.note = f"added by the identity: {added * 1e3:.2f} ms (medians)"
    section.pairs.append(pair)
    linux, whole = _python_probe_us()
    section.lines.append(f"Python's host probe in process: {whole:.0f} us for every fact against {linux:.0f} us for "
                         "features and memory alone (`probe_linux.probe`; the rest is the identity, uname and the "
                         "CUDA probe; min of 5 x 100; /proc/cpuinfo is read once for features and cores).")
    section.intro = ("The C++ probe reads the identity only when an entry's requirements read it "
                     "(`probe_scope`); `fatpte-run --device-json` reads it always.")
    return section
