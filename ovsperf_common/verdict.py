"""Define the overall verdict of a comparison or a nightly pass and its one mapping to an exit code.

STYLE.md §4: "one mapping from the overall verdict to the exit code, in one place". A report
written with INVALID cells exits 2 like an error, but the command still prints the report path on
stdout, so "report written, some cells INVALID" (exit 2, one path on stdout) is told apart from
"error, no report" (exit 2, nothing on stdout) without looking at files.
"""

from __future__ import annotations

from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.spec import SpecEnum


class Overall(SpecEnum):
    """The overall verdict of one comparison (one report page), worst cell first."""

    PASS = "PASS"
    """Every compared cell passed (IMPROVEMENT, UNSTABLE and NO_BASELINE cells allowed)."""
    REGRESSION = "REGRESSION"
    """At least one REGRESSION cell."""
    INVALID = "INVALID"
    """No regression, but at least one cell is untrustworthy (zero, missing or unparsable)."""
    NO_RESULTS = "NO_RESULTS"
    """Nothing was compared."""

    @property
    def exit_code(self) -> ExitCode:
        """Return the process exit code of a command whose outcome is this verdict."""
        return _EXIT_BY_OVERALL[self]


_EXIT_BY_OVERALL = {
    Overall.PASS: ExitCode.OK,
    Overall.REGRESSION: ExitCode.REGRESSION,
    Overall.INVALID: ExitCode.ERROR,
    Overall.NO_RESULTS: ExitCode.NO_RESULTS,
}


def combine(verdicts: list[Overall]) -> Overall:
    """Return the overall verdict of several comparisons (a nightly pass over several results).

    An empty list is NO_RESULTS (nothing was processed). Otherwise a comparison that is INVALID,
    or that compared nothing (NO_RESULTS), makes the whole INVALID: something delivered cannot be
    trusted, which outranks a regression; else REGRESSION if any; else PASS.
    """
    if not verdicts:
        return Overall.NO_RESULTS
    if any(v in (Overall.INVALID, Overall.NO_RESULTS) for v in verdicts):
        return Overall.INVALID
    if Overall.REGRESSION in verdicts:
        return Overall.REGRESSION
    return Overall.PASS
