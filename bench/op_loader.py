"""The C++ loader's benchmark binary (the loader engineer's), when it has been built: open + full
table and manifest validation + select + payload pointer, 16 entries, target under 100 us and
1 MiB vs 4 GiB within 10%. Its own output is included as it prints it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bench.harness import ROOT, Context, Section
from bench.op_info_select import containers

CANDIDATES = ("build/loader/fatpte_bench", "build/fatpte_bench", "build/loader/bench_loader", "build/bench_loader")


def measure(ctx: Context) -> Section:
    section = Section("C++ loader", "Figures printed by the C++ benchmark binary for the same 1 MiB and 4 GiB "
                      "containers as the info/select section.")
    binary = next((ROOT / c for c in CANDIDATES if (ROOT / c).exists()), None)
    if binary is None:
        found = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "build").rglob("*bench*") if p.is_file()
                       and p.stat().st_mode & 0o111) if (ROOT / "build").exists() else []
        if not found:
            section.lines.append("**Not measured**: no C++ benchmark binary in build/ at bench time "
                                 f"(looked for {', '.join(CANDIDATES)}; build it with `make loader`).")
            return section
        binary = ROOT / found[0]
    small, big = containers(ctx)
    proc = subprocess.run([str(binary), str(small), str(big)], check=False, capture_output=True, text=True, timeout=300)
    section.lines += [f"`{Path(binary).relative_to(ROOT)} {small.name} {big.name}` exited {proc.returncode}:", "",
                      "```", (proc.stdout + proc.stderr).strip(), "```"]
    return section
