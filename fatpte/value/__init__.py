"""fatpte's value layer: what a value is, once for every floor above it. The dtypes (`dtypes`:
names, element sizes, the codes of ExecuTorch's two schemas and of safetensors, struct formats),
a tensor's elements to and from bytes (`tensors`: float16 and bfloat16 included), and the one
writer of canonical bytes (`canonical`: the primitives of specs/nfat-signature.md section 4) that
the golden-call digest, the golden tensor keys and the signing records are written with.

It sits below the byte layout (`fatpte.format`), as the C++ `value` floor stands above `common`
(loader/layers.toml), and needs nothing of fatpte's: only the standard library (struct).

May use: the standard library alone.
"""
