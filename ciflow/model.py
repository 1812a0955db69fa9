"""Describe the nightly flow's configuration, the entries found in ``ci_in`` and what a pass did."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.spec import SpecEnum
from ovsperf_common.verdict import Overall, combine
from reporting.api import Thresholds

LOCK_NAME = ".process-ci-results.lock"
"""Lock file in ``ci_in`` held (``fcntl.flock``) by the pass that is running."""


def failed_reason_file(destination: Path, suffix: str = ".txt") -> Path:
    """Return the reason file written beside a result moved to ``ci_failed`` at ``destination``.

    ``suffix`` is ``.txt`` (for people) or ``.json`` (for tools).
    """
    return destination.parent / f"{destination.name}.FAILED{suffix}"


class BaselineSource(SpecEnum):
    """Where a scenario's baseline comes from."""

    DIRS = "dirs"
    """Fixed VSperf result directories named in the configuration."""
    LATEST_PASS = "latest-pass"
    """The newest result of the same scenario whose comparison a tester marked PASS."""


@dataclass(frozen=True)
class ScenarioConfig:
    """How results of one scenario are compared."""

    name: str
    """Scenario name as written in ``ovsperf-metadata.json`` (and the scenario catalog)."""
    source: BaselineSource
    """Fixed directories or the newest tester-passed result."""
    baseline_dirs: tuple[Path, ...]
    """The baseline directories (``DIRS``), or the fallback until a passed result exists
    (``LATEST_PASS``; may be empty)."""
    thresholds: Thresholds
    """Verdict thresholds for this scenario."""


@dataclass(frozen=True)
class MailConfig:
    """Where ``process-ci-results`` mails a summary of new regressions (``mail:`` in the config)."""

    smtp_host: str
    """SMTP server host name (validated)."""
    smtp_port: int
    """SMTP port (25; 587 with ``starttls``)."""
    sender: str
    """``From:`` address."""
    recipients: tuple[str, ...]
    """``To:`` addresses (at least one)."""
    starttls: bool = False
    """Upgrade the connection with STARTTLS before anything else is sent."""
    username: str | None = None
    """SMTP AUTH user; the password is read from ``password_file`` when sending, never stored here."""
    password_file: Path | None = None
    """File holding the SMTP password (first line)."""
    timeout_s: float = 30.0
    """Deadline of the whole SMTP exchange [s]: a server that is down, slow or trickling never holds
    the pass longer."""
    report_base_url: str | None = None
    """URL under which ``reports`` is served: links become ``<url>/<name>/index.html``; default file paths."""
    subject_prefix: str = "[ovsperf]"
    """Start of the subject line."""


@dataclass(frozen=True)
class CiConfig:
    """A validated ``process-ci-results`` configuration (all paths absolute)."""

    path: Path
    """The configuration file."""
    ci_in: Path
    """Where new results arrive, one directory per result."""
    ci_processed: Path
    """Where compared results are moved."""
    ci_failed: Path
    """Where results that could not be compared are moved, each with ``<name>.FAILED.txt/.json``."""
    reports_dir: Path
    """Where report pages are written, one directory per result (``<reports>/<name>/index.html``)."""
    database_url: str
    """SQLAlchemy URL of the results store."""
    scenarios: Mapping[str, ScenarioConfig]
    """Scenario name → how to compare it."""
    quiet_period_s: float
    """A result whose files changed less than this long ago is left for the next pass [s]."""
    marker_timeout_s: float
    """A result without the marker file and unchanged for this long is rejected [s]."""
    mail: MailConfig | None = None
    """Regression mail settings; None: no mail."""
    trend_pages: Path | None = None
    """Where every pass that processed something rewrites the trend pages (``trend_pages:``);
    None: no pages, report cells link none."""

    @property
    def lock_path(self) -> Path:
        """Return the pass lock file (in ``ci_in``, hidden so it is never taken for a result)."""
        return self.ci_in / LOCK_NAME


