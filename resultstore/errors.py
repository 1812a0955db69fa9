"""Define the exceptions of the resultstore package (one base, typed subclasses)."""

from __future__ import annotations

from pathlib import Path


class ResultStoreError(Exception):
    """Base of every error the results store reports; ``main()`` turns it into exit 2."""


class StoreDatabaseError(ResultStoreError):
    """The database cannot be opened, read or written.

    ``url`` is the database URL with any password masked (safe to print).
    """

    def __init__(self, message: str, *, url: str) -> None:
        self.reason = message
        self.url = url
        super().__init__(f"Database '{url}': {message}")


class SchemaVersionError(StoreDatabaseError):
    """The database was written by a newer ovsperf whose schema this version does not know."""


class UnknownComparisonError(ResultStoreError):
    """No comparison matches the id or result name the user gave (``ref``)."""

    def __init__(self, ref: str) -> None:
        self.ref = ref
        super().__init__(f"No comparison '{ref}' in the results store; 'ovsperf-results list' shows the ids.")


class InvalidRecordError(ResultStoreError):
    """A value given to the store is invalid; ``field`` names it, ``value`` is what was given."""

    def __init__(self, message: str, *, field: str, value: object) -> None:
        self.field = field
        self.value = value
        super().__init__(message)


class RenderError(ResultStoreError):
    """A comparison's report page could not be re-rendered (e.g. after recording a verdict).

    ``comparison_id`` names the comparison; the verdict itself is already stored when this is raised
    by :func:`resultstore.verdicts.record_verdict`.
    """

    def __init__(self, message: str, *, comparison_id: int) -> None:
        self.comparison_id = comparison_id
        super().__init__(message)


class OverviewError(ResultStoreError):
    """The overview page (``<reports>/index.html``) could not be written; ``path`` names it."""

    def __init__(self, message: str, *, path: Path) -> None:
        self.path = path
        super().__init__(message)
