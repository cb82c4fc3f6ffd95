"""Timing, alternation and peak memory for the benchmarks, and the machine they ran on.

A pair is measured as baseline, candidate, baseline, candidate, ... so that drift of the shared
machine (its write speed changes minute to minute) hits both sides alike; the figure reported is
the median of the per-round ratios candidate / baseline, with their min and max. Commands run as
child processes and their peak RSS comes from wait4 (the child's own rusage), so a baseline's
memory never mixes with the harness's.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = str(ROOT / ".venv" / "bin" / "python")


def scale() -> float:
    """BENCH_SCALE multiplies every data size (1.0: the issue's sizes; 0.05 for a quick run)."""
    return float(os.environ.get("BENCH_SCALE", "1"))


def runs() -> int:
    """BENCH_RUNS: alternating rounds per pair (the issue asks for at least 5)."""
    return max(1, int(os.environ.get("BENCH_RUNS", "5")))


def gib(n: float) -> int:
    """n GiB times BENCH_SCALE, rounded to whole MiB."""
    return max(1 << 20, int(n * scale() * (1 << 30)) >> 20 << 20)


@dataclass(frozen=True, slots=True)
class Sample:
    seconds: float
    max_rss: int  # bytes


SPAWN_SOURCE = ROOT / "bench" / "spawn.c"
SPAWN = ROOT / "build" / "bench" / "spawn"


def compiled(source: Path, output: Path, *flags: str, cc: str | None = None, more: Sequence[Path] = ()) -> Path:
    """`output` built from the C file `source` (and the sources `more`) with cc (default CC, else
    cc) the first time and whenever a source is newer; written to a temporary file beside it and
    renamed into place."""
    sources = [source, *more]
    if not output.exists() or output.stat().st_mtime < max(s.stat().st_mtime for s in sources):
        output.parent.mkdir(parents=True, exist_ok=True)
        cc = cc or os.environ.get("CC", "cc")
        fd, tmp = tempfile.mkstemp(dir=output.parent, prefix=f".{output.name}.")
        os.close(fd)
        try:
            subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-Werror", *flags, "-o", tmp, *map(str, sources)],
                           check=True)
            os.chmod(tmp, 0o755)
            os.replace(tmp, output)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return output


def spawner() -> Path:
    """bench/spawn (bench/spawn.c): it forks each timed command from its own small process and
    reports the command's wall time and peak RSS."""
    return compiled(SPAWN_SOURCE, SPAWN)


def run_cmd(argv: Sequence[str], *, env: dict[str, str] | None = None, cwd: Path | None = None,
            accept: tuple[int, ...] = (0,)) -> Sample:
    """Run argv to completion; its wall time and peak RSS, as bench/spawn measures them (the
    command's own start-up, run and exit; not this process's fork and exec of the helper). An exit
    status outside `accept` raises with its stderr (a command timed on a file it must refuse
    accepts its error status)."""
    with tempfile.NamedTemporaryFile("r", prefix="bench-spawn.", suffix=".txt") as report:
        proc = subprocess.Popen([str(spawner()), report.name, *argv], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, env=env, cwd=cwd)
        assert proc.stderr is not None
        # Read stderr before reaping so a chatty child cannot block on a full pipe.
        err = proc.stderr.read()
        proc.stderr.close()
        returncode = proc.wait()
        if returncode not in accept:
            raise RuntimeError(f"{' '.join(argv)} exited {returncode}: {err.decode(errors='replace')[-2000:]}")
        nanoseconds, rss_kib = report.read().split()
    return Sample(int(nanoseconds) / 1e9, int(rss_kib) * 1024)


def rss_method() -> str:
    return ("bench/spawn (bench/spawn.c): wait4's ru_maxrss of the command, forked from the helper's small "
            "process; its wall time is timed by the helper, fork to reap, without the harness's own fork and exec")


@dataclass(slots=True)
class Pair:
    """One operation against its baseline, measured in alternating rounds."""

    operation: str
    baseline: str
    target: str  # the bound, as text
    base: list[Sample] = field(default_factory=list)
    cand: list[Sample] = field(default_factory=list)
    note: str = ""
    verdict: str = ""  # "met", "MISSED: reason", or "" when the target is not a ratio here

    @property
    def ratios(self) -> list[float]:
        return [c.seconds / b.seconds for b, c in zip(self.base, self.cand)]

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)


def alternate(
    pair: Pair,
    baseline: Callable[[], Sample],
    candidate: Callable[[], Sample],
    *,
    rounds: int | None = None,
    between: Callable[[], None] | None = None,
) -> Pair:
    """Fill pair with `rounds` alternating measurements; `between` runs untimed after each one
    (removing an output file, flushing dirty pages)."""
    for _ in range(rounds or runs()):
        for side, fn in ((pair.base, baseline), (pair.cand, candidate)):
            side.append(fn())
            if between is not None:
                between()
    return pair


