"""Device profiles: the named profiles, strict reading, the canonical form, and agreement between
fatpte/device/profile.py, specs/device_profile.schema.json and specs/device-profile.md."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema.exceptions import ValidationError

import fatpte
from fatpte.device import accelerator as DA
from fatpte.device import fields as DF
from fatpte.device import profile as D
from fatpte.device.accelerator import Accelerator
from fatpte.device.profile import DeviceProfile
from fatpte.errors import ErrorCode, FatpteError
from fatpte.format import vocabulary as V
from tests.paths import ROOT
from tests.strategies import device_profiles
from tests.support.editable import WITHOUT_EDITABLE_FINDER

SPECS = ROOT / "specs"
SCHEMA = json.loads((SPECS / "device_profile.schema.json").read_text())


def _ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    # JSON Schema patterns are ECMA-262, where `$` matches only at the very end; Python's `$`
    # also matches before a final newline, which would accept "8.0\n".
    if not validator.is_type(instance, "string"):
        return
    regex = pattern[:-1] + r"\Z" if pattern.endswith("$") else pattern
    if not re.search(regex, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


Validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"pattern": _ecma_pattern})
VALIDATOR = Validator(SCHEMA)

V2 = {"sse4_2"}
V3 = V2 | {"avx", "avx2", "fma", "f16c"}
V4 = V3 | {"avx512f", "avx512bw", "avx512vl"}
ARMV80 = {"asimd"}
ARMV82 = ARMV80 | {"fphp", "asimdhp", "asimddp"}
# What each named profile must say: the real hardware's features, checked by hand against the
# vendors' documentation (see the table in specs/device-profile.md).
EXPECTED: dict[str, tuple[str, str, set[str], list[tuple[str, str]]]] = {
    "x86-64-v2": ("linux", "x86_64", V2, []),
    "x86-64-v3": ("linux", "x86_64", V3, []),
    "x86-64-v4": ("linux", "x86_64", V4, []),
    "sapphire-rapids-amx": ("linux", "x86_64", V4 | {"avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile",
                                                      "amx_int8", "amx_bf16"}, []),
    "apple-m1": ("macos", "aarch64", ARMV82, [("metal", "3.0")]),
    "apple-m3": ("macos", "aarch64", ARMV82 | {"i8mm", "bf16"}, [("metal", "3.1")]),
    "android-arm64-dotprod": ("android", "aarch64", ARMV82, [("vulkan", "1.1")]),
    "arm64-i8mm-sve2": ("android", "aarch64", ARMV82 | {"i8mm", "bf16", "sve", "sve2"}, [("vulkan", "1.3")]),
    "raspberry-pi-5": ("linux", "aarch64", ARMV82, [("vulkan", "1.2")]),
    "nvidia-sm80-server": ("linux", "x86_64", V3, [("cuda", "8.0")]),
    "nvidia-sm90-server": ("linux", "x86_64", V4 | {"avx512_vnni", "avx512_bf16"}, [("cuda", "9.0")]),
    "jetson-orin": ("linux", "aarch64", ARMV82, [("cuda", "8.7")]),
    # The fleet's cores (issue 39), each citing its vendor's manual (`sources`).
    "cortex-a53": ("linux", "aarch64", ARMV80, []),
    "cortex-a55": ("linux", "aarch64", ARMV82, []),
    "cortex-a76": ("linux", "aarch64", ARMV82, []),
    "cortex-a78": ("linux", "aarch64", ARMV82, []),
    "cortex-x1": ("linux", "aarch64", ARMV82, []),
    "neoverse-n1": ("linux", "aarch64", ARMV82, []),
    "neoverse-v1": ("linux", "aarch64", ARMV82 | {"sve", "bf16", "i8mm"}, []),
    "a64fx": ("linux", "aarch64", {"asimd", "fphp", "asimdhp", "sve"}, []),
    "raspberry-pi-4": ("linux", "aarch64", ARMV80, [("vulkan", "1.2")]),
    "intel-core-ultra-7-155h": ("linux", "x86_64", V3, [("openvino", "2026.4.0")] * 3),
}
# The profiles that cite the documents their features come from.
CITED = {"intel-core-ultra-7-155h", "x86-64-v2", "x86-64-v3", "x86-64-v4", "cortex-a53", "cortex-a55", "cortex-a76", "cortex-a78", "cortex-x1",
         "neoverse-n1", "neoverse-v1", "a64fx", "raspberry-pi-4"}

SAMPLE = {
    "name": "sample",
    "os": "linux",
    "arch": "x86_64",
    "cpu_features": ["avx2", "avx"],
    "accelerators": [{"kind": "cuda", "name": "NVIDIA H100 80GB HBM3", "version": "9.0",
                      "memory_bytes": 85899345920}],
    "memory_bytes": 1024,
    "backends": {"xnnpack": 3, "cuda": 1},
}


def mutated(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    obj = copy.deepcopy(SAMPLE)
    change(obj)
    return obj


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(obj: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        target: Any = obj
        for part in parents:
            target = target[int(part) if isinstance(target, list) else part]
        target[int(last) if isinstance(target, list) else last] = value
    return change


def _delete(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda obj: obj.pop(key)


# -- named profiles -----------------------------------------------------------------------------


def test_names_are_the_profiles_in_specs_devices() -> None:
    assert DeviceProfile.names() == sorted(EXPECTED)
    assert sorted(p.stem for p in (SPECS / "devices").glob("*.json")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_named_profile(name: str) -> None:
    path = SPECS / "devices" / f"{name}.json"
    raw = json.loads(path.read_text())
    VALIDATOR.validate(raw)
    profile = DeviceProfile.load(name)
    assert profile == DeviceProfile.load(str(path))
    os_name, arch, features, accs = EXPECTED[name]
    assert (profile.name, profile.os, profile.arch) == (name, os_name, arch)
    assert profile.cpu_features == features
    assert [(a.kind, a.version) for a in profile.accelerators] == accs
    # Realistic sizes: at least 1 GiB of RAM, at most 16 TiB; accelerators 4 GiB to 1 TiB.
    assert 1 << 30 <= profile.memory_bytes <= 16 << 40
    assert (profile.sources is not None) == (name in CITED)
    # An OpenVINO CPU or NPU states 0 (specs/device-profile.md 4.1: only a GPU reports its memory).
    assert all(4 << 30 <= a.memory_bytes <= 1 << 40 for a in profile.accelerators
               if not (a.kind == "openvino" and a.device in ("CPU", "NPU")))
    assert all(a.memory_bytes == 0 for a in profile.accelerators if a.kind == "openvino" and a.device != "GPU")
    # The files are written in the canonical form, byte for byte.
    assert path.read_text() == profile.to_json_text()


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(FatpteError) as info:
        DeviceProfile.load("pentium-4")
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert "'pentium-4'" in str(info.value)
    for name in EXPECTED:
        assert name in str(info.value)


def test_devices_dir_env_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lab-box.json").write_text(json.dumps(SAMPLE | {"name": "lab-box"}))
    (tmp_path / "notes.txt").write_text("not a profile")
    monkeypatch.setenv(D.DEVICES_DIR_ENV, str(tmp_path))
    assert DeviceProfile.names() == ["lab-box"]
    assert DeviceProfile.load("lab-box").name == "lab-box"
    with pytest.raises(FatpteError, match="known profiles: lab-box"):
        DeviceProfile.load("x86-64-v3")


def test_missing_devices_dir_is_an_io_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(D.DEVICES_DIR_ENV, str(tmp_path / "absent"))
    with pytest.raises(FatpteError) as info:
        DeviceProfile.names()
    assert info.value.code is ErrorCode.IO_ERROR
    assert D.DEVICES_DIR_ENV in str(info.value)


def test_named_profiles_are_package_data_also_in_a_zip(tmp_path: Path) -> None:
    """The profiles ship inside the package (fatpte/device/profiles/, linked from specs/devices/);
    from a package imported out of a zip file they are read through importlib.resources."""
    assert (SPECS / "devices").resolve() == (ROOT / "fatpte" / "device" / "profiles").resolve()
    archive = tmp_path / "fatpte.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in sorted((ROOT / "fatpte").rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                z.write(path, path.relative_to(ROOT).as_posix())
    code = WITHOUT_EDITABLE_FINDER + (f"import fatpte.device.profile as p; assert p.__file__.startswith({str(archive)!r}), p.__file__; "
            "print(p.DeviceProfile.names()); print(p.DeviceProfile.load('x86-64-v3').to_json_text(), end='')")
    env = {k: v for k, v in os.environ.items() if k != D.DEVICES_DIR_ENV} | {"PYTHONPATH": str(archive)}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          check=True)
    names, profile = done.stdout.split("\n", 1)
    assert names == repr(sorted(EXPECTED))
    assert profile == (SPECS / "devices" / "x86-64-v3.json").read_text()


# -- files ------------------------------------------------------------------------------------


def test_load_path(tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(SAMPLE))
    assert DeviceProfile.load(path) == DeviceProfile.load(str(path)) == DeviceProfile.from_json(SAMPLE)


@pytest.mark.parametrize(("text", "needle"), [
    ("{", "not valid JSON"),
    ('{"name": "a", "name": "b"}', "appears twice"),
    ('{"memory_bytes": NaN}', "NaN is not a JSON value"),
    ("[" * 100_000 + "]" * 100_000, "not valid JSON"),
    ("\udcff", "not valid JSON"),
])
def test_malformed_file(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(text.encode("utf-8", errors="surrogateescape"))
    with pytest.raises(FatpteError) as info:
        DeviceProfile.load(path)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert needle in info.value.message
    assert info.value.source == str(path)


def test_oversized_file(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b" " * (D.MAX_PROFILE_BYTES + 1))
    with pytest.raises(FatpteError, match="larger than the limit") as info:
        DeviceProfile.load(path)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT


def test_missing_file_is_an_io_error(tmp_path: Path) -> None:
    with pytest.raises(FatpteError) as info:
        DeviceProfile.load(tmp_path / "absent.json")
    assert info.value.code is ErrorCode.IO_ERROR


def test_error_in_file_names_source_and_field(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(mutated(_set("accelerators/0/version", "9"))))
    with pytest.raises(FatpteError) as info:
        DeviceProfile.load(path)
    assert info.value.field == "accelerators[0].version"
    assert str(info.value).startswith(f"{path}: E0702 (accelerators[0].version): '9' is not a compute capability")


# -- strict reading -----------------------------------------------------------------------------

INVALID = [
    (_set("colour", "red"), "colour"),
    (_delete("backends"), "backends"),
    (_set("name", 7), "name"),
    (_set("name", ""), "name"),
    (_set("name", "a b"), "name"),
    (_set("name", "x" * 65), "name"),
    (_set("os", "beos"), "os"),
    (_set("os", "Linux"), "os"),
    (_set("arch", "riscv64"), "arch"),
    (_set("arch", "arm64"), "arch"),
    (_set("cpu_features", "avx2"), "cpu_features"),
    (_set("cpu_features", ["avx2", 3]), "cpu_features[1]"),
    (_set("cpu_features", ["avx2", "avx512"]), "cpu_features[1]"),
    (_set("cpu_features", ["avx2", "asimd"]), "cpu_features[1]"),
    (_set("cpu_features", ["avx2", "avx2"]), "cpu_features[1]"),
    (_set("cpu_features", ["AVX2"]), "cpu_features[0]"),
    (_set("arch", "aarch64"), "cpu_features[0]"),
    (_set("accelerators", {}), "accelerators"),
    (_set("accelerators", [SAMPLE["accelerators"][0]] * 65), "accelerators"),
    (_set("accelerators/0", "cuda"), "accelerators[0]"),
    (_set("accelerators/0/kind", "tpu"), "accelerators[0].kind"),
    (_set("accelerators/0/speed", 1), "accelerators[0].speed"),
    (_set("accelerators/0/name", ""), "accelerators[0].name"),
    (_set("accelerators/0/name", "GPU\n"), "accelerators[0].name"),
    (_set("accelerators/0/name", "Gr\u00e4fik"), "accelerators[0].name"),
    (_set("accelerators/0/version", "9"), "accelerators[0].version"),
    (_set("accelerators/0/version", "9.0.0"), "accelerators[0].version"),
    (_set("accelerators/0/version", "09.0"), "accelerators[0].version"),
    (_set("accelerators/0/version", "9.0\n"), "accelerators[0].version"),
    (_set("accelerators/0/version", "sm_90"), "accelerators[0].version"),
    (_set("accelerators/0/version", 9.0), "accelerators[0].version"),
    (_set("accelerators/0/version", "10000.0"), "accelerators[0].version"),
    (_set("accelerators/0/memory_bytes", -1), "accelerators[0].memory_bytes"),
    (_set("memory_bytes", True), "memory_bytes"),
    (_set("memory_bytes", "1024"), "memory_bytes"),
    (_set("memory_bytes", 1 << 63), "memory_bytes"),
    (_set("backends", []), "backends"),
    (_set("backends", {"x nn": 1}), "backends.x nn"),
    (_set("backends", {"": 1}), "backends."),
    (_set("backends", {"b" * 33: 1}), "backends." + "b" * 33),
    (_set("backends/xnnpack", 1 << 32), "backends.xnnpack"),
    (_set("backends/xnnpack", -1), "backends.xnnpack"),
    (_set("backends/xnnpack", None), "backends.xnnpack"),
    (_set("sources", []), "sources"),
    (_set("sources", "Arm Cortex-A76 TRM"), "sources"),
    (_set("sources", [f"doc {i}" for i in range(17)]), "sources"),
    (_set("sources", ["doc", 3]), "sources[1]"),
    (_set("sources", ["doc", "doc"]), "sources[1]"),
    (_set("sources", [""]), "sources[0]"),
    (_set("sources", ["d" * 513]), "sources[0]"),
    (_set("sources", ["Caf\u00e9 manual"]), "sources[0]"),
    (_set("sources", ["line\nbreak"]), "sources[0]"),
]


@pytest.mark.parametrize(("change", "field"), INVALID)
def test_invalid_profile_names_the_field(change: Callable[[dict[str, Any]], None], field: str) -> None:
    obj = mutated(change)
    with pytest.raises(FatpteError) as info:
        DeviceProfile.from_json(obj)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert info.value.field == field
    assert not VALIDATOR.is_valid(obj), "the schema must reject what fatpte rejects"


@pytest.mark.parametrize("obj", [None, [], "profile", 3])
def test_profile_must_be_an_object(obj: Any) -> None:
    with pytest.raises(FatpteError) as info:
        DeviceProfile.from_json(obj)
    assert (info.value.code, info.value.field) == (ErrorCode.INVALID_ARGUMENT, "$")


def test_valid_variants_are_accepted_by_both() -> None:
    for change in (_set("accelerators/0/kind", "vulkan"), _set("accelerators/0/version", "10.0")):
        obj = mutated(change)
        assert VALIDATOR.is_valid(obj)
        DeviceProfile.from_json(obj)
    vulkan = mutated(_set("accelerators/0/kind", "vulkan"))
    for version in ("1", "1.3", "1.3.280"):
        vulkan["accelerators"][0]["version"] = version
        assert VALIDATOR.is_valid(vulkan)
        assert DeviceProfile.from_json(vulkan).accelerators[0].version_tuple() == tuple(
            int(x) for x in version.split("."))


def test_integral_float_is_the_one_documented_difference() -> None:
    # JSON Schema counts 1024.0 as an integer; fatpte (and specs/device-profile.md) require an
    # integer literal, because a C++ reader parses "1024.0" as a double.
    obj = mutated(_set("memory_bytes", 1024.0))
    assert VALIDATOR.is_valid(obj)
    with pytest.raises(FatpteError) as info:
        DeviceProfile.from_json(obj)
    assert info.value.field == "memory_bytes"


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(1 << 64), max_value=1 << 64)
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer()) | st.text(max_size=8)
    | st.sampled_from(["8.0", "08.0", "8", "8.0.0", "1.3", "", "host", "x" * 65, "avx2", "asimd", "sve2",
                       "linux", "macos", "aarch64", "x86_64", "cuda", "metal", "Orin", 0, 1 << 63, 1 << 32]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=6,
)
PATHS = ["sources", "sources/0", "name", "os", "arch", "cpu_features",
         "cpu_features/0", "cpu_features/1", "accelerators",
         "accelerators/0", "accelerators/0/kind", "accelerators/0/name", "accelerators/0/version",
         "accelerators/0/memory_bytes", "accelerators/0/extra", "memory_bytes", "backends", "backends/xnnpack",
         "backends/bad key", "extra"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PATHS), JSON_VALUES), min_size=1, max_size=3))
def test_schema_and_reader_agree(changes: list[tuple[str, Any]]) -> None:
    obj = copy.deepcopy(SAMPLE)
    for path, value in changes:
        try:
            _set(path, value)(obj)
        except (KeyError, IndexError, TypeError, ValueError):
            continue  # the path no longer exists after an earlier change
    try:
        DeviceProfile.from_json(obj)
        accepted = True
    except FatpteError as exc:
        assert exc.code is ErrorCode.INVALID_ARGUMENT
        accepted = False
    assert accepted == VALIDATOR.is_valid(obj), obj


# -- the Python API -------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(device_profiles())
def test_round_trip_and_canonical_form(profile: DeviceProfile) -> None:
    obj = profile.to_json()
    known = profile.executorch_backends is not None
    cited = profile.sources is not None
    assert list(obj) == list(D._PROFILE_KEYS) + ["executorch_backends"] * known + ["sources"] * cited
    if cited:
        assert obj["sources"] == list(profile.sources or ())  # the writer's order, kept
    if known:
        assert obj["executorch_backends"] == sorted(obj["executorch_backends"])
    assert obj["cpu_features"] == sorted(obj["cpu_features"])
    assert list(obj["backends"]) == sorted(obj["backends"])
    VALIDATOR.validate(obj)
    text = profile.to_json_text()
    assert text == json.dumps(obj, indent=2) + "\n"
    assert text.isascii()
    again = DeviceProfile.from_json(json.loads(text))
    assert again == profile
    assert hash(again) == hash(profile)
    assert again.to_json_text() == text


def test_canonical_bytes() -> None:
    profile = DeviceProfile.from_json(SAMPLE)
    assert profile.to_json_text() == (
        '{\n  "name": "sample",\n  "os": "linux",\n  "arch": "x86_64",\n'
        '  "cpu_features": [\n    "avx",\n    "avx2"\n  ],\n'
        '  "accelerators": [\n    {\n      "kind": "cuda",\n      "name": "NVIDIA H100 80GB HBM3",\n'
        '      "version": "9.0",\n      "memory_bytes": 85899345920\n    }\n  ],\n'
        '  "memory_bytes": 1024,\n  "backends": {\n    "cuda": 1,\n    "xnnpack": 3\n  }\n}\n'
    )
    empty = DeviceProfile("e", "windows", "x86_64", frozenset())
    assert empty.to_json_text() == (
        '{\n  "name": "e",\n  "os": "windows",\n  "arch": "x86_64",\n  "cpu_features": [],\n'
        '  "accelerators": [],\n  "memory_bytes": 0,\n  "backends": {}\n}\n'
    )


def test_sources_are_printed_last_in_their_order() -> None:
    profile = DeviceProfile.from_json({**SAMPLE, "backends": {}, "executorch_backends": [],
                                       "sources": ["Zeta manual", "Alpha \"TRM\", 100798"]})
    assert profile.sources == ("Zeta manual", 'Alpha "TRM", 100798')
    assert profile.to_json_text().endswith(
        '  "backends": {},\n  "executorch_backends": [],\n  "sources": [\n    "Zeta manual",\n'
        '    "Alpha \\"TRM\\", 100798"\n  ]\n}\n')
    with pytest.raises(FatpteError) as info:
        DeviceProfile("p", "linux", "x86_64", set(), sources="one document")  # type: ignore[arg-type]
    assert info.value.field == "sources"
    with pytest.raises(FatpteError) as info:
        DeviceProfile("p", "linux", "x86_64", set(), sources=["ok", "bad\t"])
    assert info.value.field == "sources[1]"


def test_direct_construction_is_checked() -> None:
    with pytest.raises(FatpteError) as info:
        DeviceProfile("p", "linux", "x86_64", {"avx2", "sve"})
    assert info.value.field == "cpu_features[1]" and "aarch64 feature" in info.value.message
    with pytest.raises(FatpteError, match="one string"):
        DeviceProfile("p", "linux", "x86_64", "avx2")  # type: ignore[arg-type]
    with pytest.raises(FatpteError) as info:
        Accelerator("cuda", "A100", "8", 0)
    assert info.value.field == "accelerator.version"
    with pytest.raises(FatpteError) as info:
        DeviceProfile("p", "linux", "x86_64", set(), ("cuda",))  # type: ignore[arg-type]
    assert info.value.field == "accelerators[0]"


def test_profiles_are_immutable() -> None:
    backends = {"xnnpack": 1}
    features = {"avx2"}
    profile = DeviceProfile("p", "linux", "x86_64", features, backends=backends)
    backends["xnnpack"] = 2
    features.add("fma")
    assert profile.backends == {"xnnpack": 1} and profile.cpu_features == {"avx2"}
    with pytest.raises(TypeError):
        profile.backends["xnnpack"] = 3  # type: ignore[index]
    with pytest.raises(AttributeError):
        profile.os = "android"  # type: ignore[misc]


def test_lazy_exports() -> None:
    assert fatpte.DeviceProfile is DeviceProfile
    assert fatpte.Accelerator is Accelerator
    assert {"DeviceProfile", "Accelerator"} <= set(fatpte.__all__)


# -- one truth: the schema and the spec say what device.py says ---------------------------------


def test_schema_is_valid_and_uses_the_vocabulary() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    props = SCHEMA["properties"]
    assert props["os"]["enum"] == list(V.OS_NAMES)
    assert props["arch"]["enum"] == list(V.ARCHES)
    assert props["cpu_features"]["items"]["enum"] == list(V.X86_FEATURES) + list(V.ARM_FEATURES)
    per_arch = {rule["if"]["properties"]["arch"]["const"]: rule["then"]["properties"]["cpu_features"]["items"]["enum"]
                for rule in SCHEMA["allOf"]}
    assert {a: set(words) for a, words in per_arch.items()} == {a: set(w) for a, w in V.CPU_FEATURES.items()}
    acc = SCHEMA["$defs"]["accelerator"]
    assert acc["properties"]["kind"]["enum"] == list(V.ACCELERATOR_KINDS)
    assert acc["required"] == list(DA.ACCELERATOR_KEYS)
    assert SCHEMA["required"] == list(D._PROFILE_KEYS)
    assert props["name"]["pattern"] == f"^{D.NAME_PATTERN}$"
    assert acc["properties"]["name"]["pattern"] == f"^{DF.ACCELERATOR_NAME_PATTERN}$"
    assert SCHEMA["$defs"]["memory_bytes"]["maximum"] == DF.MAX_MEMORY_BYTES
    assert props["backends"]["additionalProperties"]["maximum"] == DF.MAX_ABI_VERSION
    assert props["accelerators"]["maxItems"] == D.MAX_ACCELERATORS


def _spec_table_words(title: str) -> set[str]:
    """The backquoted words in the first column of the table under the heading `title` (after
    its section number) in the spec."""
    text = (SPECS / "device-profile.md").read_text()
    heading = re.search(rf"^#+ [0-9.]* ?{re.escape(title)}$", text, re.MULTILINE)
    assert heading is not None, title
    start = heading.start()
    words: set[str] = set()
    in_table = False
    for line in text[start:].splitlines()[1:]:
        if line.startswith("|"):
            in_table = True
            cell = line.split("|")[1]
            words.update(re.findall(r"`([^`]+)`", cell))
        elif in_table:
            break
    return words


def test_spec_lists_the_vocabulary() -> None:
    assert _spec_table_words("x86_64 features") == set(V.X86_FEATURES)
    assert _spec_table_words("aarch64 features") == set(V.ARM_FEATURES)
    assert _spec_table_words("Operating systems") == set(V.OS_NAMES)
    assert _spec_table_words("CPU architectures") == set(V.ARCHES)
    assert _spec_table_words("Accelerator kinds") == set(V.ACCELERATOR_KINDS)
    assert _spec_table_words("Named profiles") == set(EXPECTED)


def test_device_module_needs_only_the_standard_library() -> None:
    # A GPU box without fatpte's dependencies can still print its profile.
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('construct', 'click', 'crc32c', 'flatbuffers'):\n"
        "            raise ImportError('blocked ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from fatpte.device.profile import DeviceProfile\n"
        "print(DeviceProfile.host().to_json_text(), end='')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["name"] == "host"


def test_replace_checks_like_construction() -> None:
    # `_replace` of a NamedTuple builds without `__new__`; the profile records re-check instead.
    profile = DeviceProfile("p", "linux", "x86_64", {"avx2"}, backends={"xnnpack": 1})
    changed = profile._replace(memory_bytes=1 << 30, cpu_features=["fma"])
    assert changed.memory_bytes == 1 << 30 and changed.cpu_features == frozenset({"fma"})
    assert type(changed) is DeviceProfile and changed.backends == {"xnnpack": 1}
    with pytest.raises(FatpteError) as info:
        profile._replace(os="beos")
    assert info.value.field == "os"
    with pytest.raises(FatpteError) as info:
        Accelerator("cuda", "A100", "8.0", 0)._replace(version="8")
    assert info.value.field == "accelerator.version"


def test_profiles_from_json_and_named_files_compare_and_hash_as_values() -> None:
    named = DeviceProfile.load("x86-64-v3")
    assert DeviceProfile.from_json(named.to_json()) == named
    assert hash(DeviceProfile.from_json(named.to_json())) == hash(named)
    assert copy.copy(named) == named and type(copy.copy(named)) is DeviceProfile
