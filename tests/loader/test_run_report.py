"""The report of `fatpte-run --json` (specs/run-report.md, specs/run_report.schema.json), both
halves held to its schema: fatpte-run's real reports on fixtures validate against the schema,
whatever ends the run, each error with its code as a field; and Python's one reader of it
(fatpte.device.fatpte_run.read_report) takes exactly what the schema takes, refusing (E0702) a document
outside it.

Release build only (a missing build is skipped with the reason; `make test` builds it first).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from fatpte.cli.exit_codes import exit_code
from fatpte.device.fatpte_run import Runtime, read_report, report_from_json
from fatpte.errors import ErrorCode, FatpteError
from tests.builds import missing_build
from tests.paths import ROOT

SCHEMA = json.loads((ROOT / "specs" / "run_report.schema.json").read_text())
BUILD = ROOT / "build" / "loader"
SDK_LIB = ROOT / "build" / "executorch-sdk" / "executorch" / "lib"
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
CALLS = json.loads((FIXTURES / "fixtures.json").read_text())["tiers"]["models"]["mlp"]["calls"]


def _valid(doc: Any) -> bool:
    try:
        jsonschema.validate(doc, SCHEMA)
    except jsonschema.ValidationError:
        return False
    return True


def _held(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """fatpte-run's report, valid by the schema and by Python's reader, its error matching the exit."""
    doc = json.loads(done.stdout)
    jsonschema.validate(doc, SCHEMA)
    report = report_from_json(doc, "fatpte-run", "fatpte-run")
    if done.returncode == 0:
        assert doc["error"] is None
    else:
        assert report.code is not None, doc["error"]
        assert exit_code(FatpteError(report.code, "")) == done.returncode
        assert doc["error"]["code"] in done.stderr or done.returncode == 6
    return doc


@pytest.fixture(scope="module")
def runner() -> Path:
    if not (BUILD / "fatpte-run").exists() or not SDK_LIB.is_dir():
        missing_build("build/loader or the ExecuTorch SDK is not built: run `make loader` (make test builds it)")
    return BUILD / "fatpte-run"


@pytest.fixture(scope="module")
def container(runner: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """mlp's portable and XNNPACK lowerings with golden calls recorded from portable; the calls;
    and the same container with the int8 lowering in the XNNPACK entry (outside its tolerance)."""
    tmp = tmp_path_factory.mktemp("run-report")
    calls = tmp / "calls.json"
    calls.write_text(json.dumps(CALLS))
    out, bad = tmp / "mlp.nfat", tmp / "bad.nfat"
    cli = [sys.executable, "-m", "fatpte", "--runtime", str(runner)]
    done = subprocess.run([*cli, "pack", "-q", "-f", "-o", str(out), f"portable:portable={FIXTURES / 'mlp_portable.pte'}",
                           f"xnnpack:xnnpack={FIXTURES / 'mlp_xnnpack.pte'}", "--golden", str(calls),
                           "--golden-from", "portable"], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([*cli, "replace", str(out), str(FIXTURES / "mlp_xnnpack_int8.pte"), "--name", "xnnpack",
                           "-o", str(bad)], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return out, calls, bad


def _run(runner: Path, *args: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(runner), *map(str, args), "--json"], capture_output=True, text=True, timeout=600,
                          check=False)


def test_every_outcome_of_a_run_is_a_report_of_the_schema(runner: Path, container: tuple[Path, Path, Path],
                                                          tmp_path: Path) -> None:
    nfat, calls, bad = container
    ran = _held(_run(runner, nfat, "--inputs", calls))
    assert ran["chosen"] and len(ran["calls"]) == len(CALLS) and ran["calls"][0]["outputs"][0]["values"]
    saved = tmp_path / "saved"
    saved.mkdir()
    files = _held(_run(runner, nfat, "--inputs", calls, "--save-outputs", saved))
    assert files["calls"][0]["outputs"][0]["file"] == "call-0-output-0.bin"
    golden = _held(_run(runner, nfat, "--golden-report", "--entry", "xnnpack"))
    assert golden["golden"]["passed"] and golden["golden"]["calls"]
    disagrees = _run(runner, bad, "--golden-report", "--entry", "xnnpack")
    assert disagrees.returncode == 6
    assert _held(disagrees)["error"]["code"] == ErrorCode.GOLDEN_MISMATCH.tag
    nowhere = _run(runner, nfat, "--inputs", calls, "--entry", "absent")
    assert _held(nowhere)["error"]["code"] == ErrorCode.ENTRY_NOT_FOUND.tag
    twice = tmp_path / "twice.json"
    twice.write_text('[{"inputs": [], "inputs": []}]')  # a key twice: refused, as Python refuses it
    refused = _held(_run(runner, nfat, "--inputs", twice))
    assert refused["error"]["code"] == ErrorCode.INVALID_ARGUMENT.tag and refused["chosen"] is None
    missing = _held(_run(runner, tmp_path / "absent.nfat", "--inputs", calls))
    assert missing["error"] is not None and missing["chosen"] is None
    none_loads = _run(runner, nfat, "--inputs", calls, "--backend-lib", "kernels=/nonexistent/libk.so",
                      "--backend-lib", "XnnpackBackend=/nonexistent/libx.so")
    assert none_loads.returncode == 3
    assert _held(none_loads)["dispatch"]
    # No entry requires an accelerator: the load looked for no vendor runtime.
    assert ran["vendor_runtimes"] == [] and _held(none_loads)["vendor_runtimes"] == []


def _report() -> dict[str, Any]:
    output = {"key": "fatpte.golden/00", "dtype": "float32", "shape": [1, 2], "max_abs": 0.0, "max_rel": float("nan"),
              "max_want": 1.5, "atol": 1e-5, "rtol": 1e-5, "bound": float("inf"), "passed": True, "problem": None}
    return {"chosen": "portable", "backend_id": "portable", "method": "forward", "dispatch": ["selected portable"],
            "calls": [{"outputs": [{"dtype": "float32", "shape": [2], "values": [1.0, float("nan")]}, None,
                                   {"dtype": "bool", "shape": [1], "file": "call-0-output-2.bin"}]}],
            "golden": {"entry": "portable", "method": "forward", "passed": True, "unsigned_calls": False,
                       "other_method_calls": 0, "calls": [{"index": 0, "method": "forward", "error": None,
                                                           "outputs": [output]}]},
            "fallbacks": [{"call": 0, "from": "xnnpack", "to": "portable", "reason": "execute_error",
                           "detail": "E0702: ExecuTorch could not execute method 'forward'"},
                          {"call": 3, "from": "portable", "to": None, "reason": "deadline", "detail": "past 10 ms"}],
            "error": {"code": "E1401", "message": "1 of 1 golden call passed"},
            "vendor_runtimes": [{"name": "openvino", "found": True, "path": "/venv/libopenvino_c.so.2640",
                                 "step": "virtual_env"},
                                {"name": "later", "found": False, "withheld": None,
                                 "looked": ["the caller's path (none given)", "LATER_LIB_PATH (not set)"]},
                                {"name": "other", "found": False, "looked": [],
                                 "withheld": "withheld by the caller (--vendor-runtime other=)"}]}


def _outside(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Documents one change away from `doc`, each outside the schema."""
    out = []
    for change in (
        lambda d: d.pop("error"),
        lambda d: d.__setitem__("extra", 1),
        lambda d: d.__setitem__("chosen", 3),
        lambda d: d.__setitem__("dispatch", "one line"),
        lambda d: d["error"].__setitem__("code", "0702"),
        lambda d: d["error"].__setitem__("code", "E702"),
        lambda d: d["error"].pop("message"),
        lambda d: d["calls"][0]["outputs"][0].__setitem__("file", "both.bin"),
        lambda d: d["calls"][0]["outputs"][2].pop("file"),
        lambda d: d["calls"][0]["outputs"][0]["shape"].append(-1),
        lambda d: d["calls"][0]["outputs"][0]["values"].append("1"),
        lambda d: d["golden"]["calls"][0]["outputs"][0].pop("bound"),
        lambda d: d["golden"]["calls"][0]["outputs"][0].__setitem__("passed", 1),
        lambda d: d["golden"]["calls"][0]["outputs"][0].__setitem__("max_abs", True),
        lambda d: d["golden"]["calls"][0].__setitem__("index", -1),
        lambda d: d["golden"].__setitem__("other_method_calls", "0"),
        lambda d: d.__setitem__("golden", []),
        lambda d: d["fallbacks"][0].__setitem__("reason", "crashed"),
        lambda d: d["fallbacks"][0].__setitem__("call", -1),
        lambda d: d["fallbacks"][1].pop("to"),
        lambda d: d["fallbacks"][1].__setitem__("extra", 1),
        lambda d: d["vendor_runtimes"][0].pop("step"),
        lambda d: d["vendor_runtimes"][0].__setitem__("step", "site_packages"),  # Python only: never fatpte-run's
        lambda d: d["vendor_runtimes"][0].__setitem__("looked", []),
        lambda d: d["vendor_runtimes"][1].__setitem__("path", "/x.so"),
        lambda d: d["vendor_runtimes"][1].pop("withheld"),
        lambda d: d["vendor_runtimes"][1].__setitem__("found", "no"),
        lambda d: d["vendor_runtimes"][2]["looked"].append(3),
        lambda d: d.__setitem__("vendor_runtimes", {}),
    ):
        bad = copy.deepcopy(doc)
        change(bad)
        out.append(bad)
    return out


