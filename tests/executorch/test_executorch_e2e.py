"""End-to-end checks with the real ExecuTorch runtime; run by `make test-executorch` in .venv-et.

Skipped where torch and executorch are not installed (the normal .venv never has them):
- every portable and XNNPACK fixture runs in executorch.extension.pybindings.portable_lib with
  outputs equal to eager PyTorch, across two calls (state carries over in the buffer models);
- a container packed from a model's portable and XNNPACK files, extracted for an x86-64 AVX2
  device, gives the XNNPACK file byte for byte, and that file runs with the same outputs;
- the weights kept in a .ptd load through the runtime's data map;
- ExecuTorch's own deserializer reads the same structure our reader does, also in a .pte whose
  NFAT delegate fatpte thinned for a device;
- a program whose named data fatpte moved into the container (share_named_data), extracted with the
  .ptd fatpte writes for it (entry_data_file), runs with outputs equal to eager PyTorch, and fails
  without that .ptd; weights packed from a .ptd come back out as a .ptd the runtime loads;
- ExecuTorch's Python loaders refuse the memoryview `c.payload()` returns and take bytes of it
  (docs/python-api.md says so);
- a .ptn packed whole extracts byte for byte, and ExecuTorch's own reader (with safetensors) finds
  the tensors fatpte's reader locates.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

torch = pytest.importorskip("torch")
portable_lib = pytest.importorskip("executorch.extension.pybindings.portable_lib")

import fatpte
from fatpte.executorch import read_program
from fatpte.ops.fat_delegate import nfat_delegates, thin_pte
from fatpte.ops.ptd_export import entry_data_file
from fatpte.ops.pte_specialize import pte_specialization
from tests.paths import ET_FIXTURES
from tests.scripts import load_script

FILES: dict[str, Any] = json.loads((ET_FIXTURES / "fixtures.json").read_text())["files"]
STATEFUL = ("buffer", "kvcache", "kvpair", "kvpair16")
RUNNABLE = sorted(n for n, f in FILES.items() if f["backend"] in ("portable", "xnnpack") and not f["external_data"])


def _tool() -> ModuleType:
    return load_script("tools/make_executorch_fixtures.py")


TOOL = _tool()


def _tensor(t: dict[str, Any]) -> Any:
    return torch.tensor(t["values"], dtype=getattr(torch, t["dtype"])).reshape(t["shape"])


def _model(name: str) -> tuple[Any, list[Any]]:
    """The fixture script's model `name`: (constructor, the inputs of two calls)."""
    return {**TOOL._models(), **TOOL._state_models()}[name]


def _eager(model: str) -> list[Any]:
    """Outputs of two successive eager calls, computed now with the fixture's own model."""
    ctor, calls = _model(model)
    torch.manual_seed(0)
    m = ctor().eval()
    with torch.no_grad():
        return [m(*c) for c in calls]


def _run(module: Any, model: str) -> list[Any]:
    _, calls = _model(model)
    outs = []
    for c in calls:
        (out,) = module.forward(list(c))
        outs.append(out)
    return outs


@pytest.mark.parametrize("name", RUNNABLE)
def test_runtime_matches_eager_over_two_calls(name: str) -> None:
    model = FILES[name]["model"]
    got = _run(portable_lib._load_for_executorch(str(ET_FIXTURES / name)), model)
    want = _eager(model)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w)
    if model in STATEFUL:
        assert not torch.equal(got[0], got[1])  # the second call saw the state the first one left


