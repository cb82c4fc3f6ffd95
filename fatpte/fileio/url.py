"""`is_url`: whether a location the caller gave is a URL (read by ranges, fatpte/fileio/remote.py)
or a path; `redact`: a location or a line as it may be shown, without a URL's credentials (its
user information, and the values of credential query parameters). Alone
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


# Query parameters that carry a credential in the URLs users are given: signed URLs of S3 (SigV4
# and SigV2), Google Cloud Storage and Azure (SAS), and the usual token and key parameters. Their
# values are shown as `***`; the other parameters (dates, expiry, permissions) stay readable.
CREDENTIAL_PARAMETERS = frozenset({
    "x-amz-signature", "x-amz-credential", "x-amz-security-token", "signature", "awsaccesskeyid",
    "x-goog-signature", "x-goog-credential", "googleaccessid", "sig", "token", "access_token", "id_token",
    "refresh_token", "api_key", "apikey", "key", "password", "passwd", "secret", "client_secret", "auth",
})


def redact(text: str | os.PathLike[str]) -> str:
    """`text` with the credentials of every URL in it hidden: the user information
    (`user:password@` in `https://user:password@host/...`) replaced by `***@`, and the value of
    each query parameter of CREDENTIAL_PARAMETERS (a signed URL's `X-Amz-Signature=...`, a
    `token=...`) by `***`: the one way a location, an error line or a JSON document that names a
    URL is shown (docs/remote.md). The user information runs to the last `@` before the path, as
    urllib splits it, so a password holding `@` goes whole."""
    shown = os.fspath(text)
    if "://" not in shown:
        return shown
    import re

    if "@" in shown:
        shown = re.sub(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s]*@", r"\1***@", shown)
    if "=" in shown:
        shown = re.sub(r"([?&;])([^=&#;?\s'\"]+)=([^&#;\s'\"]*)",
                       lambda m: f"{m[1]}{m[2]}=***" if m[2].lower() in CREDENTIAL_PARAMETERS else m[0], shown)
    return shown
