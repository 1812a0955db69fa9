"""Define the exceptions of the kojiwatch package: one base and the ones callers tell apart."""

from __future__ import annotations

from typing import ClassVar

from ovsperf_common.errors import OvsperfError
from ovsperf_common.exitcodes import ExitCode


class KojiWatchError(OvsperfError):
    """Base of every error ``ovsperf-koji`` reports: configuration, CI message, state file (exit 2)."""


class KojiHubError(KojiWatchError):
    """The Koji hub could not be reached or failed a call: the watcher retries on its next poll."""


class KojiHubRefusedError(KojiHubError):
    """The hub answered but refused the call (Koji fault: no such tag, bad argument): not transient."""


class BuildRejectedError(KojiWatchError):
    """A build must not or cannot be tested: not found, wrong state, package or owner, no RPMs.

    The watcher records it as skipped and goes on with the next build.
    """


class NotTaggedError(BuildRejectedError):
    """A COMPLETE build of a watched package is not (yet) in the watched tag: not ours to test (exit 3)."""

    exit_code: ClassVar[ExitCode] = ExitCode.NO_RESULTS


class DownloadError(KojiWatchError):
    """An RPM could not be downloaded from the Koji file server, or arrived damaged (retried once)."""


class RepoError(KojiWatchError):
    """``createrepo_c`` failed or the publish directory is unusable; the watcher retries the build."""


class BatchSubmitError(KojiWatchError):
    """One or more Beaker submissions of a build's scenarios failed, or the request is invalid.

    Raised after every scenario was tried, so that the ones submitted are recorded.
    """

    def __init__(
        self,
        message: str,
        *,
        failed: dict[str, str] | None = None,
        submitted: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.failed = dict(failed or {})
        """Scenario name → one-line reason."""
        self.submitted = submitted
        """``(scenario, job_id)`` of the submissions that did succeed."""
        super().__init__(message)
