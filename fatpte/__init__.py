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
    "Container": "fatpte.container.reader",
    "open": "fatpte.container.locations",
    "open_remote": "fatpte.container.remote",
    "RemoteContainer": "fatpte.container.remote",
    "validate_remote": "fatpte.container.remote",
    "Specialization": "fatpte.ops.specialization",
    "pack": "fatpte.ops.packing",
    "validate": "fatpte.ops.validation",
    "validate_buffer": "fatpte.ops.validation",
    "Report": "fatpte.container.validation",
    "extract": "fatpte.ops.extraction",
    "Entry": "fatpte.format.model",
    "Segment": "fatpte.format.model",
    "Header": "fatpte.format.model",
    "ErrorCode": "fatpte.errors",
    "FatpteError": "fatpte.errors",
    "FatpteWarning": "fatpte.errors",
    "SelectionError": "fatpte.errors",
    "Finding": "fatpte.errors",
    "Severity": "fatpte.errors",
    "DeviceProfile": "fatpte.device.profile",
    "Accelerator": "fatpte.device.accelerator",
    "select": "fatpte.device.selection",
    "Selection": "fatpte.device.selection",
    "Verdict": "fatpte.device.selection",
    "Failure": "fatpte.device.selection",
    "thin": "fatpte.ops.thinning",
    "check": "fatpte.ops.check",
    "CheckReport": "fatpte.ops.check",
    "merge_programs": "fatpte.ops.fat_merge",
    "sign": "fatpte.ops.signing",
    "verify": "fatpte.ops.signing",
    "unsign": "fatpte.ops.signing",
    "load_trusted_keys": "fatpte.ops.signing",
    "TrustedKey": "fatpte.ops.signing",
    "VerifyReport": "fatpte.ops.signing",
    "pack_from_file": "fatpte.ops.packfile",
    "pte_specialization": "fatpte.ops.pte_specialize",
    "ptn_specialization": "fatpte.ops.pte_specialize",
    "NamedData": "fatpte.ops.specialization",
    "Manifest": "fatpte.manifest.model",
    "ManifestEntry": "fatpte.manifest.model",
    "Requirements": "fatpte.manifest.model",
    "Signature": "fatpte.manifest.model",
}

# Static, so type checkers and linters see the API; tests/test_api.py keeps it equal to _EXPORTS.
__all__ = [
    "Accelerator",
    "CheckReport",
    "Container",
    "DeviceProfile",
    "Entry",
    "ErrorCode",
    "Failure",
    "FatpteError",
    "FatpteWarning",
    "Finding",
    "Header",
    "Manifest",
    "ManifestEntry",
    "NamedData",
    "RemoteContainer",
    "Report",
    "Requirements",
    "Segment",
    "Selection",
    "SelectionError",
    "Severity",
    "Signature",
    "Specialization",
    "TrustedKey",
    "Verdict",
    "VerifyReport",
    "check",
    "extract",
    "load_trusted_keys",
    "merge_programs",
    "open",
    "open_remote",
    "pack",
    "pack_from_file",
    "pte_specialization",
    "ptn_specialization",
    "select",
    "sign",
    "thin",
    "unsign",
    "validate",
    "validate_buffer",
    "validate_remote",
    "verify",
]

if TYPE_CHECKING:
    from fatpte.container.locations import open as open
    from fatpte.container.reader import Container as Container
    from fatpte.container.remote import RemoteContainer as RemoteContainer
    from fatpte.container.remote import open_remote as open_remote
    from fatpte.container.remote import validate_remote as validate_remote
    from fatpte.container.validation import Report as Report
    from fatpte.device.accelerator import Accelerator as Accelerator
    from fatpte.device.profile import DeviceProfile as DeviceProfile
    from fatpte.device.selection import Failure as Failure
    from fatpte.device.selection import Selection as Selection
    from fatpte.device.selection import Verdict as Verdict
    from fatpte.device.selection import select as select
    from fatpte.errors import ErrorCode as ErrorCode
    from fatpte.errors import FatpteError as FatpteError
    from fatpte.errors import FatpteWarning as FatpteWarning
    from fatpte.errors import Finding as Finding
    from fatpte.errors import SelectionError as SelectionError
    from fatpte.errors import Severity as Severity
    from fatpte.format.model import Entry as Entry
    from fatpte.format.model import Header as Header
    from fatpte.format.model import Segment as Segment
    from fatpte.manifest.model import Manifest as Manifest
    from fatpte.manifest.model import ManifestEntry as ManifestEntry
    from fatpte.manifest.model import Requirements as Requirements
    from fatpte.manifest.model import Signature as Signature
    from fatpte.ops.check import CheckReport as CheckReport
    from fatpte.ops.check import check as check
    from fatpte.ops.extraction import extract as extract
    from fatpte.ops.fat_merge import merge_programs as merge_programs
    from fatpte.ops.packfile import pack_from_file as pack_from_file
    from fatpte.ops.packing import pack as pack
    from fatpte.ops.pte_specialize import pte_specialization as pte_specialization
    from fatpte.ops.pte_specialize import ptn_specialization as ptn_specialization
    from fatpte.ops.signing import TrustedKey as TrustedKey
    from fatpte.ops.signing import VerifyReport as VerifyReport
    from fatpte.ops.signing import load_trusted_keys as load_trusted_keys
    from fatpte.ops.signing import sign as sign
    from fatpte.ops.signing import unsign as unsign
    from fatpte.ops.signing import verify as verify
    from fatpte.ops.specialization import NamedData as NamedData
    from fatpte.ops.specialization import Specialization as Specialization
    from fatpte.ops.thinning import thin as thin
    from fatpte.ops.validation import validate as validate
    from fatpte.ops.validation import validate_buffer as validate_buffer


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fatpte' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
