"""Define the exceptions of the ciflow package (one base, typed subclasses)."""

from __future__ import annotations

from pathlib import Path

from ovsperf_common.errorfmt import located


class CiflowError(Exception):
    """Base of every error ``process-ci-results`` reports; ``main()`` turns it into exit 2."""


class ConfigError(CiflowError):
    """The configuration file cannot be read or a field in it is invalid.

    ``path`` is the file and ``key`` the field (dotted, e.g. ``scenarios.pvp.baseline``), each
    ``None`` when not applicable; ``reason`` is the bare message.
    """

    def __init__(self, message: str, *, path: Path | None = None, key: str | None = None) -> None:
        self.reason = message
        self.path = path
        self.key = key
        super().__init__(located(message, path, ("field", key)))


class ResultRejectedError(CiflowError):
    """One result in ``ci_in`` cannot be compared; it goes to ``ci_failed`` with ``reason``.

    ``name`` is the entry's name in ``ci_in``.
    """

    def __init__(self, reason: str, *, name: str) -> None:
        self.reason = reason
        self.name = name
        super().__init__(f"Result '{name}': {reason}")


class MoveError(CiflowError):
    """A result could not be moved; ``source`` is where it still is, ``destination`` where it was going.

    Raised only when ``source`` is complete and unchanged (a move never leaves half a result).
    """

    def __init__(self, message: str, *, source: Path, destination: Path) -> None:
        self.source = source
        self.destination = destination
        super().__init__(message)


class StoreUnavailableError(CiflowError):
    """The results store failed; the pass stops and leaves the remaining results in ``ci_in``."""
