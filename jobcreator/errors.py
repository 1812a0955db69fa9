"""Define the exceptions of the jobcreator package: one base and the few that callers tell apart."""

from __future__ import annotations

from ovsperf_common.errors import OvsperfError


class JobCreatorError(OvsperfError):
    """Base of every error jobcreator reports: bad options, render failures, unwritable output (exit 2)."""


class JobValidationError(JobCreatorError):
    """A rendered job violates Beaker's ``beaker-job.rng`` or one of our semantic rules."""

    def __init__(self, message: str, *, line: int | None = None, path: str | None = None) -> None:
        self.reason = message
        """The schema's or rule's message alone, without the location."""
        self.line = line
        """1-based line in the job XML; ``None`` when unknown (e.g. the schema could not be loaded)."""
        self.path = path
        """XPath of the offending element; ``None`` when unknown."""
        where = []
        if line is not None:
            where.append(f"line {line}")
        if path is not None:
            where.append(f"at '{path}'")
        suffix = f" ({', '.join(where)})" if where else ""
        super().__init__(f"Invalid Beaker job{suffix}: {message}")


class SubmitError(JobCreatorError):
    """Submitting the job failed: client configuration, hub unreachable, login or job refused.

    Caught by ``kojiwatch`` to record a failed submission and go on with the next scenario.
    """


def option_error(option: str, message: str) -> JobCreatorError:
    """Return the error for an invalid value of the command-line option ``option`` (e.g. ``'--kickrepo'``)."""
    return JobCreatorError(f"Option '{option}': {message}")
