"""The size build (issue 37, docs/cpp.md "The size build"): the stripped sizes of what an application
that embeds the loader ships, read from `make loader-size` (x86_64) and `make loader-size-aarch64`,
beside ExecuTorch's own runtime library (libexecutorch.so of the same SDK, stripped here with the
architecture's `strip`):

- the core loader, libfatpte.so: open, validate, select and dispatch ExecuTorch programs
  (signatures off, its C API exported alone);
- the fat delegate library, libexecutorch_backend_fatpte.so (libfatpte's code inside it);
- fatpte-run, the tool (libfatpte linked in statically).

Targets on aarch64: the core loader at most 250 KB, the fat delegate at most 150 KB. Where one is
missed, the account says what holds it: its bytes by kind of section (`size -A`), and, for a size
build configured without LTO, the largest contributors by source file from the linker map the size
build writes beside each binary (bytes of allocated sections after --gc-sections).

Nothing is built here: a size build that is not there is reported as not measured, with the make
target that builds it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

from bench.harness import ROOT, Context, Section, verdict

KB = 1000
BUILDS = {
    "x86_64": (ROOT / "build" / "loader-size", ROOT / "build" / "executorch-sdk", "strip", "loader-size"),
    "aarch64": (ROOT / "build" / "loader-size-aarch64", ROOT / "build" / "executorch-sdk-aarch64",
                "aarch64-linux-gnu-strip", "loader-size-aarch64"),
}
# (row, file in the build folder, aarch64 target in KB or None)
BINARIES = (
    ("core loader (libfatpte.so)", "libfatpte.so", 250),
    ("fat delegate (libexecutorch_backend_fatpte.so)", "libexecutorch_backend_fatpte.so", 150),
    ("fatpte-run", "fatpte-run", None),
)
# An input section of a GNU ld map: its name (alone on the line before when long), address, size, file.
_INPUT = re.compile(r"^ (?:\S+)?\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+(\S.*)$")
_OUTPUT = re.compile(r"^(\.\S+|\S+)\s")
# Output sections that take no bytes in the file, or that a stripped file does not keep.
_NOT_SHIPPED = (".bss", ".tbss", ".debug", ".comment", ".note.gnu.build-id", ".gnu.build.attributes", ".stab")


def stripped_size(path: Path, strip: str) -> int:
    """The size of `path` once stripped (a copy, with the architecture's strip)."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / path.name
        shutil.copyfile(path, copy)
        subprocess.run([strip, "--strip-all", str(copy)], check=True, capture_output=True)
        return copy.stat().st_size


def _source(name: str) -> str:
    """An input file of the map as the account names it: the source file of an object; the C
    runtime's objects, where the linker puts the tables it makes (dynamic symbols, relocations,
    the unwind index), as one; LTO's partitions as one."""
    if re.match(r"crt[a-zA-Z]*\.o$", name):
        return "linker-made tables and C runtime"
    if ".ltrans" in name:
        return "LTO partitions (configure with -DCMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF for a map by source)"
    return name.removesuffix(".o")


def map_contributors(map_file: Path, top: int = 8) -> list[tuple[str, int]]:
    """The `top` input files that put the most bytes in `map_file`'s binary, from its GNU ld map."""
    text = map_file.read_text(encoding="utf-8", errors="replace")
    text = text.split("Linker script and memory map", 1)[-1]
    sizes: Counter[str] = Counter()
    shipped = False
    for line in text.splitlines():
        out = _OUTPUT.match(line)
        if out:
            shipped = not out.group(1).startswith(_NOT_SHIPPED)
            continue
        m = _INPUT.match(line)
        if not m or not shipped:
            continue
        name = m.group(2).strip()
        name = name.rsplit("(", 1)[-1].rstrip(")") if name.endswith(")") else Path(name).name
        sizes[_source(name)] += int(m.group(1), 16)
    return sizes.most_common(top)


# What a section of a shared library holds, for the account.
_GROUPS = (("code", (".text", ".plt", ".init", ".fini")), ("read-only data", (".rodata",)),
           ("unwind and exception tables", (".eh_frame", ".gcc_except_table")),
           ("dynamic linking", (".dyn", ".rela", ".gnu", ".got", ".hash")))


def section_groups(path: Path, size_tool: str) -> list[tuple[str, int]]:
    """The allocated bytes of `path` by kind of section (binutils' `size -A`), largest first."""
    out = subprocess.run([size_tool, "-A", str(path)], check=True, capture_output=True, text=True).stdout
    groups: Counter[str] = Counter()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 3 or not parts[0].startswith(".") or parts[0] in (".bss", ".tbss", ".comment"):
            continue
        group = next((g for g, prefixes in _GROUPS if parts[0].startswith(prefixes)), "other data")
        groups[group] += int(parts[1])
    return groups.most_common()


def _kb(n: int) -> str:
    return f"{n / KB:.0f} KB"


def _arch_rows(arch: str, lines: list[str], accounts: list[str]) -> None:
    folder, sdk, strip, target = BUILDS[arch]
    if not folder.is_dir() or shutil.which(strip) is None:
        lines.append(f"| {arch} | not measured: run `make {target}` | | | | |")
        return
    et = stripped_size(sdk / "executorch" / "lib" / "libexecutorch.so", strip)
    lines.append(f"| {arch} | libexecutorch.so (ExecuTorch's runtime, for scale) | {_kb(et)} | 1.00x | | |")
    for row, name, limit in BINARIES:
        path = folder / name
        if not path.exists():
            lines.append(f"| {arch} | {row} | not built: run `make {target}` | | | |")
            continue
        size = stripped_size(path, strip)
        want = f"<= {limit} KB" if limit is not None and arch == "aarch64" else ""
        met = verdict(size <= limit * KB, f"{_kb(size - limit * KB)} over") if want and limit is not None else ""
        lines.append(f"| {arch} | {row} | {_kb(size)} | {size / et:.2f}x | {want} | {met} |")
        if limit is None:
            continue
        parts = ", ".join(f"{n} {_kb(b)}" for n, b in section_groups(path, strip.replace("strip", "size")))
        accounts.append(f"- {arch} {name}, by section: {parts}")
        map_file = Path(f"{path.resolve()}.map")
        by_source = [(n, b) for n, b in map_contributors(map_file) if b >= KB] if map_file.exists() else []
        if by_source and not by_source[0][0].startswith("LTO"):
            parts = ", ".join(f"{n} {_kb(b)}" for n, b in by_source)
            accounts.append(f"- {arch} {name}, largest contributors (linker map, allocated bytes): {parts}")


def measure(ctx: Context) -> Section:
    del ctx  # nothing is run: the sizes are read from the size builds
    lines = ["| arch | binary | stripped | ratio to libexecutorch.so | target | verdict |",
             "|---|---|---|---|---|---|"]
    accounts: list[str] = []
    for arch in BUILDS:
        _arch_rows(arch, lines, accounts)
    return Section(
        "Size build",
        ("Stripped sizes of the size build (`make loader-size`, `make loader-size-aarch64`: MinSizeRel, "
         "sections collected, stripped, signatures off, libfatpte.so exporting its C API alone), beside "
         "ExecuTorch's libexecutorch.so of the same SDK. KB = 1000 bytes."),
        lines=lines + ([""] + accounts if accounts else []),
    )
