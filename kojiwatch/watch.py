"""Poll a Koji hub for new builds of the watched packages in a tag and test each one exactly once.

Without Jenkins this is the trigger: each poll lists the tag's builds of every watched package
(``listTagged``); a build id never seen before is checked (COMPLETE, owner), gets a repo
(:func:`kojiwatch.repo.prepare_repo`) and one Beaker job per scenario
(:func:`kojiwatch.submit.submit_scenarios`). Progress is written to the state file after every
step (:mod:`kojiwatch.state`), so a restart resumes a half-done build with only its missing
scenarios and never resubmits a finished one.

On the very first poll of a package only its newest tagged build is tested; older ones are
recorded as skipped (otherwise starting a watcher on a busy tag would queue its whole history).

Hub errors: a poll that cannot reach the hub (or finds it offline) is retried after an exponential back-off
(:class:`kojiwatch.model.RetryPolicy`); after ``max_failures`` consecutive failures the watch
gives up with :class:`KojiHubError`. A refused call (:class:`KojiHubRefusedError`, e.g. no
such tag) ends the watch at once. Everything is bounded: ``max_polls`` polls, each followed by
``interval_s`` of sleep.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from kojiwatch.errors import (
    BatchSubmitError,
    BuildRejectedError,
    DownloadError,
    KojiHubError,
    KojiHubRefusedError,
    RepoError,
)
from kojiwatch.koji_client import KojiClient
from kojiwatch.model import (
    BuildSelection,
    KojiBuild,
    PreparedRepo,
    SelectionKind,
    SubmitRequest,
    SubmittedJob,
    WatchConfig,
)
from kojiwatch.state import WatchState, load_state, state_lock
from kojiwatch.submit import submit_scenarios

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 3
"""Polls that may fail to prepare/submit one build before it is marked failed [1]."""

PrepareFn = Callable[[KojiClient, BuildSelection], PreparedRepo]
"""Builds and publishes the repo for one build (``prepare_repo`` with the publish settings bound)."""
RequestFn = Callable[[PreparedRepo], SubmitRequest]
"""Makes the submit request (hosts, distro, scenarios, whiteboard) for a prepared repo."""
JobsFn = Callable[[SubmitRequest, list[SubmittedJob]], None]
"""Told a build's request and all its jobs so far, after each submission attempt that has any."""


