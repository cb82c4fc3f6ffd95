"""fatpte: pack, inspect, validate, select, extract and thin NFAT fat ML program containers.

Modules are never named like the functions they export (`packing` holds `pack`): importing
a submodule binds its name on the package, which would hide a function of the same name.

The public API is imported lazily: `import fatpte` costs almost nothing, and each name loads
its module on first use, so the command line starts fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "Container": "fatpte.container",
    "open": "fatpte.container",
    "Specialization": "fatpte.packing",
    "pack": "fatpte.packing",
    "validate": "fatpte.validation",
    "validate_buffer": "fatpte.validation",
    "Report": "fatpte.validation",
    "extract": "fatpte.extraction",
    "Entry": "fatpte.model",
    "Segment": "fatpte.model",
    "Header": "fatpte.model",
    "ErrorCode": "fatpte.errors",
    "FatpteError": "fatpte.errors",
    "SelectionError": "fatpte.errors",
    "Finding": "fatpte.errors",
    "Severity": "fatpte.errors",
    "DeviceProfile": "fatpte.device",
    "Accelerator": "fatpte.device",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from fatpte.container import Container, open
    from fatpte.device import Accelerator, DeviceProfile
    from fatpte.errors import ErrorCode, FatpteError, Finding, SelectionError, Severity
    from fatpte.extraction import extract
    from fatpte.model import Entry, Header, Segment
    from fatpte.packing import Specialization, pack
    from fatpte.validation import Report, validate, validate_buffer


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fatpte' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