def test_the_python_reader_takes_what_the_schema_takes() -> None:
    doc = _report()
    assert _valid(doc)
    report = report_from_json(doc, "fatpte-run", "fatpte-run")
    assert report.code is ErrorCode.GOLDEN_MISMATCH and report.error_message == "1 of 1 golden call passed"
    ok = {**doc, "error": None, "golden": None, "chosen": None, "backend_id": None}
    assert _valid(ok) and report_from_json(ok, "fatpte-run", "fatpte-run").code is None
    older = {k: v for k, v in doc.items() if k not in ("fallbacks", "vendor_runtimes")}  # an older fatpte-run's report
    assert _valid(older) and report_from_json(older, "fatpte-run", "fatpte-run").code is ErrorCode.GOLDEN_MISMATCH
    unknown = {**doc, "error": {"code": "E9999", "message": "a later fatpte's"}}
    assert _valid(unknown) and report_from_json(unknown, "fatpte-run", "fatpte-run").code is None
    for bad in _outside(doc):
        assert not _valid(bad), bad
        with pytest.raises(FatpteError) as caught:
            report_from_json(bad, "fatpte-run", "fatpte-run")
        assert caught.value.code is ErrorCode.INVALID_ARGUMENT
        assert "outside specs/run_report.schema.json" in caught.value.message


def test_check_reads_no_stderr() -> None:
    """`fatpte check` takes what fatpte-run found from its report: no regular expression over stderr."""
    for name in ("ops/check.py", "ops/runner.py", "ops/golden.py", "device/fatpte_run.py", "device/run_report.py"):
        text = (ROOT / "fatpte" / name).read_text()
        assert "import re\n" not in text and "re.search" not in text, name


def test_a_printed_report_is_read_strictly() -> None:
    """What a runner printed: a key twice is outside the report (the strict reader, as calls.json is
    read), NaN and Infinity are figures, and no JSON at all names the exit and stderr."""
    runtime = Runtime(("fatpte-run",), "x86_64")
    good = json.dumps(_report())
    assert read_report(subprocess.CompletedProcess([], 6, good, ""), runtime).code is ErrorCode.GOLDEN_MISMATCH
    twice = good[:-1] + ', "error": null}'
    with pytest.raises(FatpteError, match="outside specs/run_report.schema.json") as caught:
        read_report(subprocess.CompletedProcess([], 0, twice, ""), runtime)
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT
    with pytest.raises(FatpteError, match=r"printed no JSON report \(exit 4: it broke\)"):
        read_report(subprocess.CompletedProcess([], 4, "", "it broke\n"), runtime)
