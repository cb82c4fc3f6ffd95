"""ExecuTorch interop: readers for .pte programs, .ptd data files and delegate payloads.

Written from ExecuTorch's published layouts (schema/program.fbs, flat_tensor.fbs, the native
backend's native_graph.fbs and .ptn package, the XNNPACK header and schema); `executorch` itself is never
imported. Every reader is bounds-checked and raises only FatpteError on bad input. Readers: `pte`
(.pte programs), `ptd` (.ptd data files), `ptn` (.ptn native packages), `nptg` (the native
backend's payload), `xnnpack` (the XNNPACK payload), over `flatbuf` (bounded flatbuffer access,
through the flatbuffers runtime's tables), `verifier` (the flatbuffers verifier's verdict on a
program, which the C++ loader reads it after) and the dtypes of fatpte.value; `describe` (what a file is and holds),
`signature` (a program's signature), `keys` (the named data a program loads), `constants`
(where a program's constant tensors lie) and `vendor_devices` (the device a vendor backend's
delegate was compiled for, from its compile specs). Writing is
limited to .pte files rewritten in place (`rewrite`), .ptd data files (`ptd_write`) and .ptn
packages whose tensors live in a container (`ptn_write`). Operations that combine these with
containers (packing a .pte, fat delegates, an entry's .ptd) live a floor up, in fatpte.ops.

May use: fatpte.container, fatpte.manifest, fatpte.format, fatpte.value, fatpte.fileio, fatpte.errors; not
fatpte.device (a sibling floor).
"""

from fatpte.executorch.describe import Description, describe, sniff
from fatpte.executorch.nptg import NativeProgram, read_nptg
from fatpte.executorch.ptd import DataFile, read_ptd
from fatpte.executorch.pte import Program, read_program
from fatpte.executorch.ptn import NativePackage, read_ptn
from fatpte.executorch.signature import native_signature, program_signature
from fatpte.executorch.xnnpack import XnnGraph, read_xnnpack

__all__ = [
    "DataFile",
    "Description",
    "NativePackage",
    "NativeProgram",
    "Program",
    "XnnGraph",
    "describe",
    "native_signature",
    "program_signature",
    "read_nptg",
    "read_program",
    "read_ptd",
    "read_ptn",
    "read_xnnpack",
    "sniff",
]
