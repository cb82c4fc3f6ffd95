"""`fatpte-run --device PROFILE` with a profile of another architecture or OS than the host's
(issue 39, point 5; specs/run-report.md `dry_run`; docs/cpp.md): a dry run of the choice. It says
so, names the entry chosen for that device, loads nothing and makes no call; exit 0, or 3 when no
entry fits. A profile of the host's kind still runs.

The entries here are example-backend payloads whose libraries do not exist: loading either would
fail (exit 3, E0901), so exit 0 with the chosen entry named shows that nothing was loaded.
"""

from __future__ import annotations

import copy
import json
import platform
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from fatpte.device.run_report import outside
from fatpte.ops.packing import pack
from fatpte.ops.specialization import Specialization
from tests.paths import ROOT

SCHEMA = json.loads((ROOT / "specs" / "run_report.schema.json").read_text())
HOST = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}[platform.machine().lower()]
# A named profile of the other architecture, and one of the host's (both linux).
FOREIGN, FOREIGN_ARCH = ("raspberry-pi-5", "aarch64") if HOST == "x86_64" else ("x86-64-v3", "x86_64")
NATIVE = "x86-64-v3" if HOST == "x86_64" else "raspberry-pi-5"


def run(exe: Path, *args: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A container whose best entry needs the foreign architecture (the portable one is the
    fallback), one with only an entry for the host's architecture, and an --input file."""
    both = pack([Specialization("nolib_portable", b"p" * 64, name="anywhere"),
                 Specialization("nolib_arch", b"a" * 64, name="for_device", priority=10,
                                requires={"arch": [FOREIGN_ARCH]})], tmp_path / "both.nfat")
    host_only = pack([Specialization("nolib_host", b"h" * 64, name="host_only", requires={"arch": [HOST]})],
                     tmp_path / "host-only.nfat")
    numbers = tmp_path / "input.txt"
    numbers.write_text("1 2 3\n")
    return Path(both), Path(host_only), numbers


def notice() -> str:
    return (f"dry run of the choice: the device profile '{FOREIGN}' describes {FOREIGN_ARCH} linux and this host is "
            f"{HOST} linux; nothing is loaded or run")


def test_a_foreign_profile_is_a_dry_run_that_names_the_choice(exe: Path, files: tuple[Path, Path, Path]) -> None:
    both, _, numbers = files
    done = run(exe, both, "--input", numbers, "--device", FOREIGN)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [notice(), "chosen: for_device [nolib_arch]"]
    assert "ran:" not in done.stdout and "output" not in done.stdout
    explained = run(exe, both, "--input", numbers, "--device", FOREIGN, "--explain")
    lines = explained.stdout.splitlines()
    assert explained.returncode == 0 and lines[0] == notice() and lines[-1] == "chosen: for_device [nolib_arch]"
    assert any("#1 for_device [nolib_arch]: eligible" in line for line in lines), lines


def test_the_json_report_says_it(exe: Path, files: tuple[Path, Path, Path]) -> None:
    both, _, numbers = files
    done = run(exe, both, "--input", numbers, "--device", FOREIGN, "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert outside(doc) is None
    assert doc["chosen"] is None and doc["backend_id"] is None and doc["calls"] == [] and doc["error"] is None
    assert doc["dry_run"] == {"reason": notice().removeprefix("dry run of the choice: "), "chosen": "for_device",
                              "backend_id": "nolib_arch"}
    assert any("for_device" in line for line in doc["dispatch"])


def test_no_entry_for_the_device_is_exit_3_with_the_selections_error(exe: Path,
                                                                     files: tuple[Path, Path, Path]) -> None:
    _, host_only, numbers = files
    done = run(exe, host_only, "--input", numbers, "--device", FOREIGN, "--json")
    assert done.returncode == 3
    doc = json.loads(done.stdout)
    jsonschema.validate(doc, SCHEMA)
    selected = run(exe, host_only, "--select-only", "--device", FOREIGN)
    assert selected.returncode == 3 and doc["error"]["code"] in selected.stderr
    assert doc["dry_run"]["chosen"] is None and doc["dry_run"]["backend_id"] is None
    text = run(exe, host_only, "--input", numbers, "--device", FOREIGN)
    assert text.returncode == 3 and text.stdout.splitlines() == [notice()]


def test_a_profile_of_the_hosts_kind_still_runs(exe: Path, files: tuple[Path, Path, Path]) -> None:
    """It tries to load (and fails: the example libraries do not exist), as before."""
    both, _, numbers = files
    done = run(exe, both, "--input", numbers, "--device", NATIVE, "--json")
    doc = json.loads(done.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["dry_run"] is None
    assert done.returncode == 3 and doc["error"]["code"] == "E0901", doc["error"]
    assert any("anywhere" in line for line in doc["dispatch"])  # the portable entry was tried


def test_the_reader_and_the_schema_agree_on_dry_runs() -> None:
    doc = {"chosen": None, "backend_id": None, "method": "forward", "dispatch": [], "calls": [], "golden": None,
           "fallbacks": [], "error": None, "dry_run": {"reason": "r", "chosen": "a", "backend_id": "b"}}
    for good in (doc, {**doc, "dry_run": None}, {k: v for k, v in doc.items() if k != "dry_run"},
                 {**doc, "dry_run": {"reason": "r", "chosen": None, "backend_id": None}}):
        jsonschema.validate(good, SCHEMA)
        assert outside(good) is None, good
    for change in (lambda d: d["dry_run"].pop("backend_id"), lambda d: d["dry_run"].__setitem__("reason", 1),
                   lambda d: d["dry_run"].__setitem__("extra", 1), lambda d: d.__setitem__("dry_run", "yes")):
        bad = copy.deepcopy(doc)
        change(bad)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, SCHEMA)
        assert outside(bad) is not None, bad