def sync() -> None:
    """Flush dirty pages so a run does not pay for the writeback of the one before it."""
    os.sync()


def median_seconds(samples: Sequence[Sample]) -> float:
    return statistics.median(s.seconds for s in samples)


def peak_rss(samples: Sequence[Sample]) -> int:
    return max(s.max_rss for s in samples)


# ---------------------------------------------------------------------------------------------
# The machine.
# ---------------------------------------------------------------------------------------------


def machine(folder: Path) -> dict[str, str]:
    """CPU model, cores, RAM, kernel, file system of `folder`, Python, date."""
    cpu = "unknown"
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    ram = 0
    with open("/proc/meminfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                ram = int(line.split()[1]) * 1024
    flags = ""
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        text = f.read()
    for flag in ("sse4_2", "avx2", "avx512f"):
        if f" {flag}" in text:
            flags += f" {flag}"
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpu": f"{cpu} ({flags.strip()})",
        "cores": str(os.cpu_count()),
        "ram": f"{ram / (1 << 30):.1f} GiB",
        "kernel": f"{platform.system()} {platform.release()}",
        "filesystem": f"{_fstype(folder)} (bench files in {folder.parent})",
        "python": platform.python_version(),
        "load": "load average {:.2f} {:.2f} {:.2f} at the start (the machine is shared)".format(*os.getloadavg()),
        "scale": f"BENCH_SCALE={scale()} BENCH_RUNS={runs()}",
        "peak RSS": rss_method(),
    }


def _fstype(folder: Path) -> str:
    best, kind = "", "unknown"
    target = str(folder.resolve())
    with open("/proc/mounts", encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            mount, fstype = parts[1], parts[2]
            if (target == mount or target.startswith(mount.rstrip("/") + "/")) and len(mount) > len(best):
                best, kind = mount, fstype
    return kind


# ---------------------------------------------------------------------------------------------
# Formatting.
# ---------------------------------------------------------------------------------------------


def fmt_seconds(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.0f} us"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


def fmt_bytes(n: int) -> str:
    if n >= 1 << 30:
        return f"{n / (1 << 30):.2f} GiB"
    return f"{n / (1 << 20):.1f} MiB"


def pair_table(pairs: Sequence[Pair]) -> list[str]:
    """The markdown table every operation section uses."""
    out = [
        ("| operation | baseline | rounds | fatpte median | baseline median | ratio median | ratio min-max "
        "| fatpte peak RSS | baseline peak RSS | target | verdict |"),
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in pairs:
        rs = p.ratios
        out.append(
            f"| {p.operation} | {p.baseline} | {len(rs)} | {fmt_seconds(median_seconds(p.cand))} "
            f"| {fmt_seconds(median_seconds(p.base))} | **{p.ratio:.2f}x** | {min(rs):.2f}-{max(rs):.2f} "
            f"| {fmt_bytes(peak_rss(p.cand))} | {fmt_bytes(peak_rss(p.base))} | {p.target} | {p.verdict} |"
        )
    notes = [f"- {p.operation}: {p.note}" for p in pairs if p.note]
    return out + ([""] + notes if notes else [])


def verdict(ok: bool, why_not: str = "") -> str:
    return "met" if ok else f"**MISSED**{': ' + why_not if why_not else ''}"


@dataclass(slots=True)
class Section:
    """One operation's part of docs/performance.md."""

    title: str
    intro: str
    pairs: list[Pair] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # further tables or findings, markdown

    def render(self) -> list[str]:
        out = [f"## {self.title}", "", self.intro, ""]
        if self.pairs:
            out += pair_table(self.pairs) + [""]
        if self.lines:
            out += self.lines + [""]
        return out


@dataclass(slots=True)
class Context:
    """What every op module gets: a scratch folder and the command resolver."""

    work: Path
    commands: object  # bench.commands.Commands (kept untyped here to avoid an import cycle)
    cache: dict[str, Path] = field(default_factory=dict)


def import_costs(argv: Sequence[str], top: int = 6) -> str:
    """The costliest top-level imports of a command (PYTHONPROFILEIMPORTTIME), as one markdown
    line: the measured reason a start-up bound is missed."""
    env = dict(os.environ, PYTHONPROFILEIMPORTTIME="1")
    done = subprocess.run(list(argv), env=env, capture_output=True, text=True, check=False)
    rows: list[tuple[int, str]] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|", 2)
        depth = (len(name) - len(name.lstrip(" "))) // 2
        if depth <= 1 and cumulative.strip().isdigit():  # the command's own imports, not nested ones
            rows.append((int(cumulative), name.strip()))
    rows.sort(reverse=True)
    listed = ", ".join(f"`{n}` {us / 1000:.0f} ms" for us, n in rows[:top])
    return f"Import time of `{' '.join(Path(a).name if '/' in a else a for a in argv)}` (cumulative, " \
           f"one run): {listed or 'not available'}."
