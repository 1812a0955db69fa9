"""A Beaker lab in a box: execute a submitted Beaker job's recipes over SSH on two namespace hosts.

The stand-in Beaker hub (``tests/jobcreator/fakehub.py``) accepts jobs; this executor runs them
as a lab would, and tells the hub what happens, through :class:`Feedback`:

* **Provisioning.** Each recipe's host gets a fresh fake machine (``tests/beaker_tasks/shims.py``:
  /sys, /etc, state directories, recording shims), whose installed packages are those of the
  recipe's kick repositories, read over HTTP as dnf would (``tests/kojiwatch/repocheck.py``), plus
  a kernel: the lab's ``rpm`` shim lists them, so the results' metadata names the real NVRs.
* **Tasks.** The recipe's ``/ovsperf/<task>`` tasks run in order with their ``<params>`` on the
  host named by its ``hostRequires`` (``root@<hostname>``: the job names the hosts by the address
  their sshd listens on), both recipes in parallel, by ovsperf-remote's runner
  (:class:`remote.run.Runner`: upload, ``run_task``, reboots through ``rstrnt-reboot``, a failing
  host stops the other). Beaker-only tasks (``/distribution/check-install``, ``virt/install``,
  ``/ovsperf/sleeper``) pass as done. Restraint's environment is set (``RSTRNT_JOBID``,
  ``RSTRNT_RECIPEID``), so the hosts synchronise on ``<STATE>.J<job>`` as under Beaker.
* **Harness.** The lab's restraint commands (``tests/nightly/shims``) write every
  ``rstrnt-report-result`` and ``rstrnt-report-log`` to a spool; after each step the executor
  hands them to the hub as that task's results and files (the hub serves files over HTTP, as a
  lab controller does), plus ``taskout.log`` (the step's console). ``rstrnt-abort`` aborts the
  recipe. Task and recipe statuses go Running → Completed, or Aborted from the failing task on.
* **VSperf and MoonGen** are the task tests' stand-ins, VSperf wrapped by
  ``tests/nightly/planted_vsperf.py``: 64 B is slower on the builds in ``slow_nvrs``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from lxml import etree

from jobcreator.render import TASK_NAMESPACE
from remote.plan import BEAKER_ONLY, HostPlan, RemoteStep
from remote.run import HostState, RebootSettings, RemoteRunState, Runner, RunOptions, new_run_id
from remote.ssh import Settings, parse_target
from tests.beaker_tasks.shims import FAKE_VSPERF, REPO, VSPERF_STUB
from tests.beaker_tasks.shims import Lab as FakeMachine
from tests.kojiwatch.repocheck import repo_packages
from tests.remote.test_run import perfsync_cleanup

SHIMS = Path(__file__).with_name("shims")
LAB_COMMANDS = ("rstrnt-report-result", "rstrnt-report-log", "rstrnt-abort", "rpm")
"""The lab's own commands (``shims/<name>.sh``), first on the tasks' PATH."""
PLANTED_VSPERF = Path(__file__).with_name("planted_vsperf.py")
BASE_PACKAGES = ("kernel 5.14.0-362.el9.x86_64",)
"""What every provisioned machine has besides its kick repositories' packages."""

ROLES = ("TRAFFICGEN", "DUT")
RESULT_ORDER = ("Skip", "None", "New", "Pass", "Warn", "Fail", "Panic")
"""Beaker's task results from least to most severe (a recipe's result is its worst task's)."""
RESTRAINT_RESULTS = {"PASS": "Pass", "WARN": "Warn", "FAIL": "Fail", "SKIP": "Skip"}


def worst(results: list[str]) -> str:
    """Return the most severe of ``results`` (Beaker's labels), ``Pass`` for none."""
    return max(results, key=RESULT_ORDER.index, default="Pass")


# ---- the job ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskSpec:
    """One ``<task>`` of a recipe, with the id the hub gave it (``T:<n>``)."""

    id: str
    name: str
    params: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class RecipeSpec:
    """One ``<recipe>``: its id (``R:<n>``), role, host (``hostRequires`` hostname), kick repositories."""

    id: str
    role: str
    hostname: str
    repos: tuple[str, ...]
    tasks: tuple[TaskSpec, ...]


