"""`is_url`: whether a location the caller gave is a URL (read by ranges, fatpte/fileio/remote.py)
or a path; `redact`: a location or a line as it may be shown, without a URL's credentials (its
user information, and the values of credential query parameters). Alone
in their module: every reading command asks, and must not import the remote reader's
dependencies to do so."""

from __future__ import annotations

import os
from typing import Final

_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")


def is_url(location: str | os.PathLike[str]) -> bool:
    """`scheme://...` with a scheme of two or more characters that starts with a letter (RFC 3986),
    so that `C://x` stays a path."""
    if not isinstance(location, str):
        return False
    scheme, sep, _ = location.partition("://")
    return bool(sep) and len(scheme) >= 2 and scheme[0].isalpha() and all(c in _SCHEME_CHARS for c in scheme)


# Query parameters that carry a credential (specs/remote.md section 3): a name one of whose parts
# is a credential word, the parts being split at every character that is not a letter or digit and
# where the case changes (`X-Amz-Signature`: x, amz, signature; `AWSAccessKeyId`: aws, access, key,
# id; `private_token`, `x-api-key`), compared without case; or a name written as one word that joins
# such words (`apikey`, `accesstoken`). A rule, not a list of known names: a service's own
# `private_token=` or `x-api-key=` is hidden without being named here. Their values are shown as
# `***`; the other parameters (dates, expiry, permissions, `SignedHeaders`) stay readable.
CREDENTIAL_WORDS: Final = frozenset({
    "token", "key", "secret", "signature", "sig", "password", "passwd", "pwd", "passphrase", "credential",
    "credentials", "auth", "authorization", "jwt",
})
_ONE_WORD_NAMES: Final = frozenset({
    "apikey", "accesskey", "accesskeyid", "awsaccesskeyid", "secretkey", "accesstoken", "idtoken", "refreshtoken",
    "authtoken", "sessiontoken", "securitytoken", "privatetoken", "clientsecret", "googleaccessid",
})
_PARTS: Final = r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+"  # re compiles it once, on the first URL shown


def is_credential_parameter(name: str) -> bool:
    """Whether a query parameter named `name` carries a credential (CREDENTIAL_WORDS)."""
    import re  # not at start-up: every reading command imports this module

    if any(part.lower() in CREDENTIAL_WORDS for part in re.findall(_PARTS, name)):
        return True
    return re.sub(r"[^a-z0-9]", "", name.lower()) in _ONE_WORD_NAMES


def redact(text: str | os.PathLike[str]) -> str:
    """`text` with the credentials of every URL in it hidden: the user information
    (`user:password@` in `https://user:password@host/...`) replaced by `***@`, and the value of
    each query parameter whose name is_credential_parameter (a signed URL's `X-Amz-Signature=...`,
    a `token=...`, a `private_token=...`) by `***`: the one way a location, an error line or a JSON
    document that names a URL is shown (docs/remote.md). The user information runs to the last `@` before the path, as
    urllib splits it, so a password holding `@` goes whole."""
    shown = os.fspath(text)
    if "://" not in shown:
        return shown
    import re

    if "@" in shown:
        shown = re.sub(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s]*@", r"\1***@", shown)
    if "=" in shown:
        shown = re.sub(r"([?&;])([^=&#;?\s'\"]+)=([^&#;\s'\"]*)",
                       lambda m: f"{m[1]}{m[2]}=***" if is_credential_parameter(m[2]) else m[0], shown)
    return shown
