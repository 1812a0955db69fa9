"""Find and mask secrets in text before it reaches a log, a message, a page or a copied file.

The one list of secret patterns of the project (issue: "no secret in any output"). Each pattern
keeps what identifies the secret (the key, the URL's user and host) and replaces only the value
with :data:`MASK`, so a reader still sees *that* a password was set:

* ``key = value`` / ``key: value`` / ``key=value`` for secret-looking keys (password, passwd,
  passphrase, secret, token, api key, credential, private key, …), as in VSperf conf dumps and tool logs;
* ``key = ['value', ...]`` / ``key = ("value",)`` (VSperf list settings such as ``GUEST_PASSWORD``);
* JSON ``"password": "value"``;
* ``Authorization: Bearer|Basic|token …`` headers, and the whole parameter list of ``Digest``,
  ``AWS4-HMAC-SHA256`` and the other parameterised schemes; ``Cookie:`` / ``Set-Cookie:`` headers;
* PEM private-key blocks (``-----BEGIN … PRIVATE KEY-----`` to ``-----END … PRIVATE KEY-----``);
* URL credentials ``scheme://user:password@host`` and query parameters such as
  ``?access_token=…``, ``&password=…``, and signed-URL signatures and credentials
  (``X-Amz-Signature``, ``X-Amz-Credential``, ``X-Goog-Signature``, ``Signature``, ``sig``);
* command options: ``--password X`` (space form; ``--password=X`` is ``key=value``),
  ``curl -u user:password`` / ``--user``, ``curl -b|--cookie …``, ``sshpass -p PASSWORD``;
* tokens recognised by their shape: AWS access key ids (``AKIA…``, ``ASIA…``), Google API keys
  (``AIza…``), GitHub (``ghp_…``, ``github_pat_…``), GitLab (``glpat-…``) and Slack (``xox?-…``)
  tokens; cloud keys by name (``access_key``, ``AccountKey``, ``SharedAccessSignature``).

Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final, Union
from urllib.parse import parse_qsl, urlsplit

MASK: Final = "***"
"""What a secret value is replaced by."""

_SECRET_WORDS: Final = (
    r"passw(?:or)?d|passphrase|secret|token|api[_-]?key|credential|private[_-]?key|auth[_-]?key"
    r"|access[_-]?key|account[_-]?key|shared[_-]?access[_-]?signature"
)
"""The words that make a key a secret's (separators ``_`` or ``-``)."""

_KEY: Final = rf"[A-Za-z0-9_.-]*(?:{_SECRET_WORDS})[A-Za-z0-9_.-]*"
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
        "refresh_token",
        "id_token",
        "session_token",
        "security-token",
        "x-amz-signature",
        "x-amz-credential",
        "x-amz-security-token",
        "x-goog-signature",
        "x-goog-credential",
        "awsaccesskeyid",
        "googleaccessid",
        "ossaccesskeyid",
        "accountkey",
        "sharedaccesskey",
        "sharedaccesssignature",
    }
)
"""URL query parameter names whose values are secrets (compared case-insensitively)."""

_PARAMETERISED_SCHEMES: Final = (
    "digest",
    "aws4-hmac-sha256",
    "hoba",
    "mutual",
    "oauth",
    "hawk",
    "signature",
    "negotiate",
    "ntlm",
    "vapid",
    "scram-sha-1",
    "scram-sha-256",
)
"""HTTP authentication schemes whose credentials are a parameter list: the whole rest is masked."""

_AUTH_SCHEMES: Final = ("bearer", "basic", "token", *_PARAMETERISED_SCHEMES)

_AUTH_VALUE: Final = re.compile(r"[^\s\"',;]+")


def _mask_authorization(match: re.Match[str], token: str) -> str:
    """Mask an ``Authorization:`` header's credentials: the first word, or all of a parameter list."""
    scheme, rest = match.group(2) or "", match.group(3)
    if scheme.strip().lower() in _PARAMETERISED_SCHEMES and rest:
        return f"{match.group(1)}{scheme}{token}"
    return f"{match.group(1)}{scheme}{_AUTH_VALUE.sub(token, rest, count=1)}"


_LIST_ITEM: Final = re.compile(r"""(["'])(?:(?!\1).)*\1""")


def _mask_list(match: re.Match[str], token: str) -> str:
    """Mask each quoted item of a list setting (``['pw1', "pw2"]``), or the whole list when unquoted."""
    items = _LIST_ITEM.sub(lambda m: f"{m.group(1)}{token}{m.group(1)}", match.group(2))
    if items == match.group(2) and items.strip():
        items = token
    return f"{match.group(1)}{items}{match.group(3)}"


Replacement = Union[str, Callable[[re.Match[str], str], str]]  # a runtime alias: no "X | Y" on Python 3.9
"""A pattern's replacement: ``re`` template (:data:`MASK` stands for the token) or a function of the
match and the token."""

