"""Track what a lab run starts (processes, DPDK file prefixes, paths) so it can always be removed.

Every run owns one directory ``<state_root>/<run_id>/`` (default state root
``/run/ovsperf-lab``): OVS's database, sockets and logs live in it, and ``state.json`` lists the
processes (PID and kernel start time, so a recycled PID is never killed) and DPDK file prefixes
the run created. :func:`release` stops and removes exactly those; ``ovsperf-lab cleanup`` calls it
for runs whose owner process is gone. Nothing here looks at processes or files it did not record.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ovsperf_common.atomicio import atomic_write_text
from ovsperf_common.fields import is_safe_name
from ovsperf_common.regularfile import read_regular_text

log = logging.getLogger(__name__)

DEFAULT_STATE_ROOT = Path("/run/ovsperf-lab")
"""Where runs keep their state; short, so vhost-user socket paths stay under 108 bytes."""

HUGEPAGE_DIR = Path("/dev/hugepages")
"""hugetlbfs mount where DPDK puts ``<file-prefix>map_*`` files."""

DPDK_RUNTIME_DIR = Path("/var/run/dpdk")
"""DPDK's per-prefix runtime directories (``/var/run/dpdk/<prefix>/``)."""

PREFIX = "ovsperf-lab-"
"""Every DPDK file prefix and run id of the lab starts with this."""


