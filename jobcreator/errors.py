"""Define the exceptions of the jobcreator package (one base, typed subclasses)."""

from __future__ import annotations

from pathlib import Path


class JobCreatorError(Exception):
    """Base of every error jobcreator reports to the user; ``main()`` turns it into exit 2."""


class CatalogError(JobCreatorError):
    """The scenario catalog cannot be read, or an entry or field in it is invalid.

    ``reason`` is the bare message; ``path`` is the catalog file, ``entry`` the scenario name and
    ``key`` the field, each ``None`` when not applicable. ``str()`` joins them into one sentence.
    """

    def __init__(
        self,
        message: str,
        *,
        path: Path | None = None,
        entry: str | None = None,
        key: str | None = None,
    ) -> None:
        self.reason = message
        self.path = path
        self.entry = entry
        self.key = key
        where = []
        if path is not None:
            where.append(f"'{path}'")
        if entry is not None:
            where.append(f"scenario '{entry}'")
        if key is not None:
            where.append(f"field '{key}'")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class UnknownScenarioError(CatalogError):
    """A scenario name is not in the catalog; the message lists the valid names."""
