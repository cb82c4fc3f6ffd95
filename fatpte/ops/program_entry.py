"""ExecuTorch programs as container entries: the manifest record an entry whose payload is a
program gets, derived from the program's bytes, and the checks that keep the two together
(specs/executorch.md section 7). `pack` applies them to every specialization, whatever made it
(the command line, pack.toml, `add`, `replace`, `fatpte.Specialization`, `pte_specialization`),
and `validate` applies them to every entry of a container.

A payload is a program when its bytes 4..8 are `ET12` and it reads as one; anything else stays
opaque bytes. What is derived: the signature (fatpte.executorch.signature), the ExecuTorch
backends its delegates need, the SHA-256 of the program, the named-data keys it loads. What is
checked: a stated signature agrees with the derived one; the backend id does not name a backend
the program does not use; stated executorch_backends are the program's; a recorded SHA-256 is
the program's; the entry's named data holds only keys the program needs from outside itself.

The signature check is a decision the container records: the provenance key
`fatpte.signature_check` is `skipped` (no entry states a signature) or `from:NAME` (every entry
states entry NAME's), set by `pack(signature_from=..., check_signatures=False)`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.keys import program_keys
from fatpte.executorch.pte import IDENTIFIER, Program, read_program
from fatpte.executorch.ptn_write import SHARED  # the word both rewritten kinds record
from fatpte.executorch.signature import program_signature
from fatpte.executorch.vendor_devices import compiled_devices
from fatpte.manifest.adapters import program_view
from fatpte.manifest.model import (
    SIGNATURE_CHECK_KEY,
    AcceleratorRequirement,
    ManifestEntry,
    Requirements,
    Signature,
    adapted,
)
from fatpte.manifest.rules import signature_difference, signature_problems

SHA256_KEY = "executorch.pte.sha256"  # provenance: the SHA-256 of the program file packed
NAMED_DATA_KEY = "executorch.pte.named_data"  # provenance: "shared" when the payload is that file rewritten
SKIPPED = "skipped"
FROM = "from:"

# The words of backend ids that name an ExecuTorch backend, and the delegate id each stands for:
# the backends executorch 1.5.1 ships (their BackendDetails classes), plus `portable`, the
# operators every runtime has, which a program uses when it delegates nothing.
PORTABLE = "portable"
BACKEND_WORDS: dict[str, str] = {
    "xnnpack": "XnnpackBackend", "native": "NativeBackend", "coreml": "CoreMLBackend", "coreai": "CoreAIBackend",
    "mps": "MPSBackend", "metal": "MetalBackend", "vulkan": "VulkanBackend", "qnn": "QnnBackend",
    "openvino": "OpenvinoBackend", "cuda": "CudaBackend", "neuropilot": "NeuropilotBackend", "enn": "EnnBackend",
    "ethosu": "EthosUBackend", "tosa": "TOSABackend", "vgf": "VgfBackend", "neutron": "NeutronBackend",
    "mlx": "MLXBackend",
}
_SUFFIX = re.compile(r"_?backend$", re.IGNORECASE)
_WORD_SPLIT = re.compile(r"[-_.]")


class ProgramFacts(NamedTuple):
    """What an ExecuTorch program's bytes say about it, for its entry's manifest record."""

    signature: Signature
    executorch_backends: tuple[str, ...]  # delegate ids, sorted; empty: portable operators only
    loads: frozenset[str]  # every named-data key it loads
    needed: frozenset[str]  # the keys it loads that it does not hold itself
    sha256: str
    # (accelerator kind, device) each vendor delegate was compiled for: ("openvino", "GPU");
    # device "" when its compile spec names none (fatpte.executorch.vendor_devices).
    vendor_devices: tuple[tuple[str, str], ...] = ()


def is_program(payload: bytes | bytearray | memoryview) -> bool:
    """True when bytes 4..8 are `ET12`: the payload claims to be an ExecuTorch program."""
    return len(payload) >= 8 and bytes(payload[4:8]) == IDENTIFIER


def program_facts(payload: bytes | bytearray | memoryview, *, source: str | None = None) -> ProgramFacts:
    """The facts of the program `payload`; FatpteError (E10xx) when it does not read as one."""
    view = memoryview(payload)
    return facts_of(read_program(view, source=source), view)


def facts_of(program: Program, payload: bytes | bytearray | memoryview) -> ProgramFacts:
    digest = hashlib.sha256()
    view = memoryview(payload)
    try:
        for pos in range(0, len(view), 8 << 20):
            digest.update(view[pos : pos + (8 << 20)])
    finally:
        view.release()
    keys = program_keys(program)
    return ProgramFacts(
        Signature.from_mapping(program_signature(program)),
        tuple(sorted({d.backend_id for m in program.methods for d in m.delegates})),
        frozenset(keys.loads),
        frozenset(keys.external),
        digest.hexdigest(),
        compiled_devices(program),
    )


def with_compiled_devices(requires: Requirements, facts: ProgramFacts) -> Requirements:
    """`requires` with an accelerator requirement for each device the program's vendor delegates
    were compiled for (specs/executorch.md section 7): {kind "openvino", device "GPU"} for an
    OpenvinoBackend delegate whose compile spec says GPU. One the packer stated already (same kind
    and device) is not added again; one stated for another device stays, and both are required."""
    stated = {(a.kind, a.device) for a in requires.accelerators}
    added = tuple(AcceleratorRequirement(kind, device=device) for kind, device in facts.vendor_devices
                  if (kind, device) not in stated)
    return requires._replace(accelerators=requires.accelerators + added) if added else requires


def backend_word(delegate_id: str) -> str:
    """`XnnpackBackend` -> `xnnpack`: the delegate id lowercased without its `Backend` suffix."""
    return (_SUFFIX.sub("", delegate_id) or delegate_id).lower()


def _uses(executorch_backends: Sequence[str]) -> str:
    if not executorch_backends:
        return "the program delegates to no backend (it runs on the portable operators)"
    return f"the program delegates to {', '.join(executorch_backends)}"


def backend_problem(backend_id: str, executorch_backends: Sequence[str]) -> str | None:
    """Why `backend_id` contradicts a program whose delegates are `executorch_backends`, or None.

    The id is split into words at `-`, `_` and `.`; each word that names an ExecuTorch backend
    (BACKEND_WORDS, or the word of one of the program's own delegates) must be one the program
    delegates to, and `portable` needs a program that delegates nothing. Other words (`cpu`,
    `avx2`, `int8`) are the packer's own and say nothing about the program."""
    have = {backend_word(d) for d in executorch_backends}
    for word in _WORD_SPLIT.split(backend_id.lower()):
        if word == PORTABLE and have:
            return (f"backend id {backend_id!r} names the portable operators, but "
                    f"{_uses(executorch_backends)}")
        if (word in BACKEND_WORDS or word in have) and word not in have:
            return (f"backend id {backend_id!r} names {BACKEND_WORDS.get(word, word)}, but "
                    f"{_uses(executorch_backends)}")
    return None


def signature_decision(provenance: Sequence[tuple[str, str]] | Mapping[str, str]) -> str | None:
    """The entry's recorded signature decision: None (derive and check), `skipped`, `from:NAME`."""
    pairs = provenance.items() if isinstance(provenance, Mapping) else provenance
    return next((v for k, v in pairs if k == SIGNATURE_CHECK_KEY), None)


def check_decision(value: str, entry_names: Sequence[str], path: str) -> str | None:
    """The entry a `fatpte.signature_check` value takes its signature from (None for `skipped`);
    INVALID_ARGUMENT for any other value or an unknown entry."""
    if value == SKIPPED:
        return None
    if value.startswith(FROM) and value[len(FROM) :] in entry_names:
        return value[len(FROM) :]
    raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{path}: {SIGNATURE_CHECK_KEY} is {value!r}: it must be "
                      f"{SKIPPED!r} or {FROM!r} and the name of an entry ({', '.join(entry_names)})",
                      field=path, actual=value)