@dataclass(frozen=True)
class JobSpec:
    """A submitted job as the lab runs it: its number and recipes."""

    number: int
    recipes: tuple[RecipeSpec, ...]


def parse_job(
    xml: str,
    number: int,
    *,
    recipe_ids: Callable[[int], str] = lambda n: f"R:{n + 1}",
    task_ids: Callable[[int, int], str] = lambda r, t: f"T:{100 * (r + 1) + t + 1}",
) -> JobSpec:
    """Return the recipes of a Beaker job XML, in document order, with the hub's ids.

    :param recipe_ids: recipe index (document order) → the hub's ``R:<n>``.
    :param task_ids: (recipe index, task index) → the hub's ``T:<n>``.
    :raises ValueError: when a recipe has no role or no ``hostRequires`` hostname.
    """
    root = etree.fromstring(xml.encode("utf-8"))
    recipes = []
    for r, recipe in enumerate(root.iter("recipe")):
        hostname = recipe.find("hostRequires/and/hostname")
        if recipe.get("role") not in ROLES or hostname is None:
            raise ValueError(f"Recipe {r + 1} has no role {ROLES} or no hostRequires hostname.")
        tasks = tuple(
            TaskSpec(
                task_ids(r, t),
                str(task.get("name")),
                tuple((str(p.get("name")), str(p.get("value"))) for p in task.iterfind("params/param")),
            )
            for t, task in enumerate(recipe.iterfind("task"))
        )
        repos = tuple(str(repo.get("url")) for repo in recipe.iterfind("repos/repo"))
        recipes.append(
            RecipeSpec(recipe_ids(r), str(recipe.get("role")), str(hostname.get("value")), repos, tasks)
        )
    return JobSpec(number, tuple(recipes))


def step_of(task: TaskSpec) -> RemoteStep | None:
    """Return the step that runs ``task`` on its host, None for a Beaker-only task (passed as done)."""
    prefix = TASK_NAMESPACE + "/"
    if not task.name.startswith(prefix) or task.name[len(prefix) :] in BEAKER_ONLY:
        return None
    return RemoteStep(task.name[len(prefix) :], task.params)


# ---- what the lab tells the hub -----------------------------------------------------------------


class Feedback(Protocol):
    """The hub's side: statuses, results and files of tasks and recipes (Beaker's labels)."""

    def status(self, taskspec: str, status: str, result: str | None = None) -> None:
        """Set the status (``Running``, ``Completed``, ``Aborted``) and result of ``T:<n>``/``R:<n>``."""

    def result(self, task_id: str, path: str, result: str, score: str, log: tuple[str, bytes] | None) -> None:
        """Record one result of a task (``rstrnt-report-result``), with its log (name, content)."""

    def file(self, task_id: str, name: str, data: bytes) -> None:
        """Attach a file to a task (``rstrnt-report-log``, ``taskout.log``)."""


