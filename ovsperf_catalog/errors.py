"""Define the one error of the scenario catalog, which the commands reading a catalog catch."""

from __future__ import annotations

from ovsperf_common.errors import OvsperfError


class CatalogError(OvsperfError):
    """The scenario catalog cannot be read, or a scenario or field in it is invalid or unknown (exit 2).

    The message names the file, the scenario and the field (``ovsperf_common.errorfmt.located``).
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        self.field = field
        """The invalid field's dotted name, e.g. ``'hugepages.size'``; ``None`` when not about a field."""
        super().__init__(message)
