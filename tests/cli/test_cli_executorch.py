"""The command line on ExecuTorch files (fatpte/cli/executorch_files.py): `info` on .pte, .ptd and
delegate payloads, `pack` of whole .pte files (and --data), `thin`, `validate` and `select` on
programs with NFAT delegates; over the committed fixtures in tests/fixtures/executorch/."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import fatpte
from fatpte.cli.main import main
from fatpte.cli.schema import JSON_FIELDS
from fatpte.executorch import describe, program_signature, read_program
from tests.paths import ET_FIXTURES

INDEX: dict[str, Any] = json.loads((ET_FIXTURES / "fixtures.json").read_text(encoding="utf-8"))["files"]
PROGRAMS = sorted(INDEX)
FAT = sorted(n for n, f in INDEX.items() if f["backend"] == "nfat")
PLAIN = sorted(n for n, f in INDEX.items() if f["backend"] != "nfat")


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def fields(key: str) -> set[str]:
    return {f for f, _ in JSON_FIELDS[key][1]}


def _tensor(t: dict[str, Any]) -> str:
    return f"{t['dtype']}[{', '.join(str(d) for d in t['shape'])}]"


TIE_NATIVE_XNNPACK = ("fatpte: warning: E0709 (specialization): entries 'native' and 'xnnpack' can both be eligible "
                      "on one device and tie on priority (0), delegation (both delegate to a backend) and "
                      "specificity (0): only their place in the table chooses 'native'; give the one to prefer a "
                      "higher priority (`fatpte pack --priority NAME=N`, `priority = N` in a pack.toml)\n")
TIE_XNNPACK_NATIVE = ("fatpte: warning: E0709 (specialization): entries 'xnnpack' and 'native' can both be eligible "
                      "on one device and tie on priority (0), delegation (both delegate to a backend) and "
                      "specificity (0): only their place in the table chooses 'xnnpack'; give the one to prefer a "
                      "higher priority (`fatpte pack --priority NAME=N`, `priority = N` in a pack.toml)\n")


# ---------------------------------------------------------------------------------------------
# info
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PROGRAMS)
def test_info_prints_methods_delegates_named_data_and_the_signature(name: str) -> None:
    path = ET_FIXTURES / name
    code, out, err = run("info", path)
    assert (code, err) == (0, "")
    code, raw, _ = run("info", "--json", path)
    assert code == 0
    data = json.loads(raw)
    lines = out.splitlines()
    assert lines[0] == f"{path}: ExecuTorch pte ({path.stat().st_size} bytes)"
    assert "method forward: " in out
    # The user signature torch.export gave, with buffer write-backs among the buffers only.
    sig = INDEX[name]["signature"]
    top = lines.index(next(line for line in lines if line.startswith("method forward: ")))
    assert lines[top + 1] == "  inputs:  " + ", ".join(_tensor(t) for t in sig["user_inputs"])
    assert lines[top + 2] == "  outputs: " + ", ".join(_tensor(t) for t in sig["user_outputs"])
    # Named where the file records a name (docs/executorch.md, "The program signature").
    named = INDEX[name]["buffer_names"] or INDEX[name]["backend"] in ("native", "nfat")
    buffers = ", ".join(f"{b['name']}: " * named + _tensor(b) for b in sig["mutable_buffers"]) or "none"
    assert lines[top + 3] == f"  mutable buffers: {buffers}"
    delegates = data["methods"][0]["delegates"]
    assert (INDEX[name]["backend"] == "portable") == (delegates == [])
    for d in delegates:
        assert (f"  delegate {d['index']}: {d['backend_id']}, {d['payload_kind']}, {d['size']} bytes "
                f"{d['location']} at {d['offset']:#x}") in lines
    assert f"named data: {len(data['named_data'])}" in lines
    for n in data["named_data"]:
        assert f"  {n['key']}: {n['size']} bytes in segment {n['segment_index']}" in lines


def _nptg_methods(name: str) -> list[dict[str, Any]]:
    """Every NPTG method described in the fixture: in a native delegate or in a fat one's entries."""
    data = json.loads(run("info", "--json", ET_FIXTURES / name)[1])
    out = []
    for d in data["methods"][0]["delegates"]:
        payloads = [e["payload"] for e in d["payload"]["entries"]] if d["payload_kind"] == "NFAT" else [d["payload"]]
        out += [m for p in payloads if p["format"] == "NPTG" for m in p["methods"]]
    return out


@pytest.mark.parametrize("name", [n for n in PROGRAMS if INDEX[n]["backend"] in {"native", "nfat"}])
def test_info_on_an_nptg_payload_keeps_buffer_write_backs_out_of_the_outputs(name: str) -> None:
    sig = INDEX[name]["signature"]
    methods = _nptg_methods(name)
    assert methods  # a native or fat delegate holds at least one NPTG method
    out = run("info", ET_FIXTURES / name)[1]
    for m in methods:
        written = {s["target"] for s in m["output_specs"] if s["kind"] == "BUFFER_MUTATION"}
        assert [_tensor(t) for t in m["outputs"]] == [_tensor(t) for t in sig["user_outputs"]]
        assert [b["fqn"] for b in m["buffers"]] == [b["name"] for b in sig["mutable_buffers"]]
        assert written <= {b["fqn"] for b in m["buffers"]}
        assert not written & {t["name"] for t in m["outputs"]}
        pad = "      " if INDEX[name]["backend"] == "nfat" else "    "
        assert f"{pad}  outputs: " + ", ".join(f"{t['name']}: {_tensor(t)}" for t in m["outputs"]) in out
        bufs = ", ".join(f"{b['fqn']}: {_tensor(b)}" for b in m["buffers"]) or "none"
        assert f"{pad}  mutable buffers: {bufs}" in out


def test_info_shows_the_entries_of_an_nfat_delegate() -> None:
    code, out, _ = run("info", ET_FIXTURES / "kvcache_nfat.pte")
    assert code == 0
    assert "    entry native-avx2: native, NPTG, 3528 bytes, priority 10, requires arch=x86_64, +avx2+fma" in \
        out.splitlines()
    assert "    entry native-generic: native, NPTG, 3528 bytes, priority 0, requires -" in out.splitlines()


