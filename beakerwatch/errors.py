"""Define the errors of ``ovsperf-beaker``: one base, and the few that callers tell apart."""

from __future__ import annotations

from typing import ClassVar

from ovsperf_common.errors import OvsperfError
from ovsperf_common.exitcodes import ExitCode


class BeakerWatchError(OvsperfError):
    """Base of every error ``ovsperf-beaker`` reports (exit 2)."""


class StateFileError(BeakerWatchError):
    """The state file cannot be read, locked or written; the message names the file and the field."""


class HubError(BeakerWatchError):
    """The Beaker hub (or the server holding its logs) could not be reached, timed out or refused.

    Transient: the job stays tracked and the next pass asks again.
    """


class UnusableResultsError(BeakerWatchError):
    """A job's results tarball is missing, corrupt, truncated, too large or hostile.

    Permanent: the job is delivered as an infrastructure failure with this message as the reason.
    """


class NothingTrackedError(BeakerWatchError):
    """The state file tracks no job (exit 3: nothing to work on)."""

    exit_code: ClassVar[ExitCode] = ExitCode.NO_RESULTS
