"""Two collector runs at once: one delivery per job, never two, never a replaced one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from beakerwatch.state import lock_path, state_lock
from ovsperf_common.deadline import Deadline
from tests.beakerwatch.conftest import FAST, ROOT, SCENARIO, TS, Lab, results_tarball


def test_two_collectors_at_once_deliver_each_job_once(lab: Lab) -> None:
    jobs = [lab.submit(), lab.submit()]
    assert lab.track(*jobs) == 0
    for job in jobs:
        lab.finish(job, results_tarball(lab.tmp / job.j_id.replace(":", "")))
    lab.hub.state.delay_s = 0.1  # both passes look at the hub while the other one delivers
    argv = [
        sys.executable,
        "-m",
        "beakerwatch.cli",
        "collect",
        "--state",
        str(lab.state),
        "--ci-in",
        str(lab.ci_in),
    ]
    env = {**os.environ, "BEAKER_CLIENT_CONF": str(lab.conf)}
    # Hold the state lock until both passes wait for it: both then start with both jobs to collect.
    with state_lock(lab.state, 5):
        runs = [
            subprocess.Popen(
                [*argv, *FAST, "--once"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        Deadline.in_seconds(60, "both collectors to wait for the lock").poll(
            lambda: True if all(_holds(run.pid, lock_path(lab.state)) for run in runs) else None,
            interval_s=0.05,
        )
    results = [run.communicate(timeout=60) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], results
    lines = sorted(line for out, _ in results for line in out.splitlines())
    assert [line.split("\t")[:3] for line in lines] == [[job.j_id, SCENARIO, "delivered"] for job in jobs]
    assert lab.deliveries() == sorted(f"J{job.id}-{SCENARIO}-{TS}" for job in jobs)
    gets = lab.hub.state.http_gets
    assert len(gets) == 2 and len(set(gets)) == 2  # each tarball downloaded once
    # Each pass saw each job finished; for each job one delivered it and the other found it done.
    assert sum(err.count("already collected by another pass") for _, err in results) == 2


def _holds(pid: int, path: Path) -> bool:
    """Return whether process ``pid`` has ``path`` open."""
    fds = Path(f"/proc/{pid}/fd")
    try:
        return any(os.readlink(fd) == str(path) for fd in fds.iterdir())
    except (FileNotFoundError, ProcessLookupError):
        return False
