"""Define the exceptions of the vsperf_configs package: one base, the inventory error, CPU overlaps."""

from __future__ import annotations

from pathlib import Path

from ovsperf_common.errorfmt import located
from ovsperf_common.errors import OvsperfError


class VsperfConfigError(OvsperfError):
    """Base of every error ``vsperf-config`` reports: a scenario that cannot run, an unwritable output."""


class InventoryError(VsperfConfigError):
    """The host inventory cannot be read, has no entry for a host, or a field of an entry is invalid.

    ``str()`` names the file, the host and the field (``ovsperf_common.errorfmt.located``).
    """

    def __init__(
        self, reason: str, *, path: Path | None = None, host: str | None = None, field: str | None = None
    ) -> None:
        self.reason = reason
        """The bare message, without the location."""
        self.host = host
        """The host entry's name; ``None`` when not about one entry."""
        self.field = field
        """The invalid field's dotted name, e.g. ``'cpus.pmd'``; ``None`` when not about a field."""
        super().__init__(located(reason, path, ("host", host), ("field", field)))


class CpuOverlapError(InventoryError):
    """Two CPU lists of a host share CPUs (e.g. a PMD CPU is also the OVS lcore)."""

    def __init__(
        self,
        reason: str,
        *,
        cpus: tuple[int, ...],
        path: Path | None = None,
        host: str | None = None,
        field: str | None = None,
    ) -> None:
        self.cpus = cpus
        """The shared CPU ids, ascending."""
        super().__init__(reason, path=path, host=host, field=field)
