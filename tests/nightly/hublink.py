"""Plug the Beaker lab (:mod:`tests.nightly.beakerlab`) into the stand-in Beaker hub.

Every job the hub accepts (``jobs.upload``) is executed on the lab in the background; what the
lab reports goes into the hub's records through its test API (``set_task``, ``add_task_result``,
``add_task_file``), so beaker-client sees it as it would a real lab's: ``taskactions.task_info``,
``to_xml`` and ``files``, the files served over HTTP by the hub.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.jobcreator.fakehub import FakeJob, HubState

from .beakerlab import BeakerLab, JobSpec, RecipeSpec, TaskSpec


def job_spec(job: FakeJob) -> JobSpec:
    """Return the hub's job record as the lab runs it (host recipes, hub ids, kick repositories)."""
    recipes = []
    for recipe in job.recipes:
        if recipe.guest:
            continue
        repos = tuple(str(r.get("url")) for r in recipe.element.iterfind("repos/repo"))
        tasks = tuple(TaskSpec(t.t_id, t.name, tuple(t.params.items())) for t in recipe.tasks)
        recipes.append(RecipeSpec(f"R:{recipe.id}", recipe.role, str(recipe.system), repos, tasks))
    return JobSpec(job.id, tuple(recipes))


@dataclass
class HubFeedback:
    """The lab's :class:`~tests.nightly.beakerlab.Feedback` into the hub's records."""

    state: HubState

    def status(self, taskspec: str, status: str, result: str | None = None) -> None:
        """Set a task's status and result; a recipe's is derived from its tasks by the hub."""
        if taskspec.startswith("T:"):
            self.state.set_task(taskspec, status, result)

    def result(self, task_id: str, path: str, result: str, score: str, log: tuple[str, bytes] | None) -> None:
        """Record a task result; its log becomes a task file ``<path>/<name>``."""
        self.state.add_task_result(task_id, path, result)
        if log is not None:
            self.state.add_task_file(task_id, f"{path}/{log[0]}", log[1])

    def file(self, task_id: str, name: str, data: bytes) -> None:
        """Attach a task file (served over HTTP by the hub)."""
        self.state.add_task_file(task_id, name, data)


def attach(state: HubState, lab: BeakerLab) -> None:
    """Make the hub execute every accepted job on ``lab`` (in the background)."""
    state.on_upload = lambda job: lab.submit(job_spec(job), HubFeedback(state))