@pytest.mark.parametrize("name", PROGRAMS)
def test_info_on_every_program_says_its_backends_and_data_needs(name: str) -> None:
    """Every committed fixture: its signature (above), the ExecuTorch backends it needs, and the keys
    it loads from a data file; for a fat delegate, each entry's requirements and provenance."""
    lines = run("info", ET_FIXTURES / name)[1].splitlines()
    data = json.loads(run("info", "--json", ET_FIXTURES / name)[1])
    backend = INDEX[name]["backend"]
    expected = {"portable": [], "xnnpack": ["XnnpackBackend"], "native": ["NativeBackend"],
                "nfat": ["NfatNativeBackend"], "fat": ["FatpteBackend"]}[backend]
    assert data["executorch_backends"] == expected
    assert ("ExecuTorch backends: " + (", ".join(expected) or "none (portable kernels only)")) in lines
    external = ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"] if INDEX[name]["external_data"] else []
    assert data["external_keys"] == external
    assert any(line.startswith("needs a .ptd: 4 named-data keys") for line in lines) == bool(external)
    if backend == "nfat":
        (entries,) = [d["payload"]["entries"] for d in data["methods"][0]["delegates"]]
        assert [(e["name"], e["requires"], e["provenance"]) for e in entries] == [
            ("native-avx2", "arch=x86_64, +avx2+fma", {}), ("native-generic", "-", {})]
    if backend == "fat":  # fatpte.ops.fat_lowering: one fat delegate per partition XNNPACK took
        for d in data["methods"][0]["delegates"]:
            assert [(e["name"], e["requires"]) for e in d["payload"]["entries"]] == [("xnnpack", "-"), ("portable", "-")]


def test_info_on_a_ptd_lists_keys_and_sizes() -> None:
    path = ET_FIXTURES / "mlp_native_external.native_weights.ptd"
    code, out, _ = run("info", path)
    assert code == 0
    assert out.splitlines()[1:] == ["named data: 4", "  fc1.weight: float32[8, 4] 128 bytes at 0x200",
                                    "  fc1.bias: float32[8] 32 bytes at 0x280",
                                    "  fc2.weight: float32[3, 8] 96 bytes at 0x300",
                                    "  fc2.bias: float32[3] 12 bytes at 0x380"]
    data = json.loads(run("info", "--json", path)[1])
    assert data["kind"] == "ptd"
    assert [(n["key"], n["size"]) for n in data["named_data"]] == [
        ("fc1.weight", 128), ("fc1.bias", 32), ("fc2.weight", 96), ("fc2.bias", 12)]


def _payload_file(tmp_path: Path, fixture: str) -> Path:
    """The first delegate payload of a fixture, as a file of its own."""
    data = (ET_FIXTURES / fixture).read_bytes()
    d = read_program(data).methods[0].delegates[0]
    out = tmp_path / f"{fixture}.payload"
    out.write_bytes(data[d.offset : d.offset + d.size])
    return out


def test_info_on_bare_delegate_payloads(tmp_path: Path) -> None:
    nptg = _payload_file(tmp_path, "buffer_native.pte")
    code, out, _ = run("info", nptg)
    assert code == 0
    assert out.splitlines()[1:4] == ["method forward (6 nodes)", "  inputs:  x: float32[2, 3]",
                                     "  outputs: aten_mul_tensor: float32[2, 3]"]
    assert "  mutable buffers: total: float32[2, 3]" in out.splitlines()
    xnn = _payload_file(tmp_path, "mlp_xnnpack.pte")
    code, out, _ = run("info", xnn)
    assert code == 0
    assert out.splitlines()[1].startswith("XH00 header: flatbuffer ")
    assert json.loads(run("info", "--json", xnn)[1])["format"] == "XH00"


def test_info_json_fields_are_the_documented_ones(tmp_path: Path) -> None:
    seen: set[str] = set()
    files = [ET_FIXTURES / n for n in PROGRAMS] + [ET_FIXTURES / "mlp_native_external.native_weights.ptd",
                                                 ET_FIXTURES / "tied.ptn",
                                                 _payload_file(tmp_path, "buffer_native.pte"),
                                                 _payload_file(tmp_path, "mlp_xnnpack.pte")]
    for path in files:
        data = json.loads(run("info", "--json", path)[1])
        assert set(data) <= fields("info.executorch")
        seen |= set(data)
        if data["kind"] == "pte":
            for m in data["methods"]:
                assert set(m) == fields("info.executorch.methods[]")
                for d in m["delegates"]:
                    assert set(d) | {"payload"} == fields("info.executorch.methods[].delegates[]")
                    assert ("payload" in d) == (d["payload_kind"] in {"NFAT", "NPTG", "XH00"})
    assert seen == fields("info.executorch")
    assert {describe(p).kind for p in files} == {"pte", "ptd", "ptn", "nptg", "xnnpack"}


def test_info_map_is_for_containers_only() -> None:
    code, out, err = run("info", "--map", ET_FIXTURES / "add_portable.pte")
    assert code == 2
    assert out == ""
    assert "is an ExecuTorch file, not a container" in err


def test_info_on_a_damaged_program_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "cut.pte"
    bad.write_bytes((ET_FIXTURES / "add_portable.pte").read_bytes()[:40])
    code, out, err = run("info", bad)
    assert (code, out) == (1, "")
    assert err.startswith(f"{bad}: E10")


def test_info_on_anything_else_is_still_a_bad_container(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pte"
    junk.write_bytes(b"\0" * 64)
    code, _, err = run("info", junk)
    assert code == 1
    assert err.startswith(f"{junk}: E0101 at 0x0 (header.magic): ")


def _imports(*args: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "fatpte", *args], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}


def test_executorch_readers_load_only_for_executorch_files(tmp_path: Path) -> None:
    container = fatpte.pack([fatpte.Specialization("a", b"x")], tmp_path / "c.nfat")
    assert "fatpte.executorch" not in _imports("--help")
    assert "fatpte.executorch" not in _imports("info", str(container))
    assert "fatpte.executorch.describe" in _imports("info", str(ET_FIXTURES / "add_portable.pte"))


# ---------------------------------------------------------------------------------------------
# pack
# ---------------------------------------------------------------------------------------------


def test_pack_programs_derives_kind_and_signature_and_extracts_them_unchanged(tmp_path: Path) -> None:
    out = tmp_path / "mlp.nfat"
    code, stdout, err = run("pack", "-o", out, ET_FIXTURES / "mlp_portable.pte", f"xnnpack={ET_FIXTURES / 'mlp_xnnpack.pte'}")
    assert (code, err) == (0, "")
    assert stdout.startswith(f"wrote {out}: version 2, 2 entries, ")
    signature = program_signature(read_program((ET_FIXTURES / "mlp_xnnpack.pte").read_bytes()))
    with fatpte.open(out) as c:
        assert [(e.name, e.backend_id, e.payload_kind) for e in c.entries] == [
            ("portable", "portable", b"ET12"), ("xnnpack", "xnnpack", b"ET12")]
        assert c.manifest is not None
    info = json.loads(run("info", "--json", out)[1])
    assert [e["payload_kind"] for e in info["entries"]] == ["ET12", "ET12"]
    for name, fixture in (("portable", "mlp_portable.pte"), ("xnnpack", "mlp_xnnpack.pte")):
        got = tmp_path / f"{name}.pte"
        assert run("extract", out, "--name", name, "-o", got)[0] == 0
        assert got.read_bytes() == (ET_FIXTURES / fixture).read_bytes()
    assert signature["methods"][0]["inputs"] == [{"dtype": "float32", "shape": [1, 4]}]


