"""Writer of ExecuTorch native packages (.ptn), for a package whose tensors live in a container.

`pack --share-pte-named-data` moves a package's tensors into the container's shared named data
(stored once across entries) and keeps as the payload the package without them (`strip`: a
package holding program.ptg only). Extracting the entry puts them back (`write_ptn`): the
tensors are laid out as ExecuTorch's writer lays them out (exir/_serialize/_ptn.py, write_ptn):
a stored zip of program.ptg, then program.safetensors (a JSON header of the owner tensors in key
order, `separators=(",", ":")`, padded with spaces to a multiple of 8 bytes, then their bytes in
the same order), then aliases.json (`indent=2, sort_keys=True`) when some keys share bytes. The
owners and aliases follow ExecuTorch's rule: in key order, a key the program mutates always owns
its bytes; an immutable key with the dtype, shape and bytes of an earlier immutable owner is an
alias of it. The dtype and shape of each key come from program.ptg's constants.

Every member carries the time 1980-01-01 00:00, so the bytes depend on the contents only; a
package ExecuTorch saved at that time (the committed fixtures) comes back byte for byte.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable, Mapping, Sequence
from typing import BinaryIO, NamedTuple

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.nptg import NativeProgram
from fatpte.executorch.ptn import ALIASES_MEMBER, PROGRAM_MEMBER, SAFETENSORS_MEMBER
from fatpte.value.dtypes import SAFETENSORS_DTYPES

EPOCH = (1980, 1, 1, 0, 0, 0)
# The provenance pair that marks an entry whose package was stripped of its tensors.
SHARED_KEY = "executorch.ptn.named_data"
SHARED = "shared"
_CODES = {name: code for code, (name, _) in SAFETENSORS_DTYPES.items()}
_ITEMSIZE = {name: size for name, size in SAFETENSORS_DTYPES.values()}


class Owner(NamedTuple):
    """A tensor program.safetensors holds: its key, dtype name, shape and size in bytes."""

    key: str
    dtype: str
    shape: tuple[int, ...]
    size: int


def tensor_types(program: NativeProgram, source: str | None = None) -> dict[str, tuple[str, tuple[int, ...], bool]]:
    """Key -> (dtype, shape, mutated) of every constant the program loads, from program.ptg.
    FatpteError when a key's type is not one a safetensors header can state (a symbolic size, a
    dtype safetensors lacks, two constants giving one key two types)."""
    out: dict[str, tuple[str, tuple[int, ...], bool]] = {}
    for method in program.methods:
        for c in method.constants:
            if c.dtype not in _CODES or not all(isinstance(d, int) for d in c.shape):
                raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"named-data key {c.data_key!r} is "
                                  f"{c.dtype}{list(c.shape)}, which a safetensors header cannot state",
                                  source=source, field=f"program.ptg.constants[{c.data_key!r}]")
            typed = (c.dtype, tuple(int(d) for d in c.shape), c.mutated)
            seen = out.get(c.data_key)
            if seen is not None and seen[:2] != typed[:2]:
                raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"named-data key {c.data_key!r} has two types in "
                                  f"program.ptg: {seen[0]}{list(seen[1])} and {typed[0]}{list(typed[1])}",
                                  source=source, field=f"program.ptg.constants[{c.data_key!r}]")
            out[c.data_key] = (typed[0], typed[1], typed[2] or (seen is not None and seen[2]))
    return out


def layout(types: Mapping[str, tuple[str, tuple[int, ...], bool]], same_bytes: Callable[[str, str], bool],
           keys: Sequence[str]) -> tuple[list[Owner], dict[str, str]]:
    """The owners and aliases ExecuTorch's writer makes of `keys` (see the module docstring);
    `same_bytes(a, b)` says whether two keys hold identical bytes."""
    owners: list[Owner] = []
    aliases: dict[str, str] = {}
    for key in sorted(keys):
        dtype, shape, mutated = types[key]
        size = _ITEMSIZE[dtype]
        for d in shape:
            size *= d
        if not mutated:
            owner = next((o for o in owners if not types[o.key][2] and (o.dtype, o.shape) == (dtype, shape)
                          and same_bytes(o.key, key)), None)
            if owner is not None:
                aliases[key] = owner.key
                continue
        owners.append(Owner(key, dtype, shape, size))
    return owners, aliases


def _info(name: str, mode: int | None) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, EPOCH)
    info.compress_type = zipfile.ZIP_STORED
    if mode is not None:
        info.external_attr = mode << 16  # what ZipFile.writestr gives a member named by a string
    return info


def write_ptn(out: BinaryIO, ptg: bytes | memoryview, owners: Sequence[Owner], aliases: Mapping[str, str],
              write_tensor: Callable[[Owner, BinaryIO], None]) -> None:
    """Write a package to `out` (seekable): program.ptg, then the owners' header and bytes (each
    written by `write_tensor(owner, stream)`, which must write exactly `owner.size` bytes), then
    aliases.json."""
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED, allowZip64=True) as pkg:
        pkg.writestr(_info(PROGRAM_MEMBER, 0o600), bytes(ptg))
        if not owners:
            return
        header: dict[str, object] = {}
        offset = 0
        for o in owners:
            header[o.key] = {"dtype": _CODES[o.dtype], "shape": list(o.shape), "data_offsets": [offset, offset + o.size]}
            offset += o.size
        encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
        encoded += b" " * ((8 - len(encoded) % 8) % 8)
        big = offset + len(encoded) + 8 > zipfile.ZIP64_LIMIT  # as ZipFile would need; ExecuTorch never sets it
        with pkg.open(_info(SAFETENSORS_MEMBER, None), "w", force_zip64=big) as stream:
            stream.write(len(encoded).to_bytes(8, "little"))
            stream.write(encoded)
            for o in owners:
                write_tensor(o, stream)  # type: ignore[arg-type]  # ZipExtFile for writing is a BinaryIO
        if aliases:
            pkg.writestr(_info(ALIASES_MEMBER, 0o600), json.dumps(dict(aliases), indent=2, sort_keys=True))


def strip(ptg: bytes | memoryview) -> bytes:
    """The package holding program.ptg only: what a container keeps as the payload when the
    tensors move into its named data."""
    out = io.BytesIO()
    write_ptn(out, ptg, (), {}, lambda o, s: None)
    return out.getvalue()
