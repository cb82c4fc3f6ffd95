"""fatpte.ops.fat_lowering (issue 20): what the wrapper writes, read from the committed fixtures
that `make test-executorch` made with it (no torch here), and its argument checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from fatpte.container.reader import Container
from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.pte import read_program
from fatpte.ops.fat_lowering import FAT_BACKEND_ID, Lowering, fat_partitioner, fat_payload
from tests.paths import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "executorch"


@pytest.mark.parametrize("model", ["add", "mlp", "buffer", "kvcache"])
def test_each_fat_delegate_holds_the_xnnpack_payload_and_a_nested_portable_program(model: str) -> None:
    data = Path(FIXTURES / f"{model}_fat.pte").read_bytes()
    delegates = [d for m in read_program(data).methods for d in m.delegates]
    assert delegates and {d.backend_id for d in delegates} == {FAT_BACKEND_ID}
    for d in delegates:
        assert d.location == "segment"
        c = Container.from_buffer(data[d.offset:d.offset + d.size])
        assert [(e.name, e.backend_id, e.priority) for e in c.entries] == [("xnnpack", "xnnpack", 10),
                                                                            ("portable", "portable", 0)]
        assert c.manifest is not None
        assert [(e.name, e.executorch_backends) for e in c.manifest.entries] == [("xnnpack", ("XnnpackBackend",)),
                                                                                  ("portable", ())]
        xnnpack, portable = c.entries
        assert bytes(c.payload(xnnpack)[4:8]) == b"XH00"  # XNNPACK's own header
        nested = read_program(bytes(c.payload(portable)))
        assert [d.backend_id for m in nested.methods for d in m.delegates] == []


def test_no_lowering_is_refused_before_the_toolchain_is_needed() -> None:
    for call in (lambda: fat_partitioner(object(), []), lambda: fat_payload(object(), [])):
        with pytest.raises(FatpteError) as err:
            call()
        assert err.value.code == ErrorCode.INVALID_ARGUMENT
        assert "at least one lowering" in str(err.value)


def test_a_lowering_says_what_preprocess_gets() -> None:
    assert Lowering("cpu", "XnnpackBackend", priority=3, requires={"arch": ["x86_64"]}).to_json() == {
        "name": "cpu", "backend": "XnnpackBackend", "priority": 3, "requires": {"arch": ["x86_64"]}}
    assert Lowering("portable").to_json() == {"name": "portable", "backend": None, "priority": 0, "requires": None}