def test_pack_keeps_the_name_and_backend_given(tmp_path: Path) -> None:
    out = tmp_path / "b.nfat"
    code, _, _ = run("pack", "-o", out, f"cpu:portable={ET_FIXTURES / 'buffer_portable.pte'}",
                     ET_FIXTURES / "buffer_native.pte")
    assert code == 0  # the state lives in the program or in the payload: the same signature
    with fatpte.open(out) as c:
        assert [(e.name, e.backend_id) for e in c.entries] == [("cpu", "portable"), ("native", "native")]


@pytest.mark.parametrize("model", ["buffer", "kvcache", "kvpair"])
def test_pack_default_exports_of_a_stateful_model_with_nothing_but_the_file_names(tmp_path: Path,
                                                                                  model: str) -> None:
    """ExecuTorch's default export keeps no buffer names; portable, XNNPACK and native still pack."""
    out = tmp_path / "m.nfat"
    files = [ET_FIXTURES / f"{model}_{b}_default.pte" for b in ("portable", "xnnpack", "native")]
    code, stdout, err = run("pack", "-o", out, *files)
    # XNNPACK and native both delegate: on a device whose runtime has both, only table order
    # chooses between them, which pack says; the portable one ranks below either.
    assert (code, err) == (0, TIE_XNNPACK_NATIVE), err
    assert stdout == f"wrote {out}: version 2, 3 entries, {out.stat().st_size} bytes\n"
    assert run("validate", out)[0] == 0
    with fatpte.open(out) as c:
        assert [e.backend_id for e in c.entries] == ["portable", "xnnpack", "native"]


def test_pack_refuses_a_changed_cache_naming_the_difference(tmp_path: Path) -> None:
    out = tmp_path / "x.nfat"
    code, stdout, err = run("pack", "-o", out, ET_FIXTURES / "kvpair_portable_default.pte",
                            ET_FIXTURES / "kvpair16_xnnpack_default.pte")
    assert (code, stdout) == (1, "")
    assert err.startswith("fatpte: E0411 ") and "'portable' and 'xnnpack'" in err
    assert "float32[1, 1, 8] vs float32[1, 1, 16]" in err
    assert not out.exists()


def test_pack_refuses_backend_ids_that_contradict_the_programs(tmp_path: Path) -> None:
    out = tmp_path / "x.nfat"
    code, stdout, err = run("pack", "-o", out, f"portable={ET_FIXTURES / 'mlp_xnnpack.pte'}",
                            f"xnnpack={ET_FIXTURES / 'mlp_portable.pte'}")
    assert (code, stdout) == (1, "")
    assert err.startswith("fatpte: E1102 (specialization[0].backend_id): ")
    assert "backend id 'portable' names the portable operators, but the program delegates to XnnpackBackend" in err
    assert not out.exists()


def test_add_and_replace_refuse_another_models_program(tmp_path: Path) -> None:
    base = tmp_path / "mlp.nfat"
    assert run("pack", "-o", base, ET_FIXTURES / "mlp_portable.pte", ET_FIXTURES / "mlp_xnnpack.pte")[0] == 0
    code, _, err = run("add", base, f"native={ET_FIXTURES / 'add_native.pte'}", "-o", tmp_path / "a.nfat")
    assert code == 1 and "E0411" in err and not (tmp_path / "a.nfat").exists()
    code, _, err = run("replace", base, ET_FIXTURES / "add_xnnpack.pte", "--name", "xnnpack", "-o", tmp_path / "r.nfat")
    assert code == 1 and "E0411" in err and not (tmp_path / "r.nfat").exists()
    code, _, err = run("replace", base, ET_FIXTURES / "mlp_xnnpack.pte", "--name", "xnnpack", "-o", tmp_path / "r.nfat")
    assert (code, err) == (0, "")


def test_pack_signature_escape_hatches_are_recorded(tmp_path: Path) -> None:
    files = [ET_FIXTURES / "kvpair_portable_default.pte", ET_FIXTURES / "kvpair16_xnnpack_default.pte"]
    assert run("pack", "-o", tmp_path / "x.nfat", *files)[0] == 1
    code, _, err = run("pack", "-o", tmp_path / "from.nfat", "--signature-from", "portable", *files)
    # Packed as asked, with a word: the XNNPACK program's cache is another shape (E1106, issue 39).
    assert code == 0 and err.startswith("fatpte: warning: E1106 (specialization[1].signature): ") and \
        "every call of it will be refused" in err
    code, out, _ = run("info", tmp_path / "from.nfat")
    assert "signature check: the signature of 'portable' given to every entry" in out
    code, _, err = run("pack", "-o", tmp_path / "none.nfat", "--no-signature-check", *files)
    assert (code, err) == (0, "")
    data = json.loads(run("info", "--json", tmp_path / "none.nfat")[1])
    assert [e["signature_check"] for e in data["entries"]] == ["skipped", "skipped"]
    assert run("validate", "--strict", tmp_path / "none.nfat", tmp_path / "from.nfat")[0] == 0
    code, _, err = run("pack", "-o", tmp_path / "y.nfat", "--no-signature-check", "--signature-from", "portable",
                       *files)
    assert code == 2 and "exclude each other" in err
    code, _, err = run("pack", "-o", tmp_path / "y.nfat", "--signature-from", "gpu", *files)
    assert code == 2 and "E0702" in err and "'gpu'" in err


def test_pack_prints_warnings_and_still_packs(tmp_path: Path) -> None:
    out = tmp_path / "w.nfat"
    program = ET_FIXTURES / "mlp_portable.pte"
    code, stdout, err = run("pack", "-o", out, f"portable={program}", f"cpu:portable={program}")
    assert code == 0 and stdout.startswith(f"wrote {out}")
    assert err.startswith("fatpte: warning: E0709 (specialization): entries 'portable' and 'cpu' ")


def test_pack_refuses_two_different_programs_showing_both_signatures(tmp_path: Path) -> None:
    out = tmp_path / "x.nfat"
    code, stdout, err = run("pack", "-o", out, ET_FIXTURES / "mlp_portable.pte", ET_FIXTURES / "add_xnnpack.pte")
    assert (code, stdout) == (1, "")
    assert err.startswith("fatpte: E0411 ")
    assert "'portable' and 'xnnpack'" in err
    assert "[float32[1, 4]] vs [float32[2, 3], float32[2, 3]]" in err
    assert not out.exists()


