"""Remembered verdicts in `fatpte-run --verdicts DIR --self-test` (specs/verdicts.md section 5),
on mlp packed XNNPACK first, portable second, whose XNNPACK entry holds another program of the same
signature (the int8 lowering): its golden calls disagree.

- The first start runs both entries' golden calls and remembers xnnpack failing and portable
  passing; the second skips xnnpack without loading its library ("remembered: ...") and serves
  portable without a golden call; the store C++ wrote reads in Python, in the same text.
- Another library for XNNPACK (a copy elsewhere, then that copy with a byte more) and another
  device make the entry tried again; a store the loader refuses is neither used nor overwritten.
- The crash journal: an entry whose backend kills the process in init (SIGSEGV, SIGILL: the
  fault backend, tests/support/faulty.py) is skipped at the next start without being loaded.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fatpte.ops import verdicts as V
from tests.builds import SDK_LIB
from tests.loader.test_cpp_golden import fatpte_cli, impostor
from tests.paths import ROOT
from tests.scripts import load_script
from tests.support import faulty

pytestmark = pytest.mark.loader_build("fatpte-run", sdk=True, only="release")
VECTORS = ROOT / "specs" / "vectors" / "verdicts"


def served(build: Path, container: Path, store: Path, *more: Any) -> dict[str, Any]:
    done = subprocess.run([str(build / "fatpte-run"), str(container), "--self-test", "--verdicts", str(store),
                           "--json", *map(str, more)], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    assert doc["chosen"] == "portable"
    return doc


def entry_lines(doc: dict[str, Any], name: str) -> list[str]:
    """The dispatch line of entry `name` and its details."""
    lines: list[str] = doc["dispatch"]
    at = next(i for i, line in enumerate(lines) if line.startswith(f"dispatch: {name} ["))
    end = next((i for i in range(at + 1, len(lines)) if lines[i].startswith("dispatch: ")), len(lines))
    return lines[at:end]


@pytest.fixture
def disagreeing(build: Path, tmp_path: Path) -> Path:
    return impostor(build, tmp_path)


def test_the_second_start_remembers(build: Path, disagreeing: Path, tmp_path: Path) -> None:
    store = tmp_path / "verdicts"
    first = served(build, disagreeing, store)
    assert outcome(first, "xnnpack") == "tried"
    assert "verdict store: remembered pass" in "\n".join(entry_lines(first, "portable"))
    path = store / "fatpte-run.verdicts.json"
    records = V.read_store(path)
    assert [(r.name, r.verdict) for r in records] == [("xnnpack", "fail"), ("portable", "pass")]
    assert V.store_text(records) == path.read_text()  # both languages write one text
    assert records[0].libraries[0].startswith("XnnpackBackend=build-id:")

    second = served(build, disagreeing, store)
    xnnpack = entry_lines(second, "xnnpack")
    assert xnnpack[0].startswith("dispatch: xnnpack [xnnpack]: remembered: self-test failed: E1401")
    assert not any("XnnpackBackend: registered" in line for line in xnnpack)  # its library was not loaded
    portable = [line.strip() for line in entry_lines(second, "portable")]
    assert [line for line in portable if line.startswith("self-test:")] == [
        "self-test: not run: the verdict store remembers its golden calls passing"]  # no golden call was made
    assert any(line.startswith("verdict store: a pass is remembered") for line in portable)
    assert V.read_store(path) == records  # nothing new was learned


def outcome(doc: dict[str, Any], name: str) -> str:
    """"tried" when the entry's self-test ran (and failed), "remembered" when the store skipped it."""
    line = entry_lines(doc, name)[0]
    if line.startswith(f"dispatch: {name} [{name}]: self-test failed: E1401"):
        return "tried"
    assert line.startswith(f"dispatch: {name} [{name}]: remembered: self-test failed: E1401"), line
    return "remembered"


def test_another_library_or_device_is_tried_again(build: Path, disagreeing: Path, tmp_path: Path) -> None:
    store, lib = tmp_path / "verdicts", tmp_path / "lib" / "xnnpack_copy.so"
    lib.parent.mkdir()
    shutil.copyfile(SDK_LIB / "libexecutorch_backend_xnnpack.so", lib)
    copy = ["--backend-lib", f"XnnpackBackend={lib}"]
    assert outcome(served(build, disagreeing, store), "xnnpack") == "tried"
    # A copy of the same library elsewhere is the same library: a key names content, not a path.
    assert outcome(served(build, disagreeing, store, *copy), "xnnpack") == "remembered"
    with lib.open("ab") as f:
        f.write(b"\0")  # the same build id, another size: another library
    assert [outcome(served(build, disagreeing, store, *copy), "xnnpack") for _ in range(2)] == ["tried", "remembered"]
    other = ["--device", "x86-64-v3"]  # another device fingerprint
    assert [outcome(served(build, disagreeing, store, *other), "xnnpack") for _ in range(2)] == ["tried", "remembered"]
    records = V.read_store(store / "fatpte-run.verdicts.json")
    assert [(r.name, r.verdict) for r in records] == [("xnnpack", "fail"), ("portable", "pass"), ("xnnpack", "fail"),
                                                      ("xnnpack", "fail"), ("portable", "pass")]
    assert records[2].libraries[0].endswith(f":{lib.stat().st_size}") and records[0].device != records[3].device


