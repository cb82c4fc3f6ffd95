"""The C++ device-profile reader (loader/src/device/profile.cpp) accepts and rejects exactly what
Python's reader (`DeviceProfile.load` of a file: fatpte/device/profile.py `_read_json` then `from_json`)
accepts and rejects, with the same error code and the same field path of the first bad value.

Both read the same files: every named profile, targeted invalid and borderline cases (every word
of the vocabulary under each architecture, types, ranges, patterns, unknown and missing keys,
duplicate keys, JSON syntax, UTF-8, nesting, the 1 MiB limit) and Hypothesis-drawn profiles
(tests/strategies.py `device_profiles()`) with random edits of their values and of their text.
The C++ side is `fatpte-run --check-profile FILE...` (one line per file: `OK` or `E0702 FIELD`),
run once per batch, on the release and the ASan builds. Skipped with the reason when the loader
is not built; `make test` builds it first.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fatpte.cli.main import main
from fatpte.device import profile as D
from fatpte.errors import FatpteError
from fatpte.format import vocabulary as V
from tests.strategies import device_profiles


def escaped(field: str) -> str:
    """A field path as `fatpte-run --check-profile` prints it: its UTF-8 bytes, those outside
    printable ASCII (and the backslash) as \\xNN."""
    raw = field.encode("utf-8", "surrogatepass")
    return "".join(chr(b) if 0x20 <= b < 0x7F and b != 0x5C else f"\\x{b:02x}" for b in raw)


def python_verdict(path: Path) -> str:
    try:
        D.DeviceProfile.load(str(path))
    except FatpteError as exc:
        return f"{exc.code.tag} {escaped(exc.field) if exc.field else '-'}"
    return "OK"


def compare(exe: Path, directory: Path, cases: list[tuple[str, bytes]]) -> None:
    """Write each case to a file, read them all with both readers, fail listing every difference."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, (_, data) in enumerate(cases):
        path = directory / f"case{i:05d}.json"
        path.write_bytes(data)
        paths.append(path)
    proc = subprocess.run([str(exe), "--check-profile", *map(str, paths)], check=False, capture_output=True,
                          timeout=300)
    got = proc.stdout.decode("ascii").splitlines()
    assert len(got) == len(cases), proc.stderr.decode("utf-8", "replace")[-2000:]
    assert proc.returncode in (0, 2), proc.stderr.decode("utf-8", "replace")[-2000:]
    want = [python_verdict(p) for p in paths]
    diffs = [f"{label}: python {w!r}, loader {g!r}" for (label, _), w, g in zip(cases, want, got) if w != g]
    assert not diffs, "\n".join(diffs[:40])
    # The exit status says whether every profile was valid.
    assert proc.returncode == (0 if all(w == "OK" for w in want) else 2)


def text(obj: Any) -> bytes:
    return json.dumps(obj, indent=2).encode("utf-8")


def base(arch: str = "x86_64") -> dict[str, Any]:
    return {
        "name": "base", "os": "linux", "arch": arch,
        "cpu_features": ["avx2"] if arch == "x86_64" else ["asimd"],
        "accelerators": [{"kind": "cuda", "name": "NVIDIA H100", "version": "9.0", "memory_bytes": 1 << 30}],
        "memory_bytes": 1 << 33, "backends": {"xnnpack": 3},
    }


def edited(path: tuple[str | int, ...], value: Any, arch: str = "x86_64") -> dict[str, Any]:
    obj = base(arch)
    target: Any = obj
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return obj


# Values of every JSON type, and the integers and strings at the edges of the rules.
ODD_VALUES: list[Any] = [None, True, False, 0, 1, -1, 1.0, 1.5, "", "x", [], {}, ["x"], {"a": 1}]


