"""Define the exceptions of the reporting package: one base and "no results" (exit 3)."""

from __future__ import annotations

from pathlib import Path

from ovsperf_common import errors as common


class ReportingError(common.OvsperfError):
    """Base of every error ``generate-report`` reports: unreadable input, unwritable output (exit 2)."""


class NoResultsError(ReportingError, common.NoResultsError):
    """No VSperf result CSV was found for one side of the comparison (exit code 3)."""

    def __init__(self, side: str, paths: tuple[Path, ...]) -> None:
        self.side = side
        """``'baseline'`` or ``'current'``."""
        shown = ", ".join(f"'{p}'" for p in paths) or "(none given)"
        super().__init__(
            f"No VSperf result CSV ('result_*_<test>_<deployment>.csv') found for the {side} in "
            f"{shown}; is this a VSperf 'results_<timestamp>' directory or a directory holding one?"
        )


class LabFileFieldError(ValueError):
    """One field of a lab JSON file (``ovsperf-latency.json``, ``ovsperf-telemetry.json``) is unusable.

    Raised and caught inside the loaders (``reporting.load_latency``, ``reporting.load_telemetry``),
    which turn it into a warning naming the file, the entry and the field; never leaves them.
    """


def load_error(message: str, path: Path, line: int | None = None) -> ReportingError:
    """Return the error for a results file or directory that cannot be read at all.

    :param line: the 1-based line when known.
    """
    where = f"'{path}'" + (f" line {line}" if line is not None else "")
    return ReportingError(f"{where}: {message}")


def write_error(message: str, path: Path) -> ReportingError:
    """Return the error for a report directory that cannot be written (the previous one is intact)."""
    return ReportingError(f"Cannot write report '{path}': {message}")
