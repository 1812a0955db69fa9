"""Take a known share of OVS's PMD CPU time: a calibrated slowdown to check what a comparison finds.

A test aid, not a measurement feature: ``ovsperf-lab compare --b-cpu-steal PCT`` puts side B's PMD
threads into a cgroup of their own whose CPU bandwidth is capped at ``100 − PCT`` % (CFS bandwidth
control, kernel ``Documentation/scheduler/sched-bwc.rst``): cgroup v1 ``cpu.cfs_quota_us`` /
``cpu.cfs_period_us`` per thread (``tasks``) where the ``cpu`` controller is mounted on its own,
else cgroup v2 ``cpu.max`` for the whole ``ovs-vswitchd`` process (v2 moves processes, not
threads; its non-PMD threads are idle during a trial). A busy-polling PMD is CPU-bound, so its
forwarding rate drops by about that share. The period is short (10 ms) so that the cap costs
throughput, not millisecond stalls that only a ring would absorb.

The cgroup is named after the run and removed on :meth:`CpuSteal.release`; nothing else is touched.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from ovsperf_lab.errors import LabError

log = logging.getLogger(__name__)

CGROUP_V1_CPU = Path("/sys/fs/cgroup/cpu")
"""Mount point of the cgroup v1 ``cpu`` controller."""
CGROUP_V2 = Path("/sys/fs/cgroup")
"""Mount point of the cgroup v2 unified hierarchy."""
PERIOD_US = 10_000
"""CFS bandwidth period [µs]."""


def pmd_threads(pid: int) -> list[int]:
    """Return the thread ids of ``pid``'s PMD threads (``comm`` starting with ``pmd``).

    :raises LabError: when the process is gone.
    """
    try:
        tasks = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError as err:
        raise LabError(f"Cannot list the threads of PID {pid}: {err.strerror}.") from err
    found = []
    for tid in tasks:
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/task/{tid}/comm").read_text().startswith("pmd"):
                found.append(tid)
    return found


class CpuSteal:
    """Cap one process's PMD threads at ``100 − percent`` % of a CPU until :meth:`release`."""

    def __init__(self, percent: float, name: str) -> None:
        """Prepare a cgroup ``name`` (a safe name of the run) that leaves ``100 − percent`` % of a CPU.

        :raises LabError: when ``percent`` is outside (0, 90] or no usable cgroup controller exists.
        """
        if not 0 < percent <= 90:
            raise LabError(f"Option '--b-cpu-steal' must be in (0, 90] %, got {percent!r}.")
        self.percent = percent
        if (CGROUP_V1_CPU / "cpu.cfs_quota_us").exists():
            self.v2 = False
            self.path = CGROUP_V1_CPU / name
        elif (CGROUP_V2 / "cgroup.controllers").exists() and "cpu" in (
            CGROUP_V2 / "cgroup.controllers"
        ).read_text():
            self.v2 = True
            self.path = CGROUP_V2 / name
        else:
            raise LabError("No cgroup 'cpu' controller is mounted: '--b-cpu-steal' needs one (v1 or v2).")
        self.moved: list[int] = []

    def apply(self, pid: int) -> list[int]:
        """Move ``pid``'s PMD threads (v2: the process) into the capped cgroup.

        :returns: the thread (v2: process) ids moved.
        :raises LabError: when the cgroup cannot be created or written, or ``pid`` has no PMD thread.
        """
        quota = max(1000, round(PERIOD_US * (100.0 - self.percent) / 100.0))
        targets = [pid] if self.v2 else pmd_threads(pid)
        if not targets:
            raise LabError(f"PID {pid} has no PMD thread to slow down.")
        try:
            self.path.mkdir(exist_ok=True)
            if self.v2:
                (self.path / "cpu.max").write_text(f"{quota} {PERIOD_US}\n")
            else:
                (self.path / "cpu.cfs_period_us").write_text(f"{PERIOD_US}\n")
                (self.path / "cpu.cfs_quota_us").write_text(f"{quota}\n")
            for target in targets:
                (self.path / ("cgroup.procs" if self.v2 else "tasks")).write_text(f"{target}\n")
                self.moved.append(target)
        except OSError as err:
            self.release()
            raise LabError(f"Cannot cap CPU time with cgroup '{self.path}': {err.strerror}.") from err
        log.info(
            "Test aid: %s %s capped at %g %% of a CPU (cgroup '%s').",
            "process" if self.v2 else "PMD thread(s)",
            ",".join(map(str, targets)),
            100.0 - self.percent,
            self.path,
        )
        return targets

    def release(self) -> None:
        """Move what is still alive back to the root cgroup and remove the cgroup; idempotent."""
        parent = self.path.parent / ("cgroup.procs" if self.v2 else "tasks")
        for target in self.moved:
            with contextlib.suppress(OSError):
                parent.write_text(f"{target}\n")
        self.moved.clear()
        with contextlib.suppress(FileNotFoundError):
            try:
                self.path.rmdir()
            except OSError as err:
                log.warning("Could not remove cgroup '%s': %s.", self.path, err.strerror)
