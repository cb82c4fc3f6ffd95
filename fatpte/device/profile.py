"""`DeviceProfile`: what a device offers (OS, CPU architecture and features, accelerators, memory,
backend ABI versions, the ExecuTorch backends its runtime has), read strictly from JSON, written
in one canonical form, named profiles looked up, and `DeviceProfile.host()` built from what the
probes (fatpte.device.host) report.

The words come from fatpte.format.vocabulary; specs/device-profile.md and
specs/device_profile.schema.json define them. Standard library only (and fatpte.errors, and the
strict JSON reader of fatpte.fileio), so a bare machine can run the probe.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from os import PathLike  # `os` is also a field: inside the class body that name means the field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Self

if TYPE_CHECKING:
    from pathlib import Path

from fatpte.device.accelerator import Accelerator
from fatpte.device.fields import (
    EXECUTORCH_BACKEND_PATTERN,
    MAX_ABI_VERSION,
    MAX_EXECUTORCH_BACKENDS,
    MAX_MEMORY_BYTES,
    MAX_SOURCES,
    SOURCE_PATTERN,
    check_keys,
    integer,
    invalid,
    kind_of,
    quoted_value,
    string,
)
from fatpte.errors import ErrorCode, FatpteError, out_of_memory, quoted
from fatpte.fileio.strict_json import JsonRefused, JsonRules, loads
from fatpte.format.vocabulary import ARCHES, CPU_FEATURES, OS_NAMES

# Profile names double as file names in specs/devices/ and as command-line words.
NAME_PATTERN: Final = r"[A-Za-z0-9_.-]{1,64}"
MAX_ACCELERATORS: Final = 64  # bounds the work a hostile profile can cause
MAX_PROFILE_BYTES: Final = 1 << 20  # profiles are a few hundred bytes; a larger file is not one
# Arrays and objects nest at most this deep in a profile file (a profile needs 3); deeper is not
# JSON a profile reader reads, whatever the interpreter's stack (the C++ reader has the same limit).
MAX_PROFILE_DEPTH: Final = 64

DEVICES_DIR_ENV: Final = "FATPTE_DEVICES_DIR"
HOST_NAME: Final = "host"

_PROFILE_KEYS: Final = ("name", "os", "arch", "cpu_features", "accelerators", "memory_bytes", "backends")
# Absent: not known (sources: none cited). In canonical order: the runtime's backends, the identity
# (section 2.1), then the sources.
_OPTIONAL_KEYS: Final = ("executorch_backends", "cpu_cores", "kernel", "os_release", "machine", "soc", "sources")
MAX_CORES: Final = 64  # distinct core designs; a real part has at most 4
MAX_SOC_WORDS: Final = 64


# The profile records are NamedTuples, not dataclasses: `fatpte select` builds one on every run,
# and `dataclasses` (with the `inspect` it imports) would cost more than the whole selection.
# A NamedTuple cannot define `__new__` in its own body, so each record is a field tuple plus a
# subclass whose `__new__` normalises and checks what Python callers pass.


_NO_BACKENDS: Final[Mapping[str, int]] = MappingProxyType({})


class _DeviceProfileFields(NamedTuple):
    name: str
    os: str
    arch: str
    cpu_features: frozenset[str]
    accelerators: tuple[Accelerator, ...] = ()
    memory_bytes: int = 0
    backends: Mapping[str, int] = _NO_BACKENDS
    executorch_backends: frozenset[str] | None = None
    cpu_cores: frozenset[str] | None = None
    kernel: str | None = None
    os_release: str | None = None
    machine: str | None = None
    soc: frozenset[str] | None = None
    sources: tuple[str, ...] | None = None


class DeviceProfile(_DeviceProfileFields):
    """What a device offers; `backends` maps a backend id to the ABI version its runtime provides
    (empty: unknown). `memory_bytes` is total physical RAM (0: unknown). `executorch_backends`
    holds the ExecuTorch backend ids registered in the device's runtime (`XnnpackBackend`, ...;
    empty: none, portable operators only; None: not known). The identity (None: not known):
    `cpu_cores` (core table names, or ids of cores it does not name), `kernel` (the release),
    `os_release` ("debian 12"), `machine` (the machine model) and `soc` (device-tree compatible
    strings and /sys/devices/soc0 values).
    `sources` cites the documents the profile's facts come from, in the writer's order (None: none
    cited)."""

    __slots__ = ()

    def __new__(
        cls,
        name: str,
        os: str,
        arch: str,
        cpu_features: Iterable[str],
        accelerators: Iterable[Accelerator] = (),
        memory_bytes: int = 0,
        backends: Mapping[str, int] = _NO_BACKENDS,
        executorch_backends: Iterable[str] | None = None,
        cpu_cores: Iterable[str] | None = None,
        kernel: str | None = None,
        os_release: str | None = None,
        machine: str | None = None,
        soc: Iterable[str] | None = None,
        sources: Iterable[str] | None = None,
    ) -> Self:
        # Accept any iterable or mapping from Python callers but store immutable copies, so a
        # profile cannot change after it has been checked.
        if isinstance(cpu_features, str):
            raise invalid("cpu_features", "must be a collection of feature names, not one string", cpu_features)
        if isinstance(executorch_backends, str):
            raise invalid("executorch_backends", "must be a collection of backend ids, not one string",
                          executorch_backends)
        for label, words in (("cpu_cores", cpu_cores), ("soc", soc)):
            if isinstance(words, str):
                raise invalid(label, "must be a collection of words, not one string", words)
        if isinstance(sources, str):
            raise invalid("sources", "must be a collection of source titles, not one string", sources)
        et = None if executorch_backends is None else frozenset(executorch_backends)
        cited = None if sources is None else tuple(sources)
        profile = super().__new__(cls, name, os, arch, frozenset(cpu_features), tuple(accelerators), memory_bytes,
                                  MappingProxyType(dict(backends)), et,
                                  None if cpu_cores is None else frozenset(cpu_cores), kernel, os_release, machine,
                                  None if soc is None else frozenset(soc), cited)
        _check_profile(profile)
        return profile

    def _replace(self, **changes: Any) -> Self:
        # The inherited `_replace` builds with tuple.__new__ and would skip the checks in `__new__`.
        return type(self)(**{**self._asdict(), **changes})

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_json(cls, obj: Any, *, source: str | None = None) -> DeviceProfile:
        """A profile from decoded JSON, checked strictly: unknown keys, wrong types and words outside
        the vocabulary raise FatpteError (INVALID_ARGUMENT) naming the field path."""
        try:
            return cls._from_json(obj)
        except FatpteError as exc:
            if source is None:
                raise
            raise FatpteError(exc.code, exc.message, source=source, field=exc.field, actual=exc.actual) from None

    @classmethod
    def _from_json(cls, obj: Any) -> DeviceProfile:
        if not isinstance(obj, dict):
            raise invalid("$", f"a device profile must be a JSON object, not {kind_of(obj)}", obj)
        check_keys(obj, _PROFILE_KEYS, "", _OPTIONAL_KEYS)
        name = string(obj["name"], "name")
        os_name = string(obj["os"], "os")
        arch = string(obj["arch"], "arch")
        features_raw = obj["cpu_features"]
        if not isinstance(features_raw, list):
            raise invalid("cpu_features", f"must be an array of strings, not {kind_of(features_raw)}")
        features: list[str] = []
        for i, word in enumerate(features_raw):
            features.append(string(word, f"cpu_features[{i}]"))
        seen: set[str] = set()
        for i, word in enumerate(features):
            if word in seen:
                raise invalid(f"cpu_features[{i}]", f"{quoted(word)} is listed twice", word)
            seen.add(word)
        accs_raw = _bounded_array(obj["accelerators"], "accelerators", "objects", "accelerators", MAX_ACCELERATORS)
        accelerators = tuple(Accelerator.from_json(a, f"accelerators[{i}]") for i, a in enumerate(accs_raw))
        memory = integer(obj["memory_bytes"], "memory_bytes", 0, MAX_MEMORY_BYTES)
        backends_raw = obj["backends"]
        if not isinstance(backends_raw, dict):
            raise invalid("backends", f"must be an object mapping backend ids to ABI versions, not "
                           f"{kind_of(backends_raw)}")
        backends = {key: integer(v, f"backends.{key}", 0, MAX_ABI_VERSION) for key, v in backends_raw.items()}
        et: frozenset[str] | None = None
        if "executorch_backends" in obj:
            et_raw = _bounded_array(obj["executorch_backends"], "executorch_backends", "strings", "backends",
                                    MAX_EXECUTORCH_BACKENDS)
            words = [string(w, f"executorch_backends[{i}]") for i, w in enumerate(et_raw)]
            _check_executorch_backends(words)
            et = frozenset(words)
        identity, orders = _read_identity(obj)
        sources = _read_sources(obj["sources"]) if "sources" in obj else None
        # tuple.__new__ skips `__new__`: the values are already copies, and the check below is given
        # the features (and the identity's words) in file order so that an error names the index
        # the file has.
        profile = tuple.__new__(cls, (name, os_name, arch, frozenset(features), accelerators, memory,
                                      MappingProxyType(backends), et, *identity, sources))
        _check_profile(profile, feature_order=features, word_orders=orders)
        return profile

    @classmethod
    def load(cls, name_or_path: str | PathLike[str]) -> DeviceProfile:
        """A named profile (`x86-64-v3`, see names()) or a path to a profile JSON file.

        A string without a path separator or `.json` suffix is a name; anything else is a path."""
        text = os.fspath(name_or_path)
        is_name = (isinstance(name_or_path, str) and re.fullmatch(NAME_PATTERN, text) is not None
                   and not text.endswith(".json"))
        if is_name:
            directory = _devices_dir_text()
            path = os.path.join(directory, f"{text}.json")
            resources = _packaged() if directory == _PACKAGED_DIR else None
            if resources is not None and text in _names_in(directory):
                blob = resources.joinpath(f"{text}.json").read_bytes()
                return cls.from_json(parse_json(blob, source=path), source=path)
            if not os.path.isfile(path):
                known = ", ".join(_names_in(directory)) or "none"
                raise FatpteError(ErrorCode.INVALID_ARGUMENT,
                                  f"no device profile named {quoted(text)} in {directory}; known profiles: {known} "
                                  "(or give a path to a profile JSON file)", field="device", actual=text)
        else:
            path = text  # the caller's spelling, in messages and `source` as every reader reports it
        return cls.from_json(_read_json(path), source=path)

    @classmethod
    def host(cls, *, executorch: bool = False, vendor_runtimes: Mapping[str, str] | None = None,
             vendor: bool = True) -> DeviceProfile:
        """Probe the machine this runs on (see specs/device-profile.md, "Probing the host").

        `executorch_backends` are the backends this machine's C++ ExecuTorch runtime provides, as
        fatpte-run answers (`$FATPTE_RUN`, else the one installed with fatpte's platform wheel, else
        `fatpte-run` on PATH or beside this Python;
        fatpte.device.probe_executorch); with `executorch`, where no fatpte-run answers, those
        ExecuTorch's Python runtime has registered, when it can be imported (that imports torch,
        seconds of work, so `fatpte device` asks it and `--device host` does not). Left out when
        no runtime answers: not known. `vendor_runtimes`: the caller's paths of vendor runtimes by
        name ("openvino"; "" withholds one), searched first (specs/device-profile.md 9.1). Without
        `vendor`, no vendor runtime is looked for, by this probe or by fatpte-run's (a selection
        none of whose entries needs one: loading OpenVINO to list its devices costs tens of ms)."""
        from fatpte.device import host, probe_executorch  # the probes are only needed here
        from fatpte.device.vendor_runtimes import VENDOR_RUNTIMES

        facts = host.probe(vendor_runtimes, vendor=vendor)
        if not vendor:
            vendor_runtimes = {r.name: "" for r in VENDOR_RUNTIMES}
        et = probe_executorch.runtime_backends(vendor_runtimes)
        if et is None and executorch:
            et = probe_executorch.registered_backends()
        ident = facts.identity
        return cls(name=HOST_NAME, os=facts.os, arch=facts.arch, cpu_features=facts.cpu_features,
                   accelerators=facts.accelerators, memory_bytes=facts.memory_bytes, backends={},
                   executorch_backends=et, cpu_cores=ident.cpu_cores, kernel=facts.kernel,
                   os_release=ident.os_release, machine=ident.machine, soc=ident.soc)

    @staticmethod
    def names() -> list[str]:
        """The named profiles in specs/devices/ (or $FATPTE_DEVICES_DIR), sorted."""
        return _names_in(_devices_dir_text())

    # -- output -------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The canonical object: fixed key order, sorted features and backends;
        `executorch_backends` (sorted) only when known."""
        out = {
            "name": self.name,
            "os": self.os,
            "arch": self.arch,
            "cpu_features": sorted(self.cpu_features),
            "accelerators": [a.to_json() for a in self.accelerators],
            "memory_bytes": self.memory_bytes,
            "backends": {key: self.backends[key] for key in sorted(self.backends)},
        }
        if self.executorch_backends is not None:
            out["executorch_backends"] = sorted(self.executorch_backends)
        if self.cpu_cores is not None:
            out["cpu_cores"] = sorted(self.cpu_cores)
        for key in ("kernel", "os_release", "machine"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.soc is not None:
            out["soc"] = sorted(self.soc)
        if self.sources is not None:
            out["sources"] = list(self.sources)
        return out

    def to_json_text(self) -> str:
        """The canonical text, byte-for-byte what `fatpte device --json` and the C++ loader print."""
        return canonical_text(self.to_json())

    def __hash__(self) -> int:
        # Written out because `backends` is a read-only mapping, which is not hashable.
        return hash((self.name, self.os, self.arch, self.cpu_features, self.accelerators, self.memory_bytes,
                     tuple(sorted(self.backends.items())), self.executorch_backends, self.cpu_cores, self.kernel,
                     self.os_release, self.machine, self.soc, self.sources))


def canonical_text(obj: Mapping[str, Any]) -> str:
    """Canonical JSON text of a profile object (specs/device-profile.md, "Canonical form")."""
    import json  # here and in _read_json only: `select --device host` reads no JSON

    return json.dumps(obj, indent=2) + "\n"


# -- checks -----------------------------------------------------------------------------------


def _check_profile(p: DeviceProfile, feature_order: list[str] | None = None,
                   word_orders: Mapping[str, list[Any]] | None = None) -> None:
    if not isinstance(p.name, str) or not re.fullmatch(NAME_PATTERN, p.name):
        raise invalid("name", f"{quoted(p.name)} must be 1 to 64 characters from [A-Za-z0-9_.-]", p.name)
    if not isinstance(p.os, str) or p.os not in OS_NAMES:
        raise invalid("os", f"{quoted(p.os)} is not an operating system of the vocabulary ({', '.join(OS_NAMES)})",
                       p.os)
    if not isinstance(p.arch, str) or p.arch not in ARCHES:
        raise invalid("arch", f"{quoted(p.arch)} is not a CPU architecture of the vocabulary ({', '.join(ARCHES)})",
                       p.arch)
    allowed = CPU_FEATURES[p.arch]
    order = feature_order if feature_order is not None else sorted(p.cpu_features, key=str)
    for i, word in enumerate(order):
        if not isinstance(word, str) or word not in allowed:
            other = next((a for a, words in CPU_FEATURES.items() if word in words), None)
            why = (f"is a {other} feature, not one of {p.arch}" if other is not None
                   else f"is not a CPU feature of the vocabulary for {p.arch}")
            raise invalid(f"cpu_features[{i}]", f"{quoted(word)} {why} ({' '.join(sorted(allowed))})", word)
    if len(p.accelerators) > MAX_ACCELERATORS:
        raise invalid("accelerators", f"lists {len(p.accelerators)} accelerators, more than the limit of "
                       f"{MAX_ACCELERATORS}", len(p.accelerators))
    for i, acc in enumerate(p.accelerators):
        if not isinstance(acc, Accelerator):
            raise invalid(f"accelerators[{i}]", f"must be an Accelerator, not {type(acc).__name__}")
    integer(p.memory_bytes, "memory_bytes", 0, MAX_MEMORY_BYTES)
    for key in sorted(p.backends, key=str):
        _check_backend_id(key)
        integer(p.backends[key], f"backends.{key}", 0, MAX_ABI_VERSION)
    if p.executorch_backends is not None:
        if len(p.executorch_backends) > MAX_EXECUTORCH_BACKENDS:
            raise invalid("executorch_backends", f"lists {len(p.executorch_backends)} backends, more than the "
                          f"limit of {MAX_EXECUTORCH_BACKENDS}", len(p.executorch_backends))
        _check_executorch_backends(sorted(p.executorch_backends, key=str))
    _check_identity(p, word_orders or {})
    if p.sources is not None:
        _check_sources(p.sources)



def _read_identity(obj: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, list[Any]]]:
    """The identity keys' values as the profile holds them (None when absent), and the words of
    `cpu_cores` and `soc` in file order: shapes only; _check_identity checks the values."""
    orders: dict[str, list[Any]] = {}
    for key, noun, limit in (("cpu_cores", "cores", MAX_CORES), ("soc", "words", MAX_SOC_WORDS)):
        if key in obj:
            orders[key] = [string(w, f"{key}[{i}]") for i, w in
                           enumerate(_bounded_array(obj[key], key, "strings", noun, limit))]
    texts = [string(obj[key], key) if key in obj else None for key in ("kernel", "os_release", "machine")]
    sets = {key: None if key not in orders else frozenset(orders[key]) for key in ("cpu_cores", "soc")}
    return (sets["cpu_cores"], *texts, sets["soc"]), orders


