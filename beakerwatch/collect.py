"""Run ``track``, ``collect`` and ``status``: the state file on one side, the hub and ``ci_in`` on the other.

``collect`` asks the hub about every tracked job (without holding the lock), and for each job that
has finished measuring takes the state lock, reads the state again, and — only if the job is still
tracked there — delivers it and records the delivery before letting go. Two collectors running
at once therefore deliver a job once: the second one finds it already collected.

A hub that stays unreachable or slow ends the pass (exit 2) with every uncollected job still
tracked; a job the hub refuses to describe is reported and kept; the others go on.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from beakerwatch import state as statefile
from beakerwatch.deliver import Delivery, deliver_failure, deliver_results
from beakerwatch.errors import BeakerWatchError, HubError, NothingTrackedError
from beakerwatch.fetch import Limits, download
from beakerwatch.hub import BeakerHub, HubRetryPolicy
from beakerwatch.model import JobOutcome, TrackedJob
from beakerwatch.watch import JobWatch
from jobcreator.jobmodel import is_job_id
from jobcreator.submit import ClientConfig
from ovsperf_common import fields
from ovsperf_common.deadline import Deadline
from ovsperf_common.errors import FieldError
from ovsperf_common.metadata import BuildRecord
from ovsperf_common.runner import one_line
from ovsperf_common.secrets import url_credentials

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 60.0
"""How often a waiting pass says what it waits for [s]."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class CollectOptions:
    """How one ``collect`` pass runs."""

    ci_in: Path
    """The inbox of ``process-ci-results``; deliveries are renamed into it."""
    deadline_s: float
    """Longest the whole pass may take, waits included [s]."""
    poll_s: float
    """Pause between two looks at unfinished jobs [s]."""
    limits: Limits
    """Caps on a results tarball."""
    policy: HubRetryPolicy
    """Timeout and retries of each hub request and download."""
    once: bool = False
    """Look once and leave unfinished jobs for the next pass (exit 0), instead of waiting for them."""

    def __post_init__(self) -> None:
        """Check the numbers.

        :raises BeakerWatchError: naming the option out of range.
        """
        if not self.deadline_s > 0:
            raise BeakerWatchError(f"--deadline-s {self.deadline_s!r} is not a positive number of seconds.")
        if not self.poll_s > 0:
            raise BeakerWatchError(f"--poll-s {self.poll_s!r} is not a positive number of seconds.")


@dataclass(frozen=True)
class Collected:
    """One job delivered in this pass (a stdout line)."""

    job: TrackedJob
    """The job as now recorded (state, status, delivery)."""
    delivery: Delivery
    """What went into ``ci_in``."""

    def line(self) -> list[str]:
        """Return the stdout fields: job id, scenario, state, Beaker status, delivery path."""
        return [
            self.job.job_id,
            self.job.scenario,
            self.job.state.value,
            self.job.beaker_status or "-",
            str(self.delivery.path),
        ]