def disagreeing_signature(signatures: Sequence[tuple[str, Signature]]) -> tuple[int, str] | None:
    """The first E0411 `pack` finds among entries (name, signature) stating these signatures, as
    (index, message), or None when they agree: the rule of specs/nfat-manifest.md section 5, for
    callers that check programs against each other without writing a manifest."""
    found = signature_problems([(i, ManifestEntry(name, signature=sig)) for i, (name, sig) in enumerate(signatures)])
    return found[0] if found else None


def stated_signature_problem(stated: Signature, derived: Signature) -> str | None:
    """Why a stated signature does not agree with the one derived from the program, or None. Where
    it declares a program dtype (a signature adapter, specs/nfat-manifest.md 5.3), the program must
    have that dtype there: what is compared is the program behind the adapter."""
    diff = signature_difference(program_view(stated), derived)
    if diff is None:
        return None
    if adapted(stated):
        return (f"the program dtypes its signature adapter declares (program_dtype) are not its program's: {diff}; "
                "pack it again with --adapt-io, which reads them from the program")
    return f"the signature stated for it does not agree with its program's: {diff}"


def digest_problem(provenance: Sequence[tuple[str, str]] | Mapping[str, str], facts: ProgramFacts) -> str | None:
    """Why the recorded program digest is not the program's, or None (none recorded, or the
    payload is the recorded file rewritten: `executorch.pte.named_data = shared`)."""
    prov = dict(provenance.items() if isinstance(provenance, Mapping) else provenance)
    recorded = prov.get(SHA256_KEY)
    if recorded is None or prov.get(NAMED_DATA_KEY) == SHARED or recorded == facts.sha256:
        return None
    return f"the program has SHA-256 {facts.sha256}, but its provenance records {SHA256_KEY} = {recorded}"