def _check_identity(p: DeviceProfile, orders: Mapping[str, list[Any]]) -> None:
    """The identity's values (specs/device-profile.md section 2.1), after every other field."""
    from fatpte.format.vocabulary import CORE_BY_ID, CORE_BY_NAME, CORE_ID_PATTERNS

    for key, words in (("cpu_cores", p.cpu_cores), ("soc", p.soc)):
        if words is not None and len(words) > (MAX_CORES if key == "cpu_cores" else MAX_SOC_WORDS):
            raise invalid(key, f"lists {len(words)} words, more than the limit of 64", len(words))
    seen: set[str] = set()
    for i, word in enumerate(orders.get("cpu_cores", sorted(p.cpu_cores or (), key=str))):
        path = f"cpu_cores[{i}]"
        core = CORE_BY_NAME.get(word) if isinstance(word, str) else None
        if core is not None and core.arch != p.arch:
            raise invalid(path, f"{quoted(word)} is a {core.arch} core, not one of {p.arch}", word)
        if core is None and not (isinstance(word, str) and re.fullmatch(CORE_ID_PATTERNS[p.arch], word)):
            raise invalid(path, f"{quoted(word)} is neither a core name of the table for {p.arch} (specs/device-profile.md "
                          "3.6) nor the id of a core it does not name", word)
        if word in CORE_BY_ID:
            raise invalid(path, f"{quoted(word)} is the core {CORE_BY_ID[word].name}: write its name", word)
        if word in seen:
            raise invalid(path, f"{quoted(word)} is listed twice", word)
        seen.add(word)
    for key in ("kernel", "os_release", "machine"):
        value = getattr(p, key)
        if value is not None and not (isinstance(value, str) and re.fullmatch(_IDENTITY_TEXT, value)):
            raise invalid(key, f"{quoted(value)} is not 1 to 256 printable ASCII characters", value)
    seen = set()
    for i, word in enumerate(orders.get("soc", sorted(p.soc or (), key=str))):
        if not (isinstance(word, str) and re.fullmatch(_IDENTITY_TEXT, word)):
            raise invalid(f"soc[{i}]", f"{quoted(word)} is not 1 to 256 printable ASCII characters", word)
        if word in seen:
            raise invalid(f"soc[{i}]", f"{quoted(word)} is listed twice", word)
        seen.add(word)


