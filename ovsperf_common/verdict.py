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
    """Return the overall verdict of several comparisons (a nightly pass).

    Order of precedence: INVALID (something is untrustworthy) over REGRESSION over PASS; an empty
    list is NO_RESULTS; NO_RESULTS entries are ignored when others exist.
    """
    present = [v for v in verdicts if v is not Overall.NO_RESULTS]
    if not present:
        return Overall.NO_RESULTS
    for verdict in (Overall.INVALID, Overall.REGRESSION):
        if verdict in present:
            return verdict
    return Overall.PASS