@pytest.mark.parametrize("model", ["add", "mlp", "buffer", "kvcache"])
def test_packed_then_extracted_for_avx2_runs(tmp_path: Path, model: str) -> None:
    portable = ET_FIXTURES / f"{model}_portable.pte"
    xnn = ET_FIXTURES / f"{model}_xnnpack.pte"
    dest = fatpte.pack(
        [pte_specialization(portable),
         pte_specialization(xnn, priority=10, requires={"arch": ["x86_64"], "cpu_features": ["avx2", "fma"]})],
        tmp_path / "m.nfat",
    )
    with fatpte.open(dest) as c:
        chosen = fatpte.select(c, fatpte.DeviceProfile.load("x86-64-v3")).chosen
    out = fatpte.extract(dest, chosen.name, tmp_path / "out.pte")
    assert out.read_bytes() == xnn.read_bytes()
    got = _run(portable_lib._load_for_executorch(str(out)), model)
    for g, w in zip(got, _eager(model), strict=True):
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("model", ["buffer", "kvcache", "kvpair"])
def test_default_exports_pack_by_file_name_and_the_extracted_programs_run(tmp_path: Path, model: str) -> None:
    """ExecuTorch's default export (no buffer names): `fatpte pack` takes the portable, XNNPACK and
    native files with nothing else, and the portable and XNNPACK entries extracted from the container
    run with outputs equal to eager PyTorch over two calls (the native backend is not registered
    in the 1.5.1 Python runtime)."""
    from click.testing import CliRunner

    from fatpte.cli.main import main

    files = {b: ET_FIXTURES / f"{model}_{b}_default.pte" for b in ("portable", "xnnpack", "native")}
    dest = tmp_path / "m.nfat"
    result = CliRunner().invoke(main, ["pack", "-o", str(dest), *map(str, files.values())])
    assert result.exit_code == 0, result.output
    for backend in ("portable", "xnnpack"):
        out = fatpte.extract(dest, backend, tmp_path / f"{backend}.pte")
        assert out.read_bytes() == files[backend].read_bytes()
        got = _run(portable_lib._load_for_executorch(str(out)), model)
        for g, w in zip(got, _eager(model), strict=True):
            torch.testing.assert_close(g, w)
        assert not torch.equal(got[0], got[1])


def test_external_weights_load_from_the_ptd() -> None:
    name = "mlp_portable_external.pte"
    (ptd,) = FILES[name]["external_data"]
    module = portable_lib._load_for_executorch(str(ET_FIXTURES / name), str(ET_FIXTURES / ptd))
    for g, w in zip(_run(module, "mlp"), _eager("mlp"), strict=True):
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("name", sorted(FILES))
def test_executorch_deserializer_agrees(name: str) -> None:
    from executorch.exir._serialize._program import deserialize_pte_binary

    data = (ET_FIXTURES / name).read_bytes()
    pte_file = deserialize_pte_binary(data)
    theirs = pte_file.program
    ours = read_program(data)
    assert [p.name for p in theirs.execution_plan] == [m.name for m in ours.methods]
    for tp, op in zip(theirs.execution_plan, ours.methods, strict=True):
        assert list(tp.inputs) == list(op.inputs) and list(tp.outputs) == list(op.outputs)
        assert [d.id for d in tp.delegates] == [d.backend_id for d in op.delegates]
        assert len(tp.values) == len(op.value_kinds)
        assert [o.name for o in tp.operators] == [o.split(".")[0] for o in op.operators]
    # Their deserializer moves the program's named data out into a store keyed the same way.
    their_keys = sorted(pte_file.named_data.pte_data) if pte_file.named_data is not None else []
    assert their_keys == sorted(n.key for n in ours.named_data)


@pytest.mark.parametrize("model", ["mlp", "kvcache"])
def test_thinned_fat_delegate_parses_with_executorch(tmp_path: Path, model: str) -> None:
    from executorch.exir._serialize._program import deserialize_pte_binary

    out = thin_pte(ET_FIXTURES / f"{model}_nfat.pte", tmp_path / "thin.pte",
                   device=fatpte.DeviceProfile.load("x86-64-v3"))
    data = out.read_bytes()
    ours = read_program(data)
    (d,) = nfat_delegates(ours)
    theirs = deserialize_pte_binary(data).program
    (plan,) = theirs.execution_plan
    (delegate,) = plan.delegates
    assert delegate.id == "NfatNativeBackend"
    # Their deserializer inlines segment payloads; the bytes must be our thinned container.
    ref = delegate.processed
    payload = bytes(theirs.backend_delegate_data[ref.index].data)
    assert payload == bytes(ours.payload(d))
    with fatpte.Container.from_buffer(payload) as c:
        assert [e.name for e in c.entries] == ["native-avx2"]