_IDENTITY_TEXT: Final = r"[ -~]{1,256}"


def _bounded_array(value: Any, path: str, items: str, noun: str, limit: int) -> list[Any]:
    """A JSON array of at most `limit` elements, else INVALID_ARGUMENT naming `path`."""
    if not isinstance(value, list):
        raise invalid(path, f"must be an array of {items}, not {kind_of(value)}")
    if len(value) > limit:
        raise invalid(path, f"lists {len(value)} {noun}, more than the limit of {limit}", len(value))
    return value


def _check_executorch_backends(words: Iterable[object]) -> None:
    seen: set[str] = set()
    for i, word in enumerate(words):
        if not isinstance(word, str) or not re.fullmatch(EXECUTORCH_BACKEND_PATTERN, word):
            raise invalid(f"executorch_backends[{i}]", f"{quoted_value(word)} is not an ExecuTorch backend id (1 to 256 printable "
                          "ASCII characters, no space)", word)
        if word in seen:
            raise invalid(f"executorch_backends[{i}]", f"{quoted(word)} is listed twice", word)
        seen.add(word)


def _read_sources(value: Any) -> tuple[str, ...]:
    """The optional `sources`: 1 to MAX_SOURCES strings, kept in the file's order."""
    raw = _bounded_array(value, "sources", "strings", "sources", MAX_SOURCES)
    words = tuple(string(w, f"sources[{i}]") for i, w in enumerate(raw))
    _check_sources(words)
    return words