def targeted() -> list[tuple[str, bytes]]:
    cases: list[tuple[str, bytes]] = [("base", text(base())), ("base-aarch64", text(base("aarch64")))]

    def add(label: str, obj: Any) -> None:
        cases.append((label, text(obj)))

    # Keys: each missing, one unknown, unknown before missing, in the accelerator too.
    for key in base():
        obj = base()
        del obj[key]
        add(f"missing {key}", obj)
        add(f"missing {key} and unknown", {**obj, "extra": 1})
    add("unknown key", {**base(), "Name": "x"})
    for key in base()["accelerators"][0]:
        obj = base()
        del obj["accelerators"][0][key]
        add(f"accelerator missing {key}", obj)
    add("accelerator unknown key", edited(("accelerators", 0, "vendor"), "x"))
    # Every field given every kind of value.
    for key in base():
        for v in ODD_VALUES:
            add(f"{key}={v!r}", edited((key,), v))
    for key in base()["accelerators"][0]:
        for v in ODD_VALUES:
            add(f"accelerators[0].{key}={v!r}", edited(("accelerators", 0, key), v))
    for v in ODD_VALUES:
        add(f"cpu_features[0]={v!r}", edited(("cpu_features", 0), v))
        add(f"accelerators[0]={v!r}", edited(("accelerators", 0), v))
        add(f"backends.x={v!r}", edited(("backends", "x"), v))
    # Names.
    for name in ["a", "a" * 64, "a" * 65, "host", "x86-64-v3", "A_b.c-9", "a b", "a/b", "é", "a\n", "\u0000",
                 "Ω" * 3, "a\u007f"]:
        add(f"name={name!r}", edited(("name",), name))
    # Vocabulary: every word, and near misses.
    for word in [*V.OS_NAMES, "Linux", "darwin", "freebsd", " linux"]:
        add(f"os={word!r}", edited(("os",), word))
    for word in [*V.ARCHES, "amd64", "arm64", "X86_64", "i686"]:
        add(f"arch={word!r}", edited(("arch",), word))
    for arch in V.ARCHES:
        for word in [*V.X86_FEATURES, *V.ARM_FEATURES, "AVX2", "neon", "sse4.2", "svei8mm", ""]:
            add(f"{arch} feature {word!r}", {**base(arch), "cpu_features": [word]})
        add(f"{arch} all features", {**base(arch), "cpu_features": sorted(V.CPU_FEATURES[arch])})
        add(f"{arch} no features", {**base(arch), "cpu_features": []})
        first = min(V.CPU_FEATURES[arch])
        add(f"{arch} feature twice", {**base(arch), "cpu_features": [first, first]})
        add(f"{arch} feature twice after a bad one", {**base(arch), "cpu_features": ["bogus", first, first]})
        add(f"{arch} bad type after a twice", {**base(arch), "cpu_features": [first, first, 3]})
    for kind in [*V.ACCELERATOR_KINDS, "CUDA", "gpu", "rocm"]:
        for version in ["9.0", "9", "1.2.3"]:
            add(f"kind {kind} version {version}", edited(("accelerators", 0), {
                "kind": kind, "name": "x", "version": version, "memory_bytes": 0}))
    for version in ["0", "0.0", "8.7", "12.0", "9999.9999", "10000.0", "08.0", "8.00", "8.01", "1.2.3.4", "1..2",
                    ".1", "1.", "", " 1.0", "1.0 ", "+1.0", "-1.0", "1e1", "\u0661.\u0660", "9.0\n"]:
        for kind in ("cuda", "vulkan"):
            add(f"{kind} version {version!r}", edited(("accelerators", 0), {
                "kind": kind, "name": "x", "version": version, "memory_bytes": 0}))
    for name in ["", " ", "~", "a" * 256, "a" * 257, "a\tb", "é", "a\u007f", "NVIDIA \"H100\"", "back\\slash"]:
        add(f"accelerator name {name!r}", edited(("accelerators", 0, "name"), name))
    one = base()["accelerators"][0]
    add("64 accelerators", edited(("accelerators",), [one] * 64))
    add("65 accelerators", edited(("accelerators",), [one] * 65))
    add("65 bad accelerators", edited(("accelerators",), [1] * 65))
    add("no accelerators", edited(("accelerators",), []))
    # Integer ranges.
    for n in [0, (1 << 63) - 1, 1 << 63, (1 << 64) - 1, 1 << 64, 10**30]:
        add(f"memory_bytes={n}", edited(("memory_bytes",), n))
        add(f"accelerator memory_bytes={n}", edited(("accelerators", 0, "memory_bytes"), n))
    for n in [0, (1 << 32) - 1, 1 << 32, (1 << 63) - 1]:
        add(f"backend ABI {n}", edited(("backends",), {"b": n}))
    # Backend ids.
    for key in ["a", "a" * 32, "a" * 33, "", "A_b.c-9", "a b", "a/b", "é", "\u0000", "x86_avx2"]:
        add(f"backend id {key!r}", edited(("backends",), {key: 1}))
    add("backend bad value before bad id", edited(("backends",), {"a b": 1, "ok": -1}))
    add("many backends", edited(("backends",), {f"b{i}": i for i in range(2000)}))
    # ExecuTorch backends: optional, an array of unique printable ASCII words without space.
    for value in [[], ["XnnpackBackend"], ["XnnpackBackend", "NativeBackend"], ["a" * 256], ["a" * 257], [""],
                  [" x"], ["a b"], ["é"], ["\u007f"], ["x", "x"], ["x", 1], [1, "x", "x"], ["ok", "a b", "ok"],
                  ["b"] * 65, [f"b{i}" for i in range(64)], [f"b{i}" for i in range(65)], "XnnpackBackend",
                  None, {}, 3, [["x"]], ["~!\"\\"]]:
        add(f"executorch_backends={value!r}"[:80], {**base(), "executorch_backends": value})
    add("executorch_backends and an unknown key", {**base(), "executorch_backends": [], "extra": 1})
    obj = base()
    del obj["name"]
    add("executorch_backends and a missing key", {**obj, "executorch_backends": ["x"]})
    add("executorch_backends first", {"executorch_backends": ["b", "a"], **base()})
    add("bad executorch_backends and a bad os", {**base(), "os": "beos", "executorch_backends": ["a b"]})
    # Sources: optional, 1 to 16 unique printable ASCII strings of at most 512, in the file's order.
    for value in [["Arm TRM, 100798"], ["b", "a"], [" "], ["~\"\\"], ["a" * 512], ["a" * 513], [], [""], ["a\tb"],
                  ["é"], ["\u007f"], ["x", "x"], ["x", 1], [1, "x", "x"], ["ok", "a\n", "ok"],
                  [f"s{i}" for i in range(16)],
                  [f"s{i}" for i in range(17)], [1] * 17, "a source", None, {}, 3, [["x"]]]:
        add(f"sources={value!r}"[:80], {**base(), "sources": value})
    add("sources and executorch_backends", {**base(), "executorch_backends": ["a"], "sources": ["s"]})
    add("sources first", {"sources": ["b", "a"], **base()})
    add("bad sources and bad executorch_backends", {**base(), "executorch_backends": ["a b"], "sources": [""]})
    add("bad sources and a bad os", {**base(), "os": "beos", "sources": [2]})
    # A vendor runtime's device: the optional `device` and `capabilities` (specs/device-profile.md 4).
    ov = {"kind": "openvino", "name": "Intel(R) Core(TM) Ultra 7 155H", "version": "2026.4.0", "memory_bytes": 0}
    for device in ["CPU", "GPU.0", "NPU", "GPU.10", "a" * 64, "a" * 65, "", " CPU", "GPU 0", "GPU/0", "é", 3, None,
                   ["CPU"]]:
        add(f"openvino device={device!r}", edited(("accelerators", 0), {**ov, "device": device}))
    for caps in [[], ["fp32"], ["int8", "fp16", "bf16"], ["export_import"], ["a" * 32], ["a" * 33], [""], ["FP16"],
                 ["fp-16"], ["fp16", "fp16"], ["fp16", 1], [1, "x", "x"], ["ok", "Bad", "ok"],
                 [f"c{i}" for i in range(32)], [f"c{i}" for i in range(33)], ["x"] * 33, "fp16", None, {}, 3]:
        add(f"openvino capabilities={caps!r}"[:80], edited(("accelerators", 0), {**ov, "device": "CPU",
                                                                                "capabilities": caps}))
    add("openvino bad device and bad capability", edited(("accelerators", 0), {**ov, "device": "",
                                                                               "capabilities": ["X"]}))
    add("openvino bad kind and bad device", edited(("accelerators", 0), {**ov, "kind": "ov", "device": ""}))
    add("openvino bad version and bad capabilities type", edited(("accelerators", 0), {
        **ov, "version": "2026.04", "capabilities": "x"}))
    add("cuda with device and capabilities", edited(("accelerators", 0, "capabilities"), ["fp16"]))
    add("openvino unknown key", edited(("accelerators", 0), {**ov, "device": "CPU", "devices": ["CPU"]}))
    add("top level array", [base()])
    add("top level string", "profile")
    add("top level null", None)
    return cases