class EntryState(enum.Enum):
    """What a pass does with one entry of ``ci_in``."""

    READY = "ready"
    """Complete: compare it."""
    BUSY = "busy"
    """Still being copied or written: leave it for the next pass."""
    REJECTED = "rejected"
    """Never comparable (symlink, unsafe name, not a directory, ...): move it to ``ci_failed``."""


@dataclass(frozen=True)
class InboxEntry:
    """One entry of ``ci_in`` and what to do with it."""

    name: str
    """Entry name (one path component)."""
    path: Path
    """``ci_in / name``."""
    state: EntryState
    """Ready, busy or rejected."""
    reason: str | None = None
    """Why it is busy or rejected; None when ready."""


class OutcomeKind(enum.Enum):
    """What happened to one entry in a pass."""

    PROCESSED = "processed"
    """Report written, comparison recorded, moved to ``ci_processed``."""
    FAILED = "failed"
    """Moved to ``ci_failed`` with the reason."""
    DEFERRED = "deferred"
    """Left in ``ci_in`` for the next pass (still being copied)."""
    ERROR = "error"
    """Left in ``ci_in`` because of an infrastructure problem (disk full, move failed)."""


@dataclass(frozen=True)
class ResultOutcome:
    """What one pass did with one entry of ``ci_in``."""

    name: str
    """Entry name."""
    kind: OutcomeKind
    """Processed, failed, deferred or error."""
    location: Path
    """Where the entry is now."""
    reason: str | None = None
    """Why it failed, was deferred or errored; None when processed."""
    overall: Overall | None = None
    """Report's overall verdict (PASS, REGRESSION, INVALID) when processed."""
    report_index: Path | None = None
    """The report page when processed."""
    comparison_id: int | None = None
    """Results store id of the comparison when processed."""
    regressions: tuple[str, ...] = ()
    """The report's REGRESSION cells, one line each (reporting.api.ReportOutcome.regressions)."""
    junit: Path | None = None
    """The report's JUnit XML (``<report>/junit.xml``) when processed."""
    infrastructure_failure: bool = False
    """True when the delivery says the lab failed (Beaker job aborted, cancelled, killed, no
    results tarball): failed, never a regression."""
    scenario: str | None = None
    """The delivery's scenario, when its metadata could be read."""
    build: str | None = None
    """What the delivery tested (Koji NVRs, else OVS/DPDK versions), when known."""


@dataclass(frozen=True)
class PassSummary:
    """Everything one ``process-ci-results`` pass did."""

    outcomes: tuple[ResultOutcome, ...] = ()
    """One per entry of ``ci_in`` looked at, in name order."""
    lock_busy: bool = False
    """True when another pass held the lock, so this one did nothing."""
    problems: tuple[str, ...] = ()
    """Failures of the pass itself, not of one result (e.g. the overview page could not be written)."""
    trend_index: Path | None = None
    """The trend pages' index when this pass rewrote them (``trend_pages:``)."""

    def of_kind(self, kind: OutcomeKind) -> tuple[ResultOutcome, ...]:
        """Return the outcomes of ``kind``, in name order."""
        return tuple(o for o in self.outcomes if o.kind is kind)

    @property
    def exit_code(self) -> ExitCode:
        """Return the pass's exit code.

        ERROR (2) when the pass had a problem, or any result failed (an infrastructure failure
        included), errored or has an INVALID report; else REGRESSION (1)
        when any report shows a regression; else OK (0) when at least one result was processed;
        else NO_RESULTS (3): nothing new, everything still being copied, or another pass running.
        """
        if self.problems or self.of_kind(OutcomeKind.FAILED) or self.of_kind(OutcomeKind.ERROR):
            return ExitCode.ERROR
        processed = self.of_kind(OutcomeKind.PROCESSED)
        # A processed result always has a report, so a missing verdict cannot happen; INVALID
        # stands in for it so that it could never pass.
        return combine([o.overall or Overall.INVALID for o in processed]).exit_code