def _check_sources(words: tuple[object, ...]) -> None:
    if not words:
        raise invalid("sources", "is empty; leave the key out when no source is cited")
    if len(words) > MAX_SOURCES:
        raise invalid("sources", f"lists {len(words)} sources, more than the limit of {MAX_SOURCES}", len(words))
    seen: set[str] = set()
    for i, word in enumerate(words):
        if not isinstance(word, str) or not re.fullmatch(SOURCE_PATTERN, word):
            raise invalid(f"sources[{i}]", f"{quoted_value(word)} is not a source (1 to 512 printable ASCII characters)", word)
        if word in seen:
            raise invalid(f"sources[{i}]", f"{quoted(word)} is listed twice", word)
        seen.add(word)


def _check_backend_id(key: object) -> None:
    # The container's id rules live in layout.py; imported here, not at the top, because layout
    # needs construct and probing the host must work where only the standard library is.
    from fatpte.format import layout

    ok = (isinstance(key, str) and key.isascii() and 1 <= len(key) <= layout.ID_FIELD_SIZE
          and all(b in layout.ID_ALPHABET for b in key.encode("ascii")))
    if not ok:
        raise invalid(f"backends.{key}", f"{quoted_value(key)} is not a backend id (1 to {layout.ID_FIELD_SIZE} "
                       "characters from [A-Za-z0-9_.-])", key)