def named_data_problem(keys: Sequence[str], facts: ProgramFacts) -> str | None:
    """Why the entry's named-data keys do not suit its program, or None: a key the program never
    loads, or one it holds itself (ExecuTorch refuses a key its program and its data map both
    give)."""
    unused = [k for k in keys if k not in facts.loads]
    own = [k for k in keys if k in facts.loads and k not in facts.needed]
    parts = []
    if unused:
        loaded = ", ".join(sorted(facts.loads)) or "none"
        parts.append(f"its named data holds {', '.join(map(repr, unused))}, which its program never loads (it "
                     f"loads: {loaded}): a .ptd of another program, or named data left from a replaced payload")
    if own:
        parts.append(f"its named data holds {', '.join(map(repr, own))}, which its program holds itself: the "
                     "runtime refuses a key given twice")
    return "; ".join(parts) or None


def record_problems(entry: Any, facts: ProgramFacts, decision: str | None, backend_id: str,
                    ) -> list[tuple[ErrorCode, str, str]]:
    """Every way the manifest entry `entry` (a ManifestEntry) disagrees with its program, as
    (code, field, message) in the order specs/executorch.md section 7 gives."""
    out: list[tuple[ErrorCode, str, str]] = []
    if entry.signature is not None and (decision is None or decision == FROM + entry.name):
        why = stated_signature_problem(entry.signature, facts.signature)
        if why is not None:
            out.append((ErrorCode.PROGRAM_SIGNATURE_MISMATCH, "signature", why))
    why = backend_problem(backend_id, facts.executorch_backends)
    if why is not None:
        out.append((ErrorCode.BACKEND_ID_CONTRADICTS_PROGRAM, "backend_id", why))
    stated = entry.executorch_backends
    if stated is not None and tuple(sorted(stated)) != facts.executorch_backends:
        why = f"executorch_backends says {', '.join(stated) or 'none'}, but {_uses(facts.executorch_backends)}"
        out.append((ErrorCode.EXECUTORCH_BACKENDS_MISMATCH, "executorch_backends", why))
    why = digest_problem(entry.provenance, facts)
    if why is not None:
        out.append((ErrorCode.PROGRAM_DIGEST_MISMATCH, "provenance", why))
    why = named_data_problem(entry.named_data, facts)
    if why is not None:
        out.append((ErrorCode.NAMED_DATA_UNUSED, "named_data", why))
    return out
