"""Bytes on disk and in memory, the lowest floor: CRC32C (`checksum`), read-only mappings
(`mapping`), payload sources opened once and compared chunk by chunk (`sources`), streaming range
copies with a concurrent checksum (`streams`) and atomic outputs (`atomic`).

May use: fatpte.errors and the standard library (plus the crc32c package). Knows nothing of NFAT.
"""
