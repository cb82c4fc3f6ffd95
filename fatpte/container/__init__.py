"""A container as a whole: `reader` opens one over a mapping (header and tables checked, payloads
and named data handed out zero-copy), `integrity` runs the content pass (padding, checksums, the
manifest's rules) and `validation` reports every finding of both passes.

May use: fatpte.manifest, fatpte.format, fatpte.fileio, fatpte.errors.
"""