@dataclass
class RecordingFeedback:
    """A :class:`Feedback` that keeps everything, for tests of the executor alone."""

    statuses: dict[str, list[tuple[str, str | None]]] = field(default_factory=dict)
    results: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    files: dict[str, dict[str, bytes]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def status(self, taskspec: str, status: str, result: str | None = None) -> None:
        with self.lock:
            self.statuses.setdefault(taskspec, []).append((status, result))

    def result(self, task_id: str, path: str, result: str, score: str, log: tuple[str, bytes] | None) -> None:
        with self.lock:
            self.results.setdefault(task_id, []).append((path, result, score))
            if log is not None:
                self.files.setdefault(task_id, {})[f"{path}/{log[0]}"] = log[1]

    def file(self, task_id: str, name: str, data: bytes) -> None:
        with self.lock:
            self.files.setdefault(task_id, {})[name] = data

    def final(self, taskspec: str) -> tuple[str, str | None]:
        """Return the last (status, result) of ``taskspec``."""
        with self.lock:
            return self.statuses[taskspec][-1]


# ---- the lab ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabConfig:
    """How the lab reaches its hosts and what its stand-ins plant."""

    work: Path
    """Per job ``J<n>/``: the machines, spools, run directories and logs."""
    settings: Settings
    """SSH as root to every host (key, known_hosts)."""
    reboot: RebootSettings
    slow_nvrs: tuple[str, ...] = ()
    """``NAME-VERSION-RELEASE`` of builds whose 64 B rate is planted 10 % lower."""
    deadline_s: float = 240.0
    """A job's whole run on both hosts [s]."""
    env: Mapping[str, str] = field(default_factory=dict)
    """More environment for every task (e.g. a fault to inject)."""


@dataclass
class _Entry:
    """One task of a recipe as the executor walks it."""

    task: TaskSpec
    step: int | None
    """Index into the host plan's steps; None: Beaker-only."""
    results: list[str] = field(default_factory=list)
    status: str = "New"


@dataclass
class _RecipeProgress:
    """What was told to the hub about one recipe, and the spool and console read so far."""

    recipe: RecipeSpec
    entries: list[_Entry]
    spool: Path
    console: Path
    next_entry: int = 0
    spool_offset: int = 0
    console_offset: int = 0
    aborted: bool = False


class _Tracker:
    """Turn the runner's progress (steps finished per host) into hub statuses, results and files."""

    def __init__(self, feedback: Feedback, progress: dict[str, _RecipeProgress]) -> None:
        self.feedback = feedback
        self.progress = progress
        self.lock = threading.Lock()

    def advance(self, role: str, finished: int) -> None:
        """Complete every task before step ``finished`` of ``role`` and mark that step Running."""
        with self.lock:
            recipe = self.progress[role]
            while recipe.next_entry < len(recipe.entries):
                entry = recipe.entries[recipe.next_entry]
                if entry.step is None:
                    self._finish(recipe, entry, "Completed")
                elif entry.step < finished:
                    self._collect(recipe, entry)
                    self._finish(recipe, entry, "Completed")
                else:
                    if entry.status == "New":
                        entry.status = "Running"
                        self.feedback.status(entry.task.id, "Running")
                    return
                recipe.next_entry += 1

    def end(self, role: str, failed: bool) -> None:
        """Close the recipe: the running task and those after it Aborted when the host failed.

        A step that exited 1 (a measured FAIL) was Completed with the FAIL it reported.
        """
        with self.lock:
            recipe = self.progress[role]
            if recipe.next_entry < len(recipe.entries):
                current = recipe.entries[recipe.next_entry]
                if current.step is not None and current.status == "Running":
                    self._collect(recipe, current)
            for entry in recipe.entries[recipe.next_entry :]:
                if not failed and entry.step is None:
                    self._finish(recipe, entry, "Completed")
                else:
                    entry.results.append("Warn")
                    self._finish(recipe, entry, "Aborted")
            recipe.next_entry = len(recipe.entries)
            done = all(e.status == "Completed" for e in recipe.entries) and not recipe.aborted
            result = worst([r for e in recipe.entries for r in e.results])
            self.feedback.status(recipe.recipe.id, "Completed" if done else "Aborted", result)

    def _finish(self, recipe: _RecipeProgress, entry: _Entry, status: str) -> None:
        entry.status = status
        self.feedback.status(entry.task.id, status, worst(entry.results))

    def _collect(self, recipe: _RecipeProgress, entry: _Entry) -> None:
        """Hand the spool's new events and the step's console to the hub as ``entry``'s."""
        events = recipe.spool / "events"
        if events.exists():
            with events.open("rb") as handle:
                handle.seek(recipe.spool_offset)
                fresh = handle.read()
            complete = fresh[: fresh.rfind(b"\n") + 1]
            recipe.spool_offset += len(complete)
            for line in complete.decode("utf-8", "replace").splitlines():
                self._event(recipe, entry, line.split("\t"))
        if recipe.console.exists():
            with recipe.console.open("rb") as handle:
                handle.seek(recipe.console_offset)
                text = handle.read()
            recipe.console_offset += len(text)
            self.feedback.file(entry.task.id, "taskout.log", text)

    def _event(self, recipe: _RecipeProgress, entry: _Entry, fields: list[str]) -> None:
        kind = fields[0]
        if kind == "result" and len(fields) == 5:
            _, path, result, score, log_path = fields
            label = RESTRAINT_RESULTS.get(result, "Warn")
            entry.results.append(label)
            log = None
            if log_path != "-":
                name = Path(log_path + ".name").read_text(encoding="utf-8").strip()
                log = (name, Path(log_path).read_bytes())
            self.feedback.result(entry.task.id, path, label, score, log)
        elif kind == "log" and len(fields) == 3:
            self.feedback.file(entry.task.id, fields[1], Path(fields[2]).read_bytes())
        elif kind == "abort":
            recipe.aborted = True


class _LabRunner(Runner):
    """ovsperf-remote's runner that reports each step's start and end (it saves its state then)."""

    tracker: _Tracker

    def _save(self) -> None:
        super()._save()
        for host in self.hosts:
            if host.state.uploaded:
                self.tracker.advance(host.plan.role, host.state.next_step)


@dataclass(frozen=True)
class JobRun:
    """How a job's execution ended (the hub has the details)."""

    number: int
    failures: dict[str, str]
    work: Path
    """The job's directory: machines, spools, logs (``logs/<role>.log``)."""


def _machine_env(role: str, machine: FakeMachine, root: Path) -> dict[str, str]:
    """Return the environment that makes ``machine`` the inventory's host of ``role`` (as
    tests/remote/test_run.py's whole run does): inventory keys, checkouts, logs under ``root``."""
    if role == "TRAFFICGEN":
        return {
            "SETUP_DPDK_HOST": "moongen01.example.com",
            "BUILD_MOONGEN_HOST": "moongen01.example.com",
            "MOONGEN_BASE_DIR": str(root / "lua-trafficgen"),
            "SYNC_HOST_NAMES": "192.0.2.10",
        }
    return {
        "DUT_HOSTNAME": "dut01.example.com",
        "VSPERF_DIR": str(root / "vswitchperf"),
        "VSPERF_VENV": str(root / "venv"),
        "VSPERF_BASE_PYTHON": "vsperf-base-python",
        "MOONGEN_LOG_DIR": str(root / "moongen"),
        "FAKE_VSPERF_LOG_DIR": str(root / "vsperf-out"),
        "FAKE_VSPERF_LOADER_DIR": str(REPO / "tests" / "vsperf_configs"),
    }


def provision(
    lab: LabConfig, job_dir: Path, recipe: RecipeSpec, job: JobSpec, host_key_line: str
) -> dict[str, str]:
    """Make the recipe's fresh machine; return the environment of its tasks.

    :raises OSError: when a kick repository cannot be read (the recipe cannot be provisioned).
    """
    root = job_dir / f"{recipe.role.lower()}-machine"
    nics = (
        ("0000:81:00.0", "0000:81:00.1") if recipe.role == "TRAFFICGEN" else ("0000:03:00.0", "0000:03:00.1")
    )
    machine = FakeMachine(root, nics=nics)
    (machine.etc / "ssh").mkdir()
    (machine.etc / "ssh" / "ssh_host_ed25519_key.pub").write_text(host_key_line + "\n")
    packages = list(BASE_PACKAGES)
    for url in recipe.repos:
        for name, arch, version, release in sorted(repo_packages(url.rstrip("/") + "/")):
            if arch != "src":
                packages.append(f"{name} {version}-{release}.{arch}")
    (root / "packages.txt").write_text("\n".join(packages) + "\n")
    spool = job_dir / "spool" / recipe.role.lower()
    spool.mkdir(parents=True)
    lab_bin = root / "lab-bin"
    lab_bin.mkdir()
    for name in LAB_COMMANDS:
        (lab_bin / name).symlink_to(SHIMS / f"{name}.sh")
    env = machine.env()
    env.update(
        {
            "PATH": f"{lab_bin}:{env['PATH']}",
            "NIGHTLY_SPOOL": str(spool),
            "NIGHTLY_PACKAGES": str(root / "packages.txt"),
            "PERFSYNC_STATE_DIR": str(root / "perfsync"),
            "TASK_NET_TIMEOUT_S": "60",
            "FAKE_VSPERF": str(PLANTED_VSPERF),
            "PLANTED_VSPERF_BASE": str(FAKE_VSPERF),
            "PLANTED_SLOW_NVRS": " ".join(lab.slow_nvrs),
            "FAKE_VSPERF_STUB_DIR": str(VSPERF_STUB),
            "RSTRNT_JOBID": str(job.number),
            "RSTRNT_RECIPEID": recipe.id.removeprefix("R:"),
            **_machine_env(recipe.role, machine, root),
            **lab.env,
        }
    )
    return env


def execute(lab: LabConfig, job: JobSpec, feedback: Feedback, host_keys: Mapping[str, str]) -> JobRun:
    """Run ``job`` on the lab's hosts and report to ``feedback`` (module docstring); return how it ended.

    :param host_keys: hostname → its sshd's public host key line (what the machine's
        ``/etc/ssh/ssh_host_ed25519_key.pub`` holds, exchanged by perf_synchronization).
    """
    job_dir = lab.work / f"J{job.number}"
    (job_dir / "logs").mkdir(parents=True)
    recipes = {r.role: r for r in job.recipes}
    progress: dict[str, _RecipeProgress] = {}
    plans = []
    env: dict[str, dict[str, str]] = {}
    failures: dict[str, str] = {}
    for role in ROLES:
        recipe = recipes[role]
        entries, steps = [], []
        for task in recipe.tasks:
            step = step_of(task)
            entries.append(_Entry(task, None if step is None else len(steps)))
            if step is not None:
                steps.append(step)
        plans.append(HostPlan(role, recipe.hostname, tuple(steps), ()))
        progress[role] = _RecipeProgress(
            recipe, entries, job_dir / "spool" / role.lower(), job_dir / "logs" / f"{role.lower()}.log"
        )
        feedback.status(recipe.id, "Running")
        try:
            env[role] = provision(lab, job_dir, recipe, job, host_keys.get(recipe.hostname, ""))
        except OSError as err:
            failures[role] = f"cannot provision {recipe.hostname}: {err}"
    tracker = _Tracker(feedback, progress)
    if failures:
        for role in ROLES:
            tracker.end(role, failed=True)
        return JobRun(job.number, failures, job_dir)
    run_id = new_run_id()
    state = RemoteRunState(
        run_id,
        f"J:{job.number}",
        RemoteRunState.plan_of((plans[0], plans[1])),
        {p.role: HostState(p.role, p.host, str(job_dir / "remote" / p.role.lower())) for p in plans},
    )
    options = RunOptions(log_dir=job_dir / "logs", deadline_s=lab.deadline_s, env=env, reboot=lab.reboot)
    targets = {p.role: parse_target(f"root@{p.host}", p.role) for p in plans}
    with open(os.devnull, "w") as console, perfsync_cleanup(str(job_dir)):
        runner = _LabRunner(state, (plans[0], plans[1]), targets, lab.settings, options, console=console)
        runner.tracker = tracker
        outcome = runner.run()
    for role in ROLES:
        tracker.end(role, failed=role in outcome.failures or role in outcome.stopped)
    failures = dict(outcome.failures)
    failures.update({role: "stopped: the other host failed" for role in outcome.stopped})
    return JobRun(job.number, failures, job_dir)


class BeakerLab:
    """Execute jobs in background threads, one at a time (a lab of two hosts runs one job).

    ``config`` may be replaced between jobs (``dataclasses.replace``: e.g. the planted slow builds).
    """

    def __init__(self, config: LabConfig, host_keys: Mapping[str, str]) -> None:
        self.config = config
        self.host_keys = dict(host_keys)
        self.runs: list[JobRun] = []
        self._lock = threading.Lock()
        self._busy = threading.Lock()
        self._threads: list[threading.Thread] = []

    def submit(self, job: JobSpec, feedback: Feedback) -> None:
        """Start executing ``job`` once no other job runs; return at once (the hub's upload returns)."""
        thread = threading.Thread(target=self._run, args=(job, feedback), name=f"beakerlab-J{job.number}")
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _run(self, job: JobSpec, feedback: Feedback) -> None:
        with self._busy:
            run = execute(self.config, job, feedback, self.host_keys)
        with self._lock:
            self.runs.append(run)

    def wait(self, timeout_s: float) -> None:
        """Wait until every submitted job has finished.

        :raises TimeoutError: when one has not within ``timeout_s``.
        """
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout_s)
            if thread.is_alive():
                raise TimeoutError(f"Job thread {thread.name} still runs after {timeout_s:g} s.")

    def close(self) -> None:
        """Wait (bounded) for running jobs; a job still running is left to its deadline."""
        with suppress(TimeoutError):
            self.wait(self.config.deadline_s + 120)