def test_pack_data_moves_ptd_tensors_into_shared_named_data(tmp_path: Path) -> None:
    out = tmp_path / "ext.nfat"
    ptd = ET_FIXTURES / "mlp_native_external.native_weights.ptd"
    code, _, err = run("pack", "-o", out, ET_FIXTURES / "mlp_portable_external.pte",
                       ET_FIXTURES / "mlp_native_external.pte", "--data", f"native={ptd}", "--data",
                       f"portable={ET_FIXTURES / 'mlp_portable_external._default_external_constant.ptd'}")
    assert (code, err) == (0, ""), err
    info = json.loads(run("info", "--json", out)[1])
    keys = ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
    assert [n["key"] for n in info["named_data"]] == keys
    assert [sorted(e["named_data"]) for e in info["entries"]] == [keys, keys]  # both entries use every key
    assert info["segment_count"] == 4  # the same weights from two .ptd files, stored once
    assert info["named_data_bytes_stored"] == 128 + 32 + 96 + 12
    data = ptd.read_bytes()
    with fatpte.open(out) as c:
        for t in describe(ptd).to_json()["named_data"]:
            assert bytes(c.named_data(t["key"])) == data[t["offset"] : t["offset"] + t["size"]]
    # Without NAME=, each program entry that loads the file's keys gets them: here both.
    again = tmp_path / "all.nfat"
    assert run("pack", "-o", again, ET_FIXTURES / "mlp_portable_external.pte", ET_FIXTURES / "mlp_native_external.pte",
               "--data", ptd)[0] == 0
    assert [n["key"] for n in json.loads(run("info", "--json", again)[1])["named_data"]] == keys


def test_a_bare_data_file_goes_to_the_programs_that_load_its_keys(tmp_path: Path) -> None:
    # The portable program loads its weights from its .ptd; the XNNPACK program holds its own. A
    # bare --data gives the .ptd to the portable entry alone, so the container passes --strict
    # (given to both, the XNNPACK entry would hold named data it never loads: E1105).
    ptd = ET_FIXTURES / "mlp_portable_external._default_external_constant.ptd"
    out = tmp_path / "m.nfat"
    code, _, err = run("pack", "-o", out, ET_FIXTURES / "mlp_portable_external.pte", ET_FIXTURES / "mlp_xnnpack.pte",
                       "--data", ptd)
    assert (code, err) == (0, "")
    entries = json.loads(run("info", "--json", out)[1])["entries"]
    assert [(e["name"], sorted(e["named_data"])) for e in entries] == [
        ("portable", ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]), ("xnnpack", [])]
    code, stdout, _ = run("validate", "--strict", out)
    assert code == 0 and "0 errors, 0 warnings" in stdout
    # Named, the file goes where it is told, and the entry that never loads it is warned about.
    code, _, err = run("pack", "-o", tmp_path / "n.nfat", ET_FIXTURES / "mlp_portable_external.pte",
                       ET_FIXTURES / "mlp_xnnpack.pte", "--data", f"xnnpack={ptd}", "--data", f"portable={ptd}")
    assert code == 0 and "E1105" in err
    # A file no program loads a key of is another model's: refused, naming its keys.
    code, _, err = run("pack", "-o", tmp_path / "x.nfat", ET_FIXTURES / "mlp_xnnpack.pte", "--data", ptd)
    assert code == 2
    assert (f"--data '{ptd}': no ExecuTorch program entry loads a key of it from outside the program (it holds "
            "'fc1.bias', 'fc1.weight', 'fc2.bias', 'fc2.weight'); give --data NAME=FILE to attach it to entry NAME "
            "anyway") in err
    assert not (tmp_path / "x.nfat").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--data", "nobody={ptd}", "{pte}"], "no ExecuTorch program entry is named 'nobody'"),
    (["--data", "{ptd}", "raw={bin}"], "no payload is an ExecuTorch program"),
    (["--data", "={ptd}", "{pte}"], "is not [NAME=]FILE.ptd"),
    (["{bin}"], "is not [NAME:]BACKEND=PAYLOAD, and not an ExecuTorch program or package: a bare path must be"),
    (["{bin}.missing"], "is not [NAME:]BACKEND=PAYLOAD, and not a file: a bare path must be"),
    (["raw"], "is not [NAME:]BACKEND=PAYLOAD, and not a file"),
    (["--share-pte-named-data", "raw={bin}"], "no payload is an ExecuTorch program"),
])
def test_pack_usage_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    raw = tmp_path / "raw.bin"
    raw.write_bytes(b"not a program")
    paths = {"ptd": ET_FIXTURES / "mlp_native_external.native_weights.ptd", "pte": ET_FIXTURES / "mlp_native.pte",
             "bin": raw}
    code, out, err = run("pack", "-o", tmp_path / "x.nfat", *[a.format(**paths) for a in args])
    assert (code, out) == (2, "")
    assert message in err


def test_pack_a_ptn_validates_selects_and_extracts_byte_for_byte(tmp_path: Path) -> None:
    out = tmp_path / "mlp.nfat"
    ptn = ET_FIXTURES / "mlp.ptn"
    code, stdout, err = run("pack", "-o", out, ptn, ET_FIXTURES / "mlp_portable.pte")
    assert (code, err) == (0, ""), err
    assert stdout == f"wrote {out}: version 2, 2 entries, {out.stat().st_size} bytes\n"
    assert run("validate", out)[1] == "checked 1 file: 1 valid, 0 invalid; 0 errors, 0 warnings\n"
    assert run("select", out, "--device", "x86-64-v3", "--prefer", "native")[1] == "native\n"
    code, stdout, _ = run("extract", out, "--device", "x86-64-v3", "--prefer", "native", "-o", tmp_path / "x.ptn")
    assert stdout == f"wrote {tmp_path / 'x.ptn'}: payload of 'native' (native), {ptn.stat().st_size} bytes\n"
    assert (tmp_path / "x.ptn").read_bytes() == ptn.read_bytes()
    info = json.loads(run("info", "--json", out)[1])
    native = info["entries"][0]
    assert (native["name"], native["backend_id"]) == ("native", "native")
    # The same program lowered two ways: one signature, read from program.ptg and from the .pte.
    with fatpte.open(out) as c:
        assert c.manifest is not None
        signatures = [m.signature for m in c.manifest.entries]
        assert signatures[0] == signatures[1] and signatures[0] is not None


