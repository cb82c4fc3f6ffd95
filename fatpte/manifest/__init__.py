"""The NFAT v2 manifest: its records and the strict readers of their Python forms (`model`), its
bytes (`codec`: a bounded verifier-decoder and the writer) and its rules against itself and its
container (`rules`).

May use: fatpte.format, fatpte.fileio, fatpte.errors, fatpte._generated.
"""
