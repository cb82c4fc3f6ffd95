"""OpenVINO entries for real (issue 40): found, run, withheld, and listed alike in both languages.

A container packs the OpenVINO export of a fixture model (OpenvinoPartitioner, compile spec
device=CPU; tests/fixtures/executorch/*_openvino_default.pte) before its XNNPACK and portable
lowerings. With OpenVINO's runtime found in this Python's environment (the pinned `openvino`
wheel, found as `$VIRTUAL_ENV`'s package: no OPENVINO_LIB_PATH) the OpenVINO entry runs through
ExecuTorch's OpenvinoBackend and gives the eager outputs recorded for it (fixtures.json
"openvino", its tolerance), for a stateless model and a stateful one (the KV cache, three calls on
one loaded method); the other two entries give them too. With the runtime withheld
(`--vendor-runtime openvino=`) or not found (OPENVINO_LIB_PATH naming no file, no environment),
the XNNPACK entry runs and the OpenVINO entry's reason names OpenVINO's runtime and where it was
looked for. `fatpte device --json` and `fatpte-run --device-json` print the same bytes in each
case, OpenVINO's CPU among the accelerators when the runtime is found.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fatpte.device.vendor_runtimes import VENDOR_RUNTIMES, locate
from tests.paths import ROOT

# The release build: the ASan build never loads OpenVINO (its TBB opens a library with
# RTLD_DEEPBIND, which AddressSanitizer refuses by ending the process; loader/src/vendor/runtimes.hpp),
# which the last test shows. `exe`: tests/loader/conftest.py.
pytestmark = pytest.mark.loader_build("fatpte-run", sdk=True, only="release")
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
FATPTE = [sys.executable, "-m", "fatpte"]
OPENVINO = VENDOR_RUNTIMES[0]
MODELS = ("mlp", "kvcache")


def fixture(model: str) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((FIXTURES / "fixtures.json").read_text())["openvino"]["models"][model]
    return record


def environment(**changes: str) -> dict[str, str]:
    """This process's environment without any place OpenVINO is found from, then `changes`."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENVINO_LIB_PATH", "VIRTUAL_ENV", "CONDA_PREFIX")}
    env.update(changes)
    return env


FOUND = {"VIRTUAL_ENV": sys.prefix}  # as an activated environment has it; the wheel is in it


def library() -> str:
    where = locate(OPENVINO, environ=FOUND)
    assert "/site-packages/openvino/libs/libopenvino_c.so." in where.path, where
    return where.path


def pack(model: str, tmp: Path) -> Path:
    lines = ["version = 2", ""]
    for name, payload, priority in (("openvino", f"{model}_openvino_default.pte", 20),
                                    ("xnnpack", f"{model}_xnnpack.pte", 10), ("portable", f"{model}_portable.pte", 0)):
        lines += ["[[specialization]]", f'name = "{name}"', f'payload = "{(FIXTURES / payload).as_posix()}"',
                  'signature = "from-payload"', f"priority = {priority}", ""]
    (tmp / "pack.toml").write_text("\n".join(lines))
    dest = tmp / f"{model}.nfat"
    subprocess.run([*FATPTE, "pack", "-q", "-f", "-o", str(dest), "--from", str(tmp / "pack.toml")], check=True)
    (tmp / "calls.json").write_text(json.dumps(fixture(model)["calls"]))
    return dest