# -- named profiles ---------------------------------------------------------------------------

# Named sets of named profiles (specs/device-profile.md section 8, "Sets"), written `@NAME` where a
# list of profiles is asked for (`fatpte coverage --devices @fleet`): `@fleet` is the CPUs fleets
# run, one profile per x86-64 level and per Arm core; `@all` every named profile.
SET_PREFIX: Final = "@"
FLEET: Final = ("x86-64-v2", "x86-64-v3", "x86-64-v4", "cortex-a53", "raspberry-pi-4", "cortex-a55", "cortex-a76",
                "cortex-a78", "cortex-x1", "neoverse-n1", "neoverse-v1", "a64fx")
SET_NAMES: Final = ("all", "fleet")


def set_members(word: str) -> list[str]:
    """The profile names of the set `word` (`@fleet`, `@all`); E0702 naming the sets for another."""
    if word == SET_PREFIX + "all":
        return DeviceProfile.names()
    if word == SET_PREFIX + "fleet":
        return list(FLEET)
    sets = ", ".join(SET_PREFIX + n for n in SET_NAMES)
    raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"no set of device profiles named {quoted(word)}; the sets are {sets}",
                      field="devices", actual=word)



def devices_dir() -> Path:
    """Where the named profiles are: $FATPTE_DEVICES_DIR if set, else the package data folder
    fatpte/device/profiles/ (specs/devices/ in a checkout is a link to it)."""
    from pathlib import Path  # here only: the readers use `_devices_dir_text`, pathlib costs ~9 ms

    return Path(_devices_dir_text())