def test_pack_toml_reads_a_ptn_signature_and_unpack_names_files_by_kind(tmp_path: Path) -> None:
    for name in ("mlp.ptn", "mlp_portable.pte"):
        shutil.copy(ET_FIXTURES / name, tmp_path / name)
    (tmp_path / "raw.bin").write_bytes(b"r" * 10)
    (tmp_path / "pack.toml").write_text(
        '[[specialization]]\nname = "native"\npayload = "mlp.ptn"\nsignature = "from-payload"\n\n'
        '[[specialization]]\npayload = "mlp_portable.pte"\nsignature = "from-payload"\n\n'
        '[[specialization]]\nbackend_id = "raw"\npayload = "raw.bin"\n')
    out = tmp_path / "t.nfat"
    assert run("pack", "-o", out, "--from", tmp_path / "pack.toml")[0] == 0
    code, _, err = run("unpack", out, "-o", tmp_path / "u")
    assert (code, err) == (0, "")
    assert sorted(p.name for p in (tmp_path / "u" / "payloads").iterdir()) == ["native.ptn", "portable.pte",
                                                                              "raw.bin"]
    assert (tmp_path / "u" / "payloads" / "native.ptn").read_bytes() == (ET_FIXTURES / "mlp.ptn").read_bytes()


def test_pack_data_takes_the_tensors_of_a_ptn(tmp_path: Path) -> None:
    """A .pte that loads its weights by key gets them from a .ptn's program.safetensors, as from a .ptd."""
    out = tmp_path / "ext.nfat"
    code, _, err = run("pack", "-o", out, ET_FIXTURES / "mlp_native_external.pte", "--data", ET_FIXTURES / "mlp.ptn")
    assert (code, err) == (0, ""), err
    data = (ET_FIXTURES / "mlp.ptn").read_bytes()
    tensors = describe(ET_FIXTURES / "mlp.ptn").to_json()["tensors"]
    with fatpte.open(out) as c:
        assert c.manifest is not None
        assert sorted(c.manifest.keys) == [t["key"] for t in tensors]
        for t in tensors:
            assert bytes(c.named_data(t["key"])) == data[t["offset"]:t["offset"] + t["size"]]


def test_pack_data_with_from_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = run("pack", "-o", tmp_path / "x.nfat", "--from", tmp_path / "pack.toml", "--data", "a.ptd")
    assert code == 2
    assert "--data" in err


def test_pack_data_that_is_no_ptd_exits_1(tmp_path: Path) -> None:
    code, _, err = run("pack", "-o", tmp_path / "x.nfat", ET_FIXTURES / "mlp_native.pte", "--data",
                       ET_FIXTURES / "mlp_portable.pte")
    assert code == 1
    assert err.startswith(f"{ET_FIXTURES / 'mlp_portable.pte'}: E1001 ")


def test_pack_share_pte_named_data_then_extract_with_data_out(tmp_path: Path) -> None:
    from fatpte.executorch import read_ptd

    out = tmp_path / "m.nfat"
    code, _, err = run("pack", "-q", "-o", out, "--share-pte-named-data", ET_FIXTURES / "mlp_portable.pte",
                       f"xnnpack={ET_FIXTURES / 'mlp_xnnpack.pte'}", ET_FIXTURES / "mlp_native.pte")
    assert (code, err) == (0, TIE_XNNPACK_NATIVE), err
    info = json.loads(run("info", "--json", out)[1])
    assert info["segment_count"] == 4 and len(info["named_data"]) == 8
    original = (ET_FIXTURES / "mlp_native.pte").read_bytes()
    code, text, err = run("extract", "-q", out, "--name", "native", "-o", tmp_path / "n.pte", "--data-out",
                          tmp_path / "n.ptd")
    assert (code, err) == (0, ""), err
    assert text.splitlines()[1] == f"wrote {tmp_path / 'n.ptd'}: named data of 'native', 4 keys, 780 bytes"
    data = (tmp_path / "n.ptd").read_bytes()
    want = {n.key: original[n.offset : n.offset + n.size] for n in read_program(original).named_data}
    assert {t.key: data[t.offset : t.offset + t.size] for t in read_ptd(data).named_data} == want
    assert read_program((tmp_path / "n.pte").read_bytes()).named_data == ()
    # The portable entry has no named data: no data file is written, and the line says why.
    code, text, err = run("extract", "-q", out, "--name", "portable", "-o", tmp_path / "p.pte",
                          "--data-out", tmp_path / "p.ptd")
    assert (code, err) == (0, ""), err
    assert "wrote no " in text.splitlines()[1] and not (tmp_path / "p.ptd").exists()
    # Without the flag the programs go in unchanged.
    assert run("pack", "-q", "-o", tmp_path / "plain.nfat", ET_FIXTURES / "mlp_native.pte")[0] == 0
    assert run("extract", "-q", tmp_path / "plain.nfat", "--name", "native", "-o", tmp_path / "same.pte")[0] == 0
    assert (tmp_path / "same.pte").read_bytes() == original


def test_extract_data_out_usage(tmp_path: Path) -> None:
    out = tmp_path / "m.nfat"
    assert run("pack", "-q", "-o", out, "--share-pte-named-data", ET_FIXTURES / "mlp_native.pte")[0] == 0
    code, _, err = run("extract", out, "--name", "native", "-o", tmp_path / "a", "--data-out", tmp_path / "a")
    assert code == 2 and "--data-out and -o must be different files" in err
    (tmp_path / "old.ptd").write_bytes(b"keep")
    code, _, err = run("extract", out, "--name", "native", "-o", tmp_path / "b.pte", "--data-out",
                       tmp_path / "old.ptd")
    assert code == 2 and "--force" in err
    assert (tmp_path / "old.ptd").read_bytes() == b"keep" and not (tmp_path / "b.pte").exists()
    code, _, err = run("pack", "-o", tmp_path / "x.nfat", "--from", tmp_path / "pack.toml", "--share-pte-named-data")
    assert code == 2 and "--share-pte-named-data" in err


# ---------------------------------------------------------------------------------------------
# thin
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("device", "flags", "kept", "chosen"), [
    ("raspberry-pi-5", [], "'native-generic'", "native-generic"),
    ("x86-64-v3", [], "'native-avx2', 'native-generic'", "native-avx2"),  # the chosen one and its fallback
    ("x86-64-v3", ["--only-chosen"], "'native-avx2'", "native-avx2"),
])
def test_thin_a_fat_delegate_for_a_device(tmp_path: Path, device: str, flags: list[str], kept: str,
                                          chosen: str) -> None:
    src = ET_FIXTURES / "kvcache_nfat.pte"
    out = tmp_path / "thin.pte"
    code, stdout, err = run("thin", src, "--device", device, *flags, "-o", out)
    assert (code, err) == (0, "")
    assert stdout == (f"wrote {out}: delegate 0 kept {kept}; {out.stat().st_size} bytes "
                      f"(was {src.stat().st_size})\n")
    assert out.stat().st_size <= src.stat().st_size
    program = read_program(out.read_bytes())  # still a valid program, with the same signature
    assert program_signature(program) == program_signature(read_program(src.read_bytes()))
    assert run("select", out, "--device", device)[1] == f"{chosen}\n"
    assert run("validate", out)[0] == 0


