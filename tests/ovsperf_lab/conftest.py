"""Fixtures for the lab's real-DPDK tests: a short state root, a sandboxed OVS, leftover checks."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ovsperf_lab.ovs import OvsConfig, OvsSandbox
from ovsperf_lab.state import SYS_CLASS_NET, LabRunState, dpdk_leftovers, release


@pytest.fixture
def state_root() -> Iterator[Path]:
    # vhost-user socket paths must stay below 108 bytes: pytest's tmp_path is too long.
    root = Path(tempfile.mkdtemp(prefix="ovsperf-lab-t", dir="/run"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def assert_released(state: LabRunState) -> None:
    """Assert nothing of ``state`` is left: processes, sockets, hugepage files, runtime dirs."""
    alive = [p for p in state.processes if p.alive()]
    assert alive == []
    for prefix in state.file_prefixes:
        assert dpdk_leftovers(prefix) == []
    for tap in state.taps:  # OVS leaves a netdev bridge's tap device in the host's namespace
        assert not (SYS_CLASS_NET / tap).exists(), tap
    assert not state.run_dir.exists()


@pytest.fixture
def run_state(state_root: Path) -> Iterator[LabRunState]:
    state = LabRunState.create(state_root, f"ovsperf-lab-t{Path(state_root).name[-6:]}")
    try:
        yield state
    finally:
        release(state)
        assert_released(state)


@pytest.fixture
def ovs(run_state: LabRunState) -> Iterator[OvsSandbox]:
    cpus = sorted(__import__("os").sched_getaffinity(0))
    sandbox = OvsSandbox(
        run_state,
        OvsConfig(lcore_cpu=cpus[0], pmd_cpus=(cpus[-1],), file_prefix=run_state.new_file_prefix("ovs")),
    )
    try:
        sandbox.start()
        yield sandbox
    finally:
        sandbox.stop()