def raw_cases() -> list[tuple[str, bytes]]:
    """Text the json module cannot write: syntax, duplicates, numbers, escapes, encodings, sizes."""
    good = text(base())
    body = good.decode("ascii")
    mem = str(1 << 33)
    cases: list[tuple[str, bytes]] = [("empty", b""), ("spaces", b"  \n"), ("null", b"null")]

    def sub(label: str, old: str, new: str) -> None:
        assert old in body, old
        cases.append((label, body.replace(old, new, 1).encode("utf-8")))

    sub("duplicate root key", '"os": "linux",', '"os": "linux", "os": "linux",')
    sub("duplicate key, other spelling", '"os": "linux",', '"os": "linux", "\\u006fs": "linux",')
    sub("duplicate accelerator key", '"version": "9.0",', '"version": "9.0", "version": "9.0",')
    sub("duplicate backend", '"xnnpack": 3', '"xnnpack": 3, "xnnpack": 3')
    sub("duplicate key in an unknown value", '"os": "linux",', '"os": "linux", "x": {"a": 1, "a": 2},')
    for n in ["-0", "-0.0", "0.0", "1.0", "1e3", "1E3", "1e+3", "-1", "01", "00", "- 1", "+1", "0x10", "1_0",
              "NaN", "Infinity", "-Infinity", "true", "null", '"1"', "9" * 30, "-" + "9" * 30, "1" + "0" * 5000]:
        sub(f"memory_bytes {n}", mem, n)
    sub("backend ABI -0", '"xnnpack": 3', '"xnnpack": -0')
    sub("escaped name", '"base"', '"\\u0062as\\u0065"')
    sub("escaped slash in name", '"base"', '"ba\\/se"')
    sub("escape to a space in name", '"base"', '"ba\\u0020se"')
    sub("escaped feature", '"avx2"', '"\\u0061vx2"')
    sub("escaped backend id", '"xnnpack"', '"xnn\\u0070ack"')
    sub("bad escape", '"base"', '"ba\\xse"')
    sub("short unicode escape", '"base"', '"ba\\u00"')
    sub("lone surrogate", '"base"', '"ba\\ud800se"')
    sub("surrogate pair", '"base"', '"ba\\ud83d\\ude00se"')
    sub("upper-case hex escape", '"base"', '"\\u0042ase"')
    sub("raw tab in a string", '"base"', '"ba\tse"')
    sub("raw DEL in a string", '"base"', '"ba\x7fse"')
    sub("raw UTF-8 in name", '"base"', '"bäse"')
    cases.append(("invalid UTF-8", body.replace('"base"', '"ba\xffse"').encode("latin-1")))
    cases.append(("overlong UTF-8", good.replace(b'"base"', b'"ba\xc0\xafse"')))
    cases.append(("UTF-8 surrogate", good.replace(b'"base"', b'"ba\xed\xa0\x80se"')))
    cases.append(("UTF-8 BOM", b"\xef\xbb\xbf" + good))
    cases.append(("UTF-16", body.encode("utf-16")))
    cases.append(("NUL after", good + b"\x00"))
    sub("unterminated string", '"base"', '"base')
    sub("single quotes", '"base"', "'base'")
    sub("trailing comma in object", '"xnnpack": 3', '"xnnpack": 3,')
    sub("trailing comma in array", '"avx2"', '"avx2",')
    sub("missing comma", '"os": "linux",', '"os": "linux"')
    sub("missing colon", '"os": "linux"', '"os" "linux"')
    sub("comment", '"os": "linux",', '"os": "linux", // linux\n')
    sub("capital True in unknown key", '"os": "linux",', '"os": "linux", "x": True,')
    cases.append(("trailing text", good + b"x"))
    cases.append(("trailing whitespace", good + b" \t\r\n"))
    cases.append(("leading whitespace", b" \t\r\n" + good))
    cases.append(("form feed", b"\x0c" + good))
    cases.append(("two documents", good + good))
    cases.append(("truncated", good[:-1]))
    for depth in (3, 15, 16, 17, 40, 5000):
        sub(f"nested arrays {depth}", '"xnnpack": 3', '"xnnpack": ' + "[" * depth + "]" * depth)
        sub(f"nested name {depth}", '"base"', "[" * depth + "]" * depth)
    # The 1 MiB limit, counted on the file's bytes, whitespace included.
    limit = D.MAX_PROFILE_BYTES
    cases.append(("exactly 1 MiB", good + b" " * (limit - len(good))))
    cases.append(("1 MiB + 1", good + b" " * (limit + 1 - len(good))))
    entries = ", ".join(f'"b{i:06d}": {i}' for i in range(40000))
    big = body.replace('"xnnpack": 3', entries)
    cases.append((f"{len(big)} bytes of backends", big.encode("ascii")))
    return cases