def test_thin_by_name_and_refusals(tmp_path: Path) -> None:
    out = tmp_path / "t.pte"
    assert run("thin", ET_FIXTURES / "mlp_nfat.pte", "--name", "native-avx2", "-o", out)[0] == 0
    data = json.loads(run("info", "--json", out)[1])
    assert [e["name"] for e in data["methods"][0]["delegates"][0]["payload"]["entries"]] == ["native-avx2"]
    assert run("thin", ET_FIXTURES / "mlp_nfat.pte", "--name", "native-avx2", "-o", out)[0] == 2  # exists
    plain = tmp_path / "plain.pte"
    code, _, err = run("thin", ET_FIXTURES / "mlp_xnnpack.pte", "--device", "x86-64-v3", "-o", plain)
    assert code == 2
    assert err.startswith(f"{ET_FIXTURES / 'mlp_xnnpack.pte'}: E0704")
    assert not plain.exists()
    code, _, _ = run("thin", ET_FIXTURES / "mlp_nfat.pte", "--device", "x86-64-v3", "--exclude", "native",
                     "-o", plain)
    assert code == 3
    assert not plain.exists()


# ---------------------------------------------------------------------------------------------
# validate
# ---------------------------------------------------------------------------------------------


def test_validate_checks_each_fat_delegate() -> None:
    code, out, err = run("validate", *[ET_FIXTURES / n for n in FAT])
    assert (code, err) == (0, "")
    assert out == f"checked {len(FAT)} files: {len(FAT)} valid, 0 invalid; 0 errors, 0 warnings\n"
    code, out, _ = run("validate", "--json", ET_FIXTURES / "kvcache_nfat.pte")
    report = json.loads(out)
    assert set(report) == fields("validate")
    assert report["path"].startswith(f"{ET_FIXTURES / 'kvcache_nfat.pte'}[delegate 0 NfatNativeBackend at 0x580]")
    assert (report["valid"], report["version"]) == (True, 2)


def test_validate_reports_a_damaged_fat_delegate(tmp_path: Path) -> None:
    src = ET_FIXTURES / "kvcache_nfat.pte"
    d = json.loads(run("info", "--json", src)[1])["methods"][0]["delegates"][0]
    entry = d["payload"]["entries"][0]
    at = d["offset"] + entry["offset"] + entry["size"] - 1  # the last byte of the first entry's payload
    data = bytearray(src.read_bytes())
    original = data[at]
    data[at] ^= 0xFF
    assert data[at] != original
    bad = tmp_path / "bad.pte"
    bad.write_bytes(bytes(data))
    code, out, _ = run("validate", bad)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"{bad}[delegate 0 NfatNativeBackend at 0x580]: E0208 at ")
    assert "(entries[0].checksum)" in lines[0]
    # The two entries hold identical NPTG bytes, stored once: both checksums fail.
    assert "(entries[1].checksum)" in lines[1]
    assert lines[-1] == "checked 1 file: 0 valid, 1 invalid; 2 errors, 0 warnings"


def test_validate_a_plain_program_named_explicitly(tmp_path: Path) -> None:
    plain = ET_FIXTURES / "mlp_xnnpack.pte"
    code, out, err = run("validate", plain)
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        (f"{plain}: E0101 at 0x0 (header.magic): not a container: an ExecuTorch program (ET12) with no delegate "
        "whose payload is an NFAT container (--skip-plain-pte skips such files)"),
        "checked 1 file: 0 valid, 1 invalid; 1 error, 0 warnings"]
    code, out, _ = run("validate", "--skip-plain-pte", plain, ET_FIXTURES / "mlp_nfat.pte")
    assert code == 0
    assert out == "checked 1 file: 1 valid, 0 invalid; 0 errors, 0 warnings\n"
    cut = tmp_path / "cut.pte"
    cut.write_bytes(plain.read_bytes()[:200])
    code, out, _ = run("validate", "--json", cut)
    assert code == 1
    assert json.loads(out)["findings"][0]["code"].startswith("E10")


def test_validate_directories_check_programs_with_fat_delegates_only(tmp_path: Path) -> None:
    root = tmp_path / "models"
    root.mkdir()
    for name in ("add_portable.pte", "add_nfat.pte", "mlp_xnnpack.pte", "mlp_nfat.pte"):
        shutil.copy(ET_FIXTURES / name, root / name)
    (root / "cut.pte").write_bytes((ET_FIXTURES / "add_nfat.pte").read_bytes()[:100])  # unreadable program
    code, out, _ = run("validate", "--json", root)
    assert code == 0
    assert [Path(json.loads(line)["path"].split("[")[0]).name for line in out.splitlines()] == [
        "add_nfat.pte", "mlp_nfat.pte"]


# ---------------------------------------------------------------------------------------------
# select
# ---------------------------------------------------------------------------------------------


def test_select_in_a_fat_delegate() -> None:
    path = ET_FIXTURES / "buffer_nfat.pte"
    assert run("select", path, "--device", "x86-64-v3") == (0, "native-avx2\n", "")
    assert run("select", path, "--device", "apple-m3") == (0, "native-generic\n", "")
    code, out, _ = run("select", path, "--device", "x86-64-v3", "--explain")
    assert code == 0
    assert out.splitlines()[0].startswith("delegate 0 (NfatNativeBackend at 0x")
    assert "chosen: native-avx2 [native]" in out.splitlines()
    data = json.loads(run("select", path, "--device", "x86-64-v3", "--json")[1])
    assert set(data) == fields("select.pte")
    assert data["path"] == str(path)
    d = data["delegates"][0]
    assert set(d) == {"index", "backend_id", "offset"} | fields("select")
    assert (d["index"], d["backend_id"], d["chosen"], d["device"]) == (0, "NfatNativeBackend", "native-avx2",
                                                                       "x86-64-v3")
    assert [v["entry"] for v in d["verdicts"]] == ["native-avx2", "native-generic"]


