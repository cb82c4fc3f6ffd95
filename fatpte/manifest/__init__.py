"""The NFAT v2 manifest: its records and the strict readers of their Python forms (`model`), its
bytes (`codec`: a bounded verifier-decoder and the writer, over the flatbuffers runtime and the
code flatc generates, imported only when a manifest is read or written), its canonical record
encoding that signatures digest (`canonical`), its rules against itself and its container
(`rules`), and signature adapters: the program behind a stated signature, and the signatures
`pack --adapt-io` states (`adapters`).

May use: fatpte.format, fatpte.value, fatpte.fileio, fatpte.errors, fatpte._generated.
"""
