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
from hdrh.histogram import HdrHistogram

from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import VsperfTest
from ovsperf_common.labfiles import (
    CSV_COLUMNS,
    GOAL_COLUMNS,
    GUEST_COLUMN,
    LATENCY_FILE,
    TELEMETRY_FILE,
    TRIALS_FILE,
)
from ovsperf_common.metadata import METADATA_FILE
from ovsperf_lab.errors import OvsError, TrafficGeneratorError
from ovsperf_lab.machine import probe_machine
from ovsperf_lab.plan import LabOptions, LabPlan, SearchMethod, plan_run
from ovsperf_lab.run import RunObserver, run_lab
from ovsperf_lab.search.binary import TrialKind
from ovsperf_lab.search.mlr import MlrTrial
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
        search=SearchMethod.BINARY,
    )
    return plan_run(CATALOG.get(name), FACTS, options)


def short_mlr_plan(name: str, sizes: tuple[int, ...] = (1518,)) -> LabPlan:
    """MLRsearch with short trials (0.5 s, 3 s per load) and 1 s latency trials: a minute, not ten."""
    options = LabOptions(
        frame_sizes_bytes=sizes,
        final_trial_s=0.5,
        duration_sum_s=3.0,
        search_duration_max_s=300.0,
        latency_levels_percent=(0.0, 50.0, 90.0),
        latency_trial_s=1.0,
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
    assert list(rows[0]) == [*CSV_COLUMNS, *GOAL_COLUMNS]
    check_run(outcome.results_dir, "result_0_phy2phy_tput_p2p.csv", tmp_path)
    assert leftovers(state_root, before) == []


def test_pvp_real_run_with_testpmd_vnf(tmp_path: Path, state_root: Path) -> None:
    before = set(os.listdir(HUGEPAGE_DIR))
    plan = short_plan("OVS_DPDK1q_GUEST_DPDK1q", tests=(VsperfTest.PVP_TPUT,))
    outcome = run_lab(plan, FACTS, output_root=tmp_path / "out", state_root=state_root)
    assert outcome.complete, outcome.reason
    csv_name = "result_0_pvp_tput_pvp.csv"
    rows = read_rows(outcome.results_dir / csv_name)
    assert list(rows[0]) == [*CSV_COLUMNS, *GOAL_COLUMNS, GUEST_COLUMN] and rows[0][GUEST_COLUMN] == "testpmd"
    check_run(outcome.results_dir, csv_name, tmp_path)
    assert list(outcome.results_dir.glob("vnf-testpmd_*.log"))
    assert leftovers(state_root, before) == []


def test_p2p_real_run_with_mlrsearch_and_latency(tmp_path: Path, state_root: Path) -> None:
    before = set(os.listdir(HUGEPAGE_DIR))
    outcome = run_lab(
        short_mlr_plan("OVS_DPDK1q"), FACTS, output_root=tmp_path / "out", state_root=state_root
    )
    assert outcome.complete, outcome.reason
    [row] = read_rows(outcome.results_dir / "result_0_phy2phy_tput_p2p.csv")
    ndr, pdr = float(row["throughput_rx_fps"]), float(row["pdr_throughput_rx_fps"])
    assert row["search_method"] == "mlr" and (row["loss_goal_percent"], row["pdr_loss_goal_percent"]) == (
        "0",
        "0.5",
    )
    assert 0 < ndr and 0 < pdr and ndr <= pdr * 1.01
    trials = json.loads((outcome.results_dir / TRIALS_FILE).read_text())["trials"]
    search = [t for t in trials if t["kind"] == "search"]
    assert all(t["search"] == "mlr" and len(t["rx_packets"]) == 2 for t in search)
    assert {m["goal_loss_percent"] for t in search for m in t["relevant_to"]} == {0.0, 0.5}
    [entry] = json.loads((outcome.results_dir / LATENCY_FILE).read_text())["results"]
    assert [lv["percent_of_pdr"] for lv in entry["levels"]] == [0.0, 50.0, 90.0]
    for level in entry["levels"]:
        merged = level["all"]
        assert merged is not None, level
        assert (
            0
            < merged["min_ns"]
            <= merged["p50_ns"]
            <= merged["p90_ns"]
            <= merged["p99_ns"]
            <= merged["p999_ns"]
        )
        assert merged["p999_ns"] <= merged["max_ns"]  # clamped to the exact maximum
        assert HdrHistogram.decode(merged["hdrh"]).get_total_count() == merged["rx_packets"] > 0
        assert sum(d["rx_packets"] for d in level["directions"]) == merged["rx_packets"]
    assert float(row["max_latency_ns"]) == pytest.approx(entry["levels"][-1]["all"]["max_ns"], rel=1e-6)
    # DUT telemetry around every final trial: OVS's own counters of the real PMD.
    telemetry = json.loads((outcome.results_dir / TELEMETRY_FILE).read_text())["trials"]
    loaded = [t for t in telemetry if t["load_pps"] > 100_000 and t["valid"]]
    assert loaded, telemetry
    for trial in loaded:
        totals = trial["totals"]
        assert 50 < totals["cycles_per_packet"] < 1_000_000, totals
        assert 0 < totals["pmd_busy_percent"] <= 100
        assert totals["packets"] == pytest.approx(2 * trial["load_pps"] * trial["duration_s"], rel=0.1)
        assert {p["port"] for p in trial["rxq"]} == {"tg0", "tg1"}
        assert trial["ports"]["tg0"]["rx_packets"] > 0
        assert any(t["name"].startswith("pmd-c") for t in trial["threads"]["ovs-vswitchd"])
        assert "Rx packets" in trial["pmd_perf_show"] and trial["notes"] == []
    report = generate_report([outcome.results_dir], [outcome.results_dir], tmp_path / "report")
    assert report.overall == "PASS"
    assert leftovers(state_root, before) == []


class KillAt(RunObserver):
    """SIGKILL a recorded process when the given trial of the given frame size starts."""

    def __init__(self, state_root: Path, name: str, size: int, trial: int) -> None:
        self.state_root, self.name, self.size, self.trial = state_root, name, size, trial
        self.current = ""
        self.killed: int | None = None

    def frame_size_started(self, test: VsperfTest, what: str, number: int, total: int) -> None:
        self.current = what

    def trial_started(self, index: int, kind: TrialKind, rate_pps: float, duration_s: float) -> None:
        self._kill_at(index)

    def mlr_trial_finished(self, number: int, trial: MlrTrial) -> None:
        self._kill_at(number + 1)  # the next trial is number + 1

    def _kill_at(self, index: int) -> None:
        if self.current == f"{self.size} B" and index == self.trial and self.killed is None:
            [run_dir] = list(self.state_root.iterdir())
            state = json.loads((run_dir / "state.json").read_text())
            self.killed = next(p["pid"] for p in state["processes"] if p["name"] == self.name)
            os.kill(self.killed, signal.SIGKILL)


@pytest.mark.parametrize(
    "victim,error,message,search",
    [
        ("ovsperf-trafficgen", TrafficGeneratorError, "exited", SearchMethod.BINARY),
        ("ovs-vswitchd", OvsError, r"ovs-vswitchd \(PID \d+\) died", SearchMethod.BINARY),
        ("ovsperf-trafficgen", TrafficGeneratorError, "exited", SearchMethod.MLR),
    ],
)
def test_crash_mid_search_leaves_nothing_and_keeps_partial_results(
    tmp_path: Path, state_root: Path, victim: str, error: type[Exception], message: str, search: SearchMethod
) -> None:
    before = set(os.listdir(HUGEPAGE_DIR))
    killer = KillAt(state_root, victim, 1518, 2)
    with pytest.raises(error, match=message):
        run_lab(
            # 1 % acceptable loss: the 1280 B search must end with a result on a noisy shared
            # machine too (a zero-loss search may legitimately find none); this test is about
            # the teardown and the partial results, not the NDR.
            short_plan("OVS_DPDK1q", sizes=(1280, 1518), loss_percent=1.0)
            if search is SearchMethod.BINARY
            else short_mlr_plan("OVS_DPDK1q", sizes=(1280, 1518)),
            FACTS,
            output_root=tmp_path,
            state_root=state_root,
            observer=killer,
        )
    assert killer.killed is not None
    [results] = list(tmp_path.iterdir())
    rows = read_rows(results / "result_0_phy2phy_tput_p2p.csv")
    assert [r["packet_size"] for r in rows] == ["1280"]
    if search is SearchMethod.MLR:
        [entry] = json.loads((results / LATENCY_FILE).read_text())["results"]
        assert entry["frame_size_bytes"] == 1280
        trials = json.loads((results / TRIALS_FILE).read_text())["trials"]
        assert len([t for t in trials if t["frame_size_bytes"] == 1518]) == 1
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
            "--search",
            "binary",
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
