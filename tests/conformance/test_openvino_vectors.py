"""Vendor devices alike in Python and C++ (issue 40): every file of specs/vectors/openvino/ gets the
outcome its index states from both profile readers (`DeviceProfile.load`; `fatpte-run
--check-profile`), and on every accepted profile both selections over the revision-4 container
(`fatpte.select`; `fatpte-run --select-only --json` and `--explain`) give the index's report and
text: the OpenVINO device and capabilities an entry requires, met or refused with the same reason.
"""

from __future__ import annotations

import json
import subprocess
import warnings
from pathlib import Path
from typing import Any

import pytest

import fatpte
from fatpte.device.profile import DeviceProfile
from fatpte.errors import FatpteError, SelectionError
from tests.builds import loader_build
from tests.paths import ROOT

VECTORS = ROOT / "specs" / "vectors" / "openvino"
DOC: dict[str, Any] = json.loads((VECTORS / "index.json").read_text())
INDEX: dict[str, Any] = DOC["vectors"]
CONTAINER = VECTORS / DOC["container"]


def fatpte_run() -> Path:
    return loader_build("release", "fatpte-run") / "fatpte-run"


def test_the_vectors_are_what_the_generator_writes(tmp_path: Path) -> None:
    from tools import gen_openvino_vectors

    gen_openvino_vectors.write(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in VECTORS.iterdir())
    for p in tmp_path.iterdir():
        assert p.read_bytes() == (VECTORS / p.name).read_bytes(), p.name


def test_the_container_is_revision_4_and_valid() -> None:
    assert not fatpte.validate(CONTAINER).findings
    with fatpte.open(CONTAINER) as c:
        assert c.manifest is not None and c.manifest.revision == 4
        gpu = c.manifest.entry("ov-npu-int8").requires.accelerators[0]
        assert (gpu.kind, gpu.device, gpu.capabilities) == ("openvino", "NPU", ("int8",))


@pytest.mark.parametrize("name", sorted(INDEX))
def test_python_reads_and_selects_as_the_index_says(name: str) -> None:
    row = INDEX[name]
    try:
        device = DeviceProfile.load(str(VECTORS / name))
    except FatpteError as exc:
        assert not row["accepted"], f"{name}: {exc}"
        worded = {"message": exc.message} if "message" in row["error"] else {}
        assert {"code": exc.code.tag, "field": exc.field, **worded} == row["error"], row["description"]
        return
    assert row["accepted"], row["description"]
    want = row["selection"]
    with fatpte.open(CONTAINER) as c, warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            sel = fatpte.select(c, device)
        except SelectionError as exc:
            assert (exc.code.tag, exc.report, exc.message) == (want["code"], want["report"], want["message"])
            return
    assert (None, sel.to_json(), sel.explain()) == (want["code"], want["report"], want["message"])


def test_the_loader_reads_every_profile_as_the_index_says() -> None:
    exe = fatpte_run()
    names = sorted(INDEX)
    done = subprocess.run([str(exe), "--check-profile", *(str(VECTORS / n) for n in names)], capture_output=True,
                          text=True, timeout=120, check=False)
    got = done.stdout.splitlines()
    want = ["OK" if INDEX[n]["accepted"] else f"{INDEX[n]['error']['code']} {INDEX[n]['error']['field']}"
            for n in names]
    assert list(zip(names, got)) == list(zip(names, want)), done.stderr
    # A refusal the index words: the same message after the file's name (each line escaped as fatpte-run
    # writes it; these messages are printable ASCII).
    for n in names:
        if not INDEX[n]["accepted"] and "message" in INDEX[n]["error"]:
            assert f"{VECTORS / n}: {INDEX[n]['error']['message']}\n" in done.stderr, (n, done.stderr[-2000:])


@pytest.mark.parametrize("name", sorted(n for n in INDEX if INDEX[n]["accepted"]))
def test_the_loader_selects_as_the_index_says(name: str) -> None:
    exe = fatpte_run()
    want = INDEX[name]["selection"]
    args = [str(exe), str(CONTAINER), "--select-only", "--device", str(VECTORS / name)]
    as_json = subprocess.run([*args, "--json"], capture_output=True, text=True, timeout=60, check=False)
    assert json.loads(as_json.stdout) == want["report"], as_json.stderr
    assert as_json.stdout == json.dumps(want["report"], indent=2) + "\n"
    explained = subprocess.run([*args, "--explain"], capture_output=True, text=True, timeout=60, check=False)
    if want["code"] is None:
        assert (as_json.returncode, explained.stdout) == (0, want["message"] + "\n"), explained.stderr
    else:
        assert as_json.returncode == 3 and want["message"] in as_json.stderr, as_json.stderr


@pytest.mark.parametrize("name", sorted(INDEX))
def test_the_schema_takes_what_the_readers_take(name: str) -> None:
    """specs/device_profile.schema.json says the same of every vector as both readers."""
    from tests.device.test_device import VALIDATOR

    errors = list(VALIDATOR.iter_errors(json.loads((VECTORS / name).read_text())))
    assert (not errors) == INDEX[name]["accepted"], [e.message for e in errors]
