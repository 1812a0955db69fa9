"""Build the "where" prefix of error messages about a field of a file (STYLE.md §4).

Catalog, inventory and configuration errors all say where the problem is in the same words:
``'<file>', scenario 'X', field 'y': <reason>``.
"""

from __future__ import annotations

from pathlib import Path


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
