"""Define the exceptions of the vsperf_configs package (one base, typed subclasses)."""

from __future__ import annotations

from pathlib import Path

from ovsperf_common.errorfmt import located


class VsperfConfigError(Exception):
    """Base of every error ``vsperf-config`` reports to the user; ``main()`` turns it into exit 2."""


class InventoryError(VsperfConfigError):
    """The host inventory cannot be read, or a host entry or field in it is invalid.

    ``reason`` is the bare message; ``path`` is the inventory file, ``host`` the host name and
    ``key`` the field, each ``None`` when not applicable. ``str()`` joins them into one sentence.
    """

    def __init__(
        self,
        message: str,
        *,
        path: Path | None = None,
        host: str | None = None,
        key: str | None = None,
    ) -> None:
        self.reason = message
        self.path = path
        self.host = host
        self.key = key
        super().__init__(located(message, path, ("host", host), ("field", key)))


class UnknownHostError(InventoryError):
    """The inventory has no entry for a host; the message lists the hosts it has."""


class CpuOverlapError(InventoryError):
    """Two CPU lists of a host share CPUs (e.g. a PMD CPU is also the OVS lcore).

    ``cpus`` holds the shared CPU ids, ascending.
    """

    def __init__(
        self,
        message: str,
        *,
        cpus: tuple[int, ...],
        path: Path | None = None,
        host: str | None = None,
        key: str | None = None,
    ) -> None:
        self.cpus = cpus
        super().__init__(message, path=path, host=host, key=key)


class ScenarioError(VsperfConfigError):
    """The scenario catalog cannot be loaded, or a scenario cannot run on the given host."""
