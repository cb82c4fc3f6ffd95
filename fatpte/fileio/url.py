"""`is_url`: whether a location the caller gave is a URL (read by ranges, fatpte/fileio/remote.py)
or a path. Alone in its module: every reading command asks, and must not import the remote
reader's dependencies to do so."""

from __future__ import annotations

import os

_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")


def is_url(location: str | os.PathLike[str]) -> bool:
    """`scheme://...` with a scheme of two or more characters that starts with a letter (RFC 3986),
    so that `C://x` stays a path."""
    if not isinstance(location, str):
        return False
    scheme, sep, _ = location.partition("://")
    return bool(sep) and len(scheme) >= 2 and scheme[0].isalpha() and all(c in _SCHEME_CHARS for c in scheme)