# Programs whose named data the XNNPACK lowering puts in the .pte (the native backend, whose
# programs have named data too, is not registered in the 1.5.1 Python runtime, so cannot run).
SHARED = sorted(f["model"] for n, f in FILES.items() if f["backend"] == "xnnpack" and f["buffer_names"]
                and f["model"] != "kvpair" and read_program((ET_FIXTURES / n).read_bytes()).named_data)


def test_the_shared_named_data_cases_cover_several_delegates_and_state() -> None:
    assert SHARED == ["kvcache", "mlp"]


@pytest.mark.parametrize("model", SHARED)
def test_moved_named_data_runs_from_the_written_ptd(tmp_path: Path, model: str) -> None:
    xnn = ET_FIXTURES / f"{model}_xnnpack.pte"
    dest = fatpte.pack(
        [pte_specialization(ET_FIXTURES / f"{model}_portable.pte"),
         pte_specialization(xnn, priority=10, requires={"arch": ["x86_64"], "cpu_features": ["avx2", "fma"]},
                            share_named_data=True)],
        tmp_path / "m.nfat",
    )
    with fatpte.open(dest) as c:
        chosen = fatpte.select(c, fatpte.DeviceProfile.load("x86-64-v3")).chosen
    out = fatpte.extract(dest, chosen.name, tmp_path / "out.pte")
    written = entry_data_file(dest, chosen.name, tmp_path / "out.ptd")
    assert written.path is not None and written.keys
    assert out.read_bytes() != xnn.read_bytes() and read_program(out.read_bytes()).named_data == ()
    got = _run(portable_lib._load_for_executorch(str(out), str(written.path)), model)
    for g, w in zip(got, _eager(model), strict=True):
        torch.testing.assert_close(g, w)
    if model == "kvcache":
        assert not torch.equal(got[0], got[1])
    # The keys really come from the .ptd: without it the delegates cannot find their constants.
    with pytest.raises(RuntimeError):
        _run(portable_lib._load_for_executorch(str(out)), model)
    # ExecuTorch's deserializer reads the rewritten program: no named data, the same delegates.
    from executorch.exir._serialize._program import deserialize_pte_binary

    pte_file = deserialize_pte_binary(out.read_bytes())
    assert pte_file.named_data is None or not pte_file.named_data.pte_data
    theirs = pte_file.program
    before = read_program(xnn.read_bytes())
    assert [d.id for d in theirs.execution_plan[0].delegates] == [d.backend_id for d in before.methods[0].delegates]
    inline = theirs.backend_delegate_data  # their deserializer inlines segment payloads
    payloads = [bytes(inline[d.processed.index].data) for d in theirs.execution_plan[0].delegates]
    assert payloads == [bytes(before.payload(d)) for d in before.methods[0].delegates]


def test_ptd_weights_packed_then_written_again_load(tmp_path: Path) -> None:
    name = "mlp_portable_external.pte"
    (ptd,) = FILES[name]["external_data"]
    dest = fatpte.pack([pte_specialization(ET_FIXTURES / name, data_files=[ET_FIXTURES / ptd])], tmp_path / "e.nfat")
    out = fatpte.extract(dest, "portable", tmp_path / "e.pte")
    assert out.read_bytes() == (ET_FIXTURES / name).read_bytes()
    written = entry_data_file(dest, "portable", tmp_path / "e.ptd")
    assert written.path is not None
    module = portable_lib._load_for_executorch(str(out), str(written.path))
    for g, w in zip(_run(module, "mlp"), _eager("mlp"), strict=True):
        torch.testing.assert_close(g, w)