def test_select_errors() -> None:
    code, out, err = run("select", ET_FIXTURES / "add_xnnpack.pte", "--device", "x86-64-v3")
    assert (code, out) == (2, "")
    assert err.startswith(f"{ET_FIXTURES / 'add_xnnpack.pte'}: E0704")
    code, out, err = run("select", ET_FIXTURES / "add_nfat.pte", "--device", "x86-64-v3", "--exclude", "native")
    assert (code, out) == (3, "")
    assert "native-avx2" in err and "native-generic" in err


# ---------------------------------------------------------------------------------------------
# what info, extract and pack tell about an entry's program
# ---------------------------------------------------------------------------------------------


def _sha(name: str) -> str:
    import hashlib

    return hashlib.sha256((ET_FIXTURES / name).read_bytes()).hexdigest()


def test_info_shows_signature_backends_data_needs_and_provenance(tmp_path: Path) -> None:
    out = tmp_path / "e.nfat"
    code, _, err = run("pack", "-o", out, f"cpu:portable={ET_FIXTURES / 'mlp_portable_external.pte'}", "--data",
                       f"cpu={ET_FIXTURES / 'mlp_portable_external._default_external_constant.ptd'}",
                       ET_FIXTURES / "mlp.ptn", ET_FIXTURES / "mlp_xnnpack.pte", "--share-pte-named-data")
    assert (code, err) == (0, TIE_NATIVE_XNNPACK)  # both delegate: only table order chooses
    lines = run("info", out)[1].splitlines()
    first = lines.index("  cpu:")
    pte, ptn, xnn = _sha("mlp_portable_external.pte"), _sha("mlp.ptn"), _sha("mlp_xnnpack.pte")

    def short(h: str) -> str:  # the text's stable abbreviation of 64 hex digits
        return f"{h[:25]}...{h[-12:]}"

    assert lines[first:first + 13] == [
        "  cpu:",
        "    signature: forward(float32[1, 4]) -> float32[1, 3]",
        "    ExecuTorch backends: none (portable kernels only)",
        # fatpte-run runs the entry straight from the container; only an extracted copy needs a .ptd.
        ("    named data: 4 keys kept in this container, not in the payload; fatpte-run serves them from the "
         "container, an extracted program needs them as a .ptd (fatpte extract --data-out): fc1.weight, fc1.bias, "
         "fc2.weight, fc2.bias"),
        f"    provenance: executorch.pte.sha256={short(pte)}",
        "  native:",
        "    signature: forward(float32[1, 4]) -> float32[1, 3]",
        "    ExecuTorch backends: NativeBackend",
        ("    named data: 4 keys kept in this container, put back into the package by fatpte extract: fc1.bias, "
         "fc1.weight, fc2.bias, fc2.weight"),
        f"    provenance: executorch.ptn.sha256={short(ptn)}, executorch.ptn.named_data=shared",
        "  xnnpack:",
        "    signature: forward(float32[1, 4]) -> float32[1, 3]",
        "    ExecuTorch backends: XnnpackBackend",
    ]
    assert lines[first + 14] == f"    provenance: executorch.pte.sha256={short(xnn)}, executorch.pte.named_data=shared"
    kib = f"{out.stat().st_size / 1024:.1f} KiB"  # human size; --json has the bytes
    assert lines[0] == f"{out}: NFAT version 2, 3 entries, 4 named-data segments, a manifest, {kib}"
    entries = json.loads(run("info", "--json", out)[1])["entries"]
    assert [set(e) for e in entries] == [fields("info.entries[]")] * 3
    cpu, native, xnnpack = entries
    assert [e["executorch_backends"] for e in entries] == [[], ["NativeBackend"], ["XnnpackBackend"]]
    assert [e["needs_data_file"] for e in entries] == [True, False, True]  # a .ptn's tensors go back in by extract
    assert cpu["provenance"] == {"executorch.pte.sha256": pte}
    assert xnnpack["provenance"] == {"executorch.pte.sha256": xnn, "executorch.pte.named_data": "shared"}
    assert native["signature"] == {"methods": [{"name": "forward", "inputs": [{"dtype": "float32", "shape": [1, 4]}],
                                                "outputs": [{"dtype": "float32", "shape": [1, 3]}], "buffers": []}]}
    assert (cpu["source_digest"], cpu["payload_sha256"]) == (None, None)


def test_info_of_non_executorch_entries_has_no_backends(tmp_path: Path) -> None:
    out = fatpte.pack([fatpte.Specialization("raw", b"r" * 10)], tmp_path / "r.nfat")
    (entry,) = json.loads(run("info", "--json", out)[1])["entries"]
    assert (entry["executorch_backends"], entry["signature"], entry["provenance"]) == (None, None, {})
    assert "  raw:" not in run("info", out)[1].splitlines()  # nothing known, nothing printed


def test_extract_says_when_the_entry_needs_data_out(tmp_path: Path) -> None:
    out = tmp_path / "x.nfat"
    assert run("pack", "-o", out, ET_FIXTURES / "mlp_xnnpack.pte", "--share-pte-named-data")[0] == 0
    code, stdout, err = run("extract", out, "--name", "xnnpack", "-o", tmp_path / "x.pte")
    assert code == 0 and stdout.startswith(f"wrote {tmp_path / 'x.pte'}: ")
    assert err == (f"{out}: warning: 'xnnpack' loads 4 named-data keys kept in the container, not in its payload: "
                   f"the extracted program needs them in a data file; extract again with --data-out "
                   f"{tmp_path / 'x.ptd'} --force\n")
    code, _, err = run("extract", out, "--name", "xnnpack", "-o", tmp_path / "y.pte", "--data-out",
                       tmp_path / "y.ptd")
    assert (code, err) == (0, "")


def test_pack_warns_when_a_program_loads_keys_nobody_holds(tmp_path: Path) -> None:
    program = ET_FIXTURES / "mlp_native_external.pte"
    code, stdout, err = run("pack", "-o", tmp_path / "w.nfat", program)
    assert code == 0 and stdout.startswith("wrote ")
    assert err == (f"fatpte: warning: entry 'native' ({program}) loads 4 named-data keys that neither the program "
                   "nor the container holds: fc1.bias, fc1.weight, fc2.bias, fc2.weight; give the .ptd it was "
                   "exported with (--data native=FILE.ptd), or the extracted program will not load\n")
    code, _, err = run("pack", "-o", tmp_path / "ok.nfat", program, "--data", ET_FIXTURES / "mlp.ptn")
    assert (code, err) == (0, "")
    (tmp_path / "pack.toml").write_text(f'[[specialization]]\npayload = "{program}"\nsignature = "from-payload"\n')
    code, _, err = run("pack", "-o", tmp_path / "t.nfat", "--from", tmp_path / "pack.toml")
    assert code == 0 and "loads 4 named-data keys that neither the program nor the container holds" in err


