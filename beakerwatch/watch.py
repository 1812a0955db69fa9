"""Decide whether a tracked job has finished measuring, and how: the outcome ``collect`` delivers.

beaker-client's ``watch_tasks`` (``bkr.client.task_watcher``) loops until every task finishes
with no deadline (only Ctrl-C stops it) and prints to stdout, so it cannot be used as it is: this
module polls ``taskactions.task_info`` itself, one bounded call per look (the caller loops under a
:class:`~ovsperf_common.deadline.Deadline`), and reuses ``task_watcher``'s ``Task`` and
``TaskWatcher`` to judge "finished" and to word the state (``Running (dut.example.com)``).

What decides is the measuring task — ``/ovsperf/vsperf_test`` with ``VSPERF_ACTION=run`` in the
``DUT`` recipe (jobcreator's job layout) — not the whole job: a DUT reserved after the run
(``<reservesys>``) keeps the job unfinished for days while the results are already uploaded.

- The task ``Completed`` → its ``results_<ts>.tar.gz`` (``taskactions.files``; uploaded by
  ``vsperf_test_collect`` through ``rstrnt-report-log``) is collected; none → an infrastructure
  failure.
- The task ``Aborted``/``Cancelled`` (also by the external watchdog: Beaker aborts the recipe set
  with "External Watchdog Expired") → an infrastructure failure naming the status and Beaker's note.
- The job finished without such a task → an infrastructure failure.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from bkr.client.task_watcher import Task, TaskWatcher
from lxml import etree

from beakerwatch.errors import BeakerWatchError
from beakerwatch.hub import BeakerHub
from beakerwatch.model import DUT_ROLE, RUN_ACTION, RUN_TASK, JobOutcome, TrackedJob
from ovsperf_common.resultdir import RESULTS_DIR_RE

log = logging.getLogger(__name__)

TARBALL_SUFFIX = ".tar.gz"
"""Suffix of the results tarball ``vsperf_test`` uploads (``results_<ts>.tar.gz``)."""

_XML_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, remove_comments=True)


@dataclass(frozen=True)
class RunTask:
    """The measuring task of a job as the results XML shows it."""

    task_id: str
    """``'T:<n>'``."""
    recipe_id: str
    """``'R:<n>'`` of the recipe it runs in."""
    status: str
    """Beaker status label (``Running``, ``Completed``, ``Aborted``, …)."""
    notes: tuple[str, ...]
    """Texts of its ``<result>`` entries that explain a failure (Beaker's abort/cancel messages)."""


def find_run_task(results_xml: str, job_id: str) -> RunTask | None:
    """Return the measuring task in a job's results XML (``taskactions.to_xml``), or ``None``.

    :raises BeakerWatchError: when the XML does not parse.
    """
    try:
        root = etree.fromstring(results_xml.encode("utf-8"), _XML_PARSER)
    except etree.XMLSyntaxError as err:
        raise BeakerWatchError(f"The results XML of Beaker job '{job_id}' does not parse: {err}.") from err
    recipes = [r for r in root.iter("recipe") if r.get("role") == DUT_ROLE] or list(
        root.iter("recipe", "guestrecipe")
    )
    for recipe in recipes:
        for task in recipe.findall("task"):
            params = {p.get("name"): p.get("value") for p in task.findall("params/param")}
            if task.get("name") == RUN_TASK and params.get(RUN_ACTION[0]) == RUN_ACTION[1]:
                notes = tuple(
                    " ".join((r.text or "").split())
                    for r in task.findall("results/result")
                    if r.get("result") in ("Warn", "Fail", "Panic") and (r.text or "").strip()
                )
                return RunTask(
                    task_id=f"T:{task.get('id')}",
                    recipe_id=f"R:{recipe.get('id')}",
                    status=task.get("status", "New"),
                    notes=notes,
                )
    return None


def find_tarball(files: list[dict[str, Any]]) -> tuple[str, str] | None:
    """Return ``(file name, url)`` of the newest ``results_<ts>.tar.gz`` among a task's logs, or ``None``."""
    found = []
    for entry in files:
        name = str(entry.get("filename", ""))
        url = entry.get("url")
        stem = name.removesuffix(TARBALL_SUFFIX)
        if name.endswith(TARBALL_SUFFIX) and RESULTS_DIR_RE.match(stem) and isinstance(url, str):
            found.append((name, url))
    if len(found) > 1:
        log.warning(
            "The task uploaded %d results tarballs; collecting the newest, '%s'.", len(found), max(found)[0]
        )
    return max(found) if found else None


@dataclass
class JobWatch:
    """What one pass knows about one job between looks (the measuring task's id once seen)."""

    job: TrackedJob
    task: Task = field(init=False)
    """beaker-client's view of the job (``task_info`` dict, display state)."""
    run_task: RunTask | None = None
    last_state: str | None = None

    def __post_init__(self) -> None:
        """Make beaker-client's ``Task`` for the job."""
        self.task = Task(None, self.job.job_id)

    def look(self, hub: BeakerHub) -> JobOutcome | None:
        """Ask the hub once; return the outcome when the job has finished measuring, else ``None``.

        :raises HubError: when the hub stays unreachable or slow.
        :raises BeakerWatchError: when the hub refuses (unknown job) or answers nonsense.
        """
        watcher = TaskWatcher()
        self.task.task_info = hub.task_info(self.job.job_id)
        job_finished = bool(watcher.is_finished(self.task))
        self._log_state(self.task.display_state(self.task.task_info))
        if self.run_task is None or job_finished:
            self.run_task = find_run_task(hub.results_xml(self.job.job_id), self.job.job_id)
        if self.run_task is None:
            if not job_finished:
                return None
            status = str(self.task.task_info["state_label"])
            return JobOutcome(
                status,
                None,
                None,
                self._sentence(
                    status,
                    f"it has no '{RUN_TASK}' task with "
                    f"{RUN_ACTION[0]}={RUN_ACTION[1]} in a {DUT_ROLE} recipe",
                ),
            )
        run = self.run_task
        if not job_finished:
            run_info = hub.task_info(run.task_id)
            run_task = Task(None, run.task_id)
            run_task.task_info = run_info
            if not watcher.is_finished(run_task):
                return None
            # Finished while the job goes on (a reserved DUT): read its final status and notes.
            self.run_task = run = find_run_task(hub.results_xml(self.job.job_id), self.job.job_id) or run
        status = str(self.task.task_info["state_label"]) if job_finished else run.status
        if run.status != "Completed":
            notes = f" ({'; '.join(run.notes)})" if run.notes else ""
            why = f"its measuring task '{run.task_id}' was {run.status}{notes}"
            return JobOutcome(status, None, None, self._sentence(status, why), run.recipe_id)
        tarball = find_tarball(hub.files(run.task_id))
        if tarball is None:
            why = f"its measuring task '{run.task_id}' Completed but uploaded no results_<timestamp>.tar.gz"
            return JobOutcome(status, None, None, self._sentence(status, why), run.recipe_id)
        return JobOutcome(status, tarball[1], tarball[0], None, run.recipe_id)

    def _sentence(self, status: str, why: str) -> str:
        job = f"Beaker job '{self.job.job_id}' ({self.job.scenario})"
        return f"{job} ended {status}: {why}; nothing was measured."

    def _log_state(self, state: str) -> None:
        if state != self.last_state:
            log.info("%s (%s): %s.", self.job.job_id, self.job.scenario, state)
            self.last_state = state
