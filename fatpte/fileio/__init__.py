"""Bytes on disk, in memory and at URLs, the lowest floor: what the readers read from
(`buffers`), CRC32C (`checksum`), read-only mappings and small files read whole, regular files
only (`mapping`), what a path that is no regular file is (`kinds`), payload sources opened once
and compared chunk by chunk (`sources`), streaming range copies with a concurrent checksum
(`streams`), atomic outputs that replace only regular files (`atomic`), whether a location is a
URL (`url`), range reads of a URL checked answer by answer (`remote`), the checksums and digests
of ranges answered from a buffer or from one streaming pass (`ranges`), and the one strict JSON
reader every JSON file goes through (`strict_json`).

May use: fatpte.errors and the standard library (plus the crc32c package; fsspec and aiohttp,
the `remote` extra, only inside `remote` and only for a URL). Knows nothing of NFAT.
"""
