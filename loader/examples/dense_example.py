"""The example network of issue 5: a small dense network packed for the `dense_ref` and
`dense_avx2` example backends, with its weights stored once as named data both entries share.

`pack_example(dest)` writes the container; `reference(inputs)` computes the network in Python
(float64) for comparison with the backends (float32). Run as a script to write
`<dir>/dense.nfat` and `<dir>/dense-input.txt`; with `--aarch64` the container also has an
`dense_neon` entry (`make test-aarch64`).

It is the example of a payload that is not an ExecuTorch program: the loader runs it through
fatpte's own example backend ABI (loader/include/fatpte/backend.h), a toy of one float32 tensor in
and one out. The backend ids are `dense_*` so that none is taken for an ExecuTorch lowering
(`portable`, `xnnpack`) in a container that holds both kinds.
"""

from __future__ import annotations

import random
import struct
import sys
from pathlib import Path

import flatbuffers

from fatpte.ops.packing import pack
from fatpte.ops.specialization import Specialization

# (inputs, outputs, relu) per layer.
LAYERS: tuple[tuple[int, int, bool], ...] = ((16, 32, True), (32, 24, True), (24, 5, False))
IDENTIFIER = b"FDNS"  # specs/examples/dense.fbs file_identifier


def weights() -> dict[str, list[float]]:
    """The named data of the network: `layerN.weight` (outputs x inputs) and `layerN.bias`."""
    rng = random.Random(1234)
    out: dict[str, list[float]] = {}
    for i, (n_in, n_out, _) in enumerate(LAYERS):
        scale = 1.0 / n_in**0.5
        out[f"layer{i}.weight"] = [rng.uniform(-scale, scale) for _ in range(n_in * n_out)]
        out[f"layer{i}.bias"] = [rng.uniform(-0.1, 0.1) for _ in range(n_out)]
    return out


def _f32(values: list[float]) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def payload() -> bytes:
    """The Network flatbuffer: layer shapes and the named data keys of their tensors."""
    b = flatbuffers.Builder(256)
    layers = []
    for i, (n_in, n_out, relu) in enumerate(LAYERS):
        w = b.CreateString(f"layer{i}.weight")
        bias = b.CreateString(f"layer{i}.bias")
        b.StartObject(5)  # Layer: inputs, outputs, weights, bias, activation
        b.PrependUint32Slot(0, n_in, 0)
        b.PrependUint32Slot(1, n_out, 0)
        b.PrependUOffsetTRelativeSlot(2, w, 0)
        b.PrependUOffsetTRelativeSlot(3, bias, 0)
        b.PrependUint8Slot(4, 1 if relu else 0, 0)
        layers.append(b.EndObject())
    b.StartVector(4, len(layers), 4)
    for layer in reversed(layers):
        b.PrependUOffsetTRelative(layer)
    vec = b.EndVector()
    b.StartObject(1)  # Network: layers
    b.PrependUOffsetTRelativeSlot(0, vec, 0)
    b.Finish(b.EndObject(), file_identifier=IDENTIFIER)
    return bytes(b.Output())


def pack_example(dest: str | Path, avx2_abi: tuple[int, int] | None = None, neon: bool = False) -> Path:
    """Pack the network for `dense_ref` and, preferred where the CPU has AVX2 and FMA, `dense_avx2`;
    `avx2_abi` (min, max) adds a backend_abi requirement to the `dense_avx2` entry. `neon` adds a
    `dense_neon` entry, preferred on aarch64 with ASIMD (`make test-aarch64`)."""
    data = {key: _f32(values) for key, values in weights().items()}
    keys = sorted(data)
    body = payload()
    avx2: dict[str, object] = {"arch": ["x86_64"], "cpu_features": ["avx2", "fma"]}
    if avx2_abi is not None:
        avx2["backend_abi"] = {"min": avx2_abi[0], "max": avx2_abi[1]}
    entries = [
        Specialization("dense_ref", body, name="dense_ref", named_data=keys),
        Specialization("dense_avx2", body, name="dense_avx2", priority=1, named_data=keys, requires=avx2),
    ]
    if neon:
        entries.append(Specialization("dense_neon", body, name="dense_neon", priority=1, named_data=keys,
                                      requires={"arch": ["aarch64"], "cpu_features": ["asimd"]}))
    return pack(
        entries,
        dest,
        named_data=data,
    )


def example_input() -> list[float]:
    rng = random.Random(99)
    return [rng.uniform(-1.0, 1.0) for _ in range(LAYERS[0][0])]


def reference(inputs: list[float]) -> list[float]:
    """The network computed in Python on the float32 values the container stores."""
    w = {k: list(struct.unpack(f"<{len(v)}f", _f32(v))) for k, v in weights().items()}
    x = list(struct.unpack(f"<{len(inputs)}f", _f32(inputs)))
    for i, (n_in, n_out, relu) in enumerate(LAYERS):
        rows = w[f"layer{i}.weight"]
        y = [sum(rows[o * n_in + k] * x[k] for k in range(n_in)) + w[f"layer{i}.bias"][o] for o in range(n_out)]
        x = [max(0.0, v) for v in y] if relu else y
    return x


def main(argv: list[str]) -> int:
    """`dense_example.py [--aarch64] [DIR]`: `--aarch64` adds the `dense_neon` entry."""
    neon = "--aarch64" in argv[1:]
    args = [a for a in argv[1:] if a != "--aarch64"]
    out = Path(args[0] if args else ".")
    out.mkdir(parents=True, exist_ok=True)
    path = pack_example(out / "dense.nfat", neon=neon)
    (out / "dense-input.txt").write_text(" ".join(f"{v:.9g}" for v in example_input()) + "\n")
    backends = "dense_ref, dense_avx2, dense_neon" if neon else "dense_ref, dense_avx2"
    print(f"packed {path} ({backends}; weights shared as named data)")
    print("reference output:", " ".join(f"{v:.9g}" for v in reference(example_input())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
