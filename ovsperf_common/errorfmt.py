"""Build error and log text that is safe to show: where the problem is, and outside text echoed.

Catalog, inventory and configuration errors all say where the problem is in the same words:
``'<file>', scenario 'X', field 'y': <reason>`` (:func:`located`). Text from outside (a file's
content, a server's reply, a third-party library's log line) is echoed with its control
characters escaped (:func:`escape_controls`: no raw ESC reaches a terminal) and bounded in length
(:func:`bounded`: an error line never repeats 117 KB of input).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

MAX_ECHO_CHARS: Final = 4000
"""Longest error line or log message shown [characters]; longer ones lose their middle."""


def located(reason: str, path: Path | None = None, *parts: tuple[str, str | None]) -> str:
    """Return ``reason`` prefixed with the file and the named places that are not ``None``.

    :param reason: the bare message (a whole sentence).
    :param path: the file the problem is in, or ``None``.
    :param parts: ``(noun, value)`` pairs in order, e.g. ``("scenario", name), ("field", key)``;
        pairs whose value is ``None`` are left out.
    :returns: e.g. ``"'/etc/c.yaml', scenario 'OVS_DPDK2q', field 'queues': expected …"``, or
        ``reason`` alone when nothing is known.
    """
    where = [f"'{path}'"] if path is not None else []
    where += [f"{noun} '{value}'" for noun, value in parts if value is not None]
    return f"{', '.join(where)}: {reason}" if where else reason


def escape_controls(text: str, keep: str = "") -> str:
    r"""Return ``text`` with every non-printable character escaped, except those in ``keep``.

    ESC, CR, BEL, NUL, C1 controls, bidirectional overrides and lone surrogates become their
    Python escapes (``\x1b``, ``\r``, ``\u202e``, ``\udcff``), so they cannot move a terminal's
    cursor, recolour it or forge a line; ``keep="\n\t"`` leaves line breaks and tabs (a
    traceback).
    """
    if text.isprintable():
        return text
    return "".join(
        ch
        if ch.isprintable() or ch in keep
        else ch.encode("unicode_escape", "backslashreplace").decode("ascii")
        for ch in text
    )


def bounded(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """Return ``text`` when it has at most ``limit`` characters, else its start and end around a note.

    The first three quarters and the last quarter of ``limit`` are kept (where and what at the
    start, what to do at the end) with `` … [N characters left out] … `` between them.
    """
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    tail = limit - head
    return f"{text[:head]} … [{len(text) - head - tail} characters left out] … {text[-tail:]}"