def _devices_dir_text() -> str:
    # os.path rather than pathlib, which `fatpte select --device NAME` would otherwise import.
    override = os.environ.get(DEVICES_DIR_ENV)
    if override:
        return override
    return _PACKAGED_DIR


# The package data folder as a plain path: what importlib.resources.files() resolves to for a
# package installed as files (a wheel, an editable install, a checkout), found without importing
# importlib.resources, which costs `select --device NAME` more than the selection (pathlib,
# tempfile, zipfile). When the package is not plain files (a zip on sys.path), `_packaged()`
# reads the profiles through importlib.resources instead.
_PACKAGED_DIR: Final = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profiles")


def _packaged() -> Any | None:
    """The profiles as an importlib.resources Traversable when they are not plain files on disk;
    None when they are (or when $FATPTE_DEVICES_DIR names another folder)."""
    if os.environ.get(DEVICES_DIR_ENV) or os.path.isdir(_PACKAGED_DIR):
        return None
    from importlib.resources import files

    return files(__package__ or "fatpte.device").joinpath("profiles")


def _names_in(directory: str) -> list[str]:
    resources = _packaged() if directory == _PACKAGED_DIR else None
    try:
        files = [r.name for r in resources.iterdir()] if resources is not None else os.listdir(directory)
    except OSError as exc:
        raise FatpteError(ErrorCode.IO_ERROR,
                          f"cannot list the named device profiles in {directory}: {exc.strerror or exc} "
                          f"(set {DEVICES_DIR_ENV} to the folder that holds them)", source=directory,
                          actual=exc.errno) from exc
    stems = (stem for stem, suffix in map(os.path.splitext, files) if suffix == ".json")
    return sorted(stem for stem in stems if re.fullmatch(NAME_PATTERN, stem))


