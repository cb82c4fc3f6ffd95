"""A container as a whole: `reader` opens one over a mapping (header and tables checked, payloads
and named data handed out zero-copy), `integrity` runs the content pass (padding, checksums, the
manifest's rules) and `validation` reports every finding of both passes; `remote` opens and
validates one at a URL by planned range reads, and `locations` opens or validates a path or a URL.

May use: fatpte.manifest, fatpte.format, fatpte.fileio, fatpte.errors.
"""
