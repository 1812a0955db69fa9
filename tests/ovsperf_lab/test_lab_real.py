"""Real lab runs: sandboxed OVS-DPDK, ovsperf-trafficgen, testpmd VNF, injected crashes (CI, root)."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobcreator.catalog import load_catalog
from jobcreator.model import VsperfTest
from ovsperf_lab.errors import OvsError, TrafficGeneratorError
from ovsperf_lab.machine import probe_machine
from ovsperf_lab.plan import LabOptions, LabPlan, plan_run
from ovsperf_lab.results import CSV_COLUMNS, GUEST_COLUMN, METADATA_FILE, TRIALS_FILE
from ovsperf_lab.run import RunObserver, run_lab
from ovsperf_lab.search import TrialKind
from ovsperf_lab.state import HUGEPAGE_DIR
from reporting.api import generate_report
from reporting.load import load_results_dir

pytestmark = [pytest.mark.dpdk, pytest.mark.slow]
CATALOG = load_catalog()
FACTS = probe_machine()


def short_plan(
    name: str,
    sizes: tuple[int, ...] = (1518,),
    tests: tuple[VsperfTest, ...] | None = None,
    loss_percent: float | None = None,
) -> LabPlan:
    options = LabOptions(
        frame_sizes_bytes=sizes,
        loss_percent=loss_percent,
        search_trial_s=1,
        validation_trial_s=2,
        granularity_percent=1.0,
        drain_s=0.5,
        tests=tests,
    )
    return plan_run(CATALOG.get(name), FACTS, options)


def leftovers(state_root: Path, before_huge: set[str]) -> list[str]:
    found = [str(p) for p in state_root.rglob("*")]
    found += sorted(set(os.listdir(HUGEPAGE_DIR)) - before_huge)
    found += (
        [p for p in os.listdir("/var/run/dpdk") if p.startswith("ovsperf-lab-2")]
        if Path("/var/run/dpdk").is_dir()
        else []
    )
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    found += [line for line in out.splitlines() if str(state_root) in line]
    return found


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def check_run(results_dir: Path, csv_name: str, tmp_path: Path) -> None:
    [row] = read_rows(results_dir / csv_name)
    assert float(row["throughput_rx_fps"]) > 0
    assert row["frame_loss_percent"] == "0.000000"
    assert float(row["min_latency_ns"]) > 0 and float(row["max_latency_ns"]) >= float(row["avg_latency_ns"])
    trials = json.loads((results_dir / TRIALS_FILE).read_text())["trials"]
    [validation] = [t for t in trials if t["kind"] == "validation" and t["outcome"] == "pass"]
    assert validation["tx_packets"] == validation["rx_packets"] > 0
    assert validation["valid"] is True
    assert float(row["throughput_rx_fps"]) == pytest.approx(validation["rx_pps"], rel=1e-6)
    # OVS's own counters agree with the generator's in the validation trial.
    assert validation["crosscheck"]["ok"] is True, validation["crosscheck"]
    assert sum(validation["crosscheck"]["ovs_rx_packets"].values()) == validation["tx_packets"]
    meta = json.loads((results_dir / METADATA_FILE).read_text())
    assert meta["complete"] is True
    loaded = load_results_dir(results_dir)
    assert loaded.ovs_version == meta["ovs_version"]
    assert loaded.runs[0].rows[0].rx_pps == pytest.approx(float(row["throughput_rx_fps"]))
    report = generate_report([results_dir], [results_dir], tmp_path / "report")
    assert report.index_html.is_file() and report.overall == "PASS"


def test_p2p_real_run(tmp_path: Path, state_root: Path) -> None:
    before = set(os.listdir(HUGEPAGE_DIR))
    outcome = run_lab(short_plan("OVS_DPDK1q"), FACTS, output_root=tmp_path / "out", state_root=state_root)
    assert outcome.complete, outcome.reason
    assert list((tmp_path / "out").iterdir()) == [outcome.results_dir]
    rows = read_rows(outcome.results_dir / "result_0_phy2phy_tput_p2p.csv")
    assert list(rows[0]) == list(CSV_COLUMNS)
    check_run(outcome.results_dir, "result_0_phy2phy_tput_p2p.csv", tmp_path)
    assert leftovers(state_root, before) == []


def test_pvp_real_run_with_testpmd_vnf(tmp_path: Path, state_root: Path) -> None:
    before = set(os.listdir(HUGEPAGE_DIR))
    plan = short_plan("OVS_DPDK1q_GUEST_DPDK1q", tests=(VsperfTest.PVP_TPUT,))
    outcome = run_lab(plan, FACTS, output_root=tmp_path / "out", state_root=state_root)
    assert outcome.complete, outcome.reason
    csv_name = "result_0_pvp_tput_pvp.csv"
    rows = read_rows(outcome.results_dir / csv_name)
    assert list(rows[0]) == [*CSV_COLUMNS, GUEST_COLUMN] and rows[0][GUEST_COLUMN] == "testpmd"
    check_run(outcome.results_dir, csv_name, tmp_path)
    assert list(outcome.results_dir.glob("vnf-testpmd_*.log"))
    assert leftovers(state_root, before) == []


class KillAt(RunObserver):
    """SIGKILL a recorded process when the given trial of the given frame size starts."""

    def __init__(self, state_root: Path, name: str, size: int, trial: int) -> None:
        self.state_root, self.name, self.size, self.trial = state_root, name, size, trial
        self.current = 0
        self.killed: int | None = None

    def frame_size_started(self, test: VsperfTest, frame_size_bytes: int, number: int, total: int) -> None:
        self.current = frame_size_bytes

    def trial_started(self, index: int, kind: TrialKind, rate_pps: float, duration_s: float) -> None:
        if self.current == self.size and index == self.trial and self.killed is None:
            [run_dir] = list(self.state_root.iterdir())
            state = json.loads((run_dir / "state.json").read_text())
            self.killed = next(p["pid"] for p in state["processes"] if p["name"] == self.name)
            os.kill(self.killed, signal.SIGKILL)


@pytest.mark.parametrize(
    "victim,error,message",
    [
        ("ovsperf-trafficgen", TrafficGeneratorError, "exited"),
        ("ovs-vswitchd", OvsError, r"ovs-vswitchd \(PID \d+\) died"),
    ],
)
def test_crash_mid_search_leaves_nothing_and_keeps_partial_results(
    tmp_path: Path, state_root: Path, victim: str, error: type[Exception], message: str
) -> None:
    before = set(os.listdir(HUGEPAGE_DIR))
    killer = KillAt(state_root, victim, 1518, 2)
    with pytest.raises(error, match=message):
        run_lab(
            # 1 % acceptable loss: the 1280 B search must end with a result on a noisy shared
            # machine too (a zero-loss search may legitimately find none); this test is about
            # the teardown and the partial results, not the NDR.
            short_plan("OVS_DPDK1q", sizes=(1280, 1518), loss_percent=1.0),
            FACTS,
            output_root=tmp_path,
            state_root=state_root,
            observer=killer,
        )
    assert killer.killed is not None
    [results] = list(tmp_path.iterdir())
    rows = read_rows(results / "result_0_phy2phy_tput_p2p.csv")
    assert [r["packet_size"] for r in rows] == ["1280"]
    meta = json.loads((results / METADATA_FILE).read_text())
    assert meta["complete"] is False and meta["incomplete_reason"]
    assert leftovers(state_root, before) == []


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_sigint_to_the_cli_tears_down(tmp_path: Path, state_root: Path) -> None:
    before = set(os.listdir(HUGEPAGE_DIR))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ovsperf_lab",
            "--state-dir",
            str(state_root),
            "run",
            "--config",
            "OVS_DPDK1q",
            "--frame-sizes",
            "1518",
            "--search-time",
            "1",
            "--validation-time",
            "2",
            "--output",
            str(tmp_path),
            "--no-progress",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A shell without job control starts background jobs with SIGINT ignored, and Python
        # keeps an inherited SIG_IGN: give the CLI the SIGINT of a terminal's Ctrl-C.
        preexec_fn=_default_sigint,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list(tmp_path.glob("results_*/ovsperf-trials.json")):
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, err
    assert "interrupted" in err
    [results] = list(tmp_path.iterdir())
    meta = json.loads((results / METADATA_FILE).read_text())
    assert meta["complete"] is False and "interrupted" in meta["incomplete_reason"]
    assert leftovers(state_root, before) == []