def _read_json(path: str) -> Any:
    from fatpte.fileio.mapping import read_regular

    return parse_json(read_regular(path, MAX_PROFILE_BYTES, "the device profile"), source=path)


# How a profile file is read (specs/device-profile.md, "Reading a profile"); the C++ reader
# applies the same rules.
PROFILE_JSON: Final = JsonRules(max_bytes=MAX_PROFILE_BYTES, max_depth=MAX_PROFILE_DEPTH, depth_of="containers",
                                huge_literal=True)


def parse_json(data: bytes, *, source: str | None = None) -> Any:
    """The JSON value of a profile file's bytes, read strictly (specs/device-profile.md, "Reading
    a profile"): at most MAX_PROFILE_BYTES, UTF-8, at most MAX_PROFILE_DEPTH levels of arrays and
    objects, no integer of more than MAX_INTEGER_DIGITS digits, no key twice in an object, no NaN
    or Infinity. Anything else is INVALID_ARGUMENT at field `$`, as the C++ reader reports it."""
    try:
        return loads(data, PROFILE_JSON)
    except JsonRefused as exc:
        if exc.kind == "size":
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"is larger than the limit of {MAX_PROFILE_BYTES} bytes "
                              "for a device profile", source=source, field="$") from None
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"is not valid JSON: {exc}", source=source,
                          field="$") from exc
    except MemoryError:
        raise out_of_memory(source, "reading the device profile") from None
