"""Execute the Beaker job's plan on two pre-provisioned hosts over SSH: ``ovsperf-remote run``.

Each host runs its steps (:mod:`remote.plan`) in order in its own thread, from a copy of the tasks
uploaded to ``<remote base>/<run id>/<role>`` (:func:`remote.executor.upload`):

* **Environment.** Every step gets its Beaker parameters, ``RSTRNT_REBOOTCOUNT``/``REBOOTCOUNT``
  (reboots of this step so far), ``OVSPERF_RUN_ID`` (the sync states are named
  ``<STATE>.R<run id>``, as ``<STATE>.J<job>`` under Beaker: a state of another run never
  satisfies a waiter of this one) and the user's ``--env``; ``vsperf_test`` (``ovsperf_test``) also
  ``VSPERF_RESULTS_FILE``, where it writes the path of the results it made.
* **Reboots.** A task that asks for one (``task_reboot`` → the run directory's ``rstrnt-reboot``)
  exits; the runner reads the boot id, starts ``--reboot-command`` (``systemctl reboot``) in the
  background, reconnects until the boot id changed (deadline ``--reboot-timeout``) and runs the same
  step again with the reboot count one higher, as restraint does.
* **Outcomes as under Beaker.** Exit 0 or 1 (a measured FAIL) goes on with the next step; any other
  status (2: ``task_abort``, a lab problem), a deadline or a dropped connection ends the host's
  plan **and stops the other host at once** (its running command is ended with its children)
  instead of letting it wait for a sync timeout.
* **State.** ``state.json`` in the local log directory records, after every step, what each host
  has done; ``--resume LOG_DIR`` continues a run from the step that did not finish (the tasks keep
  their own per-boot state, so running a step again is what restraint does after a crash).
* **Results.** With a local ``--collector DIR`` the DUT's results directory is fetched over SFTP
  into it (:mod:`remote.fetch`: whole or not at all, metadata file last); with
  ``user@host:/path`` the DUT's ``vsperf_test`` sends it by rsync itself; without, it stays on the
  DUT and its path is printed.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import shlex
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, TextIO

from ovsperf_common.atomicio import atomic_write_text
from ovsperf_common.regularfile import read_regular_text
from ovsperf_common.runner import one_line
from remote.check import Outcome, sudo_check
from remote.defaults import BOOT_ID_COMMAND
from remote.errors import AuthError, CancelledError, HostKeyError, RemoteError, UnreachableError
from remote.executor import REBOOT_REQUEST, run_task, upload
from remote.fetch import fetch_results
from remote.plan import HostPlan
from remote.ssh import Session, Settings, Target, sudo_prefix

log = logging.getLogger(__name__)

STATE_FILE = "state.json"
"""The run's progress in the local log directory (``--resume`` reads it)."""
RESULTS_POINTER = "results-path"
"""File in the DUT's run directory where ``vsperf_test`` writes its results directory's path."""
RESULTS_TASKS = ("vsperf_test", "ovsperf_test")
"""The tasks that measure (engine ``vsperf``, ``ovsperf``): they get ``VSPERF_RESULTS_FILE`` and write
their results directory's path into :data:`RESULTS_POINTER`."""
RUN_ID_RE = re.compile(r"\A[0-9]{8}-[0-9]{6}-[0-9a-f]{4}\Z")
"""``YYYYmmdd-HHMMSS-xxxx``: short enough for sync state names (``<STATE>.R<id>``, 64 characters)."""
MAX_REBOOTS_PER_STEP = 3
"""A step asking for more reboots than this is looping: the run ends (restraint has a similar cap)."""
STOP_GRACE_S = 60.0
"""After the run's deadline, how long the runner waits for both hosts to stop [s]."""


def new_run_id(now: datetime | None = None) -> str:
    """Return a new run id ``YYYYmmdd-HHMMSS-xxxx`` (:data:`RUN_ID_RE`)."""
    return f"{(now or datetime.now()):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