class Watcher:
    """One watch session over one tag: poll, test new builds, remember them."""

    def __init__(
        self,
        client: KojiClient,
        config: WatchConfig,
        prepare: PrepareFn,
        request_for: RequestFn,
        *,
        sleep: Callable[[float], None] = time.sleep,
        on_jobs: JobsFn | None = None,
    ) -> None:
        """Bind the hub connection, the settings and the actions; nothing runs yet.

        ``on_jobs`` (e.g. writing an ids file for ``ovsperf-beaker track``) may raise
        :class:`BatchSubmitError`; the build is then retried on the next poll, without resubmitting.
        """
        self.client = client
        self.config = config
        self.prepare = prepare
        self.request_for = request_for
        self.sleep = sleep
        self.on_jobs = on_jobs
        self.failures: list[str] = []
        """One line per build that failed in this session (the exit status depends on it)."""
        self.submitted: list[tuple[str, str]] = []
        """``(nvr, job id)`` submitted in this session, in order."""

    def run(self) -> None:
        """Poll ``max_polls`` times (hub errors retried with back-off), holding the state lock.

        :raises KojiHubError: after ``retry.max_failures`` consecutive failed polls.
        :raises KojiWatchError: when the state file is locked, unreadable or unwritable.
        """
        cfg = self.config
        with state_lock(cfg.state_path):
            state = load_state(cfg.state_path, cfg.tag)
            polls = 0
            hub_failures = 0
            while polls < cfg.max_polls:
                try:
                    self.poll(state)
                except KojiHubRefusedError:
                    # An answer, not an outage (e.g. the tag does not exist): retrying cannot help.
                    raise
                except KojiHubError as err:
                    hub_failures += 1
                    if hub_failures >= cfg.retry.max_failures:
                        log.error(
                            "Giving up after %d consecutive failed polls of tag '%s'.", hub_failures, cfg.tag
                        )
                        raise KojiHubError(
                            f"Gave up after {hub_failures} consecutive failed polls: {err}"
                        ) from err
                    delay = cfg.retry.delay_s(hub_failures)
                    log.warning(
                        "Poll failed (%d of at most %d consecutive failures): %s; retrying in %g s.",
                        hub_failures,
                        cfg.retry.max_failures,
                        err,
                        delay,
                    )
                    self.sleep(delay)
                    continue
                hub_failures = 0
                polls += 1
                if polls < cfg.max_polls:
                    log.debug("Poll %d of %d done; next in %.0f s.", polls, cfg.max_polls, cfg.interval_s)
                    self.sleep(cfg.interval_s)

    def poll(self, state: WatchState) -> None:
        """List the tag once per package and test every build not yet done.

        :raises KojiHubError: when the hub cannot be reached (the state keeps what was done).
        """
        cfg = self.config
        for package in cfg.packages:
            builds = sorted(self.client.list_tagged(cfg.tag, package), key=lambda b: b.build_id)
            pkg_state = state.packages.setdefault(package, {"initialized": False})
            if not pkg_state.get("initialized"):
                for old in builds[:-1]:
                    if state.record(old.build_id) is None:
                        state.update(
                            old.build_id,
                            nvr=old.nvr,
                            package=package,
                            status="skipped",
                            reason="older than the newest build when watching started",
                        )
                pkg_state["initialized"] = True
                state.save()
                log.info(
                    "Started watching '%s' in tag '%s' (%d tagged builds; newest: %s).",
                    package,
                    cfg.tag,
                    len(builds),
                    builds[-1].nvr if builds else "none",
                )
            new = [
                b for b in builds if (state.record(b.build_id) or {}).get("status", "pending") == "pending"
            ]
            log.info(
                "Tag '%s', package '%s': %d tagged, %d to test.", cfg.tag, package, len(builds), len(new)
            )
            for build in new:
                self._test_build(state, build)

    def _test_build(self, state: WatchState, build: KojiBuild) -> None:
        """Prepare the repo and submit the missing scenarios for ``build``; record every step.

        :raises KojiHubError: when the hub goes away (the build stays pending for the next poll).
        """
        cfg = self.config
        rec = state.update(build.build_id, nvr=build.nvr, package=build.name)
        if cfg.owner is not None and build.owner != cfg.owner:
            state.update(
                build.build_id, status="skipped", reason=f"owner '{build.owner}' is not '{cfg.owner}'"
            )
            log.info("Skipping '%s': owned by '%s', not '%s'.", build.nvr, build.owner, cfg.owner)
            return
        attempts = int(rec.get("attempts", 0)) + 1
        state.update(build.build_id, attempts=attempts)
        log.info("Testing new build '%s' (attempt %d of %d).", build.nvr, attempts, MAX_ATTEMPTS)
        selection = BuildSelection(
            kind=SelectionKind.BUILD, ref=str(build.build_id), packages=cfg.packages, owner=cfg.owner
        )
        try:
            repo = self.prepare(self.client, selection)
            state.update(build.build_id, repo=repo.url)
            jobs: dict[str, str] = dict(rec.get("jobs") or {})

            def record(job: SubmittedJob) -> None:
                jobs[job.scenario] = job.job_id
                state.update(build.build_id, jobs=jobs)
                self.submitted.append((build.nvr, job.job_id))

            request = self.request_for(repo)
            state.update(build.build_id, baseline=request.baseline)
            try:
                submit_scenarios(request, already_submitted=tuple(jobs), on_submitted=record)
            finally:
                if self.on_jobs is not None and jobs:
                    self.on_jobs(request, [SubmittedJob(scenario=s, job_id=j) for s, j in jobs.items()])
        except BuildRejectedError as err:
            state.update(build.build_id, status="skipped", reason=str(err))
            log.warning("Not testing '%s': %s", build.nvr, err)
            return
        except (DownloadError, RepoError, BatchSubmitError) as err:
            if attempts >= MAX_ATTEMPTS:
                state.update(build.build_id, status="failed", reason=str(err))
                log.error("Giving up on '%s' after %d attempts: %s", build.nvr, attempts, err)
            else:
                state.update(build.build_id, reason=str(err))
                log.error("Attempt %d for '%s' failed (retried next poll): %s", attempts, build.nvr, err)
            self.failures.append(f"'{build.nvr}': {err}")
            return
        state.update(build.build_id, status="submitted", reason=None)
        log.info("Build '%s' submitted: %s", build.nvr, ", ".join(f"{s}={j}" for s, j in jobs.items()))
