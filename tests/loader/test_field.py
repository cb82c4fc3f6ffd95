"""Safe in the field (issue 38, points 1 and 3): with the test backend that fails on purpose
(loader/backends/faulty.cpp, tests/support/faulty.py) preferred and the fixture's portable program
after it, the application (fatpte-run, through the C API) survives a SIGSEGV or a SIGILL in the
backend's init, an execute error, NaN outputs (opt-in) and a hang (a deadline), and serves the
next entry with the reason: by isolated qualification (--isolate: a child process runs the entry
first) and by fallback after load (the call retried once on the next entry, loaded from its own
program). The GoogleTests of the child process and of ContainerModule's fallback
(loader/tests/field_test.cpp) run on the containers written here."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from fatpte.device.run_report import outside
from tests.scripts import load_script
from tests.support import faulty

pytestmark = pytest.mark.loader_build("fatpte-run", f"{faulty.FOLDER}/{faulty.LIBRARY}", sdk=True, only="release")


def _example() -> ModuleType:
    return load_script("loader/examples/executorch_example.py")


def _run(build: Path, container: Path, calls: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(build / "fatpte-run"), str(container), "--inputs", str(calls), "--json",
                           "--backend-lib", f"{faulty.BACKEND_ID}={faulty.library(build)}", *args],
                          capture_output=True, text=True, timeout=timeout, check=False)


def _report(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(proc.stdout)
    assert outside(doc) is None, outside(doc)
    return doc


def _outputs(doc: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [c["outputs"] for c in doc["calls"]]


def _attempt(doc: dict[str, Any], entry: str) -> str:
    (line,) = [line for line in doc["dispatch"] if line.startswith(f"dispatch: {entry} [")]
    return str(line)


def _calls(tmp: Path, model: str) -> Path:
    return Path(_example().write_calls(model, tmp / f"{model}.calls.json"))


# ---- isolated qualification ----

@pytest.mark.parametrize(("mode", "signal"), [("segv_init", "SIGSEGV"), ("sigill_init", "SIGILL")])
def test_isolation_survives_a_crash_in_init(build: Path, tmp_path: Path, mode: str, signal: str) -> None:
    container = faulty.container(tmp_path / "c.nfat", "add", [mode])
    proc = _run(build, container, _calls(tmp_path, "add"), "--isolate")
    assert proc.returncode == 0, proc.stderr
    doc = _report(proc)
    assert doc["chosen"] == "cpu"
    assert f"isolated qualification: crashed ({signal}) in a child process" in _attempt(doc, "faulty0")
    assert "isolated qualification: passed" in "\n".join(doc["dispatch"])
    ex = _example()
    assert ex.mismatches(_outputs(doc), ex.recorded_outputs("add")) == []


def test_isolation_demotes_an_entry_whose_call_fails(build: Path, tmp_path: Path) -> None:
    """No golden calls: the child runs the first call of --inputs, which fails (exit 2)."""
    container = faulty.container(tmp_path / "c.nfat", "add", ["execute_error"])
    proc = _run(build, container, _calls(tmp_path, "add"), "--isolate")
    assert proc.returncode == 0, proc.stderr
    doc = _report(proc)
    assert doc["chosen"] == "cpu" and doc["fallbacks"] == []
    assert "isolated qualification: failed in a child process: exit 2" in _attempt(doc, "faulty0")


def test_isolation_runs_the_golden_calls(build: Path, tmp_path: Path) -> None:
    """With golden calls, the child self-tests: NaN outputs disagree with them (exit 3)."""
    calls = _calls(tmp_path, "add")
    container = faulty.container(tmp_path / "c.nfat", "add", ["nan", "good"], golden=calls)
    proc = _run(build, container, calls, "--isolate")
    assert proc.returncode == 0, proc.stderr
    doc = _report(proc)
    assert doc["chosen"] == "faulty1"
    assert "failed in a child process: exit 3" in _attempt(doc, "faulty0")
    assert "E1401" in _attempt(doc, "faulty0")


def test_isolation_kills_a_hung_child_at_its_timeout(build: Path, tmp_path: Path) -> None:
    container = faulty.container(tmp_path / "c.nfat", "add", ["hang"])
    proc = _run(build, container, _calls(tmp_path, "add"), "--isolate", "--isolate-timeout", "1500")
    assert proc.returncode == 0, proc.stderr
    doc = _report(proc)
    assert doc["chosen"] == "cpu"
    assert "timed out: the child ran past 1500 ms and was killed" in _attempt(doc, "faulty0")


def test_isolation_keeps_a_good_entry(build: Path, tmp_path: Path) -> None:
    container = faulty.container(tmp_path / "c.nfat", "add", ["good"])
    proc = _run(build, container, _calls(tmp_path, "add"), "--isolate")
    assert proc.returncode == 0, proc.stderr
    doc = _report(proc)
    assert doc["chosen"] == "faulty0"
    assert any(line.startswith("isolated qualification: passed") for line in doc["dispatch"])


def test_isolation_flags_go_together(build: Path, tmp_path: Path) -> None:
    container = faulty.container(tmp_path / "c.nfat", "add", ["good"])
    proc = _run(build, container, _calls(tmp_path, "add"), "--isolate-timeout", "10")
    assert proc.returncode == 2 and "go with --isolate" in proc.stderr
    proc = _run(build, container, _calls(tmp_path, "add"), "--isolate", "--isolate-timeout", "0")
    assert proc.returncode == 2 and "--isolate-timeout takes a number of milliseconds" in proc.stderr


# ---- fallback after load ----

def _alone(build: Path, container: Path, calls: Path) -> list[list[dict[str, Any]]]:
    """The outputs of the portable entry run alone."""
    proc = _run(build, container, calls, "--entry", "cpu")
    assert proc.returncode == 0, proc.stderr
    return _outputs(_report(proc))


def _one_fallback(doc: dict[str, Any], call: int, reason: str) -> dict[str, Any]:
    (event,) = doc["fallbacks"]
    assert (event["call"], event["from"], event["to"], event["reason"]) == (call, "faulty0", "cpu", reason), event
    return dict(event)


@pytest.mark.parametrize("model", ["add", "buffer"])
def test_an_execute_error_on_the_first_call_falls_back(build: Path, tmp_path: Path, model: str) -> None:
    """The call's outputs (and the next calls') equal the portable entry's alone: the buffer
    program's state starts from the portable program's own."""
    container = faulty.container(tmp_path / "c.nfat", model, ["execute_error"])
    calls = _calls(tmp_path, model)
    proc = _run(build, container, calls)
    assert proc.returncode == 0, proc.stderr
    doc = _report(proc)
    event = _one_fallback(doc, 0, "execute_error")
    assert "E0702" in event["detail"]
    assert doc["chosen"] == "cpu" and doc["backend_id"] == "portable"
    assert _outputs(doc) == _alone(build, container, calls)
    assert any("state initialised" in line for line in doc["dispatch"])


def test_a_failure_after_good_calls_retries_that_call(build: Path, tmp_path: Path) -> None:
    container = faulty.container(tmp_path / "c.nfat", "add", [("execute_error", 1)])
    calls = _calls(tmp_path, "add")
    proc = _run(build, container, calls)
    assert proc.returncode == 0, proc.stderr
    doc = _report(proc)
    _one_fallback(doc, 1, "execute_error")
    ex = _example()
    assert ex.mismatches(_outputs(doc), ex.recorded_outputs("add")) == []


def test_text_output_says_what_fell_back(build: Path, tmp_path: Path) -> None:
    container = faulty.container(tmp_path / "c.nfat", "add", ["execute_error"])
    proc = subprocess.run([str(build / "fatpte-run"), str(container), "--inputs", str(_calls(tmp_path, "add")),
                           "--backend-lib", f"{faulty.BACKEND_ID}={faulty.library(build)}"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "ran: faulty0 [faulty]"
    assert lines[1].startswith("fallback: call 0: faulty0 failed (execute_error): ")
    assert lines[1].endswith("; retried once on cpu [portable], its state initialised from its program")


def test_no_fallback_keeps_the_error(build: Path, tmp_path: Path) -> None:
    container = faulty.container(tmp_path / "c.nfat", "add", ["execute_error"])
    proc = _run(build, container, _calls(tmp_path, "add"), "--no-fallback")
    assert proc.returncode == 2
    doc = _report(proc)
    assert doc["fallbacks"] == [] and doc["error"]["code"] == "E0702"


def test_when_no_entry_remains_the_call_fails_with_the_event(build: Path, tmp_path: Path) -> None:
    container = faulty.container(tmp_path / "c.nfat", "add", ["execute_error"], portable_last=False)
    proc = _run(build, container, _calls(tmp_path, "add"))
    assert proc.returncode == 2, proc.stderr
    doc = _report(proc)
    (event,) = doc["fallbacks"]
    assert event["to"] is None and event["reason"] == "execute_error"
    assert "no eligible entry remained" in doc["error"]["message"]


def test_non_finite_outputs_fall_back_when_asked(build: Path, tmp_path: Path) -> None:
    container = faulty.container(tmp_path / "c.nfat", "add", ["nan"])
    calls = _calls(tmp_path, "add")
    served = _report(_run(build, container, calls))
    assert served["fallbacks"] == [] and math.isnan(served["calls"][0]["outputs"][0]["values"][0])
    proc = _run(build, container, calls, "--check-finite")
    assert proc.returncode == 0, proc.stderr
    doc = _report(proc)
    event = _one_fallback(doc, 0, "non_finite_output")
    assert event["detail"] == "output 0 holds NaN at element 0"
    assert _outputs(doc) == _alone(build, container, calls)


def test_non_finite_outputs_without_fallback_fail_the_call(build: Path, tmp_path: Path) -> None:
    container = faulty.container(tmp_path / "c.nfat", "add", ["nan"])
    proc = _run(build, container, _calls(tmp_path, "add"), "--check-finite", "--no-fallback")
    assert proc.returncode == 2
    doc = _report(proc)
    assert doc["fallbacks"] == [] and doc["calls"] == []
    assert "output 0 holds NaN at element 0 (non-finite outputs are refused)" in doc["error"]["message"]


def test_a_hung_call_falls_back_at_its_deadline(build: Path, tmp_path: Path) -> None:
    container = faulty.container(tmp_path / "c.nfat", "add", ["hang"])
    calls = _calls(tmp_path, "add")
    proc = _run(build, container, calls, "--call-deadline", "1000")
    assert proc.returncode == 0, proc.stderr
    doc = _report(proc)
    event = _one_fallback(doc, 0, "deadline")
    assert "1000 ms" in event["detail"]
    assert _outputs(doc) == _alone(build, container, calls)


# ---- ContainerModule and the child process (GoogleTest) ----

@pytest.mark.loader_build("fatpte_tests", f"{faulty.FOLDER}/{faulty.LIBRARY}", sdk=True, only="release")
def test_container_module_falls_back_too(build: Path, tmp_path: Path) -> None:
    faulty.container(tmp_path / "add_execute_error.nfat", "add", ["execute_error"])
    faulty.container(tmp_path / "add_nan.nfat", "add", ["nan"])
    faulty.container(tmp_path / "buffer_execute_error.nfat", "buffer", ["execute_error"])
    faulty.container(tmp_path / "buffer_portable.nfat", "buffer", [])
    proc = subprocess.run([str(build / "fatpte_tests"),
                           "--gtest_filter=ModuleFallback.*:IsolatedChild.*:FallbackAfterLoad.*"],
                          env={**os.environ, "FATPTE_FIELD_CONTAINERS": str(tmp_path)},
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "SKIPPED" not in proc.stdout and "[  PASSED  ] 11 tests" in proc.stdout, proc.stdout[-4000:]


# ---- an installed libfatpte finds its qualifier in ../bin ----

_C_API = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
class Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("offset", ctypes.c_uint64), ("field", ctypes.c_char * 96),
                ("message", ctypes.c_char * 512)]
err = Error()
c, o, loaded, report = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
assert lib.fatpte_open_file(sys.argv[2].encode(), ctypes.byref(c), ctypes.byref(err)) == 0, err.message
lib.fatpte_load_options_new(ctypes.byref(o))
lib.fatpte_load_options_set_library(o, b"FaultyBackend", sys.argv[3].encode())
lib.fatpte_load_options_set_isolate(o, 1, ctypes.c_uint32(0))
st = lib.fatpte_load_for(c, None, None, ctypes.c_size_t(0), None, ctypes.c_size_t(0), o, ctypes.byref(loaded),
                         ctypes.byref(report), ctypes.byref(err))
assert st == 0, err.message
index, outcome = ctypes.c_uint32(), ctypes.c_char_p()
lib.fatpte_loaded_entry(loaded, ctypes.byref(index))
lib.fatpte_load_report_attempt(report, ctypes.c_size_t(0), ctypes.byref(ctypes.c_uint32()), ctypes.byref(outcome))
print(index.value)
print(outcome.value.decode())
"""


