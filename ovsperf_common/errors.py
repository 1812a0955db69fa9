"""Define the project's root exception and the field error every config loader wraps (STYLE.md §4).

Every error a command reports to its user derives from :class:`OvsperfError`, which carries the
exit code it maps to; the shared runner (:mod:`ovsperf_common.runner`) turns it into its message
and that code. Each package has one base class under it; subclasses exist only where some code
catches them or reads their fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from ovsperf_common.errorfmt import located
from ovsperf_common.exitcodes import ExitCode


class OvsperfError(Exception):
    """Base of every error an ovsperf command reports; ``exit_code`` is the code it exits with."""

    exit_code: ClassVar[ExitCode] = ExitCode.ERROR
    """Process exit status for this error (2 unless a subclass says otherwise)."""


class NoResultsError(OvsperfError):
    """Nothing to work on: no results found (exit code 3)."""

    exit_code: ClassVar[ExitCode] = ExitCode.NO_RESULTS


class FieldError(OvsperfError, ValueError):
    """One field of an input (YAML, JSON, CLI value) is invalid (also a ``ValueError``: a bad value).

    Raised by the validators of :mod:`ovsperf_common.fields` with the bare ``reason`` and the
    dotted ``field`` name; a loader that knows the file re-raises it with :meth:`in_file` (or wraps
    it in its own error) so that the message names file, entry and field.
    """

    def __init__(self, reason: str, *, field: str | None = None) -> None:
        self.reason = reason
        """The bare message: a whole sentence saying what was expected."""
        self.field = field
        """The field's dotted name, e.g. ``'dut.pmd_cpus'``; ``None`` when not known."""
        super().__init__(located(reason, None, ("field", field)))

    def located(self, path: Path | None = None, *parts: tuple[str, str | None]) -> str:
        """Return the message prefixed with the file, the named places and the field.

        :param parts: ``(noun, value)`` pairs before the field, e.g. ``("scenario", "OVS_DPDK1q")``.
        """
        return located(self.reason, path, *parts, ("field", self.field))