def test_executorch_python_loaders_take_bytes_not_the_zero_copy_view(tmp_path: Path) -> None:
    """docs/python-api.md: `c.payload(...)` is a memoryview, which ExecuTorch's Python loaders
    refuse; `bytes(view)` is what they take."""
    from executorch.runtime import Runtime

    out = fatpte.pack([pte_specialization(ET_FIXTURES / "add_portable.pte")], tmp_path / "m.nfat")
    with fatpte.open(out) as c:
        chosen = fatpte.select(c, fatpte.DeviceProfile.host()).chosen
        view = c.payload(chosen, verify=True)
        with pytest.raises(TypeError):
            portable_lib._load_for_executorch_from_buffer(view)
        with pytest.raises(TypeError):
            Runtime.get().load_program(view)
        program = bytes(view)
    x, y = (_tensor(t) for t in FILES["add_portable.pte"]["calls"][0]["inputs"])
    (got,) = Runtime.get().load_program(program).load_method("forward").execute([x, y])
    assert torch.equal(got, x + y)


@pytest.mark.parametrize("name", ["add.ptn", "buffer.ptn", "mlp.ptn", "tied.ptn"])
def test_a_packed_ptn_extracts_to_what_executorch_reads(tmp_path: Path, name: str) -> None:
    """A .ptn packed whole comes back byte for byte, and ExecuTorch's own reader finds in it the
    tensors fatpte's reader locates (aliases resolved to their owner's bytes)."""
    from executorch.exir._serialize._ptn import read_ptn as et_read_ptn

    from fatpte.executorch import read_ptn
    from fatpte.ops.pte_specialize import ptn_specialization

    out = fatpte.pack([ptn_specialization(ET_FIXTURES / name)], tmp_path / "p.nfat")
    fatpte.extract(out, "native", tmp_path / "x.ptn")
    data = (tmp_path / "x.ptn").read_bytes()
    assert data == (ET_FIXTURES / name).read_bytes()
    ptg, constants = et_read_ptn(str(tmp_path / "x.ptn"))
    package = read_ptn(data)
    member = package.member("program.ptg")
    assert member is not None and data[member.offset:member.offset + member.size] == ptg
    assert {t.key for t in package.tensors} == set(constants)
    for t in package.tensors:
        expected = constants[t.key].contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        assert data[t.offset:t.offset + t.size] == expected
        assert list(constants[t.key].shape) == list(t.shape)


def test_fatpte_device_lists_the_runtimes_backends_and_selection_uses_them(tmp_path: Path) -> None:
    """`fatpte device` asks ExecuTorch's Python runtime; its XNNPACK backend is registered and the
    native backend is not (1.5.1), so a profile made there never gets the native entry."""
    import json as _json

    from click.testing import CliRunner

    from fatpte.cli.main import main
    from fatpte.device.profile import DeviceProfile

    result = CliRunner().invoke(main, ["device", "--json"])
    assert result.exit_code == 0, result.output
    profile = DeviceProfile.from_json(_json.loads(result.stdout))
    assert profile.executorch_backends is not None
    assert set(profile.executorch_backends) == set(portable_lib._get_registered_backend_names())
    assert "XnnpackBackend" in profile.executorch_backends and "NativeBackend" not in profile.executorch_backends
    host = tmp_path / "host.json"
    host.write_text(result.stdout)
    files = [str(ET_FIXTURES / f"kvpair_{b}_default.pte") for b in ("native", "portable", "xnnpack")]
    dest = tmp_path / "m.nfat"
    assert CliRunner().invoke(main, ["pack", "-o", str(dest), *files]).exit_code == 0
    chosen = CliRunner().invoke(main, ["select", str(dest), "--device", str(host), "--prefer", "native",
                                       "--explain"])
    assert chosen.exit_code == 0
    assert chosen.stdout.splitlines()[1] == "chosen: xnnpack [xnnpack]"
    assert "executorch_backends: needs NativeBackend; the device has no NativeBackend" in chosen.stdout
