"""The VSperf results writer against VSperf's own layout (tests/fixtures/vsperf)."""

from __future__ import annotations

import csv
import logging
import os
import re
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from ovsperf_catalog.model import GuestLoopback, VsperfTest
from ovsperf_common.goals import goal_label
from ovsperf_common.labfiles import CSV_COLUMNS, GOAL_COLUMNS
from ovsperf_lab.errors import LabError
from ovsperf_lab.resultrow import Environment, FrameSizeResult, aggregate_latency
from ovsperf_lab.results import ResultsWriter
from ovsperf_lab.search.binary import SearchConfig, search_throughput
from ovsperf_lab.state import TrackedProcess, process_start_ticks
from tests.ovsperf_lab.fakes import FakeTrafficGenerator

FIXTURE = (
    Path(__file__).parents[1] / "fixtures/vsperf/baseline_ovs-2.9.0_dpdk-17.11/results_2018-03-05_21-14-07"
)
ENV = Environment(
    os_name="Debian GNU/Linux 12 (bookworm)",
    kernel="6.1.0-test",
    cpu_model="Test CPU @ 2.0GHz",
    cpu_count=2,
    memory_kb=1000,
    cmdline="ro quiet",
    vswitch="OvsDpdkVhost",
    ovs_version="3.1.0",
    dpdk_version="22.11.11",
    generator="ovsperf-trafficgen",
    generator_version=None,
    nic="virtio_user",
    vnf="testpmd (host process), Version: 22.11.11, GIT tag: None",
    cpu_plan="generator CPU 0",
)


def header(path: Path) -> list[str]:
    with path.open(newline="") as handle:
        return next(csv.reader(handle))


def found(size: int, capacity: float, loss_ratio_limit: float = 0.0) -> FrameSizeResult:
    config = SearchConfig(size, 1e6, 1e4, loss_ratio_limit, 1.0, 2.0)
    return FrameSizeResult.from_binary(
        search_throughput(FakeTrafficGenerator(capacity_pps=capacity), config, log=logging.getLogger("t")),
        10_000,
    )


@pytest.mark.parametrize(
    "test,csv_name",
    [
        (VsperfTest.PHY2PHY_TPUT, "result_0_phy2phy_tput_p2p.csv"),
        (VsperfTest.PVP_TPUT, "result_1_pvp_tput_pvp.csv"),
    ],
)
def test_columns_are_vsperfs_in_vsperfs_order(tmp_path: Path, test: VsperfTest, csv_name: str) -> None:
    writer = ResultsWriter(tmp_path, datetime(2026, 1, 2, 3, 4, 5))
    assert writer.path.name == "results_2026-01-02_03-04-05"
    guest = GuestLoopback.TESTPMD if test is VsperfTest.PVP_TPUT else None
    index = 0 if guest is None else 1
    path = writer.write_test(
        index,
        test,
        [found(64, 5e5)],
        env=ENV,
        start=datetime(2026, 1, 2, 3, 4, 5),
        stop=datetime(2026, 1, 2, 3, 9, 6),
        guest=guest,
        complete=True,
    )
    assert path.name == csv_name
    ours = header(path)
    theirs = header(FIXTURE / csv_name)
    # VSperf's columns in VSperf's order, guest_loopback_app last; ours documented in between.
    assert [c for c in ours if c != "frame_loss_percent" and c not in GOAL_COLUMNS] == theirs
    assert ours.index("frame_loss_percent") == ours.index("avg_latency_ns") + 1
    assert ours[len(CSV_COLUMNS) : len(CSV_COLUMNS) + len(GOAL_COLUMNS)] == list(GOAL_COLUMNS)
    with path.open(newline="") as handle:
        row = next(csv.DictReader(handle))
    assert row["test_execution_time"] == "00:05:01"
    assert row["start_time"] == "2026-01-02 03:04:05"
    assert float(row["throughput_rx_fps"]) == pytest.approx(2 * 5e5, rel=0.02)
    # L1 rate and % of 2 x 10 GbE line rate, as VSperf's MoonGen driver computes them.
    fps = float(row["throughput_rx_fps"])
    assert float(row["throughput_rx_mbps"]) == pytest.approx(fps * 84 * 8 / 1e6, abs=1e-3)
    assert float(row["throughput_rx_percent"]) == pytest.approx(100 * fps / (2 * 1e10 / 84 / 8), abs=1e-3)
    assert (row.get("guest_loopback_app") == "testpmd") == (guest is not None)


def test_goal_labels() -> None:
    assert [goal_label(g) for g in (0.0, 0.5, 0.1, 2.0)] == ["NDR", "PDR 0.5 %", "PDR 0.1 %", "PDR 2 %"]


def test_environment_lines_match_vsperfs_style(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path, datetime(2026, 1, 2, 3, 4, 5))
    writer.write_test(
        0,
        VsperfTest.PHY2PHY_TPUT,
        [found(64, 5e5)],
        env=ENV,
        start=datetime.now(),
        stop=datetime.now(),
        guest=None,
        complete=False,
    )
    pattern = re.compile(r"^\* vSwitch: ([^,]+), Version: (.*), GIT tag: (.*)$", re.MULTILINE)
    fixture_rst = (FIXTURE / "result_0_phy2phy_tput_p2p.rst").read_text()
    for name in ("result_0_phy2phy_tput_p2p.rst", "result_0_phy2phy_tput_p2p.md"):
        text = (writer.path / name).read_text()
        assert pattern.search(text).groups() == ("OvsDpdkVhost", "3.1.0", "None")  # type: ignore[union-attr]
        assert "* DPDK Version: 22.11.11, GIT tag: None" in text
        assert "Below is the environment that the test was performed in:" in text
        assert "INCOMPLETE" in text
    assert pattern.search(fixture_rst) is not None  # the same regex reads VSperf's own file


def test_results_dir_is_never_reused(tmp_path: Path) -> None:
    ResultsWriter(tmp_path, datetime(2026, 1, 2, 3, 4, 5))
    with pytest.raises(LabError, match="exists already; not overwriting it"):
        ResultsWriter(tmp_path, datetime(2026, 1, 2, 3, 4, 5))


def test_latency_not_measured_is_empty_never_zero() -> None:
    from ovsperf_lab.model import TrialSpec

    nothing = FakeTrafficGenerator(capacity_pps=0.0).run_trial(TrialSpec(64, 1000.0, 1.0))
    assert aggregate_latency(nothing) == (None, None, None)
    some = FakeTrafficGenerator(capacity_pps=1e6, latency_ns=1000.0).run_trial(TrialSpec(64, 1000.0, 1.0))
    assert aggregate_latency(some) == (500.0, 1000.0, 3000.0)


def test_tracked_process_survives_pid_reuse_check() -> None:
    proc = subprocess.Popen(["sleep", "30"])
    try:
        real = TrackedProcess("x", proc.pid, process_start_ticks(proc.pid) or 0)
        assert real.alive()
        assert not TrackedProcess("x", proc.pid, real.start_ticks + 1).alive()
    finally:
        proc.kill()
        proc.wait()
    assert not real.alive()
    assert process_start_ticks(os.getpid()) is not None