def test_without_a_self_test_a_load_is_remembered(build: Path, disagreeing: Path, tmp_path: Path) -> None:
    store = tmp_path / "verdicts"
    nothing = tmp_path / "no-calls.json"
    nothing.write_text("[]")  # load, and run no call
    run = [str(build / "fatpte-run"), str(disagreeing), "--inputs", str(nothing), "--verdicts", str(store), "--json"]
    first = json.loads(subprocess.run(run, capture_output=True, text=True, timeout=600, check=True).stdout)
    assert first["chosen"] == "xnnpack"  # no self-test: nothing tells it disagrees
    assert [(r.name, r.verdict) for r in V.read_store(store / "fatpte-run.verdicts.json")] == [("xnnpack", "loaded")]
    second = json.loads(subprocess.run(run, capture_output=True, text=True, timeout=600, check=True).stdout)
    assert "verdict store: it loaded here before (no self-test was asked)" in "\n".join(entry_lines(second, "xnnpack"))
    # Asked for a self-test, the entry is tested as if unknown, and its failure remembered.
    tested = served(build, disagreeing, store)
    assert outcome(tested, "xnnpack") == "tried"
    assert [r.verdict for r in V.read_store(store / "fatpte-run.verdicts.json")] == ["fail", "pass"]


@pytest.mark.parametrize("vector", ["refused-future-version.json", "refused-truncated.json",
                                    "refused-same-key-twice.json"])
def test_a_refused_store_is_not_used(build: Path, disagreeing: Path, tmp_path: Path, vector: str) -> None:
    store = tmp_path / "verdicts"
    store.mkdir()
    path = store / "fatpte-run.verdicts.json"
    shutil.copyfile(VECTORS / vector, path)
    doc = served(build, disagreeing, store)
    assert any(line.startswith("verdict store: not used: E0702") for line in doc["dispatch"]), doc["dispatch"]
    assert outcome(doc, "xnnpack") == "tried"
    assert path.read_bytes() == (VECTORS / vector).read_bytes()


@pytest.mark.loader_build("fatpte-run", f"{faulty.FOLDER}/{faulty.LIBRARY}", sdk=True, only="release")
@pytest.mark.parametrize("mode", ["segv_init", "sigill_init"])
def test_a_crash_in_process_is_remembered_by_its_journal(build: Path, tmp_path: Path, mode: str) -> None:
    """No isolation: the backend's init kills fatpte-run; the journal's record, written and synced
    before the entry's libraries were opened, makes the next start skip it without loading it."""
    container = faulty.container(tmp_path / f"{mode}.nfat", "add", [mode])
    calls = load_script("loader/examples/executorch_example.py").write_calls("add", tmp_path / "calls.json")
    store = tmp_path / "verdicts"
    run = [str(build / "fatpte-run"), str(container), "--inputs", str(calls), "--verdicts", str(store), "--json",
           "--backend-lib", f"{faulty.BACKEND_ID}={faulty.library(build)}"]
    died = subprocess.run(run, capture_output=True, text=True, timeout=120, check=False)
    assert died.returncode < 0, (died.returncode, died.stderr)  # killed by the signal
    records = V.read_store(store / "fatpte-run.verdicts.json")
    assert [(r.name, r.verdict) for r in records] == [("faulty0", "attempt")]
    assert records[0].libraries[0].startswith(f"{faulty.BACKEND_ID}=build-id:")
    second = subprocess.run(run, capture_output=True, text=True, timeout=120, check=False)
    assert second.returncode == 0, second.stderr
    doc = json.loads(second.stdout)
    assert doc["chosen"] == "cpu"
    lines = entry_lines(doc, "faulty0")
    assert lines[0].startswith("dispatch: faulty0 [faulty]: remembered: the process ended during an attempt at it")
    assert not any(faulty.BACKEND_ID in line and "registered" in line for line in lines)  # never loaded
    listed = fatpte_cli(build, "verdicts", "list", store)
    assert "  crash entry 0 'faulty0'" in listed.stdout and "  loaded entry 1 'cpu'" in listed.stdout