def collect(
    state: Path,
    options: CollectOptions,
    config: ClientConfig,
    on_delivery: Callable[[Collected], None],
) -> list[Collected]:
    """Collect every tracked job that has finished; wait for the others unless ``options.once``.

    :param on_delivery: called with each delivery as soon as it is recorded (the CLI prints it).
    :returns: the deliveries of this pass, in order.
    :raises NothingTrackedError: when the state file tracks no job.
    :raises HubError: when the hub stays unreachable or slow (uncollected jobs stay tracked).
    :raises BeakerWatchError: when ``ci_in`` is not a directory, some jobs could not be collected
        (each named), or jobs were still running when the deadline passed (without ``once``).
    :raises StateFileError: when the state file is unreadable, invalid or cannot be written.
    """
    deadline = Deadline.in_seconds(options.deadline_s, "the tracked Beaker jobs to finish")
    if not options.ci_in.is_dir():
        raise BeakerWatchError(f"ci_in '{options.ci_in}' is not a directory.")
    with statefile.state_lock(state, deadline.remaining_s()):
        jobs = statefile.load(state)
    if not jobs:
        raise NothingTrackedError(
            f"State file '{state}' tracks no Beaker job; run 'ovsperf-beaker track' first."
        )
    watches = [JobWatch(job) for job in jobs if job.pending]
    if not watches:
        log.info("All %d tracked jobs are collected; nothing to do.", len(jobs))
        return []
    log.info(
        "Collecting %d of %d tracked jobs from Beaker hub '%s'.", len(watches), len(jobs), config.hub_url
    )
    hub = BeakerHub(config, options.policy, deadline)
    collected: list[Collected] = []
    failures: list[str] = []
    next_progress_s = PROGRESS_EVERY_S
    while True:
        for watch in list(watches):
            try:
                outcome = watch.look(hub)
                if outcome is not None:
                    result = _deliver_once(state, watch.job, outcome, options, hub, deadline)
                    if result is not None:
                        collected.append(result)
                        on_delivery(result)
                    watches.remove(watch)
            except HubError as err:
                left = ", ".join(w.job.job_id for w in watches)
                raise HubError(f"{err} Still tracked for the next pass: {left}.") from err
            except (BeakerWatchError, FieldError) as err:
                # FieldError: a value from the hub (a file name) that the delivery rules refuse; this
                # job fails, the others are still collected.
                if isinstance(err, NothingTrackedError):
                    raise
                log.error("%s (%s): %s", watch.job.job_id, watch.job.scenario, err)
                failures.append(f"{watch.job.job_id}: {err}")
                watches.remove(watch)
        if not watches or options.once:
            break
        if deadline.remaining_s() <= options.poll_s:
            failures.append(
                f"still unfinished after {deadline.elapsed_s():.0f} s (--deadline-s {options.deadline_s:g}): "
                + ", ".join(f"{w.job.job_id} ({w.last_state})" for w in watches)
            )
            break
        if deadline.elapsed_s() >= next_progress_s:
            log.info(
                "Waiting for %d job(s): %.0f s elapsed, %.0f s left.",
                len(watches),
                deadline.elapsed_s(),
                deadline.remaining_s(),
            )
            next_progress_s += PROGRESS_EVERY_S
        time.sleep(options.poll_s)
    for watch in watches:
        log.info(
            "%s (%s): %s; left for the next pass.", watch.job.job_id, watch.job.scenario, watch.last_state
        )
    if failures:
        raise BeakerWatchError(
            f"{len(failures)} problem(s) in this pass; the jobs concerned stay tracked: "
            + "; ".join(failures)
        )
    return collected


def _deliver_once(
    state: Path,
    job: TrackedJob,
    outcome: JobOutcome,
    options: CollectOptions,
    hub: BeakerHub,
    deadline: Deadline,
) -> Collected | None:
    """Deliver ``job`` under the state lock unless another pass already did; record it in the state."""
    with statefile.state_lock(state, max(deadline.remaining_s(), 1.0)):
        jobs = statefile.load(state)
        current = next((j for j in jobs if j.job_id == job.job_id), None)
        if current is None or not current.pending:
            log.info("%s (%s): already collected by another pass.", job.job_id, job.scenario)
            return None
        context = hub.ssl_context()

        def fetch(url: str, dest: Path) -> None:
            download(url, dest, options.limits, options.policy, deadline, context)

        if outcome.failure is not None:
            delivery = deliver_failure(options.ci_in, current, outcome, outcome.failure)
        else:
            delivery = deliver_results(options.ci_in, current, outcome, fetch, options.limits)
        done = dataclasses.replace(
            current,
            state=delivery.state,
            beaker_status=one_line(outcome.beaker_status)[:100],
            delivery=delivery.name,
            finished_at=_now(),
            reason=delivery.reason,
        )
        statefile.save(state, [done if j.job_id == job.job_id else j for j in jobs])
    return Collected(done, delivery)


@dataclass(frozen=True)
class TrackRequest:
    """What ``track`` records: the submitted jobs and the build they test."""

    ids_file: Path
    """JSON written by ``ovsperf-koji submit --ids-file``."""
    nvrs: tuple[str, ...] = ()
    """Build NVRs given on the command line (``--nvr``); override the files'."""
    repo_json: Path | None = None
    """``ovsperf-koji prepare-repo --output-json`` record (its ``builds``)."""
    koji_tag: str | None = None
    """The Koji tag the build came from."""
    build_url: str | None = None
    """The Jenkins build that submitted the jobs (``$BUILD_URL``)."""


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise BeakerWatchError(f"Cannot read {what} '{path}': {err.strerror}.") from err
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise BeakerWatchError(f"{what.capitalize()} '{path}' is not JSON: {err}.") from err