def run(exe: Path, container: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    proc = subprocess.run([str(exe), str(container), "--inputs", str(container.parent / "calls.json"), "--json",
                           *args], check=False, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


def max_abs_diffs(report: dict[str, Any], model: str) -> list[float]:
    """Per call and output, max|got - want| against the eager outputs; each within the fixture's
    tolerance (atol + rtol * max|want|)."""
    record = fixture(model)
    tol = record["tolerance"]
    diffs = []
    assert len(report["calls"]) == len(record["calls"])
    for got_call, want_call in zip(report["calls"], record["calls"], strict=True):
        for got, want in zip(got_call["outputs"], want_call["outputs"], strict=True):
            assert (got["dtype"], got["shape"]) == (want["dtype"], want["shape"])
            diff = max(abs(a - b) for a, b in zip(got["values"], want["values"], strict=True))
            assert diff <= tol["atol"] + tol["rtol"] * max(abs(b) for b in want["values"]), (model, diff)
            diffs.append(diff)
    return diffs


@pytest.mark.parametrize("model", MODELS)
def test_openvino_entry_runs_with_the_eager_outputs(exe: Path, tmp_path: Path, model: str) -> None:
    container = pack(model, tmp_path)
    report = run(exe, container, environment(**FOUND))
    assert report["chosen"] == "openvino" and report["error"] is None
    max_abs_diffs(report, model)
    found = f"OpenVINO's runtime (libopenvino_c.so) found at {library()} (from the openvino package of $VIRTUAL_ENV)"
    assert any(found in line for line in report["dispatch"]), report["dispatch"]
    # The same search, as a field (specs/run-report.md): the step of the search order that found it.
    assert report["vendor_runtimes"] == [{"name": "openvino", "found": True, "path": library(), "step": "virtual_env"}]
    # The three kernel libraries agree on the same calls.
    for entry in ("xnnpack", "portable"):
        other = run(exe, container, environment(**FOUND), "--entry", entry)
        assert other["chosen"] == entry
        max_abs_diffs(other, model)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize(("how", "env", "args", "reason"), [
    ("withheld", FOUND, ("--vendor-runtime", "openvino="), "withheld by the caller (--vendor-runtime openvino=)"),
    ("nowhere", {"OPENVINO_LIB_PATH": "/nonexistent/libopenvino_c.so"}, (),
     "2. OPENVINO_LIB_PATH=/nonexistent/libopenvino_c.so (not a file), 3. $VIRTUAL_ENV (not set)"),
])
def test_hidden_runtime_falls_back_to_xnnpack_naming_openvino(exe: Path, tmp_path: Path, model: str, how: str,
                                                              env: dict[str, str], args: tuple[str, ...],
                                                              reason: str) -> None:
    container = pack(model, tmp_path)
    report = run(exe, container, environment(**env), *args)
    assert report["chosen"] == "xnnpack", how
    max_abs_diffs(report, model)
    # Packing required the device the program was compiled for (an OpenVINO CPU): without the
    # runtime the probe lists none, so selection refuses the entry before its bytes are read, and
    # the report says where the runtime was looked for.
    status = [line for line in report["dispatch"] if line.startswith("vendor runtime openvino: ")]
    assert len(status) == 1 and "OpenVINO's runtime (libopenvino_c.so) " in status[0] and reason in status[0], status
    [searched] = report["vendor_runtimes"]
    assert searched["name"] == "openvino" and searched["found"] is False and "path" not in searched
    numbered = ", ".join(f"{i}. {place}" for i, place in enumerate(searched["looked"], 1))
    assert (searched["withheld"] is not None) == (how == "withheld") and reason in (searched["withheld"] or numbered)
    assert not any(line.startswith("dispatch: openvino [openvino]") for line in report["dispatch"]), report
    explained = subprocess.run([str(exe), str(container), "--inputs", str(tmp_path / "calls.json"), "--explain",
                                *args], check=True, capture_output=True, text=True, env=environment(**env)).stdout
    assert ("openvino [openvino]: rejected: accelerators[0]: needs openvino CPU; the device has no openvino "
            "accelerator") in explained, explained


@pytest.mark.parametrize(("how", "env", "args", "source"), [
    ("flag", {}, ("--vendor-runtime", "openvino=LIB"), "the caller's path for openvino"),
    ("variable", {"OPENVINO_LIB_PATH": "LIB"}, (), "OPENVINO_LIB_PATH"),
])
def test_runtime_found_from_the_caller_s_path_and_the_variable(exe: Path, tmp_path: Path, how: str,
                                                                env: dict[str, str], args: tuple[str, ...],
                                                                source: str) -> None:
    lib = library()
    container = pack("mlp", tmp_path)
    report = run(exe, container, environment(**{k: v.replace("LIB", lib) for k, v in env.items()}),
                 *(a.replace("LIB", lib) for a in args))
    assert report["chosen"] == "openvino", how
    assert any(f"found at {lib} (from {source})" in line for line in report["dispatch"]), report["dispatch"]
    step = {"flag": "caller", "variable": "environment_variable"}[how]
    assert report["vendor_runtimes"] == [{"name": "openvino", "found": True, "path": lib, "step": step}]


@pytest.mark.parametrize(("how", "env", "args"), [
    ("environment", FOUND, ()),
    ("flag", {}, ("--vendor-runtime", "openvino=LIB")),
    ("variable", {"OPENVINO_LIB_PATH": "LIB"}, ()),
    ("withheld", FOUND, ("--vendor-runtime", "openvino=")),
])
def test_fatpte_device_and_fatpte_run_list_the_same_openvino_devices(exe: Path, how: str, env: dict[str, str],
                                                                      args: tuple[str, ...]) -> None:
    lib = library()
    env = environment(**{k: v.replace("LIB", lib) for k, v in env.items()}, FATPTE_RUN="")
    argv = [a.replace("LIB", lib) for a in args]
    cpp = subprocess.run([str(exe), "--device-json", *argv], check=True, capture_output=True, text=True, env=env)
    py = subprocess.run([*FATPTE, "device", "--json", *argv], check=True, capture_output=True, text=True, env=env)
    assert cpp.stdout == py.stdout
    kinds = [a["kind"] for a in json.loads(cpp.stdout)["accelerators"]]
    assert ("openvino" in kinds) == (how != "withheld"), kinds
    if how != "withheld":
        cpu = next(a for a in json.loads(cpp.stdout)["accelerators"] if a["kind"] == "openvino")
        assert cpu["version"] == "2026.4.0" and cpu["memory_bytes"] == 0


@pytest.mark.parametrize("model", MODELS)
def test_fatpte_check_compares_the_three_kernel_libraries(exe: Path, tmp_path: Path, model: str) -> None:
    # Golden calls recorded by the portable entry; the OpenVINO entry's tolerance is its fixture's
    # (its CPU plugin may compute in bf16 where the CPU has it). No VIRTUAL_ENV: fatpte's calls of
    # fatpte-run give it this Python's environment (fatpte.device.fatpte_run.environment).
    container = pack(model, tmp_path)
    tol = fixture(model)["tolerance"]
    toml = (tmp_path / "pack.toml").read_text().replace(
        'name = "openvino"', f'name = "openvino"\ngolden_tolerance = {{ atol = {tol["atol"]}, rtol = {tol["rtol"]} }}')
    (tmp_path / "pack.toml").write_text('golden = "calls.json"\ngolden_from = "portable"\n' + toml)
    subprocess.run([*FATPTE, "--runtime", str(exe), "pack", "-q", "-f", "-o", str(container), "--from",
                    str(tmp_path / "pack.toml")], check=True, env=environment())
    done = subprocess.run([*FATPTE, "--runtime", str(exe), "check", str(container), "--json"], capture_output=True,
                          text=True, timeout=600, check=False, env=environment())
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["ok"], done.stdout + done.stderr
    assert [(e["name"], e["state"]) for e in report["entries"]] == [
        ("openvino", "agrees"), ("xnnpack", "agrees"), ("portable", "agrees")]
    assert len([o for e in report["entries"] for o in e["outputs"]]) == 3 * len(fixture(model)["calls"])


def test_the_fat_delegate_runs_the_openvino_entry_when_the_runtime_is_found(exe: Path, tmp_path: Path) -> None:
    # A fat program (fatpte merge) of the OpenVINO and portable programs: the fat delegate runs the
    # OpenVINO entry when its runtime is found, the nested portable one when it is withheld. (The
    # XNNPACK program cannot join them: a fat delegate hands one list of compile specs to whichever
    # entry runs, and OpenVINO's has `device`, XNNPACK's none; fatpte merge refuses it, E0702.)
    fat = tmp_path / "mlp_fat.pte"
    subprocess.run([*FATPTE, "merge", "-o", str(fat), str(FIXTURES / "mlp_openvino_default.pte"),
                    str(FIXTURES / "mlp_portable.pte")], check=True, capture_output=True)
    (tmp_path / "pack.toml").write_text(f'version = 2\n\n[[specialization]]\nname = "fat"\npayload = "{fat}"\n'
                                        'signature = "from-payload"\n')
    container = tmp_path / "fat.nfat"
    subprocess.run([*FATPTE, "pack", "-q", "-o", str(container), "--from", str(tmp_path / "pack.toml")], check=True)
    (tmp_path / "calls.json").write_text(json.dumps(fixture("mlp")["calls"]))
    for args, inner in (((), "running entry openvino [openvino]"),
                        (("--vendor-runtime", "openvino="), "running entry portable [portable] as a nested program")):
        report = run(exe, container, environment(**FOUND), *args)
        assert report["chosen"] == "fat"
        assert any(line.startswith("fat delegate: ") and inner in line for line in report["dispatch"]), report
        max_abs_diffs(report, "mlp")
    withheld = "for the fat delegate: needs ExecuTorch backend OpenvinoBackend, which needs OpenVINO's runtime"
    assert any(line.startswith(withheld) for line in report["dispatch"]), report["dispatch"]


def test_a_library_that_is_not_openvino_s_falls_back_with_executorch_s_error(exe: Path, tmp_path: Path) -> None:
    # A profile that says the machine has an OpenVINO CPU (this machine's, probed with the runtime
    # found), and a caller's path that names a file which is not OpenVINO's: selection takes the
    # entry, fatpte loads the backend without asking it is_available() first (ExecuTorch asks when
    # the method loads), the backend cannot use the library, the method does not load, and the
    # XNNPACK entry runs with ExecuTorch's reason.
    container = pack("mlp", tmp_path)
    profile = subprocess.run([str(exe), "--device-json"], check=True, capture_output=True, text=True,
                             env=environment(**FOUND)).stdout
    assert '"kind": "openvino"' in profile, profile
    (tmp_path / "device.json").write_text(profile)
    not_openvino = "/lib/x86_64-linux-gnu/libc.so.6" if Path("/lib/x86_64-linux-gnu/libc.so.6").is_file() else sys.executable
    report = run(exe, container, environment(), "--device", str(tmp_path / "device.json"),
                 "--vendor-runtime", f"openvino={not_openvino}")
    assert report["chosen"] == "xnnpack"
    skipped = next(line for line in report["dispatch"] if line.startswith("dispatch: openvino [openvino]: "))
    assert "ExecuTorch could not load method 'forward' (load_method)" in skipped
    assert "OpenvinoBackend is not available" in skipped, skipped
    assert report["vendor_runtimes"] == []  # a device was given: this machine was not probed


@pytest.mark.loader_build("fatpte-run", sdk=True, only="asan")
def test_the_asan_build_never_loads_openvino(exe: Path, tmp_path: Path) -> None:
    container = pack("mlp", tmp_path)
    report = run(exe, container, environment(**FOUND))
    assert report["chosen"] == "xnnpack"
    # No OpenVINO device is listed, so selection refuses the entry; the report says why.
    status = next(line for line in report["dispatch"] if line.startswith("vendor runtime openvino: "))
    assert "not loaded by a build with AddressSanitizer" in status, status
    [searched] = report["vendor_runtimes"]
    assert searched["found"] is False and "AddressSanitizer" in searched["withheld"] and searched["looked"] == []
    profile = subprocess.run([str(exe), "--device-json"], check=True, capture_output=True, text=True,
                             env=environment(**FOUND))
    assert "openvino" not in [a["kind"] for a in json.loads(profile.stdout)["accelerators"]]
