"""The device a vendor backend's delegate was compiled for, read from its compile specs: one row
per vendor runtime (ExecuTorch's OpenvinoBackend keeps it under the key `device`: `CPU`, `GPU`,
`NPU`), and the accelerator kind a device profile lists such devices under
(specs/device-profile.md 4.1). Packing turns each into an accelerator requirement
(specs/executorch.md section 7), so an entry compiled for a GPU is not chosen where the
runtime lists none. Standard library only.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

from fatpte.executorch.pte import Delegate, Program


class VendorBackend(NamedTuple):
    """A delegate id whose compile spec `key` names the runtime device, listed as `kind`."""

    delegate_id: str
    key: str
    kind: str


# A vendor runtime is added with a row here (and, for finding its library, the loader's table).
VENDOR_BACKENDS: Final = (VendorBackend("OpenvinoBackend", "device", "openvino"),)
# A value that names one device type, or one device of it ("GPU.1"). Anything else (OpenVINO's
# virtual devices AUTO, MULTI:..., HETERO:..., BATCH:...) lets the runtime choose: no device is
# required, only the runtime.
_DEVICE: Final = re.compile(r"[A-Za-z0-9_]{1,62}(?:\.[0-9]{1,3})?")
_VIRTUAL: Final = frozenset({"AUTO", "MULTI", "HETERO", "BATCH"})


def compiled_devices(program: Program) -> tuple[tuple[str, str], ...]:
    """Each (kind, device) the program's vendor delegates were compiled for, sorted, each once;
    device "" when the compile spec names no single device (absent, virtual, not ASCII)."""
    found = {kd for method in program.methods for d in method.delegates if (kd := delegate_device(d)) is not None}
    return tuple(sorted(found))


def delegate_device(d: Delegate) -> tuple[str, str] | None:
    """(kind, device) of one delegate of a vendor backend (device "" when its compile spec names no
    single device); None for a delegate of any other backend."""
    row = next((r for r in VENDOR_BACKENDS if r.delegate_id == d.backend_id), None)
    return None if row is None else (row.kind, _device(dict(d.compile_specs).get(row.key)))


def _device(value: bytes | None) -> str:
    if value is None:
        return ""
    try:
        text = value.decode("ascii")
    except UnicodeDecodeError:
        return ""
    if not _DEVICE.fullmatch(text) or text.split(".")[0] in _VIRTUAL:
        return ""
    return text