@pytest.mark.loader_build("fatpte-run", "libfatpte.so", f"{faulty.FOLDER}/{faulty.LIBRARY}", sdk=True, only="release")
def test_an_installed_library_qualifies_through_its_fatpte_run(build: Path, tmp_path: Path) -> None:
    """An application that links libfatpte.so from an install's lib/ (here Python, through the C
    API) survives a SIGSEGV in a backend's init: the child is the install's bin/fatpte-run."""
    import sys

    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", str(build), "--prefix", str(prefix)], check=True, capture_output=True)
    (library,) = [p for p in prefix.glob("lib*/libfatpte.so") if p.is_file() or p.is_symlink()]
    container = faulty.container(tmp_path / "c.nfat", "add", ["segv_init"])
    done = subprocess.run([sys.executable, "-c", _C_API, str(library), str(container), str(faulty.library(build))],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    index, outcome = done.stdout.splitlines()
    assert index == "1"  # cpu, the portable entry
    assert outcome.startswith("isolated qualification: crashed (SIGSEGV) in a child process"), outcome


# ---- the fat delegate's option ----

@pytest.mark.loader_build("et_module_runner", "libexecutorch_backend_fatpte.so", f"{faulty.FOLDER}/{faulty.LIBRARY}",
                          sdk=True, only="release")
def test_the_fat_delegate_qualifies_nested_programs_in_a_child(build: Path, tmp_path: Path) -> None:
    """A fat delegate holding [a nested program whose backend faults in init, the portable one]: an
    ExecuTorch application (et_module_runner) dies of it, unless the fat delegate's `isolate`
    option qualifies the nested programs in a child process first; then the portable one serves."""
    from tests.loader.test_fat_delegate_runtime import KERNELS, call_files, module_run, parsed

    nested = faulty.container(tmp_path / "nested.nfat", "add", ["segv_init"])
    program = faulty.fat_program(tmp_path / "fat.pte", nested)
    calls = call_files("add", tmp_path)
    libs = (KERNELS, faulty.library(build))
    unprotected = module_run(build, program, libs=libs, calls=calls)
    assert unprotected.returncode == -11, unprotected.stderr[-2000:]
    done = module_run(build, program, "--option", "FatpteBackend:isolate=1", libs=libs, calls=calls)
    assert done.returncode == 0, done.stderr[-2000:]
    ex = _example()
    assert ex.mismatches(parsed(done.stdout), ex.recorded_outputs("add")) == []
    assert "isolated qualification: crashed (SIGSEGV) in a child process" in done.stderr
    assert "isolated qualification: passed" in done.stderr
