"""Define the exceptions of the reporting package (one base, typed subclasses with fields)."""

from __future__ import annotations

from pathlib import Path


class ReportingError(Exception):
    """Base of every error ``generate-report`` reports to the user; ``main()`` turns it into exit 2."""


class ResultsLoadError(ReportingError):
    """A results directory or file cannot be read at all.

    ``path`` is the offending file or directory, ``line`` the 1-based line when known.
    """

    def __init__(self, message: str, *, path: Path, line: int | None = None) -> None:
        self.reason = message
        self.path = path
        self.line = line
        where = f"'{path}'" + (f" line {line}" if line is not None else "")
        super().__init__(f"{where}: {message}")


class NoResultsError(ReportingError):
    """No VSperf result CSV was found for one side of the comparison (exit code 3).

    ``side`` is ``'baseline'`` or ``'current'``; ``paths`` are the directories searched.
    """

    def __init__(self, side: str, paths: tuple[Path, ...]) -> None:
        self.side = side
        self.paths = paths
        shown = ", ".join(f"'{p}'" for p in paths) or "(none given)"
        super().__init__(
            f"No VSperf result CSV ('result_*_<test>_<deployment>.csv') found for the {side} in "
            f"{shown}; is this a VSperf 'results_<timestamp>' directory or a directory holding one?"
        )


class ReportWriteError(ReportingError):
    """The report directory cannot be written (permissions, full disk, unsafe target).

    ``path`` is the output directory; the previous report there, if any, is left intact.
    """

    def __init__(self, message: str, *, path: Path) -> None:
        self.reason = message
        self.path = path
        super().__init__(f"Cannot write report '{path}': {message}")


class ThresholdError(ReportingError):
    """A threshold or statistics setting is out of range; ``field`` names it."""

    def __init__(self, field: str, value: float, expected: str) -> None:
        self.field = field
        self.value = value
        super().__init__(f"Setting '{field}' = {value!r} is invalid; expected {expected}.")