def process_start_ticks(pid: int) -> int | None:
    """Return the start time of ``pid`` since boot [clock ticks], ``None`` if it is gone.

    Source: field 22 of ``/proc/<pid>/stat`` (proc(5)); with the PID it identifies a process
    across PID reuse.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[19])


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2 :].split()[0] in ("Z", "X")


@dataclass(frozen=True)
class TrackedProcess:
    """A process the run started."""

    name: str
    """Role, e.g. ``'ovs-vswitchd'``."""
    pid: int
    """Process id."""
    start_ticks: int
    """``/proc/<pid>/stat`` start time, to recognise the same process [clock ticks]."""

    def alive(self) -> bool:
        """Return whether this very process (not a PID reuse) still runs and is not a zombie."""
        return process_start_ticks(self.pid) == self.start_ticks and not _is_zombie(self.pid)


@dataclass
class LabRunState:
    """The resources of one ``ovsperf-lab`` run, saved to ``state.json`` on every change.

    Not ``remote.run.RemoteRunState``, which is a remote run's plan and progress.
    """

    run_dir: Path
    """``<state_root>/<run_id>``."""
    owner: TrackedProcess
    """The ``ovsperf-lab`` process that owns the run."""
    processes: list[TrackedProcess] = field(default_factory=list)
    """Processes started, in start order."""
    file_prefixes: list[str] = field(default_factory=list)
    """DPDK ``--file-prefix`` values used."""
    results_dir: str | None = None
    """Results directory being written, for the cleanup message."""
    taps: list[str] = field(default_factory=list)
    """Tap devices a netdev bridge of this run's OVS makes in the host's network namespace
    (``olab<id>``, ``olp<id>``): OVS keeps them after it stops, so teardown deletes them."""

    @property
    def run_id(self) -> str:
        """Return the run id (the directory name)."""
        return self.run_dir.name

    @classmethod
    def create(cls, state_root: Path, run_id: str) -> LabRunState:
        """Create ``<state_root>/<run_id>`` and its ``state.json``, owned by this process.

        :raises OSError: when the directory exists already or cannot be created.
        """
        run_dir = Path(state_root) / run_id
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        run_dir.mkdir(mode=0o755)
        pid = os.getpid()
        state = cls(run_dir, TrackedProcess("ovsperf-lab", pid, process_start_ticks(pid) or 0))
        state.save()
        return state

    @classmethod
    def load(cls, run_dir: Path) -> LabRunState:
        """Read ``run_dir/state.json``.

        :raises OSError: when it cannot be read.
        :raises ValueError: when it is not a state file of ours.
        """
        data = json.loads(read_regular_text(run_dir / "state.json"))
        try:
            state = cls(
                run_dir=run_dir,
                owner=TrackedProcess(**data["owner"]),
                processes=[TrackedProcess(**p) for p in data["processes"]],
                file_prefixes=[str(p) for p in data["file_prefixes"]],
                results_dir=data.get("results_dir"),
                taps=[check_tap_name(str(t)) for t in data.get("taps", [])],
            )
            for proc in (state.owner, *state.processes):
                _check_process(proc)
            for prefix in state.file_prefixes:
                check_file_prefix(prefix, state.run_id)
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"'{run_dir / 'state.json'}' is not an ovsperf-lab state file: {err}") from err
        return state

    def save(self) -> None:
        """Write ``state.json`` atomically."""
        data = {
            "owner": self.owner.__dict__,
            "processes": [p.__dict__ for p in self.processes],
            "file_prefixes": self.file_prefixes,
            "results_dir": self.results_dir,
            "taps": self.taps,
        }
        atomic_write_text(self.run_dir / "state.json", json.dumps(data, indent=2) + "\n")

    def track_process(self, name: str, pid: int) -> TrackedProcess:
        """Record a started process; return its record (start time read now)."""
        proc = TrackedProcess(name, pid, process_start_ticks(pid) or 0)
        self.processes.append(proc)
        self.save()
        return proc

    def track_taps(self, *names: str) -> None:
        """Record tap devices this run's OVS may make in the host's namespace (deleted at release).

        :raises ValueError: for a name that is not a lab bridge's (``olab``/``olp`` + 8 hex digits).
        """
        for name in names:
            if check_tap_name(name) not in self.taps:
                self.taps.append(name)
        self.save()

    def new_file_prefix(self, role: str) -> str:
        """Return and record a DPDK file prefix ``ovsperf-lab-<run>-<role>`` unique to this run."""
        prefix = (
            f"{self.run_id}-{role}" if self.run_id.startswith(PREFIX) else f"{PREFIX}{self.run_id}-{role}"
        )
        self.file_prefixes.append(prefix)
        self.save()
        return prefix


def own_prefix(run_id: str) -> str:
    """Return the start every DPDK file prefix of run ``run_id`` has (:meth:`LabRunState.new_file_prefix`)."""
    return f"{run_id}-" if run_id.startswith(PREFIX) else f"{PREFIX}{run_id}-"


def check_file_prefix(prefix: str, run_id: str) -> str:
    """Return ``prefix`` when it is one :meth:`LabRunState.new_file_prefix` gives run ``run_id``.

    A prefix becomes ``/var/run/dpdk/<prefix>`` and ``/dev/hugepages/<prefix>map_*``, which
    cleanup removes: one with ``/`` or ``..`` would remove elsewhere, an empty one all of
    ``/var/run/dpdk``, another run's that run's files.

    :raises ValueError: naming the prefix (escaped) and what it must look like.
    """
    start = own_prefix(run_id)
    if not is_safe_name(prefix) or not prefix.startswith(start) or prefix == start:
        raise ValueError(
            f"DPDK file prefix {prefix!r} is not one of run '{run_id}' ('{start}<role>' of "
            "A-Z a-z 0-9 . _ + @ = , -, without '..'); nothing was removed for it"
        )
    return prefix


def _check_process(proc: TrackedProcess) -> None:
    """Raise ``ValueError`` unless ``proc``'s PID and start time are whole numbers (PID above 1)."""
    for name, value, minimum in (("pid", proc.pid, 2), ("start_ticks", proc.start_ticks, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"process '{proc.name}' has {name} {value!r}, not a whole number >= {minimum}")


def stop_process(
    proc: TrackedProcess, *, popen: subprocess.Popen[bytes] | None = None, timeout_s: float = 10.0
) -> None:
    """Stop ``proc`` with SIGTERM, then SIGKILL after ``timeout_s`` [s]; reap it if it is our child."""
    if not proc.alive():
        if popen is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                popen.wait(timeout=1)
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if popen is not None and popen.poll() is not None:
            return
        if not proc.alive():
            return
        time.sleep(0.05)
    log.warning("%s (PID %d) ignored SIGTERM for %.0f s; killing it.", proc.name, proc.pid, timeout_s)
    if proc.alive():
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
    if popen is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            popen.wait(timeout=5)


def renice(pid: int, nice: int) -> int:
    """Set the nice value of every thread of ``pid`` (one of our own processes); return how many.

    Busy-polling threads (OVS PMD, generator, forwarder) that share CPUs with other work lose
    frames whenever they are descheduled; a negative nice value gives them a larger CFS share
    without the starvation risk of real-time priorities. Threads that vanish are skipped.
    """
    count = 0
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return 0
    for tid in tids:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, tid, nice)
            count += 1
    return count