@dataclass(frozen=True)
class RebootSettings:
    """How a host is rebooted and how its return is recognised."""

    command: tuple[str, ...] = ("systemctl", "reboot")
    """Run as root in the background (``--reboot-command``)."""
    boot_id_command: tuple[str, ...] = BOOT_ID_COMMAND
    """Prints the boot id, which must change (``--boot-id-command``)."""
    timeout_s: float = 1200.0
    """From the reboot command until SSH answers with a new boot id (``--reboot-timeout``) [s]."""


@dataclass
class HostState:
    """What one host has done (persisted in ``state.json``)."""

    role: str
    host: str
    remote_dir: str
    uploaded: bool = False
    next_step: int = 0
    """Index of the first step not finished [1]."""
    reboot_count: int = 0
    """Reboots of that step so far [1]."""
    failed_steps: list[str] = field(default_factory=list)
    """Steps that exited 1 (a measured FAIL), as ``<n>. <task>``."""


@dataclass
class RemoteRunState:
    """An ``ovsperf-remote`` run's identity, plan and progress.

    Kept in ``state.json``, written atomically after every step.
    """

    run_id: str
    config: str
    plan: dict[str, list[list[Any]]]
    """Role → steps as ``[task, [[name, value], ...]]``: a resumed run must have the same plan."""
    hosts: dict[str, HostState]
    collector: str | None = None
    results: str | None = None
    """The delivered (or left-behind) results directory, once known."""
    options: dict[str, Any] = field(default_factory=dict)
    """The command line's choices a resume reuses (hosts as given, inventory, ``--env``, …)."""

    @staticmethod
    def plan_of(plans: tuple[HostPlan, HostPlan]) -> dict[str, list[list[Any]]]:
        """Return the plans in the form ``state.json`` keeps them."""
        return {p.role: [[s.task, [list(kv) for kv in s.params]] for s in p.steps] for p in plans}

    def save(self, path: Path) -> None:
        """Write ``path`` atomically."""
        document = {
            "schema": 1,
            "run_id": self.run_id,
            "config": self.config,
            "plan": self.plan,
            "hosts": {role: vars(h) for role, h in self.hosts.items()},
            "collector": self.collector,
            "results": self.results,
            "options": self.options,
        }
        atomic_write_text(path, json.dumps(document, indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> RemoteRunState:
        """Read ``path``.

        :raises RemoteError: naming the file, when it is missing, not JSON or not a run state.
        """
        try:
            document = json.loads(read_regular_text(path))
            if document.get("schema") != 1 or not RUN_ID_RE.match(str(document.get("run_id"))):
                raise ValueError("not an ovsperf-remote run state of schema 1")
            hosts = {
                str(role): HostState(
                    role=str(h["role"]),
                    host=str(h["host"]),
                    remote_dir=str(h["remote_dir"]),
                    uploaded=h["uploaded"] is True,
                    next_step=int(h["next_step"]),
                    reboot_count=int(h["reboot_count"]),
                    failed_steps=[str(s) for s in h["failed_steps"]],
                )
                for role, h in document["hosts"].items()
            }
            return cls(
                run_id=document["run_id"],
                config=str(document["config"]),
                plan=document["plan"],
                hosts=hosts,
                collector=document.get("collector"),
                results=document.get("results"),
                options=dict(document.get("options") or {}),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise RemoteError(f"Cannot resume from '{path}': {one_line(err)}.") from err


@dataclass(frozen=True)
class RunOptions:
    """What ``ovsperf-remote run`` was asked, besides the plan."""

    log_dir: Path
    """Local directory for ``state.json`` and one log per host."""
    deadline_s: float
    """The whole run, every step of both hosts [s] (``--timeout`` hours)."""
    env: Mapping[str, Mapping[str, str]]
    """Role → extra environment of every step on that host (``--env``, ``--tg-env``, ``--dut-env``)."""
    collector: Path | None = None
    """Local directory the DUT's results are fetched into; None: none fetched."""
    reboot: RebootSettings = RebootSettings()
    inventory: Path | None = None
    """The user's local inventory file, copied into each run directory (``INVENTORY`` names it)."""


@dataclass
class RemoteRunOutcome:
    """How an ``ovsperf-remote`` run ended."""

    failures: dict[str, str] = field(default_factory=dict)
    """Role → why that host's plan ended early (the first one is the cause)."""
    stopped: list[str] = field(default_factory=list)
    """Roles stopped because the other host failed."""
    failed_steps: dict[str, list[str]] = field(default_factory=dict)
    """Role → steps that reported a measured FAIL (exit 1); the run went on."""
    results: str | None = None
    """Where the results are: the delivered directory, or the DUT's path."""

    @property
    def complete(self) -> bool:
        """Return whether every step of both hosts ran."""
        return not self.failures and not self.stopped


class _Console:
    """Lines of both hosts to one stream, a line at a time."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            written = self._stream.write(text)
            self._stream.flush()
            return written

    def flush(self) -> None:
        """Nothing buffered here."""


@dataclass
class _Host:
    """One host's thread: its target, plan, state and session."""

    target: Target
    plan: HostPlan
    state: HostState
    env: Mapping[str, str]


class Runner:
    """Run both hosts' plans (module docstring); :meth:`run` once."""

    def __init__(
        self,
        state: RemoteRunState,
        plans: tuple[HostPlan, HostPlan],
        targets: Mapping[str, Target],
        settings: Settings,
        options: RunOptions,
        console: TextIO | None = None,
    ) -> None:
        self.state = state
        self.options = options
        self.settings = settings
        self.console = _Console(console if console is not None else sys.stderr)
        self.abort = threading.Event()
        self.outcome = RemoteRunOutcome()
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self.hosts = [
            _Host(targets[p.role], p, state.hosts[p.role], options.env.get(p.role, {})) for p in plans
        ]

    # ---- state -----------------------------------------------------------------------------

    def _save(self) -> None:
        with self._lock:
            self.state.save(self.options.log_dir / STATE_FILE)

    def _left_s(self) -> float:
        return self.options.deadline_s - (time.monotonic() - self._started)

    def _fail(self, role: str, why: str) -> None:
        with self._lock:
            first = not self.outcome.failures
            self.outcome.failures[role] = why
        if first:
            log.error("%s failed: %s Stopping the other host.", role, why)
        self.abort.set()

    # ---- one host --------------------------------------------------------------------------

    def _host_main(self, host: _Host) -> None:
        role = host.plan.role
        try:
            self._host_steps(host)
        except CancelledError:
            with self._lock:
                self.outcome.stopped.append(role)
            log.warning("%s stopped: the other host failed.", role)
        except RemoteError as err:
            self._fail(role, str(err))
        except Exception as err:  # a bug must still stop the other host, then surface
            self._fail(role, f"internal error: {type(err).__name__}: {one_line(err)}")
            raise

    def _connect(self, host: _Host) -> Session:
        """Return a session to the host that may run commands as root (checked before any step).

        :raises RemoteError: when it cannot connect, or sudo asks for a password (explained).
        """
        session = Session(host.target, self.settings)
        try:
            outcome, detail = sudo_check(session)
        except RemoteError:
            session.close()
            raise
        if outcome is not Outcome.PASS:
            session.close()
            raise RemoteError(f"{session.name}: {detail}.")
        return session

    def _host_steps(self, host: _Host) -> None:
        state, plan = host.state, host.plan
        log_file = self.options.log_dir / f"{plan.role.lower()}.log"
        session = self._connect(host)
        try:
            if not state.uploaded:
                upload(
                    session,
                    state.remote_dir,
                    inventory=self.options.inventory,
                    tasks=[step.task for step in plan.steps],
                )
                state.uploaded = True
                self._save()
            else:
                self._check_run_dir(session, state.remote_dir)
            while state.next_step < len(plan.steps):
                if self.abort.is_set():
                    raise CancelledError(f"{plan.role} stopped before step {state.next_step + 1}.")
                step = plan.steps[state.next_step]
                number = f"{state.next_step + 1}. {step.task}"
                left = self._left_s()
                if left <= 0:
                    raise RemoteError(f"The run's deadline passed before step {number} on {session.name}.")
                extra = {
                    **host.env,
                    "RSTRNT_REBOOTCOUNT": str(state.reboot_count),
                    "REBOOTCOUNT": str(state.reboot_count),
                    "OVSPERF_RUN_ID": self.state.run_id,
                }
                if step.task in RESULTS_TASKS:
                    extra["VSPERF_RESULTS_FILE"] = str(PurePosixPath(state.remote_dir) / RESULTS_POINTER)
                log.info("%s step %s (reboot count %d).", session.name, number, state.reboot_count)
                outcome = run_task(
                    session,
                    state.remote_dir,
                    step,
                    log_file,
                    timeout_s=left,
                    extra=extra,
                    console=self.console,
                    cancel=self.abort,
                )
                rebooting = self._take_reboot_request(session, state.remote_dir)
                if outcome.exit_status == 0 and rebooting:
                    if state.reboot_count >= MAX_REBOOTS_PER_STEP:
                        raise RemoteError(
                            f"Step {number} on {session.name} asked for a reboot {state.reboot_count + 1} "
                            f"times; see {log_file}."
                        )
                    state.reboot_count += 1
                    self._save()
                    session = self._reboot(host, session)
                    continue
                if outcome.exit_status == 1:
                    state.failed_steps.append(number)
                    log.warning(
                        "%s step %s reported FAIL (exit 1); going on as Beaker does.", session.name, number
                    )
                elif outcome.exit_status != 0:
                    why = " (task_abort: a lab problem)" if outcome.exit_status == 2 else ""
                    raise RemoteError(
                        f"Step {number} on {session.name} exited {outcome.exit_status}{why}; see {log_file}."
                    )
                state.next_step += 1
                state.reboot_count = 0
                self._save()
        finally:
            session.close()

    @staticmethod
    def _check_run_dir(session: Session, remote_dir: str) -> None:
        sftp = session.sftp()
        try:
            sftp.stat(str(PurePosixPath(remote_dir) / "beaker_tasks"))
        except OSError as err:
            raise RemoteError(
                f"Cannot resume on {session.name}: its run directory {remote_dir} is gone ({one_line(err)})."
            ) from err
        finally:
            sftp.close()

    @staticmethod
    def _take_reboot_request(session: Session, remote_dir: str) -> bool:
        """Return whether the step asked for a reboot, and forget the request."""
        request = str(PurePosixPath(remote_dir) / REBOOT_REQUEST)
        sftp = session.sftp()
        try:
            try:
                sftp.stat(request)
            except FileNotFoundError:
                return False
            sftp.remove(request)
            return True
        finally:
            sftp.close()

    def _reboot(self, host: _Host, session: Session) -> Session:
        """Reboot the host over SSH and return a session to it once its boot id changed.

        :raises RemoteError: when it does not come back within the reboot deadline, or comes back
            with another host key (refused) or refusing our key.
        :raises CancelledError: when the other host failed meanwhile.
        """
        reboot = self.options.reboot
        old = session.boot_id(argv=reboot.boot_id_command)
        background = '(sleep 1; exec "$@") </dev/null >/dev/null 2>&1 &'
        launch = [*sudo_prefix(session), "sh", "-c", background, "sh", *reboot.command]
        log.info("Rebooting %s (%s).", session.name, one_line(shlex.join(reboot.command)))
        self.console.write(f"[{session.name}] rebooting: {one_line(shlex.join(reboot.command))}\n")
        result = session.run(launch, 60)
        name = session.name
        session.close()
        if result.exit_status != 0:
            raise RemoteError(f"Cannot reboot {name}: {one_line(result.stderr.strip())}.")
        deadline = time.monotonic() + reboot.timeout_s
        while True:
            if self.abort.is_set():
                raise CancelledError(f"{name}: stopped while waiting for its reboot.")
            left = deadline - time.monotonic()
            if left <= 0:
                raise RemoteError(
                    f"{name} did not come back from its reboot within {reboot.timeout_s:g} s "
                    "(no SSH login with a new boot id)."
                )
            time.sleep(min(2.0, left))
            timeout = max(1.0, min(self.settings.connect_timeout_s, deadline - time.monotonic()))
            try:
                fresh = Session(host.target, replace(self.settings, connect_timeout_s=timeout))
            except (HostKeyError, AuthError):
                raise
            except (UnreachableError, RemoteError):
                continue
            try:
                current = fresh.boot_id(timeout_s=timeout, argv=reboot.boot_id_command)
            except RemoteError:
                fresh.close()
                continue
            if current != old:
                log.info("%s is back (boot id %s).", name, one_line(current))
                self.console.write(f"[{name}] back after its reboot\n")
                return fresh
            fresh.close()

    # ---- the run ---------------------------------------------------------------------------

    def run(self) -> RemoteRunOutcome:
        """Run both plans in parallel, then fetch the results; return how it ended.

        Failures are in the outcome (and ``state.json``), not raised: the caller prints them.
        """
        threads = [
            threading.Thread(target=self._host_main, args=(h,), name=f"ovsperf-remote-{h.plan.role}")
            for h in self.hosts
        ]
        for thread in threads:
            thread.start()
        hard_stop = self.options.deadline_s + STOP_GRACE_S
        try:
            for thread in threads:
                while thread.is_alive():
                    thread.join(0.5)
                    if time.monotonic() - self._started > hard_stop and not self.abort.is_set():
                        self._fail("run", f"the run's deadline of {self.options.deadline_s:g} s passed")
                    if time.monotonic() - self._started > hard_stop + STOP_GRACE_S:
                        log.error("A host thread did not stop; leaving it behind.")
                        break
        except KeyboardInterrupt:
            log.error(
                "Interrupted: stopping both hosts' steps (resume with --resume %s).", self.options.log_dir
            )
            self.abort.set()
            for thread in threads:
                thread.join(STOP_GRACE_S)
            self._save()
            raise
        for host in self.hosts:
            if host.state.failed_steps:
                self.outcome.failed_steps[host.plan.role] = list(host.state.failed_steps)
        if self.outcome.complete:
            self._results()
        self._save()
        return self.outcome

    def _results(self) -> None:
        dut = next(h for h in self.hosts if h.plan.role == "DUT")
        if not any(s.task in RESULTS_TASKS for s in dut.plan.steps):
            return
        pointer = str(PurePosixPath(dut.state.remote_dir) / RESULTS_POINTER)
        try:
            session = self._connect(dut)
        except RemoteError as err:
            self._fail("DUT", f"cannot reach the DUT for its results: {err}")
            return
        try:
            sftp = session.sftp()
            try:
                with sftp.open(pointer, "r") as handle:
                    path = handle.read(4096).decode("utf-8", "replace").strip()
            except OSError:
                task = next(s.task for s in dut.plan.steps if s.task in RESULTS_TASKS)
                self._fail("DUT", f"{task} wrote no results path ({pointer}): it made no results.")
                return
            finally:
                sftp.close()
            if self.options.collector is None:
                self.outcome.results = f"{session.name}:{one_line(path)}"
            else:
                delivered = fetch_results(session, path, self.options.collector)
                self.outcome.results = str(delivered)
            self.state.results = self.outcome.results
        except RemoteError as err:
            self._fail("DUT", str(err))
        finally:
            session.close()