def test_pack_share_moves_ptn_tensors_and_extract_puts_them_back(tmp_path: Path) -> None:
    out = tmp_path / "s.nfat"
    code, _, err = run("pack", "-o", out, ET_FIXTURES / "mlp.ptn", ET_FIXTURES / "mlp_xnnpack.pte",
                       "--share-pte-named-data")
    assert (code, err) == (0, TIE_NATIVE_XNNPACK)
    info = json.loads(run("info", "--json", out)[1])
    assert info["segment_count"] == 4  # the package's and the XNNPACK program's weights: one copy
    native = info["entries"][0]
    assert (native["needs_data_file"], native["provenance"]["executorch.ptn.named_data"]) == (False, "shared")
    assert ("    named data: 4 keys kept in this container, put back into the package by fatpte extract: "
            "fc1.bias, fc1.weight, fc2.bias, fc2.weight") in run("info", out)[1].splitlines()
    code, stdout, err = run("extract", out, "--name", "native", "-o", tmp_path / "x.ptn")
    size = (ET_FIXTURES / "mlp.ptn").stat().st_size
    assert (code, err) == (0, "")
    assert stdout == (f"wrote {tmp_path / 'x.ptn'}: package of 'native' (native) with its 4 tensors put back from "
                      f"the container's named data, {size} bytes\n")
    assert (tmp_path / "x.ptn").read_bytes() == (ET_FIXTURES / "mlp.ptn").read_bytes()
    # unpack writes the stripped package and the tensors; pack --from gives the same bytes.
    code, _, err = run("unpack", out, "-o", tmp_path / "u")
    assert (code, err) == (0, "")
    assert json.loads(run("unpack", out, "-o", tmp_path / "u", "--force", "--json")[1])["reproducible"] is True


def test_container_commands_on_a_ptn_say_what_it_is(tmp_path: Path) -> None:
    ptn = ET_FIXTURES / "mlp.ptn"
    expected = (f"{ptn}: E0101 at 0x0 (header.magic): not a container: an ExecuTorch native package (.ptn); "
                "`fatpte pack` packs it as an entry\n")
    for args in (["select", ptn, "--device", "host"], ["extract", ptn, "--name", "native", "-o", tmp_path / "x"],
                 ["thin", ptn, "--device", "host", "-o", tmp_path / "y"]):
        code, out, err = run(*args)
        assert (code, out, err) == (1, "", expected), args


# ---------------------------------------------------------------------------------------------
# selection that knows the runtime
# ---------------------------------------------------------------------------------------------


@pytest.mark.skipif(__import__("platform").machine().lower() not in ("x86_64", "amd64"), reason="an x86_64 host")
def test_select_host_on_portable_and_xnnpack_packed_with_no_options_chooses_xnnpack(tmp_path: Path) -> None:
    out = tmp_path / "m.nfat"
    assert run("pack", "-o", out, ET_FIXTURES / "kvpair_portable_default.pte",
               ET_FIXTURES / "kvpair_xnnpack_default.pte") == (0, (f"wrote {out}: version 2, 2 entries, "
                                                                 f"{out.stat().st_size} bytes\n"), "")
    assert run("select", out, "--device", "host") == (0, "xnnpack\n", "")
    # The console script's plain form (no click) says the same.
    proc = subprocess.run([sys.executable, "-m", "fatpte", "select", str(out), "--device", "host"],
                          capture_output=True, text=True, check=False)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "xnnpack\n", "")


def test_a_runtime_without_native_backend_never_gets_the_native_entry(tmp_path: Path) -> None:
    out = tmp_path / "m.nfat"
    files = [ET_FIXTURES / f"kvpair_{b}_default.pte" for b in ("portable", "xnnpack", "native")]
    assert run("pack", "-o", out, "native=" + str(files[2]), *files[:2])[0] == 0  # native first in the table
    profile = tmp_path / "runtime.json"
    device = fatpte.DeviceProfile.load("x86-64-v3")._replace(name="runtime", executorch_backends=["XnnpackBackend"])
    profile.write_text(device.to_json_text())
    assert run("select", out, "--device", profile, "--prefer", "native")[:2] == (0, "xnnpack\n")
    code, text, _ = run("select", out, "--device", profile, "--explain")
    assert code == 0
    assert ("  -  native [native]: rejected: executorch_backends: needs NativeBackend; the device has no "
            "NativeBackend (its runtime has XnnpackBackend)") in text.splitlines()
    # A profile that does not say: native is a candidate again (first in the table), with a note.
    code, text, _ = run("select", out, "--device", "x86-64-v3", "--explain")
    assert "  note, for entries native, xnnpack: ExecuTorch backends not checked: the profile does not list" in text
    # With no backend in the runtime, only the portable program runs.
    profile.write_text(device._replace(executorch_backends=[]).to_json_text())
    assert run("select", out, "--device", profile)[:2] == (0, "portable\n")


def test_unknown_prefer_words_warn_or_fail_with_strict(tmp_path: Path) -> None:
    out = tmp_path / "m.nfat"
    assert run("pack", "-q", "-o", out, ET_FIXTURES / "mlp_portable.pte", ET_FIXTURES / "mlp_xnnpack.pte")[0] == 0
    code, stdout, err = run("select", out, "--device", "x86-64-v2", "--prefer", "xnnpak")
    assert (code, stdout) == (0, "xnnpack\n")
    assert err == ("fatpte: warning: E0710 (prefer): prefer 'xnnpak' names no entry and no backend id of the "
                   "container (entries: portable, xnnpack; backend ids: portable, xnnpack)\n")
    code, stdout, err = run("select", out, "--device", "x86-64-v2", "--exclude", "xnnpak", "--strict")
    assert (code, stdout) == (2, "") and err.startswith(f"{out}: E0702 (exclude): exclude 'xnnpak' names no entry")
    # The console script's plain form prints the same warning, and extract and thin warn too.
    proc = subprocess.run([sys.executable, "-m", "fatpte", "select", str(out), "--device", "x86-64-v2",
                           "--prefer", "xnnpak"], capture_output=True, text=True, check=False)
    assert (proc.returncode, proc.stdout) == (0, "xnnpack\n") and proc.stderr.startswith("fatpte: warning: E0710")
    code, _, err = run("extract", "-q", out, "--device", "x86-64-v2", "--prefer", "xnnpak", "-o", tmp_path / "x")
    assert code == 0 and err.startswith("fatpte: warning: E0710")
    code, _, err = run("thin", "-q", out, "--device", "x86-64-v2", "--exclude", "nope", "-o", tmp_path / "t")
    assert code == 0 and err.startswith("fatpte: warning: E0710 (exclude)")
