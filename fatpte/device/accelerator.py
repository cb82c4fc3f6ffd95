"""`Accelerator`: one accelerator of a device profile (kind, name, version, memory; for a device a
vendor runtime lists, its `device` name and `capabilities`), checked on construction and read
strictly from JSON. The probes build these; fatpte.device.profile holds
them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final, NamedTuple, Self

from fatpte.device.fields import (
    ACCELERATOR_NAME_PATTERN,
    API_VERSION_PATTERN,
    CUDA_VERSION_PATTERN,
    MAX_MEMORY_BYTES,
    check_keys,
    integer,
    invalid,
    kind_of,
    quoted_value,
    string,
)
from fatpte.errors import quoted
from fatpte.format.vocabulary import (
    ACCELERATOR_KINDS,
    CAPABILITY_PATTERN,
    DEVICE_NAME_PATTERN,
    MAX_CAPABILITIES,
)

ACCELERATOR_KEYS: Final = ("kind", "name", "version", "memory_bytes")
VENDOR_KEYS: Final = ("device", "capabilities")  # optional (specs/device-profile.md 4.1)


class _AcceleratorFields(NamedTuple):
    kind: str
    name: str
    version: str
    memory_bytes: int
    device: str = ""
    capabilities: tuple[str, ...] = ()


class Accelerator(_AcceleratorFields):
    """One accelerator: for `cuda`, `version` is the compute capability ("9.0"). `device` is the
    vendor runtime's name of it ("GPU.0"; "": none) and `capabilities` what it reports of it
    (sorted, each once)."""

    __slots__ = ()

    def __new__(cls, kind: str, name: str, version: str, memory_bytes: int, device: str = "",
                capabilities: Iterable[str] = ()) -> Self:
        if isinstance(capabilities, str):
            raise invalid("accelerator.capabilities", "must be a collection of words, not one string", capabilities)
        caps = list(capabilities)
        acc = super().__new__(cls, kind, name, version, memory_bytes, device, tuple(sorted(caps, key=str)))
        _check_accelerator(acc, "accelerator", caps)
        return acc

    def _replace(self, **changes: Any) -> Self:
        # The inherited `_replace` builds with tuple.__new__ and would skip the checks in `__new__`.
        return type(self)(**{**self._asdict(), **changes})

    def version_tuple(self) -> tuple[int, ...]:
        """The version as numbers, for ordering: "8.7" -> (8, 7)."""
        return tuple(int(part) for part in self.version.split("."))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "name": self.name, "version": self.version,
                               "memory_bytes": self.memory_bytes}
        if self.device:
            out["device"] = self.device
        if self.capabilities:
            out["capabilities"] = list(self.capabilities)
        return out

    @classmethod
    def from_json(cls, obj: Any, path: str = "accelerator") -> Accelerator:
        """Read one accelerator object; errors name `path` and the bad field."""
        if not isinstance(obj, dict):
            raise invalid(path, f"must be an object, not {kind_of(obj)}", obj)
        check_keys(obj, ACCELERATOR_KEYS, path, VENDOR_KEYS)
        kind = string(obj["kind"], f"{path}.kind")
        name = string(obj["name"], f"{path}.name")
        version = string(obj["version"], f"{path}.version")
        memory = integer(obj["memory_bytes"], f"{path}.memory_bytes", 0, MAX_MEMORY_BYTES)
        device = string(obj["device"], f"{path}.device") if "device" in obj else None
        caps_raw = obj.get("capabilities", [])
        if not isinstance(caps_raw, list):
            raise invalid(f"{path}.capabilities", f"must be an array of strings, not {kind_of(caps_raw)}")
        if len(caps_raw) > MAX_CAPABILITIES:
            raise invalid(f"{path}.capabilities", f"lists {len(caps_raw)} capabilities, more than the limit of "
                          f"{MAX_CAPABILITIES}", len(caps_raw))
        caps = [string(c, f"{path}.capabilities[{i}]") for i, c in enumerate(caps_raw)]
        # tuple.__new__ skips `__new__`, whose checks would name the wrong field path; a `device`
        # given empty is checked as given (absent and "" differ in a file, not in the record).
        acc = tuple.__new__(cls, (kind, name, version, memory, device or "", tuple(sorted(caps))))
        _check_accelerator(acc, path, caps, device_given=device is not None)
        return acc


def _check_accelerator(acc: Accelerator, path: str, caps: list[str] | None = None,
                       device_given: bool = False) -> None:
    if not isinstance(acc.kind, str) or acc.kind not in ACCELERATOR_KINDS:
        raise invalid(f"{path}.kind", f"{quoted(acc.kind)} is not an accelerator kind (one of "
                       f"{', '.join(ACCELERATOR_KINDS)})", acc.kind)
    if not isinstance(acc.name, str) or not re.fullmatch(ACCELERATOR_NAME_PATTERN, acc.name):
        raise invalid(f"{path}.name", f"{quoted(acc.name)} must be 1 to 256 printable ASCII characters", acc.name)
    pattern = CUDA_VERSION_PATTERN if acc.kind == "cuda" else API_VERSION_PATTERN
    if not isinstance(acc.version, str) or not re.fullmatch(pattern, acc.version):
        rule = ("a compute capability MAJOR.MINOR such as \"8.0\"" if acc.kind == "cuda"
                else "a version of 1 to 3 dot-separated numbers such as \"1.3\"")
        raise invalid(f"{path}.version", f"{quoted(acc.version)} is not {rule} (numbers without leading zeros, "
                       "at most 4 digits)", acc.version)
    integer(acc.memory_bytes, f"{path}.memory_bytes", 0, MAX_MEMORY_BYTES)
    _check_vendor(acc.device, caps if caps is not None else list(acc.capabilities), path, device_given)


def _check_vendor(device: object, caps: list[str], path: str, device_given: bool) -> None:
    """`device` (when given: a vendor runtime's device name) and `capabilities` (in the order
    given: words, each once, at most MAX_CAPABILITIES)."""
    if (device_given or device != "") and (not isinstance(device, str)
                                           or not re.fullmatch(DEVICE_NAME_PATTERN, device)):
        raise invalid(f"{path}.device", f"{quoted_value(device)} is not a device name (1 to 64 characters from "
                      "[A-Za-z0-9_.-], as the runtime lists it: CPU, GPU.0, NPU)", device)
    if len(caps) > MAX_CAPABILITIES:
        raise invalid(f"{path}.capabilities", f"lists {len(caps)} capabilities, more than the limit of "
                      f"{MAX_CAPABILITIES}", len(caps))
    seen: set[str] = set()
    for i, word in enumerate(caps):
        if not isinstance(word, str) or not re.fullmatch(CAPABILITY_PATTERN, word):
            raise invalid(f"{path}.capabilities[{i}]", f"{quoted(word)} is not a capability (1 to 32 characters from "
                          "[a-z0-9_]: the runtime's word lower-cased, such as fp16)", word)
        if word in seen:
            raise invalid(f"{path}.capabilities[{i}]", f"{quoted(word)} is listed twice", word)
        seen.add(word)