def dpdk_leftovers(prefix: str) -> list[Path]:
    """Return hugepage files and the runtime directory DPDK left for ``prefix``.

    :raises ValueError: when ``prefix`` is not a lab prefix (``ovsperf-lab-…``, a safe name): it
        could name a path outside DPDK's directories, or all of them.
    """
    if not is_safe_name(prefix) or not prefix.startswith(PREFIX) or prefix == PREFIX:
        raise ValueError(f"DPDK file prefix {prefix!r} is not an ovsperf-lab prefix; nothing removed for it")
    found: list[Path] = []
    if HUGEPAGE_DIR.is_dir():
        found += sorted(p for p in HUGEPAGE_DIR.iterdir() if p.name.startswith(prefix + "map_"))
    runtime = DPDK_RUNTIME_DIR / prefix
    if runtime.exists():
        found.append(runtime)
    return found


NETNS_DIR = Path("/run/netns")
"""Where ``ip netns`` keeps its named namespaces."""


def delete_netns(name: str) -> bool:
    """Delete network namespace ``name`` if it exists (``ip netns del``); return whether it did.

    Its interfaces (an OVS bridge's tap devices) go with it. A failure is logged, not raised:
    teardown goes on.
    """
    if not (NETNS_DIR / name).exists():
        return False
    return _ip_delete(["netns", "del", name], f"network namespace '{name}'")


def _ip_delete(args: list[str], what: str) -> bool:
    """Run ``ip ARGS`` (30 s at most); return whether it succeeded, logging why not."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        log.warning("Cannot delete %s: %s", what, done.stderr.strip())
        return False
    return True


TAP_NAME = re.compile(r"(olab|olp)[0-9a-f]{8}")
"""The lab's bridge names (``ovs.OvsSandbox.bridge`` and the overlay's underlay bridge): the only
tap devices the lab ever deletes."""

SYS_CLASS_NET = Path("/sys/class/net")
"""Where the kernel lists the network devices of this namespace."""


def check_tap_name(name: str) -> str:
    """Return ``name`` when it is a lab bridge's tap device name.

    :raises ValueError: otherwise (a state file naming another device is not ours).
    """
    if not TAP_NAME.fullmatch(name):
        raise ValueError(f"tap device {name!r} is not an ovsperf-lab bridge's")
    return name


def delete_tap(name: str) -> bool:
    """Delete tap device ``name`` of a lab bridge if it exists here; return whether it did.

    OVS makes a netdev bridge's LOCAL port a persistent tap device and leaves it when it stops;
    only a device with that name *and* a ``tun_flags`` attribute (a tun/tap) is deleted. A
    failure is logged, not raised: teardown goes on.

    :raises ValueError: for a name that is not a lab bridge's.
    """
    if not (SYS_CLASS_NET / check_tap_name(name) / "tun_flags").exists():
        return False
    return _ip_delete(["link", "delete", name], f"tap device '{name}'")


def release(state: LabRunState, *, keep_dir: bool = False) -> list[str]:
    """Stop every recorded process (newest first), remove DPDK leftovers and the run directory.

    :returns: one line per thing removed or stopped, for the log and ``cleanup``'s output.
    """
    done: list[str] = []
    for proc in reversed(state.processes):
        if proc.alive():
            stop_process(proc)
            done.append(f"stopped {proc.name} (PID {proc.pid})")
    for prefix in state.file_prefixes:
        for path in dpdk_leftovers(prefix):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            done.append(f"removed {path}")
        if delete_netns(prefix):  # an OVS of the overlay tests ran in a namespace of this name
            done.append(f"deleted network namespace {prefix}")
    for tap in state.taps:
        if delete_tap(tap):
            done.append(f"deleted tap device {tap}")
    if not keep_dir and state.run_dir.exists():
        shutil.rmtree(state.run_dir, ignore_errors=True)
        done.append(f"removed {state.run_dir}")
    return done
