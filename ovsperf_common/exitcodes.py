"""Define the exit codes every ovsperf command uses (STYLE.md §4)."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Process exit status of every ovsperf command line tool."""

    OK = 0
    """Success; for comparisons: report written, no regression."""
    REGRESSION = 1
    """Report written, at least one regression (verdict FAIL)."""
    ERROR = 2
    """Bad input, infrastructure failure or bug; also untrustworthy (INVALID) results."""
    NO_RESULTS = 3
    """Nothing to work on: no results found."""

    @classmethod
    def help_text(cls) -> str:
        """Return a short table of the codes for ``--help`` epilogs."""
        return (
            "exit codes: 0 OK; 1 regression found (verdict FAIL); "
            "2 error (bad input, infrastructure, invalid results); 3 no results found"
        )
