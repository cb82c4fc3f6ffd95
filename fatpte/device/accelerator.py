"""`Accelerator`: one accelerator of a device profile (kind, name, version, memory), checked on
construction and read strictly from JSON. The probes build these; fatpte.device.profile holds
them.
"""

from __future__ import annotations

import re
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
    string,
)
from fatpte.format.vocabulary import ACCELERATOR_KINDS

ACCELERATOR_KEYS: Final = ("kind", "name", "version", "memory_bytes")


class _AcceleratorFields(NamedTuple):
    kind: str
    name: str
    version: str
    memory_bytes: int


class Accelerator(_AcceleratorFields):
    """One accelerator: for `cuda`, `version` is the compute capability ("9.0")."""

    __slots__ = ()

    def __new__(cls, kind: str, name: str, version: str, memory_bytes: int) -> Self:
        acc = super().__new__(cls, kind, name, version, memory_bytes)
        _check_accelerator(acc, "accelerator")
        return acc

    def _replace(self, **changes: Any) -> Self:
        # The inherited `_replace` builds with tuple.__new__ and would skip the checks in `__new__`.
        return type(self)(**{**self._asdict(), **changes})

    def version_tuple(self) -> tuple[int, ...]:
        """The version as numbers, for ordering: "8.7" -> (8, 7)."""
        return tuple(int(part) for part in self.version.split("."))

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "version": self.version, "memory_bytes": self.memory_bytes}

    @classmethod
    def from_json(cls, obj: Any, path: str = "accelerator") -> Accelerator:
        """Read one accelerator object; errors name `path` and the bad field."""
        if not isinstance(obj, dict):
            raise invalid(path, f"must be an object, not {kind_of(obj)}", obj)
        check_keys(obj, ACCELERATOR_KEYS, path)
        kind = string(obj["kind"], f"{path}.kind")
        name = string(obj["name"], f"{path}.name")
        version = string(obj["version"], f"{path}.version")
        memory = integer(obj["memory_bytes"], f"{path}.memory_bytes", 0, MAX_MEMORY_BYTES)
        return cls._checked(kind, name, version, memory, path)

    @classmethod
    def _checked(cls, kind: str, name: str, version: str, memory: int, path: str) -> Accelerator:
        # tuple.__new__ skips `__new__`, whose checks would name the wrong field path.
        acc = tuple.__new__(cls, (kind, name, version, memory))
        _check_accelerator(acc, path)
        return acc


def _check_accelerator(acc: Accelerator, path: str) -> None:
    if not isinstance(acc.kind, str) or acc.kind not in ACCELERATOR_KINDS:
        raise invalid(f"{path}.kind", f"{acc.kind!r} is not an accelerator kind (one of "
                       f"{', '.join(ACCELERATOR_KINDS)})", acc.kind)
    if not isinstance(acc.name, str) or not re.fullmatch(ACCELERATOR_NAME_PATTERN, acc.name):
        raise invalid(f"{path}.name", f"{acc.name!r} must be 1 to 256 printable ASCII characters", acc.name)
    pattern = CUDA_VERSION_PATTERN if acc.kind == "cuda" else API_VERSION_PATTERN
    if not isinstance(acc.version, str) or not re.fullmatch(pattern, acc.version):
        rule = ("a compute capability MAJOR.MINOR such as \"8.0\"" if acc.kind == "cuda"
                else "a version of 1 to 3 dot-separated numbers such as \"1.3\"")
        raise invalid(f"{path}.version", f"{acc.version!r} is not {rule} (numbers without leading zeros, "
                       "at most 4 digits)", acc.version)
    integer(acc.memory_bytes, f"{path}.memory_bytes", 0, MAX_MEMORY_BYTES)
