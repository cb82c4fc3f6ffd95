"""Hostile input, second round (issue 15): one regression test per class of the attack, with the
observed input's shape at a few small sizes (tests/support/hostile.py builds them), asserting the bound
by counted work (lines of fatpte executed, tests/work.py) or measured peak memory, never by time;
and, where the C++ loader reads the same input, that it reports the same code, offset and field.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from fatpte.cli.main import main
from fatpte.container.reader import Container
from fatpte.container.validation import validate_buffer
from fatpte.device.profile import DeviceProfile
from fatpte.device.selection import select
from fatpte.errors import MAX_FINDINGS_PER_CODE, ErrorCode, FatpteError, SelectionError
from fatpte.manifest.model import work_budget
from fatpte.ops.diff import compare
from fatpte.ops.info import summary
from tests.builds import loader_build
from tests.paths import ROOT
from tests.support import hostile
from tests.work import executed_lines, growth, peak_allocation

DEVICE = "x86-64-v3"


def loader_tool(name: str) -> Path:
    return loader_build("release", name) / name


def python_line(data: bytes) -> str:
    f = validate_buffer(data).first_error
    return "OK" if f is None else f"{f.code.tag} {f.offset} {f.field}"


def loader_lines(tmp: Path, files: list[bytes]) -> list[str]:
    paths = []
    for i, data in enumerate(files):
        paths.append(tmp / f"f{i}.nfat")
        paths[-1].write_bytes(data)
    proc = subprocess.run([str(loader_tool("fatpte-validate")), *map(str, paths)], capture_output=True, text=True,
                          timeout=300, check=False)
    return proc.stdout.splitlines()


def linear(values: list[int], factor: float) -> bool:
    """Each value at most `factor` times the one before it, with 25 % for fixed costs."""
    return all(g <= factor * 1.25 for g in growth(values))


# ---------------------------------------------------------------------------------------------
# 1. Amplification through shared references
# ---------------------------------------------------------------------------------------------

SIZES = (1000, 4000, 16000)


def test_one_key_referenced_many_times_is_over_budget_in_both(tmp_path: Path) -> None:
    """`a 4 MB container that names one 4 KiB key 1,000,000 times`, at 1000, 4000 and 16000
    references: E0420 from both readers at the same reference, after work bounded by the file."""
    files = [hostile.shared_key(refs, 4096) for refs in SIZES]
    want = [python_line(d) for d in files]
    assert all(w.startswith(ErrorCode.MANIFEST_OVER_BUDGET.tag) for w in want), want
    assert loader_lines(tmp_path, files) == [w.replace(" None", " -") for w in want]
    for data in files:
        # The reader stops where the expanded size passes 16 bytes per byte + 1 MiB: it never
        # decodes more than the buffer's distinct objects, nor more lines than a few per byte.
        assert executed_lines(lambda d=data: validate_buffer(d)) < 40 * len(data) + 20_000
        assert peak_allocation(lambda d=data: validate_buffer(d)) < 2 * len(data) + (1 << 20)


def test_a_missing_key_referenced_many_times_gives_a_capped_report(tmp_path: Path) -> None:
    """The same shape within the budget, the key undefined: one E0413 per reference, of which
    validate keeps 100 and counts the rest; every message quotes the key cut short."""
    reports, lines, sizes = [], [], []
    for refs in (400, 1600, 6400):
        data = hostile.shared_key(refs, 150, missing=True)
        sizes.append(len(data))
        report = validate_buffer(data)
        reports.append(report)
        lines.append(executed_lines(lambda d=data: validate_buffer(d)))
        assert [f.code for f in report.errors] == [ErrorCode.NAMED_DATA_KEY_MISSING] * MAX_FINDINGS_PER_CODE
        assert dict(report.omitted) == {ErrorCode.NAMED_DATA_KEY_MISSING: refs - MAX_FINDINGS_PER_CODE}
        assert sum(len(f.message) for f in report.findings) < MAX_FINDINGS_PER_CODE * 400
    assert linear(lines, 4), lines
    assert loader_lines(tmp_path, [hostile.shared_key(400, 150, missing=True)]) == [
        python_line(hostile.shared_key(400, 150, missing=True))]
    result = CliRunner().invoke(main, ["validate", str(_write(tmp_path, "m.nfat", hostile.shared_key(400, 150,
                                                                                                    missing=True)))])
    assert result.exit_code == 1
    assert "... and 300 more E0413 findings (not listed)" in result.stdout
    assert "checked 1 file: 0 valid, 1 invalid; 400 errors, 0 warnings" in result.stdout


def _write(tmp: Path, name: str, data: bytes) -> Path:
    path = tmp / name
    path.write_bytes(data)
    return path


def test_requirement_strings_that_share_one_long_word(tmp_path: Path) -> None:
    """`1,000 references to one 1 MiB string` as requirements, scaled: over the budget both
    readers refuse to select (E0420, same reference); within it, the explanation quotes the
    needed features cut short while --json keeps them exact."""
    device = DeviceProfile.load(DEVICE)
    over = hostile.shared_requirement(1000, 64 << 10)
    with Container.from_buffer(over) as c, pytest.raises(FatpteError) as info:
        select(c, device)
    assert info.value.code is ErrorCode.MANIFEST_OVER_BUDGET
    path = _write(tmp_path, "over.nfat", over)
    profile = ROOT / "specs" / "devices" / f"{DEVICE}.json"
    proc = subprocess.run([str(loader_tool("fatpte-run")), str(path), "--select-only", "--device", str(profile)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1
    assert f"{info.value.code.tag} at {info.value.offset:#x} ({info.value.field})" in proc.stderr

    within = hostile.shared_requirement(8, 64 << 10, entries=3)
    assert 3 * 8 * (64 << 10) < work_budget(len(within))
    with Container.from_buffer(within) as c, pytest.raises(SelectionError) as no_fit:
        select(c, device)
    assert len(no_fit.value.message) < 3 * 2 * 1200 + 1000  # each entry: two clipped texts at most
    needed = no_fit.value.report["verdicts"][0]["failures"][0]["needed"] if no_fit.value.report else ""
    assert needed == ", ".join(["f" * (64 << 10)] * 8)  # JSON stays exact


# ---------------------------------------------------------------------------------------------
# 3. Linear in the number of entries
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shared_payloads() -> list[bytes]:
    return [hostile.shared_payload(n) for n in (256, 1024, 4096)]


def test_entries_sharing_one_payload_cost_linear_work(shared_payloads: list[bytes], tmp_path: Path) -> None:
    """N entries sharing one payload: select, info (summary and text), diff, coverage and thin's
    planning run a number of lines linear in N; info's sharing column stays bounded per entry."""
    from fatpte.cli.render import info_text
    from fatpte.ops.coverage import coverage
    from fatpte.ops.thinning import thinned_size

    device = DeviceProfile.load(DEVICE)
    work: dict[str, list[int]] = {"select": [], "info": [], "diff": [], "thin": [], "exclude": [], "coverage": []}
    text_sizes, json_sizes = [], []
    for data in shared_payloads:
        path = _write(tmp_path, f"{len(data)}.nfat", data)
        work["coverage"].append(executed_lines(lambda p=path: coverage(p, [device, DeviceProfile.load("jetson-orin")])))
        with Container.from_buffer(data) as c:
            names = [e.name for e in c.entries]
            work["select"].append(executed_lines(lambda c=c: select(c, device)))
            work["exclude"].append(executed_lines(lambda c=c, n=names: select(c, device, exclude=n[1:])))
            work["info"].append(executed_lines(lambda c=c: info_text(summary(c))))
            work["diff"].append(executed_lines(lambda c=c: compare(c, c)))
            work["thin"].append(executed_lines(lambda c=c, n=names: thinned_size(c, n[: len(n) // 2])))
            info = summary(c)
            text_sizes.append(len(info_text(info)))
            json_sizes.append(len(json.dumps(info)))
            assert info["entries"][0]["shared_count"] == len(names) - 1
            assert len(info["entries"][0]["shared_with"]) == 8
    for op, lines in work.items():
        assert linear(lines, 4), f"{op}: {lines}"
    assert linear(text_sizes, 4) and linear(json_sizes, 4), (text_sizes, json_sizes)


# ---------------------------------------------------------------------------------------------
# 6. Nothing from a file reaches the terminal unescaped
# ---------------------------------------------------------------------------------------------

# Version 1 backend ids may hold any byte from 0x01 to 0x7f: ESC sequences, newlines, DEL.
HOSTILE_IDS = ("\x1b[31mred\x1b[0m", "forged\nfatpte: OK", "del\x7f", "bell\x07")


@pytest.fixture
def hostile_v1(tmp_path: Path) -> Path:
    import fatpte

    return fatpte.pack([fatpte.Specialization(i, i.encode() * 3) for i in HOSTILE_IDS], tmp_path / "v1.nfat",
                       version=1)


def _clean(text: str) -> bool:
    return not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", text)


@pytest.mark.parametrize("args", [
    ["info", "{f}"], ["info", "--map", "{f}"], ["select", "{f}", "--device", DEVICE, "--explain"],
    ["select", "{f}", "--device", DEVICE, "--exclude", ",".join(HOSTILE_IDS[:2])],
    ["validate", "{f}"], ["diff", "{f}", "{f}"], ["coverage", "{f}", "--devices", DEVICE],
    ["extract", "{f}", "--name", "nope", "-o", "{d}/out.bin"],
    ["thin", "{f}", "--name", HOSTILE_IDS[1], "-o", "{d}/thin.nfat"],
])
def test_text_output_escapes_every_string_from_the_file(args: list[str], hostile_v1: Path) -> None:
    argv = [a.format(f=hostile_v1, d=hostile_v1.parent) for a in args]
    result = CliRunner().invoke(main, argv)
    out = result.stdout + result.stderr
    assert _clean(out), repr(out)
    assert "\nfatpte: OK" not in out  # no forged line
    assert "\\x" in out or args[0] in ("validate", "diff"), out  # the file's names were shown, escaped


def test_json_output_stays_exact(hostile_v1: Path) -> None:
    data = json.loads(CliRunner().invoke(main, ["info", "--json", str(hostile_v1)]).stdout)
    assert [e["name"] for e in data["entries"]] == list(HOSTILE_IDS)
    chosen = json.loads(CliRunner().invoke(main, ["select", str(hostile_v1), "--device", DEVICE, "--json"]).stdout)
    assert chosen["chosen"] == HOSTILE_IDS[0]


def test_a_program_whose_operators_are_one_long_named_operator(tmp_path: Path) -> None:
    """`a 1 MB .pte whose 2,000 operators reference one operator with a 1 MiB name`, at 500, 2000
    and 8000 references to a 16 KiB name: E1005 (the text budget) after bounded work, from the
    library and from `fatpte info` (exit 1, no traceback); within the budget, the text view cuts
    the long name while --json keeps it."""
    from fatpte.executorch import describe

    for refs in (500, 2000, 8000):
        data = hostile.pte_shared_operator(refs, 16 << 10)
        with pytest.raises(FatpteError) as info:
            describe(data)
        assert info.value.code is ErrorCode.ET_FLATBUFFER_TOO_COMPLEX
        assert executed_lines(lambda d=data: describe(d)) < 40 * len(data) + 20_000
        assert peak_allocation(lambda d=data: describe(d)) < 4 * len(data) + (2 << 20)
    path = _write(tmp_path, "op.pte", hostile.pte_shared_operator(2000, 16 << 10))
    result = CliRunner().invoke(main, ["info", str(path)])
    assert result.exit_code == 1 and "E1005" in result.stderr and "Traceback" not in result.output

    small = _write(tmp_path, "small.pte", hostile.pte_shared_operator(50, 2000))
    text = CliRunner().invoke(main, ["info", str(small)]).stdout
    assert "o" * 1024 + "...(2000 bytes)" in text and "o" * 1025 not in text
    as_json = json.loads(CliRunner().invoke(main, ["info", "--json", str(small)]).stdout)
    assert as_json["methods"][0]["operators"] == ["o" * 2000] * 50


def test_running_out_of_memory_is_an_error_not_a_traceback(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The budgets keep reading within a constant times the file; should the machine run out all the
    same, both command-line routes print E0801 and exit 4, as the C++ loader does."""
    from fatpte.cli import commands, launch

    def exhausted(**_: object) -> int:
        raise MemoryError

    path = _write(tmp_path, "c.nfat", hostile.shared_payload(2))
    monkeypatch.setattr(commands, "info", exhausted)
    result = CliRunner().invoke(main, ["info", str(path)])
    assert result.exit_code == 4 and "E0801" in result.stderr and "out of memory" in result.stderr
    assert launch.run(["info", str(path)]) == 4


# ---------------------------------------------------------------------------------------------
# 7. Signals and odd files
# ---------------------------------------------------------------------------------------------

_KILLED_MID_WRITE = """
import os, signal, sys
sys.path.insert(0, {root!r})
import fatpte.ops.packing as packing
from fatpte.cli import launch

real = packing._write

def write(out, layout, progress):
    out.write(b"half a container")
    out.flush()
    os.kill(os.getpid(), signal.{sig})  # as `kill` from another shell, in the middle of the copy
    real(out, layout, progress)

packing._write = write
sys.exit(launch.main(["pack", "-q", "-o", {out!r}, "cpu=" + {payload!r}]))
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_during_a_write_leaves_no_temporary_file(tmp_path: Path, sig: str) -> None:
    import signal
    import sys

    payload = _write(tmp_path, "payload.bin", b"p" * 4096)
    out = tmp_path / "out" / "model.nfat"
    out.parent.mkdir()
    code = _KILLED_MID_WRITE.format(root=str(ROOT), sig=sig, out=str(out), payload=str(payload))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert list(out.parent.iterdir()) == [], proc.stderr
    if sig == "SIGINT":
        assert proc.returncode == 1 and "Aborted!" in proc.stderr  # what click does on ^C
    else:
        assert proc.returncode == -getattr(signal, sig), proc.stderr  # ended by the signal itself


def test_a_new_write_removes_the_temporaries_a_killed_writer_left(tmp_path: Path) -> None:
    import os

    from fatpte.fileio.atomic import atomic_output

    gone = tmp_path / ".m.nfat.p999999999.0123456789ab.partial"  # no such process
    alive = tmp_path / f".m.nfat.p{os.getppid()}.0123456789ab.partial"  # its writer still runs
    young = tmp_path / ".m.nfat.p999999998.0123456789ab.partial"  # newer than this process
    other = tmp_path / ".n.nfat.p999999999.0123456789ab.partial"  # another destination's
    for path in (gone, alive, young, other):
        path.write_bytes(b"left over")
    for path in (gone, alive, other):
        os.utime(path, (1, 1))
    with atomic_output(tmp_path / "m.nfat") as out:
        out.write(b"x")
    assert not gone.exists() and alive.exists() and young.exists() and other.exists()


@pytest.mark.parametrize("kind", ["fifo", "dev-null", "dev-zero", "directory"])
def test_inputs_that_are_not_regular_files_are_refused_at_once_in_both(tmp_path: Path, kind: str) -> None:
    """validate, info and select (and fatpte-validate) refuse a FIFO, a device or a directory with
    E0811 before reading a byte: a FIFO without a writer never blocks them."""
    import os

    if kind == "fifo":
        path = tmp_path / "model.nfat"
        os.mkfifo(path)
    elif kind == "directory":
        path = tmp_path / "model.nfat"
        path.mkdir()
    else:
        path = Path("/dev/null" if kind == "dev-null" else "/dev/zero")
    commands = [["info", str(path)], ["select", str(path), "--device", DEVICE]]
    if kind != "directory":  # validate walks a directory for containers (docs/cli.md)
        commands.append(["validate", str(path)])
    for args in commands:
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 4 and "E0811" in result.stderr, (args, result.output)
    proc = subprocess.run([str(loader_tool("fatpte-validate")), str(path)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.stdout.split() == ["E0811", "-", "-"]


def test_a_payload_whose_size_is_not_its_content_is_refused(tmp_path: Path) -> None:
    """/proc/self/status reports 0 bytes and has content; packing it stored an empty payload."""
    import fatpte

    with pytest.raises(FatpteError) as info:
        fatpte.pack([fatpte.Specialization("cpu", "/proc/self/status")], tmp_path / "o.nfat")
    assert info.value.code is ErrorCode.IO_ERROR and "size of 0" in info.value.message
    assert not list(tmp_path.iterdir())


def test_a_payload_that_grows_while_it_is_copied_is_an_error(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import fatpte
    from fatpte.ops import packing

    payload = _write(tmp_path, "p.bin", b"p" * 100_000)
    real = packing.copy_range_crc

    def growing(*args: object, **kwargs: object) -> int:
        with payload.open("ab") as f:  # another process appends while the copy runs
            f.write(b"more")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(packing, "copy_range_crc", growing)
    with pytest.raises(FatpteError) as info:
        fatpte.pack([fatpte.Specialization("cpu", payload)], tmp_path / "o.nfat")
    assert info.value.code is ErrorCode.IO_ERROR and "changed size" in info.value.message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.bin"]


@pytest.mark.parametrize("reader", ["validate", "open", "manifest", "describe", "profile"])
def test_the_library_turns_memory_exhaustion_into_e0801(reader: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only FatpteError leaves a reader, a MemoryError included (the budgets should make it
    impossible; a machine with little memory can still run out)."""
    import importlib

    from fatpte.container import reader as container_reader
    from fatpte.container import validation
    from fatpte.device import profile
    from fatpte.fileio import strict_json
    from fatpte.manifest import codec

    describing = importlib.import_module("fatpte.executorch.describe")  # the package exports the function

    def exhausted(*_: object, **__: object) -> None:
        raise MemoryError

    data = hostile.shared_key(4, 8)
    calls = {
        "validate": (validation, "read_structure", lambda: validation.validate_buffer(data)),
        "open": (container_reader, "read_structure", lambda: Container.from_buffer(data)),
        "manifest": (codec, "_build", lambda: codec.decode(b"\x10\0\0\0NFMF" + bytes(64))),
        "describe": (describing, "_describe", lambda: describing.describe(hostile.pte_shared_operator(2, 4))),
        "profile": (strict_json, "measure", lambda: profile.parse_json(b"{}")),
    }
    module, name, call = calls[reader]
    monkeypatch.setattr(module, name, exhausted)
    with pytest.raises(FatpteError) as info:
        call()
    assert info.value.code is ErrorCode.IO_ERROR and "out of memory" in info.value.message
