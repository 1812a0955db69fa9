"""Define the records ``ovsperf-beaker`` keeps per tracked job and what a collect pass decides."""

from __future__ import annotations

from dataclasses import dataclass

from ovsperf_common.metadata import BuildRecord
from ovsperf_common.spec import SpecEnum

RUN_TASK = "/ovsperf/vsperf_test"
"""The Beaker task that measures and uploads ``results_<ts>.tar.gz`` (``VSPERF_ACTION=run``)."""
RUN_ACTION = ("VSPERF_ACTION", "run")
"""The task parameter that tells the measuring instance from the setup ones."""
DUT_ROLE = "DUT"
"""Role of the recipe whose ``vsperf_test`` task measures (jobcreator's ``templates/``)."""


class JobState(SpecEnum):
    """Where a tracked job is in the collector's eyes."""

    TRACKED = "tracked"
    """Submitted, not yet collected: every pass asks the hub about it."""
    DELIVERED = "delivered"
    """Its results were delivered into ``ci_in``."""
    INFRASTRUCTURE_FAILURE = "infrastructure-failure"
    """It measured nothing usable; a delivery saying why went into ``ci_in``."""

    @classmethod
    def spec_label(cls) -> str:
        """Return ``'job state'`` for messages."""
        return "job state"


@dataclass(frozen=True)
class TrackedJob:
    """One submitted Beaker job, the build it tests and what became of it."""

    job_id: str
    """Beaker job id, ``'J:<n>'``."""
    scenario: str
    """The catalog scenario the job runs (a safe name)."""
    build: BuildRecord | None
    """The Koji build under test (NVRs, tag, Jenkins build URL); ``None`` when not known."""
    tracked_at: str
    """When ``track`` recorded it, ISO 8601 UTC."""
    state: JobState = JobState.TRACKED
    """Collected or not, and how."""
    beaker_status: str | None = None
    """The Beaker status it ended with (``Completed``, ``Aborted``, ``Cancelled``); ``None`` while tracked."""
    delivery: str | None = None
    """Name of its delivery in ``ci_in``; ``None`` while tracked."""
    finished_at: str | None = None
    """When it was collected, ISO 8601 UTC."""
    reason: str | None = None
    """For an infrastructure failure: why (one sentence)."""

    @property
    def pending(self) -> bool:
        """Return whether the job still has to be collected."""
        return self.state is JobState.TRACKED

    @property
    def number(self) -> int:
        """Return the job's number (``4201`` for ``'J:4201'``)."""
        return int(self.job_id.removeprefix("J:"))


@dataclass(frozen=True)
class JobOutcome:
    """How a finished job ended, as far as the results are concerned (what ``collect`` delivers)."""

    beaker_status: str
    """The job's status when it finished, else its measuring task's (``Completed``, ``Aborted``, …)."""
    tarball_url: str | None
    """URL of the ``results_<ts>.tar.gz`` the measuring task uploaded; ``None`` when there is none."""
    tarball_name: str | None
    """Its file name, ``results_<ts>.tar.gz``."""
    failure: str | None
    """Why the job measured nothing (one sentence); ``None`` when a tarball is to be collected."""
    recipe_id: str | None = None
    """The measuring recipe, ``'R:<n>'``, when found."""
