"""Define the exceptions of the ciflow package: one base and those the pass tells apart."""

from __future__ import annotations

from pathlib import Path

from ovsperf_common.errorfmt import located
from ovsperf_common.errors import OvsperfError


class CiflowError(OvsperfError):
    """Base of every error ``process-ci-results`` reports (exit 2)."""


class ConfigError(CiflowError):
    """The configuration file cannot be read or a field in it is invalid.

    The message names the file and the field (dotted, e.g. ``scenarios.pvp.baseline``).
    """

    def __init__(self, message: str, *, path: Path | None = None, key: str | None = None) -> None:
        super().__init__(located(message, path, ("field", key)))


class ResultRejectedError(CiflowError):
    """One result in ``ci_in`` cannot be compared; it goes to ``ci_failed`` with ``reason``.

    Caught per result: the pass moves that result to ``ci_failed`` and goes on with the others.
    """

    def __init__(self, reason: str, *, name: str) -> None:
        self.reason = reason
        """Why, without the result's name (written to the reason file in ``ci_failed``)."""
        super().__init__(f"Result '{name}': {reason}")


class MoveError(CiflowError):
    """A result could not be moved; it is still complete and unchanged at ``source``."""

    def __init__(self, message: str, *, source: Path) -> None:
        self.source = source
        """Where the result still is."""
        super().__init__(message)


class StoreUnavailableError(CiflowError):
    """The results store failed; the pass stops and leaves the remaining results in ``ci_in``."""
