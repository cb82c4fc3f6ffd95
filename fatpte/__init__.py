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
    "select": "fatpte.selection",
    "Selection": "fatpte.selection",
    "Verdict": "fatpte.selection",
    "Failure": "fatpte.selection",
    "thin": "fatpte.thinning",
    "pack_from_file": "fatpte.packfile",
    "NamedData": "fatpte.named_data",
    "Manifest": "fatpte.manifest",
    "ManifestEntry": "fatpte.manifest",
    "Requirements": "fatpte.manifest",
    "Signature": "fatpte.manifest",
}

# Static, so type checkers and linters see the API; tests/test_api.py keeps it equal to _EXPORTS.
__all__ = [
    "Accelerator",
    "Container",
    "DeviceProfile",
    "Entry",
    "ErrorCode",
    "Failure",
    "FatpteError",
    "Finding",
    "Header",
    "Manifest",
    "ManifestEntry",
    "NamedData",
    "Report",
    "Requirements",
    "Segment",
    "Selection",
    "SelectionError",
    "Severity",
    "Signature",
    "Specialization",
    "Verdict",
    "extract",
    "open",
    "pack",
    "pack_from_file",
    "select",
    "thin",
    "validate",
    "validate_buffer",
]

if TYPE_CHECKING:
    from fatpte.container import Container as Container
    from fatpte.container import open as open
    from fatpte.device import Accelerator as Accelerator
    from fatpte.device import DeviceProfile as DeviceProfile
    from fatpte.errors import ErrorCode as ErrorCode
    from fatpte.errors import FatpteError as FatpteError
    from fatpte.errors import Finding as Finding
    from fatpte.errors import SelectionError as SelectionError
    from fatpte.errors import Severity as Severity
    from fatpte.extraction import extract as extract
    from fatpte.manifest import Manifest as Manifest
    from fatpte.manifest import ManifestEntry as ManifestEntry
    from fatpte.manifest import Requirements as Requirements
    from fatpte.manifest import Signature as Signature
    from fatpte.model import Entry as Entry
    from fatpte.model import Header as Header
    from fatpte.model import Segment as Segment
    from fatpte.named_data import NamedData as NamedData
    from fatpte.packfile import pack_from_file as pack_from_file
    from fatpte.packing import Specialization as Specialization
    from fatpte.packing import pack as pack
    from fatpte.selection import Failure as Failure
    from fatpte.selection import Selection as Selection
    from fatpte.selection import Verdict as Verdict
    from fatpte.selection import select as select
    from fatpte.thinning import thin as thin
    from fatpte.validation import Report as Report
    from fatpte.validation import validate as validate
    from fatpte.validation import validate_buffer as validate_buffer


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fatpte' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