def hostile_cases() -> list[tuple[str, bytes]]:
    """Profiles written against the readers (issue 15): nesting around and far past the stated limit
    of 64 in every kind of field, numbers with thousands of digits and a fraction or exponent,
    long strings and keys, escapes and control characters, many keys."""
    body = text(base()).decode("ascii")
    cases: list[tuple[str, bytes]] = []

    def sub(label: str, old: str, new: str) -> None:
        assert old in body, old
        cases.append((label, body.replace(old, new, 1).encode("utf-8")))

    places = {"name": '"base"', "os": '"linux"', "feature": '"avx2"', "accelerator name": '"NVIDIA H100"',
              "backend": "3", "memory": str(1 << 33), "accelerator memory": str(1 << 30)}
    for depth in (63, 64, 65, 66, 100, 511, 512, 513, 600, 990, 991, 1000, 5000, 100_000):
        for where, old in places.items():
            sub(f"arrays {depth} deep as {where}", old, "[" * depth + "]" * depth)
            sub(f"objects {depth} deep as {where}", old, '{"a": ' * (depth - 1) + "{}" + "}" * (depth - 1))
        sub(f"arrays {depth} deep under an unknown key", '"os": "linux",', '"os": "linux", "x": '
            + "[" * depth + "]" * depth + ",")
        sub(f"unclosed arrays {depth} deep", '"base"', "[" * depth)
        sub(f"arrays {depth} deep around a string as memory", places["memory"], "[" * depth + '"x"' + "]" * depth)
        sub(f"arrays {depth} deep around an object as name", places["name"], "[" * depth + "{}" + "]" * depth)
    for digits in (19, 20, 21, 40, 4299, 4300, 4301, 10_000):
        for suffix in ("", ".5", "e5", ".0e-3", "E+2"):
            for where in ("memory", "accelerator memory", "backend", "name", "feature"):
                sub(f"{digits} digits{suffix} as {where}", places[where], "9" * digits + suffix)
            sub(f"-{digits} digits{suffix} as memory", places["memory"], "-" + "9" * digits + suffix)
    for n in (256, 257, 4096, 500_000):
        sub(f"name of {n} bytes", '"base"', '"' + "n" * n + '"')
        sub(f"key of {n} bytes", '"os": "linux",', '"os": "linux", "' + "k" * n + '": 1,')
        sub(f"backend id of {n} bytes", '"xnnpack": 3', '"' + "b" * n + '": 3')
    for ch in ("\\u001b", "\\u0000", "\\n", "\\u007f", "\\u009b", "\\u202e", "\\\\", "\\ud800"):
        sub(f"escape {ch} in name", '"base"', f'"ba{ch}se"')
        sub(f"escape {ch} in an unknown key", '"os": "linux",', f'"os": "linux", "k{ch}": 1,')
        sub(f"escape {ch} in a backend id", '"xnnpack": 3', f'"x{ch}": 3')
    sub("50000 backends", '"xnnpack": 3', ", ".join(f'"b{i}": {i}' for i in range(50_000)))
    sub("50000 features", '"avx2"', ", ".join('"avx2"' for _ in range(50_000)))
    return cases