_PATTERNS: Final[tuple[tuple[str, re.Pattern[str], Replacement], ...]] = (
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
            r"(?i)(\bauthorization\b[\"']?\s*[:=]\s*[\"']?)((?:"
            + "|".join(_AUTH_SCHEMES)
            + r")\s+)?([^\s\"',;][^\r\n]*)"
        ),
        _mask_authorization,
    ),
    (
        "cookie header",
        re.compile(r"(?i)(\b(?:set-)?cookie[\"']?\s*:\s*[\"']?)[^\s\"'][^\r\n\"']*"),
        rf"\1{MASK}",
    ),
    (
        "curl credentials and cookies",
        re.compile(
            r"(\bcurl\b[^\n]*?\s(?:(?:-u|--user|-U|--proxy-user)(?:\s+|=)?[\"']?[^\s:\"']*:"
            r"|(?:-b|--cookie)(?:\s+|=)?[\"']?))[^\s\"']+"
        ),
        rf"\1{MASK}",
    ),
    (
        "token shape",
        re.compile(
            r"\b((?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)(?=[A-Z0-9]{16}\b)|AIza(?=[0-9A-Za-z_-]{35})"
            r"|gh[pousr]_(?=[A-Za-z0-9]{36})|github_pat_(?=[A-Za-z0-9_]{22})|glpat-(?=[A-Za-z0-9_-]{20})"
            r"|xox[abposr]-(?=[A-Za-z0-9-]{10}))[A-Za-z0-9_-]+"
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
            r"(?i)([?&;](?:" + "|".join(sorted(SECRET_QUERY_KEYS, key=len, reverse=True)) + r")=)[^&#;\s\"']+"
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
        _mask_list,
    ),
    (
        "option value",
        re.compile(rf"(?i)((?<![\w.-])--?{_KEY}\s+)(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']+)"),
        rf"\1{MASK}",
    ),
    (
        "key = value",
        re.compile(rf"(?i)(?<![?&;A-Za-z0-9_.-])({_KEY}[\"']?\s*[:=]\s*[\"']?)(?![\[(])[^\s\"',;\]\)]+"),
        rf"\1{MASK}",
    ),
    ("sshpass -p", re.compile(r"(\bsshpass\s+-p\s*)\S+"), rf"\1{MASK}"),
)
"""(name, pattern, replacement) in the order they are applied (blocks first, then lines)."""


def redact(text: str, token: str = MASK) -> tuple[str, int]:
    """Return ``text`` with every secret value replaced by ``token``, and how many were replaced.

    :param token: what stands in for a secret: :data:`MASK` in messages and logs; a copied file
        may use a more visible one (``'<redacted>'``).
    :returns: (masked text, number of replacements) — a count > 0 tells the caller to warn that the
        file was redacted.
    """
    count = 0
    for _name, pattern, replacement in _PATTERNS:
        if callable(replacement):
            text, hits = pattern.subn(lambda m, r=replacement: r(m, token), text)  # type: ignore[misc]
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


_SECRET_WORD_RE: Final = re.compile("(?i)" + _SECRET_WORDS.replace("[_-]", "[ _-]"))
"""A word that makes a field name a secret's, in any spelling (``GUEST_PASSWORD``, ``Guest password``)."""


def mask_pair(key: str, value: str) -> str:
    """Return ``value`` as it may be shown next to ``key`` (a table row, a ``NAME=VALUE`` line).

    The whole value is masked when the key names a secret (``GUEST_PASSWORD``); otherwise the
    secrets inside the value are (a URL with credentials in a ``Repository`` row).
    """
    if _SECRET_WORD_RE.search(key):
        return MASK
    return mask(value)


def mask_tree(value: object) -> object:
    """Return a copy of JSON-like ``value`` with its secrets masked, at any depth.

    A mapping's value is masked whole when its key names a secret (:func:`mask_pair`: a list or
    object under ``password`` becomes ``"***"``); every other string is :func:`mask`-ed; numbers,
    booleans and None stay. For metadata shown to a user (``ovsperf-results show --json``).
    """
    if isinstance(value, dict):
        return {
            key: MASK
            if isinstance(key, str) and _SECRET_WORD_RE.search(key) and value[key] is not None
            else mask_tree(item)
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [mask_tree(item) for item in value]
    if isinstance(value, str):
        return mask(value)
    return value


def url_credentials(url: str) -> str | None:
    """Return why ``url`` carries credentials (a password, a secret query parameter, a token), or None.

    Used where a URL would be written into a job, a file, a page or a mail: such a URL is refused,
    not written with a mask. A user name alone (``https://user@host``) is not a credential. Besides
    ``user:password@`` and secret query parameters, a secret parameter in the path
    (``/repo;token=…``, ``/token=…/``) or the fragment (``#access_token=…``), and anything else
    :func:`redact` would mask (a token recognised by its shape, ``ghp_…``, ``AKIA…``), count.
    """
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return None
    if password is not None:
        return "it holds a password ('user:password@')"
    for where, text in (("query", parts.query), ("fragment", parts.fragment)):
        for key, _ in parse_qsl(text, keep_blank_values=True):
            if key.lower() in SECRET_QUERY_KEYS:
                return f"its {where} holds the secret parameter '{key}'"
    for segment in parts.path.split("/"):
        for param in segment.split(";"):
            key = param.partition("=")[0]
            if "=" in param and (key.lower() in SECRET_QUERY_KEYS or re.search(_SECRET_WORDS, key, re.I)):
                return f"its path holds the secret parameter '{key}'"
    if redact(url)[1]:
        return "it holds a token or key (e.g. 'ghp_…', 'AKIA…')"
    return None
