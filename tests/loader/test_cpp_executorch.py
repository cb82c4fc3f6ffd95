"""`fatpte-run` runs real ExecuTorch programs from a container (issue 13).

Every committed fixture model (tests/fixtures/executorch/: add, mlp, the stateful buffer model,
the KV cache; real ExecuTorch 1.5.1 exports) is packed with its XNNPACK lowering preferred and its
portable lowering as the fallback, and run through the C++ loader and ExecuTorch's own runtime and
libraries (the SDK of the pinned wheel, `make executorch-sdk`): XNNPACK is chosen when its library
is there, portable otherwise, and every call's outputs equal the eager outputs torch recorded
(1e-5 relative), two calls in order on one loaded method, so the state of the buffer and KV-cache
models carries over. Also: XNNPACK weights moved to the container's shared named data run with no
.ptd, and a key missing from such a container fails naming it; a damaged payload or segment is
refused by its CRC32C before ExecuTorch gets its bytes; a program ExecuTorch refuses, or a
delegate it cannot initialise, falls back with ExecuTorch's error recorded.

Containers are packed with the command line (`python -m fatpte pack`); the two programs that
fatpte's packer would refuse to read are patched into a packed container, which is then resealed
with the layout's constants. The release and ASan builds both run. Skipped with the reason when the loader is not built with the ExecuTorch runner;
`make test` builds it first.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import crc32c
import pytest
from flatbuffers import table

import fatpte
from fatpte.format import layout as L
from tests.builds import SDK_LIB
from tests.paths import ROOT
from tests.scripts import load_script

pytestmark = pytest.mark.loader_build("fatpte-run", sdk=True)  # `exe`: tests/loader/conftest.py
FATPTE = [sys.executable, "-m", "fatpte"]
ENTRY = L.RECORDS["v2_entry"]
HEADER = L.RECORDS["v2_header"]


def _example() -> ModuleType:
    return load_script("loader/examples/executorch_example.py")


def run(exe: Path, container: Path, calls: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _example().run(exe, container, calls, *args)  # type: ignore[no-any-return]


def outputs(proc: subprocess.CompletedProcess[str]) -> tuple[str, list[list[dict[str, Any]]]]:
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    return doc["chosen"], [call["outputs"] for call in doc["calls"]]


def info(container: Path) -> dict[str, Any]:
    out = subprocess.run([*FATPTE, "info", str(container), "--json"], check=True, capture_output=True, text=True)
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


@pytest.mark.parametrize("model", ["add", "mlp", "buffer", "kvcache"])
def test_every_fixture_runs_xnnpack_then_portable_with_the_eager_outputs(exe: Path, tmp_path: Path,
                                                                         model: str) -> None:
    ex = _example()
    container = ex.pack(model, tmp_path / f"{model}.nfat")
    calls = ex.write_calls(model, tmp_path / "calls.json")
    want = ex.recorded_outputs(model)
    assert len(want) == 2  # two calls in order: the buffer and the KV cache carry state between them

    chosen, got = outputs(run(exe, container, calls, "--json"))
    assert chosen == "xnnpack"
    assert ex.mismatches(got, want) == []

    withheld = run(exe, container, calls, "--backend-lib", "XnnpackBackend=", "--explain")
    assert withheld.returncode == 0, withheld.stderr
    # The manifest (revision 2) says which backends the program needs: the entry is skipped before
    # a byte of its payload is read.
    assert ("dispatch: xnnpack [xnnpack]: needs ExecuTorch backend XnnpackBackend: withheld by the caller "
            "(--backend-lib XnnpackBackend=) (the manifest's executorch_backends; the program was not read)"
            ) in withheld.stdout
    assert "dispatch: portable [portable]: loaded" in withheld.stdout
    chosen, got = outputs(run(exe, container, calls, "--backend-lib", "XnnpackBackend=", "--json"))
    assert chosen == "portable"
    assert ex.mismatches(got, want) == []


def test_state_carries_over_on_one_loaded_method(exe: Path, tmp_path: Path) -> None:
    # Calling twice on one method is not calling twice from scratch: the buffer model's second
    # output differs from the first call's output for the second call's input run alone.
    ex = _example()
    container = ex.pack("buffer", tmp_path / "buffer.nfat")
    calls = json.loads(ex.write_calls("buffer", tmp_path / "calls.json").read_text())
    alone = tmp_path / "second-alone.json"
    alone.write_text(json.dumps(calls[1:]))
    _, both = outputs(run(exe, container, tmp_path / "calls.json", "--json"))
    _, single = outputs(run(exe, container, alone, "--json"))
    assert ex.mismatches([both[1]], [single[0]]) != []
    assert ex.mismatches(both, ex.recorded_outputs("buffer")) == []


def test_missing_library_is_skipped_with_where_it_was_looked_for(exe: Path, tmp_path: Path) -> None:
    ex = _example()
    container = ex.pack("mlp", tmp_path / "mlp.nfat")
    calls = ex.write_calls("mlp", tmp_path / "calls.json")
    only = tmp_path / "empty"
    only.mkdir()
    kernels = f"kernels={SDK_LIB / 'libexecutorch_kernels_optimized.so'}"
    args = ["--no-default-backends", "--backend-path", str(only), "--backend-lib", kernels]
    proc = run(exe, container, calls, *args, "--explain")
    assert proc.returncode == 0, proc.stderr
    assert (f"dispatch: xnnpack [xnnpack]: needs ExecuTorch backend XnnpackBackend: libexecutorch_backend_xnnpack.so "
            f"not found in {only}") in proc.stdout
    chosen, got = outputs(run(exe, container, calls, *args, "--json"))
    assert chosen == "portable"
    assert ex.mismatches(got, ex.recorded_outputs("mlp")) == []
    # A backend map file says the same as the flags; its relative paths are its folder's.
    backend_map = tmp_path / "backends.json"
    backend_map.write_text(json.dumps({"search_path": [str(SDK_LIB)],
                                       "libraries": {"kernels": "libexecutorch_kernels_optimized.so",
                                                     "XnnpackBackend": "empty/missing.so"}}))
    mapped = run(exe, container, calls, "--no-default-backends", "--backend-map", str(backend_map), "--explain")
    assert mapped.returncode == 0, mapped.stderr
    assert f"XnnpackBackend: {tmp_path}/empty/missing.so not found at {tmp_path}/empty/missing.so" in mapped.stdout
    # Nothing that fits can be loaded: exit 3, every attempt in the message.
    nothing = run(exe, container, calls, *args, "--exclude", "portable")
    assert nothing.returncode == 3
    assert "E0901" in nothing.stderr and "libexecutorch_backend_xnnpack.so not found in" in nothing.stderr


def test_kernels_withheld_fail_with_executorch_naming_the_operator(exe: Path, tmp_path: Path) -> None:
    ex = _example()
    container = ex.pack("mlp", tmp_path / "mlp.nfat", backends=("portable",))
    calls = ex.write_calls("mlp", tmp_path / "calls.json")
    proc = run(exe, container, calls, "--backend-lib", "kernels=")
    assert proc.returncode == 3
    assert "executorch operators 'kernels': withheld by the caller" in proc.stderr
    assert "load_method): error 0x14 OperatorMissing: " in proc.stderr
    assert "Missing operator: [0] aten::" in proc.stderr


def test_shared_named_data_runs_with_no_ptd_and_a_missing_key_is_named(exe: Path, tmp_path: Path) -> None:
    ex = _example()
    for model in ("mlp", "kvcache"):
        container = ex.pack(model, tmp_path / f"{model}-shared.nfat", share_named_data=True)
        keys = info(container)["entries"][0]["named_data"]
        assert keys, "the XNNPACK program's constants moved to the container"
        calls = ex.write_calls(model, tmp_path / f"{model}.json")
        proc = run(exe, container, calls, "--explain")
        assert f"named data: {len(keys)} key" in proc.stdout
        chosen, got = outputs(run(exe, container, calls, "--json"))
        assert chosen == "xnnpack"
        assert ex.mismatches(got, ex.recorded_outputs(model)) == []
    assert not list(tmp_path.glob("*.ptd"))

    # The same container with one key taken out (unpack, drop it from pack.toml, pack again).
    unpacked = tmp_path / "unpacked"
    subprocess.run([*FATPTE, "unpack", "-q", str(tmp_path / "kvcache-shared.nfat"), "-o", str(unpacked)], check=True)
    toml = unpacked / "pack.toml"
    text = toml.read_text()
    key = info(tmp_path / "kvcache-shared.nfat")["entries"][0]["named_data"][0]
    lines = [line for line in text.splitlines() if not line.startswith(f"{key} = ")]
    toml.write_text("\n".join(line.replace(f'"{key}", ', "").replace(f', "{key}"', "") for line in lines) + "\n")
    missing = tmp_path / "missing.nfat"
    subprocess.run([*FATPTE, "pack", "-q", "-o", str(missing), "--from", str(toml)], check=True)
    assert key not in json.dumps(info(missing))
    proc = run(exe, missing, tmp_path / "kvcache.json", "--exclude", "portable")
    assert proc.returncode == 3, proc.stdout
    assert (f"E0707 (named_data): the program asks for named-data key '{key}', which the container does not "
            "hold for this entry") in proc.stderr
    assert "AddressSanitizer" not in proc.stderr
    # Without --exclude, the portable entry (no named data) is the fallback.
    chosen, got = outputs(run(exe, missing, tmp_path / "kvcache.json", "--json"))
    assert chosen == "portable"


def test_external_weights_run_from_the_container_with_their_layouts(exe: Path, tmp_path: Path) -> None:
    # A portable program whose weights ExecuTorch exported to a .ptd: packed with --data, the
    # tensors become the container's named data with their layouts (manifest revision 2), which
    # ExecuTorch checks against the program before it takes the bytes. No .ptd at run time.
    ex = _example()
    fixtures = ex.FIXTURES
    ptd = fixtures / "mlp_portable_external._default_external_constant.ptd"
    container = tmp_path / "external.nfat"
    subprocess.run([*FATPTE, "pack", "-q", "-o", str(container), "--data", str(ptd),
                    str(fixtures / "mlp_portable_external.pte")], check=True)
    keys = [nd["key"] for nd in info(container)["named_data"]]
    assert keys
    calls = tmp_path / "calls.json"
    calls.write_text(json.dumps(ex.fixture("mlp_portable_external.pte")["calls"]))
    proc = run(exe, container, calls, "--explain")
    assert proc.returncode == 0, proc.stderr
    assert f"named data: {len(keys)} keys of the container" in proc.stdout
    chosen, got = outputs(run(exe, container, calls, "--json"))
    assert chosen == "portable"
    want = [call["outputs"] for call in ex.fixture("mlp_portable_external.pte")["calls"]]
    assert ex.mismatches(got, want) == []


def _corrupt(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_damaged_payload_or_segment_is_refused_by_its_checksum(exe: Path, tmp_path: Path) -> None:
    ex = _example()
    good = ex.pack("mlp", tmp_path / "good.nfat", share_named_data=True)
    calls = ex.write_calls("mlp", tmp_path / "calls.json")
    doc = info(good)
    entry, segment = doc["entries"][0], doc["segments"][0]
    assert entry["name"] == "xnnpack"

    payload = tmp_path / "payload.nfat"
    shutil.copy(good, payload)
    _corrupt(payload, entry["offset"] + entry["size"] // 2)
    proc = run(exe, payload, calls, "--explain")
    assert proc.returncode == 1
    record = 64 + 104 * entry["index"] + 88  # the header, then entry records; checksum at 88 (specs/nfat.md)
    assert (f"E0208 at {record:#x} (entries[0].checksum): payload of 'xnnpack' "
            f"({entry['offset']:#x}..{entry['offset'] + entry['size']:#x}) has CRC32C ") in proc.stderr
    assert "dispatch:" not in proc.stdout  # stopped, not a fallback

    seg = tmp_path / "segment.nfat"
    shutil.copy(good, seg)
    _corrupt(seg, segment["offset"])
    proc = run(exe, seg, calls)
    assert proc.returncode == 1
    record = 64 + 104 * len(doc["entries"]) + 32 * segment["index"] + 20  # segment records follow; checksum at 20
    assert (f"E0305 at {record:#x} (segments[0].checksum): segment 0 "
            f"({segment['offset']:#x}..{segment['offset'] + segment['size']:#x}) has CRC32C ") in proc.stderr


def _segment_fields(program: bytes, index: int) -> tuple[int, int]:
    """segments[index] of an ExecuTorch program's flatbuffer (schema/program.fbs: Program field 4
    `segments`, DataSegment fields 0 `offset` and 1 `size`): its offset value and where its size
    lies in the file."""
    root = table.Table(bytearray(program), struct.unpack_from("<I", program, 0)[0])
    vector = root.Offset(4 + 2 * 4)
    assert vector != 0, "the program has no segments"
    assert index < root.VectorLen(vector)
    element = table.Table(root.Bytes, root.Indirect(root.Vector(vector) + 4 * index))
    offset_field, size_field = element.Offset(4), element.Offset(6)
    assert size_field != 0, f"segments[{index}] is empty"
    offset = struct.unpack_from("<Q", program, element.Pos + offset_field)[0] if offset_field else 0
    return offset, int(element.Pos + size_field)


def _patch_payload(container: Path, name: str, patch: Callable[[bytearray], None],
                   findings: tuple[str, ...] = ()) -> None:
    """Edit entry `name`'s payload in place and reseal the container (the entry's CRC32C, then the
    header's): a program fatpte's packer would refuse to read, made valid as a container."""
    data = bytearray(container.read_bytes())
    entry = next(e for e in info(container)["entries"] if e["name"] == name)
    payload = data[entry["offset"]:entry["offset"] + entry["size"]]
    patch(payload)
    assert len(payload) == entry["size"]
    data[entry["offset"]:entry["offset"] + entry["size"]] = payload
    record = L.V2_HEADER_SIZE + entry["index"] * L.V2_ENTRY_SIZE
    struct.pack_into("<I", data, record + ENTRY.offsets["checksum"][0], crc32c.crc32c(bytes(payload)))
    h = dict(zip(HEADER.fields, HEADER.codec.unpack_from(data, 0)))
    end = h["header_size"] + h["entry_count"] * h["entry_size"] + h["segment_count"] * h["segment_entry_size"]
    ck = L.HEADER_CHECKSUM_OFFSET
    struct.pack_into("<I", data, ck, crc32c.crc32c(bytes(data[:ck]) + b"\0\0\0\0" + bytes(data[ck + 4:end])))
    container.write_bytes(bytes(data))
    # The container itself stays valid: fatpte's only findings are the program's own layout (10xx)
    # and those in `findings`, which the runner leaves to ExecuTorch's loader, whose refusal is what
    # these tests watch.
    proc = subprocess.run([*FATPTE, "validate", "--json", str(container)], capture_output=True, check=False)
    found = json.loads(proc.stdout)["findings"]
    assert found and all(1000 <= int(f["code"][1:]) < 1100 or f["code"] in findings for f in found), found


def _refused_portable_falls_back(exe: Path, tmp_path: Path, patch: Callable[[bytearray], None], refusal: str,
                                 findings: tuple[str, ...] = ()) -> None:
    """mlp packed with its portable program preferred (as entry "broken") and edited by `patch`:
    fatpte-run records `refusal` for it and runs XNNPACK, with the eager outputs."""
    ex = _example()
    toml = ex.pack_toml("mlp").replace('name = "portable"', 'name = "broken"\npriority = 20')
    (tmp_path / "pack.toml").write_text(toml)
    container = tmp_path / "refused.nfat"
    subprocess.run([*FATPTE, "pack", "-q", "-o", str(container), "--from", str(tmp_path / "pack.toml")], check=True)
    _patch_payload(container, "broken", patch, findings)
    calls = ex.write_calls("mlp", tmp_path / "calls.json")
    proc = run(exe, container, calls, "--explain")
    assert proc.returncode == 0, proc.stderr
    assert f"dispatch: broken [portable]: {refusal}" in proc.stdout, proc.stdout
    assert "dispatch: xnnpack [xnnpack]: loaded" in proc.stdout
    chosen, got = outputs(run(exe, container, calls, "--json"))
    assert chosen == "xnnpack"
    assert ex.mismatches(got, ex.recorded_outputs("mlp")) == []


def test_a_program_executorch_refuses_falls_back_with_its_error(exe: Path, tmp_path: Path) -> None:
    # The portable program with a constant tensor's data_buffer_idx past the constant segment's
    # offsets: a program fatpte's readers pass (they do not follow data_buffer_idx), which
    # ExecuTorch refuses when it loads the method's constants. (A segment claiming 1 TiB, which
    # this used before, is refused by fatpte's reader first: E1007, as validate refuses it.)
    def constant_past_offsets(program: bytearray) -> None:
        from tests.support.hostile import _first_plan

        for value in _first_plan(bytes(program)).tables(2, "values"):
            tag, tensor = value.union(0, 1, "val")
            if tag == 5 and tensor is not None and tensor.integer(5, "I", "data_buffer_idx") > 0:
                at = tensor.scalar_position(5, "I", "data_buffer_idx")
                assert at is not None
                struct.pack_into("<I", program, at, 1000)
                return
        raise AssertionError("the program has no constant tensor")

    _refused_portable_falls_back(exe, tmp_path, constant_past_offsets, "ExecuTorch could not load method 'forward' "
                                 "(load_method): error 0x12 InvalidArgument: Constant segment buffer index 1000",
                                 findings=("E1104",))


def _first_tensor_sizes(program: bytes) -> tuple[int, int]:
    """Where the sizes of the first tensor value of rank 2 or more lie in an ExecuTorch program
    (schema/program.fbs: Program field 1 `execution_plan`, ExecutionPlan field 2 `values`, EValue's
    union `val` (type slot 0, 5 Tensor; value slot 1), Tensor field 2 `sizes`): the position of its
    first element and the rank."""
    root = table.Table(bytearray(program), struct.unpack_from("<I", program, 0)[0])
    plans = root.Offset(4 + 2 * 1)
    plan = table.Table(root.Bytes, root.Indirect(root.Vector(plans)))
    values = plan.Offset(4 + 2 * 2)
    for i in range(plan.VectorLen(values)):
        value = table.Table(root.Bytes, plan.Indirect(plan.Vector(values) + 4 * i))
        kind = value.Offset(4)
        if kind == 0 or program[value.Pos + kind] != 5:
            continue
        tensor = table.Table(root.Bytes, value.Indirect(value.Pos + value.Offset(6)))
        sizes = tensor.Offset(4 + 2 * 2)
        if sizes and tensor.VectorLen(sizes) >= 2:
            return tensor.Vector(sizes), tensor.VectorLen(sizes)
    raise AssertionError("the program has no tensor value of rank 2 or more")


def test_a_program_executorch_validates_falls_back_with_its_error(exe: Path, tmp_path: Path) -> None:
    # A tensor of negative size: a well-formed flatbuffer, which ExecuTorch's validate_program (the
    # half of InternalConsistency the runner calls itself before Program::load with Minimal) refuses,
    # except for a dynamic-shape input, whose set_input then aborts; so fatpte's reader refuses it
    # first, for every tensor (E1008, issue 42 point 9), before anything sizes a buffer from it.
    def negative(program: bytearray) -> None:
        at, _ = _first_tensor_sizes(bytes(program))
        struct.pack_into("<i", program, at, -1)

    _refused_portable_falls_back(exe, tmp_path, negative, "fatpte refused the ExecuTorch program: E1008 at 0x")


def test_a_delegate_that_fails_to_initialise_falls_back_with_its_error(exe: Path, tmp_path: Path) -> None:
    ex = _example()
    container = ex.pack("add", tmp_path / "bad-delegate.nfat")

    def break_xnnpack_header(program: bytearray) -> None:
        # The delegate's payload is the program's one non-empty segment (segments[0] is empty): the
        # XNNPACK header (XH00) at its start, the segment data starting at segment_base_offset.
        assert program[8:12] == b"eh00"
        start = struct.unpack_from("<Q", program, 24)[0] + _segment_fields(bytes(program), 1)[0]
        assert program[start + 4:start + 8] == b"XH00"
        struct.pack_into("<I", program, start + 10, 0xFFFFFF00)  # flatbuffer_offset far past the payload

    _patch_payload(container, "xnnpack", break_xnnpack_header)
    calls = ex.write_calls("add", tmp_path / "calls.json")
    proc = run(exe, container, calls, "--explain")
    assert proc.returncode == 0, proc.stderr
    assert "dispatch: xnnpack [xnnpack]: ExecuTorch could not load method 'forward' (load_method): error 0x" in proc.stdout
    assert "XnnpackBackend" in proc.stdout
    assert "dispatch: portable [portable]: loaded" in proc.stdout


def test_methods_inputs_and_errors(exe: Path, tmp_path: Path) -> None:
    ex = _example()
    container = ex.pack("kvcache", tmp_path / "kv.nfat")
    calls = ex.write_calls("kvcache", tmp_path / "calls.json")
    # A method the program does not have: every entry is skipped, exit 3.
    proc = run(exe, container, calls, "--method", "decode")
    assert proc.returncode == 3
    assert "the program has no method 'decode' (it has 'forward')" in proc.stderr
    # A call that does not fit the method: exit 2, naming the call and the input.
    bad = json.loads(calls.read_text())
    bad[0]["inputs"][1]["dtype"] = "int32"
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps(bad))
    proc = run(exe, container, wrong)
    assert proc.returncode == 2
    assert "call 0: E0702 (inputs[1]): input 1 of the method is int64; the call gives int32" in proc.stderr
    proc = run(exe, container, tmp_path / "absent.json")
    assert proc.returncode == 4
    # An empty list of calls loads the entry and runs nothing.
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    proc = run(exe, container, empty)
    assert proc.returncode == 0 and proc.stdout == "ran: xnnpack [xnnpack]\n"
    # The text output: one line per output with its dtype and shape.
    proc = run(exe, container, calls)
    assert proc.stdout.splitlines()[1].startswith("call 0: output 0: float32 [1, 1, 8] 1.04053")


def test_named_device_profiles_and_help(exe: Path, tmp_path: Path) -> None:
    ex = _example()
    container = ex.pack("add", tmp_path / "add.nfat")
    calls = ex.write_calls("add", tmp_path / "calls.json")
    proc = run(exe, container, calls, "--device", "x86-64-v3", "--explain")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("device 'x86-64-v3': linux x86_64\n")
    proc = run(exe, container, calls, "--device", "no-such-device")
    assert proc.returncode == 2
    assert "no device profile named 'no-such-device' in " in proc.stderr and "x86-64-v3" in proc.stderr
    helped = subprocess.run([str(exe), "--help"], check=True, capture_output=True, text=True)
    for option in ("--inputs", "--method", "--backend-lib", "--backend-map", "--backend-path", "--device", "--json",
                   "--explain"):
        assert option in helped.stdout


def test_an_unaligned_program_is_copied_before_anything_reads_it(exe: Path, tmp_path: Path) -> None:
    """Issue 33 U1: a valid container whose ET12 entry has alignment 1 at an odd offset. The
    program is copied into an aligned buffer before fatpte's own reader verifies its flatbuffer
    (which reads it with aligned loads: UBSan stopped the ASan build), and runs."""
    from fatpte.ops.packing import pack
    from fatpte.ops.specialization import Specialization

    ex = _example()
    program = (ROOT / "tests" / "fixtures" / "executorch" / "mlp_portable.pte").read_bytes()
    container = Path(pack([Specialization("filler", b"\x00" * 3, name="filler", alignment=1),
                           Specialization("portable", program, name="mlp", alignment=1, priority=1)],
                          tmp_path / "odd.nfat", alignment=1))
    with fatpte.open(container) as c:
        assert c.entry("mlp").offset % 2 == 1
    calls = ex.write_calls("mlp", tmp_path / "calls.json")
    proc = run(exe, container, calls, "--explain")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "bytes as ExecuTorch needs: copied into an aligned buffer" in proc.stdout
    chosen, got = outputs(run(exe, container, calls, "--json"))
    assert chosen == "mlp"
    assert ex.mismatches(got, ex.recorded_outputs("mlp")) == []


@pytest.mark.parametrize(("shape", "why"), [
    ([2147483647, 2147483647, 2147483647], "has more elements than 64 bits count"),
    ([0, 2147483647], "in dimension 1; the method's is"),
    ([1, 2147483647], "holds 0 elements"),
])
def test_a_call_is_bounded_by_the_method_s_own_sizes(exe: Path, tmp_path: Path, shape: list[int], why: str) -> None:
    """Issue 33 I1: a shape whose element count overflows, or past the method's sizes, is refused with
    the field before anything is staged (it used to wrap to 0 elements and loop over the real count)."""
    ex = _example()
    container = ex.pack("mlp", tmp_path / "mlp.nfat")
    calls = tmp_path / "calls.json"
    calls.write_text(json.dumps([{"inputs": [{"dtype": "float32", "shape": shape, "values": []}]}]))
    proc = run(exe, container, calls)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert why in proc.stderr
    assert "calls[0].inputs[0]" in proc.stderr or "inputs[0]" in proc.stderr