def test_hostile_profiles_agree(exe: Path, tmp_path: Path) -> None:
    cases = hostile_cases()
    assert len(cases) >= 160
    compare(exe, tmp_path / "hostile", cases)


@pytest.mark.parametrize("kind", ["directory", "fifo", "device"])
def test_a_profile_that_is_not_a_regular_file_is_refused_alike(exe: Path, tmp_path: Path, kind: str) -> None:
    """E0811 from both readers, at once (a FIFO with no writer never blocks), exit 4."""
    import os

    if kind == "directory":
        path = tmp_path / "profile.json"
        path.mkdir()
    elif kind == "fifo":
        path = tmp_path / "profile.json"
        os.mkfifo(path)
    else:
        path = Path("/dev/null")
    assert python_verdict(path).split()[0] == "E0811"
    proc = subprocess.run([str(exe), "--check-profile", str(path)], check=False, capture_output=True, text=True,
                          timeout=60)
    assert proc.stdout.split()[0] == "E0811" and proc.returncode == 4
    container = tmp_path / "c.nfat"
    from fatpte.ops.packing import pack
    from fatpte.ops.specialization import Specialization

    pack([Specialization("portable", b"p")], container)
    numbers = tmp_path / "input.txt"
    numbers.write_text("1 2 3\n")
    for args in (["--select-only"], ["--input", str(numbers)]):
        run = subprocess.run([str(exe), str(container), "--device", str(path), *args], check=False,
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 4 and "E0811" in run.stderr, run.stderr
    result = CliRunner().invoke(main, ["select", str(container), "--device", str(path)])
    assert result.exit_code == 4 and "E0811" in result.stderr


def test_named_profiles_agree(exe: Path, tmp_path: Path) -> None:
    names = D.DeviceProfile.names()
    assert names, "no named device profiles"
    cases = [(name, (D.devices_dir() / f"{name}.json").read_bytes()) for name in names]
    compare(exe, tmp_path / "named", cases)
    assert all(python_verdict(tmp_path / "named" / f"case{i:05d}.json") == "OK" for i in range(len(cases)))


def test_targeted_cases_agree(exe: Path, tmp_path: Path) -> None:
    compare(exe, tmp_path / "targeted", targeted() + raw_cases())


def integer_cases() -> list[tuple[str, bytes]]:
    """Each integer field given what is not one of its integers: numbers of every size and form,
    and what is not a number."""
    body = text(base()).decode("ascii")
    places = {"memory_bytes": f'"memory_bytes": {1 << 33}',
              "accelerators[0].memory_bytes": f'"memory_bytes": {1 << 30}', "backends.xnnpack": '"xnnpack": 3'}
    values = ["1" + "0" * 400, "9" * 4300, "-" + "9" * 30, str(1 << 64), str(1 << 63), "-1",
              "-18446744073709551617", "1e3", "1.0", "-0.0", "2E+2", '"8"', "true", "null", "[]", "{}"]
    cases = [(f"{field} = {value[:30]}", body.replace(old, old.split(": ")[0] + ": " + value, 1).encode("ascii"))
             for field, old in places.items() for value in values]
    cases.append(("backends.xnnpack = 2^32", body.replace(places["backends.xnnpack"], f'"xnnpack": {1 << 32}')
                  .encode("ascii")))
    return cases


def same_messages(exe: Path, directory: Path, cases: list[tuple[str, bytes]]) -> list[str]:
    """Each case (a profile both readers refuse) read by both: fatpte-run's line for it ends with the
    file's name and then Python's message, word for word. The lines, in order."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, (_, data) in enumerate(cases):
        paths.append(directory / f"case{i:03d}.json")
        paths[-1].write_bytes(data)
    proc = subprocess.run([str(exe), "--check-profile", *map(str, paths)], check=False, capture_output=True,
                          text=True, timeout=120)
    said = proc.stderr.splitlines()
    assert len(said) == len(cases), proc.stderr[-2000:]
    for (label, _), path, line in zip(cases, paths, said):
        with pytest.raises(FatpteError) as refused:
            D.DeviceProfile.load(str(path))
        assert line.endswith(f"{path}: {refused.value.message}"), (label, line[-300:], refused.value.message[-300:])
    return said


def test_an_integer_field_is_refused_in_the_same_words(exe: Path, tmp_path: Path) -> None:
    """Both readers word a refused integer field alike (fields.integer; profile.cpp's integer): what
    is not an integer by its kind, and a number out of range quoted as the file writes it, clipped
    like any quoted value (a literal of 401 digits is not the 2^64 it reads as): the same message
    after the file's name."""
    said = same_messages(exe, tmp_path, integer_cases())
    huge = said[0]
    assert "18446744073709551616" not in huge and f"{'1' + '0' * 400} is outside 0..{(1 << 63) - 1}" in huge
    assert said[1].endswith(f"{'9' * 1024}...(4300 bytes) is outside 0..{(1 << 63) - 1}")


def test_a_quoted_string_is_clipped_and_escaped_alike(exe: Path, tmp_path: Path) -> None:
    """A string from the file that a message quotes is quoted as errors.quoted does (common/text's
    quoted): escaped, and cut after 1024 bytes with the size of the whole, in both readers."""
    long = "n" * 2000
    cases = [("long name", edited(("name",), long)), ("name with an escape", edited(("name",), "a\x1b[31mb")),
             ("os with a newline", edited(("os",), "li\nnux")),
             ("long version", edited(("accelerators", 0, "version"), "9" * 3000)),
             ("long kind", edited(("accelerators", 0, "kind"), "k" * 1500 + "\u202e")),
             ("feature twice", edited(("cpu_features",), ["avx2", "avx2"])),
             ("long backend id", edited(("backends",), {"b" * 1100: 1}))]
    said = same_messages(exe, tmp_path, [(label, text(doc)) for label, doc in cases])
    assert said[0].endswith(f"'{'n' * 1024}...(2000 bytes)' must be 1 to 64 characters from [A-Za-z0-9_.-]")
    assert "'a\\x1b[31mb'" in said[1] and "'li\\x0anux'" in said[2]


def test_unreadable_file_agrees(exe: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    proc = subprocess.run([str(exe), "--check-profile", str(missing)], check=False, capture_output=True, text=True,
                          timeout=60)
    assert proc.stdout.split()[0] == python_verdict(missing).split()[0] == "E0801"
    assert proc.returncode == 4


# -- random profiles, edited -------------------------------------------------------------------

_EDIT_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-2, max_value=1 << 65), st.floats(allow_nan=False),
    st.text(max_size=8), st.sampled_from([*V.OS_NAMES, *V.ARCHES, *V.X86_FEATURES, *V.ARM_FEATURES,
                                          *V.ACCELERATOR_KINDS, "8.0", "08.0", "1.2.3.4", "a" * 65]),
    st.lists(st.sampled_from([*V.X86_FEATURES, *V.ARM_FEATURES, "x"]), max_size=4),
    st.just({}),
)


def _places(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a decoded profile a value sits: object members and array elements."""
    out = [path] if path else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _places(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _places(v, (*path, i))
    return out


def _apply(obj: Any, path: tuple[Any, ...], how: str, value: Any) -> None:
    parent = obj
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if how == "set":
        parent[last] = value
    elif how == "delete":
        del parent[last]
    elif how == "rename" and isinstance(parent, dict):
        parent[str(value)] = parent.pop(last)
    elif isinstance(parent, list):
        parent.append(value)
    else:
        parent[f"{last}_"] = value


@st.composite
def edited_profiles(draw: st.DrawFn) -> tuple[str, bytes]:
    obj = draw(device_profiles()).to_json()
    for _ in range(draw(st.integers(min_value=0, max_value=2))):
        places = _places(obj)
        if not places:
            break
        path = draw(st.sampled_from(places))
        how = draw(st.sampled_from(["set", "delete", "rename", "add"]))
        _apply(obj, path, how, draw(_EDIT_VALUES))
    data = json.dumps(obj, indent=draw(st.sampled_from([None, 2]))).encode("utf-8")
    if draw(st.integers(min_value=0, max_value=3)) == 0 and data:
        # A byte edit of the text: mostly broken JSON, sometimes a different valid profile.
        at = draw(st.integers(min_value=0, max_value=len(data) - 1))
        byte = draw(st.sampled_from(b'{}[],:"\\-0123456789.eE \x00\x7f\xff' + b"atfnu"))
        op: Callable[[bytes], bytes] = draw(st.sampled_from([
            lambda d: d[:at] + bytes([byte]) + d[at + 1:],
            lambda d: d[:at] + bytes([byte]) + d[at:],
            lambda d: d[:at] + d[at + 1:],
        ]))
        data = op(data)
    return f"edited {data[:200]!r}", data


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edited_profiles())
def test_random_edited_profiles_agree(exe: Path, tmp_path_factory: pytest.TempPathFactory,
                                      case: tuple[str, bytes]) -> None:
    compare(exe, tmp_path_factory.mktemp("edited"), [case])
