"""Define the exceptions of the resultstore package: one base and those callers tell apart."""

from __future__ import annotations

from ovsperf_common.errors import FieldError, OvsperfError


class ResultStoreError(OvsperfError):
    """Base of every error the results store reports (an unknown comparison id, among others; exit 2)."""


class StoreDatabaseError(ResultStoreError):
    """The database cannot be opened, read or written; retried once by the store."""

    def __init__(self, message: str, *, url: str) -> None:
        """Build the message ``Database '<url>': <message>``; ``url`` must have its password masked."""
        super().__init__(f"Database '{url}': {message}")


class SchemaVersionError(StoreDatabaseError):
    """The database was written by a newer ovsperf whose schema this version does not know (not retried)."""


class InvalidRecordError(ResultStoreError, FieldError):
    """A value given to the store is invalid (a name, a bug id, a comment); ``field`` names it.

    Caught by ``ciflow`` to reject one delivery and go on with the others.
    """


class RenderError(ResultStoreError):
    """A comparison's report page could not be re-rendered; the verdict itself is already stored."""


class OverviewError(ResultStoreError):
    """The overview page (``<reports>/index.html``) could not be written; the previous one is unchanged."""