def _nvr_list(value: object, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise FieldError("Expected a list of NVR strings.", field=field)
    return tuple(fields.string(v, f"{field}[{i}]") for i, v in enumerate(value))


def read_submitted(request: TrackRequest) -> tuple[list[tuple[str, str]], BuildRecord | None]:
    """Return ``[(job id, scenario)]`` from the ids file and the build they test.

    NVRs come from ``--nvr``, else the repo record's ``builds``, else the ids file's ``builds``;
    without any, the build is ``None`` (the report then names the run by its packages). The Koji tag
    is ``--koji-tag``, else the ids file's ``koji_tag`` (``ovsperf-koji submit --repo-json`` writes it).

    :raises BeakerWatchError: naming the file and field when a file is unreadable or malformed, or
        the Jenkins build URL carries credentials.
    """
    data = _read_json(request.ids_file, "job ids file")
    try:
        top = fields.mapping(data)
        raw_jobs = fields.required(top, "jobs")
        if not isinstance(raw_jobs, list):
            raise FieldError("Expected a list of {scenario, job_id} objects.", field="jobs")
        submitted = []
        for index, raw in enumerate(raw_jobs):
            entry = fields.mapping(raw, f"jobs[{index}]")
            job_id = fields.string(
                fields.required(entry, "job_id", f"jobs[{index}]"), f"jobs[{index}].job_id"
            )
            if not is_job_id(job_id):
                raise FieldError(f"{job_id!r} is not a Beaker job id 'J:<n>'.", field=f"jobs[{index}].job_id")
            scenario = fields.safe_name(
                fields.required(entry, "scenario", f"jobs[{index}]"), f"jobs[{index}].scenario"
            )
            submitted.append((job_id, scenario))
        nvrs = request.nvrs or _nvr_list(top.get("builds"), "builds")
        raw_tag = top.get("koji_tag")
        file_tag = None if raw_tag is None else fields.string(raw_tag, "koji_tag")
    except FieldError as err:
        raise BeakerWatchError(err.located(request.ids_file)) from err
    if request.repo_json is not None and not request.nvrs:
        record = _read_json(request.repo_json, "repo record")
        try:
            nvrs = _nvr_list(fields.mapping(record).get("builds"), "builds") or nvrs
        except FieldError as err:
            raise BeakerWatchError(err.located(request.repo_json)) from err
    if request.build_url is not None:
        why = url_credentials(request.build_url)
        if why is not None:
            raise BeakerWatchError(f"The Jenkins build URL is refused: {why}; pass it without credentials.")
    tag = request.koji_tag or file_tag or None
    build = BuildRecord(tuple(nvrs), tag, request.build_url or None) if nvrs else None
    return submitted, build


def track(state: Path, request: TrackRequest, lock_timeout_s: float) -> list[TrackedJob]:
    """Add the jobs of ``request`` to ``state`` (a job already tracked is kept as it is); return the new ones.

    :raises BeakerWatchError: when an input file is unreadable or malformed.
    :raises StateFileError: when the state file is unreadable, invalid, locked too long or unwritable.
    """
    submitted, build = read_submitted(request)
    if build is None:
        log.warning(
            "No build NVRs in '%s' or on the command line: reports will not name the build.", request.ids_file
        )
    with statefile.state_lock(state, lock_timeout_s):
        jobs = statefile.load(state)
        known = {job.job_id for job in jobs}
        added = []
        for job_id, scenario in submitted:
            if job_id in known:
                log.info("%s (%s) is already tracked.", job_id, scenario)
                continue
            known.add(job_id)
            added.append(TrackedJob(job_id=job_id, scenario=scenario, build=build, tracked_at=_now()))
        if added:
            statefile.save(state, [*jobs, *added])
    for job in added:
        log.info("Tracking %s (%s)%s.", job.job_id, job.scenario, f" for {build.label}" if build else "")
    return added


def status_lines(state: Path, lock_timeout_s: float) -> list[list[str]]:
    """Return one row per tracked job: job id, scenario, build, state, delivery name.

    :raises NothingTrackedError: when the state file tracks no job.
    :raises StateFileError: when the state file is unreadable or invalid.
    """
    with statefile.state_lock(state, lock_timeout_s):
        jobs = statefile.load(state)
    if not jobs:
        raise NothingTrackedError(f"State file '{state}' tracks no Beaker job.")
    return [
        [
            job.job_id,
            job.scenario,
            job.build.label if job.build else "-",
            job.state.value,
            job.delivery or "-",
        ]
        for job in jobs
    ]
