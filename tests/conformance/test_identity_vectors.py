"""The device-identity vectors of specs/vectors/identity/ (tools/gen_identity_vectors.py): Python's
profile reader accepts or refuses each profile as the index says, and Python's selection makes of
each container and profile what the index says (entry chosen, each entry's grade and failed
requirements). The C++ side runs the same index: tests/loader/test_cpp_identity.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fatpte.device.profile import DeviceProfile
from fatpte.errors import FatpteError
from tools import gen_identity_vectors as G

INDEX: dict[str, Any] = json.loads((G.OUT / "index.json").read_text())


def test_committed_vectors_are_what_the_generator_writes(tmp_path: Path) -> None:
    G.write(tmp_path)
    fresh = sorted(p.name for p in tmp_path.iterdir())
    assert fresh == sorted(p.name for p in G.OUT.iterdir())
    for name in fresh:
        assert (tmp_path / name).read_bytes() == (G.OUT / name).read_bytes(), name


@pytest.mark.parametrize("name", sorted(INDEX["profiles"]))
def test_profile_is_read_as_the_index_says(name: str) -> None:
    want = INDEX["profiles"][name]
    if want["accepted"]:
        profile = DeviceProfile.load(str(G.OUT / name))
        assert profile.to_json_text() == (G.OUT / name).read_text()  # the files are canonical
        return
    with pytest.raises(FatpteError) as info:
        DeviceProfile.load(str(G.OUT / name))
    assert (info.value.code.tag, info.value.field) == (want["code"], want["field"])


@pytest.mark.parametrize("container", sorted(INDEX["selections"]))
def test_selection_is_what_the_index_says(container: str) -> None:
    for device, want in INDEX["selections"][container].items():
        assert G.outcome(G.OUT / container, G.OUT / device) == want, device


def test_every_grade_and_identity_failure_is_exercised() -> None:
    outcomes = [o for per in INDEX["selections"].values() for o in per.values()]
    grades = {v["grade"] for o in outcomes for v in o["verdicts"]}
    failures = {f for o in outcomes for v in o["verdicts"] for f in v["failures"]}
    assert grades == {"exact", "compatible", "fallback", None}
    assert {"cpu_cores", "min_core", "soc", "min_memory_bytes"} <= failures
