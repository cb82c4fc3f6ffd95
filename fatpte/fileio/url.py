"""`is_url`: whether a location the caller gave is a URL (read by ranges, fatpte/fileio/remote.py)
or a path; `redact`: a location or a line as it may be shown, without a URL's credentials. Alone
in their module: every reading command asks, and must not import the remote reader's
dependencies to do so."""

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


def redact(text: str | os.PathLike[str]) -> str:
    """`text` with the user information of every URL in it (`user:password@` in
    `https://user:password@host/...`) replaced by `***@`: the one way a location, an error line
    or a JSON document that names a URL is shown (docs/remote.md). The user information runs to
    the last `@` before the path, as urllib splits it, so a password holding `@` goes whole."""
    shown = os.fspath(text)
    if "@" not in shown or "://" not in shown:
        return shown
    import re

    return re.sub(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s]*@", r"\1***@", shown)
