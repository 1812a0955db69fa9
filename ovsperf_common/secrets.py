"""Find and mask secrets in text before it reaches a log, a message, a page or a copied file.

The one list of secret patterns of the project (issue: "no secret in any output"). Each pattern
keeps what identifies the secret (the key, the URL's user and host) and replaces only the value
with :data:`MASK`, so a reader still sees *that* a password was set:

* ``key = value`` / ``key: value`` / ``key=value`` for secret-looking keys (password, passwd,
  passphrase, secret, token, api key, credential, private key, …), as in VSperf conf dumps and tool logs;
* ``key = ['value', ...]`` / ``key = ("value",)`` (VSperf list settings such as ``GUEST_PASSWORD``);
* JSON ``"password": "value"``;
* ``Authorization: Bearer|Basic|token …`` headers;
* PEM private-key blocks (``-----BEGIN … PRIVATE KEY-----`` to ``-----END … PRIVATE KEY-----``);
* URL credentials ``scheme://user:password@host`` and query parameters such as
  ``?access_token=…``, ``&password=…``;
* ``sshpass -p PASSWORD``.

Standard library only.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import parse_qsl, urlsplit

MASK: Final = "***"
"""What a secret value is replaced by."""

_KEY: Final = (
    r"[A-Za-z0-9_.-]*(?:passw(?:or)?d|passphrase|secret|token|api[_-]?key|credential|private[_-]?key"
    r"|auth[_-]?key)[A-Za-z0-9_.-]*"
)
"""A key that names a secret (case-insensitive), e.g. ``GUEST_PASSWORD``, ``db.password``, ``apiKey``."""

SECRET_QUERY_KEYS: Final = frozenset(
    {
        "password",
        "passwd",
        "pass",
        "pwd",
        "token",
        "access_token",
        "auth_token",
        "api_key",
        "apikey",
        "secret",
        "client_secret",
        "private_token",
        "key",
        "sig",
        "signature",
    }
)
"""URL query parameter names whose values are secrets (compared case-insensitively)."""

_PATTERNS: Final[tuple[tuple[str, re.Pattern[str], str], ...]] = (
    (
        "private key block",
        re.compile(
            r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)(?:.*?)(-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
            re.DOTALL,
        ),
        rf"\1{MASK}\2",
    ),
    (
        "authorization header",
        re.compile(
            r"(?i)(\bauthorization\b[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|digest)?\s*)[^\s\"',;]+"
        ),
        rf"\1{MASK}",
    ),
    (
        "URL credentials",
        re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@\"']*:)[^/\s@\"']+(@)"),
        rf"\1{MASK}\2",
    ),
    (
        "URL query secret",
        re.compile(
            r"(?i)([?&;](?:" + "|".join(sorted(SECRET_QUERY_KEYS, key=len, reverse=True)) + r")=)[^&#\s\"']+"
        ),
        rf"\1{MASK}",
    ),
    (
        "JSON secret",
        re.compile(rf"(?i)(\"{_KEY}\"\s*:\s*\")(?:[^\"\\]|\\.)*(\")"),
        rf"\1{MASK}\2",
    ),
    (
        "list setting",
        re.compile(rf"(?i)(\b{_KEY}\s*[:=]\s*[\[(]\s*)([^\])]*)([\])])"),
        "",  # replaced by _mask_list
    ),
    (
        "key = value",
        re.compile(rf"(?i)(?<![?&;])(\b{_KEY}[\"']?\s*[:=]\s*[\"']?)(?![\[(])[^\s\"',;\]\)]+"),
        rf"\1{MASK}",
    ),
    ("sshpass -p", re.compile(r"(\bsshpass\s+-p\s*)\S+"), rf"\1{MASK}"),
)
"""(name, pattern, replacement) in the order they are applied (blocks first, then lines)."""

_LIST_ITEM: Final = re.compile(r"""(["'])(?:(?!\1).)*\1""")


def _mask_list(match: re.Match[str], token: str) -> str:
    items = _LIST_ITEM.sub(lambda m: f"{m.group(1)}{token}{m.group(1)}", match.group(2))
    if items == match.group(2) and items.strip():
        items = token
    return f"{match.group(1)}{items}{match.group(3)}"


def redact(text: str, token: str = MASK) -> tuple[str, int]:
    """Return ``text`` with every secret value replaced by ``token``, and how many were replaced.

    :param token: what stands in for a secret: :data:`MASK` in messages and logs; a copied file
        may use a more visible one (``'<redacted>'``).
    :returns: (masked text, number of replacements) — a count > 0 tells the caller to warn that the
        file was redacted.
    """
    count = 0
    for name, pattern, replacement in _PATTERNS:
        if name == "list setting":
            text, hits = pattern.subn(lambda m: _mask_list(m, token), text)
        else:
            text, hits = pattern.subn(replacement.replace(MASK, token.replace("\\", "\\\\")), text)
        count += hits
    return text, count


def redact_bytes(data: bytes, token: str = MASK) -> tuple[bytes, int]:
    """Return :func:`redact` applied to bytes (decoded as UTF-8 with surrogate escapes, so bytes survive)."""
    text, count = redact(data.decode("utf-8", "surrogateescape"), token)
    return text.encode("utf-8", "surrogateescape"), count


def mask(text: str) -> str:
    """Return ``text`` with its secrets masked (for one message or log line)."""
    return redact(text)[0]


_SECRET_WORD_RE: Final = re.compile(
    r"(?i)passw(?:or)?d|passphrase|secret|token|api[ _-]?key|credential|private[ _-]?key|auth[ _-]?key"
)
"""A word that makes a field name a secret's, in any spelling (``GUEST_PASSWORD``, ``Guest password``)."""


def mask_pair(key: str, value: str) -> str:
    """Return ``value`` as it may be shown next to ``key`` (a table row, a ``NAME=VALUE`` line).

    The whole value is masked when the key names a secret (``GUEST_PASSWORD``); otherwise the
    secrets inside the value are (a URL with credentials in a ``Repository`` row).
    """
    if _SECRET_WORD_RE.search(key):
        return MASK
    return mask(value)


def url_credentials(url: str) -> str | None:
    """Return why ``url`` carries credentials (a password, a secret query parameter), or None.

    Used where a URL would be written into a job, a file or a page: such a URL is refused, not
    written with a mask. A user name alone (``https://user@host``) is not a credential.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.password is not None:
        return "it holds a password ('user:password@')"
    for key, _ in parse_qsl(parts.query, keep_blank_values=True):
        if key.lower() in SECRET_QUERY_KEYS:
            return f"its query holds the secret parameter '{key}'"
    return None
