"""Field rules shared by device profiles and their accelerators: the patterns and limits of
specs/device-profile.md and the strict checks of JSON values (an integer is never a boolean, an
unknown or missing key names its path). Standard library only.
"""

from __future__ import annotations

from typing import Any, Final

from fatpte.errors import ErrorCode, FatpteError, clipped, quoted
from fatpte.fileio.strict_json import HugeInteger

# Accelerator names come from drivers; printable ASCII keeps the canonical JSON free of escapes
# that the C++ printer would have to reproduce.
ACCELERATOR_NAME_PATTERN: Final = r"[ -~]{1,256}"
# A version component: a decimal integer without leading zeros, at most 4 digits, so "8.10"
# and "8.1" differ and compare numerically.
_COMPONENT = r"(?:0|[1-9][0-9]{0,3})"
CUDA_VERSION_PATTERN: Final = rf"{_COMPONENT}\.{_COMPONENT}"  # compute capability X.Y
API_VERSION_PATTERN: Final = rf"{_COMPONENT}(?:\.{_COMPONENT}){{0,2}}"  # 1 to 3 components
# An ExecuTorch backend id as its runtime registers it (`XnnpackBackend`): printable ASCII without
# spaces; ExecuTorch's registry holds at most 16, so 64 leaves room and bounds the work.
EXECUTORCH_BACKEND_PATTERN: Final = r"[!-~]{1,256}"
MAX_EXECUTORCH_BACKENDS: Final = 64
# A source a profile cites for its facts (a vendor document's title, its number, a URL): printable
# ASCII, so the canonical form needs no escapes beyond `"` and `\`; 16 of them bound the work.
SOURCE_PATTERN: Final = r"[ -~]{1,512}"
MAX_SOURCES: Final = 16
MAX_MEMORY_BYTES: Final = (1 << 63) - 1  # an int64 on the C++ side
MAX_ABI_VERSION: Final = (1 << 32) - 1  # a uint32, as in the manifest


def invalid(path: str, message: str, actual: Any = None) -> FatpteError:
    return FatpteError(ErrorCode.INVALID_ARGUMENT, message, field=path, actual=actual)


def quoted_value(value: object) -> str:
    """A value from a file as a message quotes it: a string `quoted` (escaped, clipped), anything
    else as Python writes it, clipped."""
    return quoted(value) if isinstance(value, str) else clipped(repr(value))


def check_keys(obj: dict[Any, Any], allowed: tuple[str, ...], path: str, optional: tuple[str, ...] = ()) -> None:
    """Unknown keys first (in document order), then missing ones (in `allowed` order); the keys
    of `optional` may be absent."""
    prefix = f"{path}." if path else ""
    for key in obj:
        if key not in allowed and key not in optional:
            keys = ", ".join((*allowed, *optional))
            raise invalid(f"{prefix}{key}", f"unknown key {quoted(key)}; the keys are {keys}", key)
    for key in allowed:
        if key not in obj:
            raise invalid(f"{prefix}{key}", f"the key {quoted(key)} is missing")


def string(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise invalid(path, f"must be a string, not {kind_of(value)}", value)
    return value


def integer(value: Any, path: str, low: int, high: int) -> int:
    # bool is an int in Python but `true` is not a number in JSON.
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(path, f"must be an integer, not {kind_of(value)}", value)
    if not low <= value <= high:
        # As written (a HugeInteger's literal, not the 2^64 it reads as), clipped like any quote.
        actual = value.literal if isinstance(value, HugeInteger) else value
        raise invalid(path, f"{quoted_value(value)} is outside {low}..{high}", actual)
    return value


def kind_of(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "an integer",
             float: "a floating-point number", type(None): "null"}
    # By the first of its classes named: a HugeInteger is an integer.
    return next((names[t] for t in type(value).__mro__ if t in names), type(value).__name__)
