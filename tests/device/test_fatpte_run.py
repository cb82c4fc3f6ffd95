"""fatpte.device.fatpte_run, the one room that finds and drives fatpte-run: a runner that cannot
start or does not answer is an error naming it, whoever asks (check, pack --golden-from, device).
Stand-in runners are small shell scripts; tests/loader/test_run_report.py runs the real one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fatpte.device.fatpte_run import Runtime, call, find_runtime
from fatpte.errors import ErrorCode, FatpteError


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "fatpte-run"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


def test_a_runner_that_cannot_start_is_e0801(tmp_path: Path) -> None:
    runtime = Runtime((str(tmp_path / "absent"),), "x86_64")
    with pytest.raises(FatpteError) as caught:
        runtime.run(["--help"])
    assert caught.value.code is ErrorCode.IO_ERROR and "cannot run native x86_64" in caught.value.message


def test_a_runner_past_its_time_is_e0801(tmp_path: Path) -> None:
    runtime = Runtime((str(_script(tmp_path, "sleep 5")),), "x86_64")
    with pytest.raises(FatpteError, match="did not finish within 0 s") as caught:
        runtime.run([], timeout=0.2)
    assert caught.value.code is ErrorCode.IO_ERROR


def test_the_device_of_a_runner(tmp_path: Path) -> None:
    answers = Runtime((str(_script(tmp_path, 'echo \'{"name": "host"}\'')),), "x86_64")
    assert answers.device_json() == {"name": "host"}
    (tmp_path / "fatpte-run").unlink()
    refuses = Runtime((str(_script(tmp_path, "echo no SDK >&2; exit 2")),), "x86_64")
    with pytest.raises(FatpteError, match=r"exited 2: no SDK\); it must be a fatpte-run built with") as caught:
        refuses.device_json()
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT


def test_call_and_find(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _script(tmp_path, 'echo "$1"')
    assert call([str(script), "said"], 10).stdout == "said\n"
    monkeypatch.delenv("FATPTE_RUN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + "/nonexistent")
    assert find_runtime() == (str(script), False)
    monkeypatch.setenv("FATPTE_RUN", "")
    assert find_runtime() == (None, True)
