"""Conntrack tests in the real lab: OVS-DPDK userspace conntrack, the real generator, short MLRsearch.

Each run asserts the NDR, the connection count OVS's conntrack holds after every trial (flows per
direction × 2: the generator's two directions are separate connections, ovsperf_lab/conntrack.py),
the generator's and OVS's frame counts, and the cycles per packet recorded for the test.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import Topology, VsperfTest
from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.labfiles import TELEMETRY_FILE, TRIALS_FILE
from ovsperf_lab import conntrack, topology
from ovsperf_lab.cli import main
from ovsperf_lab.errors import LabError
from ovsperf_lab.machine import probe_machine
from ovsperf_lab.model import TrialSpec
from ovsperf_lab.ovs import OvsSandbox
from ovsperf_lab.plan import LabOptions, LabPlan, plan_run
from ovsperf_lab.run import run_lab
from ovsperf_lab.state import HUGEPAGE_DIR
from resultstore.cli import main as results_main
from resultstore.trendlinks import series_page_name
from tests.ovsperf_lab.test_lab_real import leftovers as all_leftovers
from tests.ovsperf_lab.test_lab_real import read_rows

CATALOG = load_catalog()
FACTS = probe_machine()
SCENARIO = "OVS_DPDK1q_CT"


def leftovers(state_root: Path, before_huge: set[str]) -> list[str]:
    """Return what this process's runs left (other runs on the machine may be under way meanwhile)."""
    mine = f"-{os.getpid()}-"
    return [f for f in all_leftovers(state_root, before_huge) if "/" in f or mine in f]


def ct_plan(test: VsperfTest, flows: tuple[int, ...], ct_zone: int = 0) -> LabPlan:
    """Return a short MLRsearch plan (0.5 s final trials, 2 s per load, no latency) of one ct test."""
    options = LabOptions(
        frame_sizes_bytes=(64,),
        final_trial_s=0.5,
        duration_sum_s=2.0,
        search_duration_max_s=60.0,
        latency_levels_percent=(),
        flows=flows[0],
        flow_sweep=flows if len(flows) > 1 else (),
        tests=(test,),
        ct_zone=ct_zone,
    )
    return plan_run(CATALOG.get(SCENARIO), FACTS, options)


def check_ct_results(results_dir: Path, test: VsperfTest, flows: tuple[int, ...]) -> None:
    """NDR > 0 per flow count; every trial left flows × 2 connections; counts agree; cycles/packet."""
    rows = read_rows(results_dir / f"result_0_{test.value}_p2p.csv")
    assert len(rows) == len(flows)
    assert all(float(row["throughput_rx_fps"]) > 0 for row in rows), rows
    trials = json.loads((results_dir / TRIALS_FILE).read_text())["trials"]
    searched = {t["flows"] for t in trials}
    assert searched == set(flows)
    for trial in trials:
        check = trial["crosscheck"]
        assert check["expected_connections"] == 2 * trial["flows"], trial  # <= 64,000 flows: 2 per flow
        assert check["connections"] == check["expected_connections"], check
    lossless = [t for t in trials if t["valid"] and all(r == 0 for r in t["loss_ratios"])]
    assert {t["flows"] for t in lossless} == set(flows)
    for trial in lossless:
        check = trial["crosscheck"]
        assert check["ok"] is True, check
        # OVS received on its two ports exactly the frames the generator counted back.
        assert sum(check["ovs_rx_packets"].values()) == sum(trial["rx_packets"]) > 0
        assert sum(check["ovs_tx_packets"].values()) == sum(trial["rx_packets"])
    telemetry = json.loads((results_dir / TELEMETRY_FILE).read_text())["trials"]
    for count in flows:
        mine = [t for t in telemetry if t["test"] == test.value and t["flows"] == count and t["valid"]]
        assert mine, telemetry
        assert all(50 < t["totals"]["cycles_per_packet"] < 1_000_000 for t in mine if t["load_pps"] > 100_000)


@pytest.mark.dpdk
@pytest.mark.slow
def test_ct_commit_at_1_and_1000_connections(tmp_path: Path, state_root: Path) -> None:
    before = set(os.listdir(HUGEPAGE_DIR))
    flows = (1, 1000)
    outcome = run_lab(
        ct_plan(VsperfTest.PHY2PHY_CT_TPUT, flows), FACTS, output_root=tmp_path, state_root=state_root
    )
    assert outcome.complete, outcome.reason
    check_ct_results(outcome.results_dir, VsperfTest.PHY2PHY_CT_TPUT, flows)
    assert leftovers(state_root, before) == []
    # The store and the trend pages keep the two connection counts apart: one series each.
    db, pages = str(tmp_path / "results.sqlite"), tmp_path / "trends"
    assert results_main(["--db", db, "import", str(outcome.results_dir)]) == 0
    assert results_main(["--db", db, "trend", "--output-dir", str(pages)]) == 0
    series = {p.name for p in (pages / "series").glob(f"{SCENARIO}__phy2phy_ct_tput__*.html")}
    assert series == {
        series_page_name(SCENARIO, "phy2phy_ct_tput", "p2p", 64, ""),  # 1 flow: no label
        series_page_name(SCENARIO, "phy2phy_ct_tput", "p2p", 64, "flows=1000"),
    }, sorted(p.name for p in (pages / "series").iterdir())
    page = (
        pages / "series" / series_page_name(SCENARIO, "phy2phy_ct_tput", "p2p", 64, "flows=1000")
    ).read_text()
    assert "1000" in page and outcome.results_dir.name in page


@pytest.mark.dpdk
@pytest.mark.slow
def test_ct_nat_at_1000_connections(tmp_path: Path, state_root: Path) -> None:
    before = set(os.listdir(HUGEPAGE_DIR))
    outcome = run_lab(
        ct_plan(VsperfTest.PHY2PHY_CT_NAT_TPUT, (1000,)), FACTS, output_root=tmp_path, state_root=state_root
    )
    assert outcome.complete, outcome.reason
    check_ct_results(outcome.results_dir, VsperfTest.PHY2PHY_CT_NAT_TPUT, (1000,))
    assert leftovers(state_root, before) == []


@pytest.mark.dpdk
def test_a_zone_ovs_refuses_names_the_scenario_and_ovs_message(tmp_path: Path, state_root: Path) -> None:
    before = set(os.listdir(HUGEPAGE_DIR))
    plan = ct_plan(VsperfTest.PHY2PHY_CT_TPUT, (1,), ct_zone=70_000)
    with pytest.raises(LabError) as caught:
        run_lab(plan, FACTS, output_root=tmp_path, state_root=state_root)
    message = str(caught.value)
    assert message.startswith(
        f"Scenario '{SCENARIO}', test 'phy2phy_ct_tput': OVS refused the conntrack rule"
    )
    assert "zone=70000" in message and "ovs-ofctl" in message and "70000" in message.split(": ", 2)[2]
    [results] = list(tmp_path.iterdir())
    meta = json.loads((results / "ovsperf-metadata.json").read_text())
    assert meta["complete"] is False and "OVS refused the conntrack rule" in meta["incomplete_reason"]
    assert leftovers(state_root, before) == []


@pytest.mark.dpdk
def test_nat_rules_on_a_real_bridge(ovs: OvsSandbox) -> None:
    """OVS takes the NAT rules as written; an empty zone counts 0 connections."""
    lay = topology.layout(Topology.P2P, Path("/nonexistent"))
    ovs.vsctl("add-br", ovs.bridge, "--", "set", "bridge", ovs.bridge, "datapath_type=netdev")
    ovs.wait_bridge(ovs.bridge)
    rules = conntrack.ConntrackRules(SCENARIO, VsperfTest.PHY2PHY_CT_NAT_TPUT, zone=7)
    conntrack.install(ovs, lay, rules)
    dumped = ovs.ofctl("dump-flows", ovs.bridge_target(ovs.bridge))
    assert dumped.count("ct(commit,zone=7,nat(src=") == 2
    assert "nat(src=198.18.254.1-198.18.254.254)" in dumped and "ct(table=1,zone=7,nat)" in dumped
    assert conntrack.connection_count(ovs, 7) == 0


def test_rules_ramp_and_expected_counts() -> None:
    lay = topology.layout(Topology.P2P, Path("/s"))
    plain = conntrack.ConntrackRules(SCENARIO, VsperfTest.PHY2PHY_CT_TPUT, zone=3)
    assert plain.flows(lay) == (
        "table=0,priority=100,in_port=1,ip,ct_state=-trk,actions=ct(table=1,zone=3)",
        "table=1,priority=100,in_port=1,ip,ct_state=+trk+new,actions=ct(commit,zone=3),output:2",
        "table=1,priority=100,in_port=1,ip,ct_state=+trk+est,actions=output:2",
        "table=0,priority=100,in_port=2,ip,ct_state=-trk,actions=ct(table=1,zone=3)",
        "table=1,priority=100,in_port=2,ip,ct_state=+trk+new,actions=ct(commit,zone=3),output:1",
        "table=1,priority=100,in_port=2,ip,ct_state=+trk+est,actions=output:1",
    )
    with pytest.raises(LabError, match="no conntrack test"):
        conntrack.ConntrackRules(SCENARIO, VsperfTest.PHY2PHY_TPUT).flows(lay)
    spec = TrialSpec(frame_size_bytes=64, rate_pps=1e6, duration_s=1.0, flows=100_000, warmup_s=1.0)
    ramp = conntrack.ramp_spec(spec)
    assert ramp.rate_pps * ramp.duration_s >= spec.flows  # every flow gets a frame
    assert ramp.flows == spec.flows and ramp.warmup_s == 0 and ramp.bidirectional
    # Above 64,000 flows (the tuple layout) flow 32,769 of one direction is the other's reply.
    assert conntrack.expected_connections(spec) == 199_999
    assert conntrack.expected_connections(dataclasses.replace(spec, flows=64_000)) == 128_000
    assert conntrack.expected_connections(TrialSpec(64, 1e6, 1.0, bidirectional=False, flows=5)) == 5


@pytest.mark.dpdk
def test_cli_sweeps_the_scenarios_flows_and_names_a_refused_zone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, state_root: Path
) -> None:
    """Without '--flows' the run sweeps the scenario's 'flows'; '--ct-zone' reaches OVS (which refuses it)."""
    before = set(os.listdir(HUGEPAGE_DIR))
    argv = ["--state-dir", str(state_root), "run", "--config", SCENARIO, "--test", "phy2phy_ct_tput"]
    code = main(
        [*argv, "--ct-zone", "70000", "--frame-sizes", "64", "--output", str(tmp_path), "--no-progress"]
    )
    assert code == ExitCode.ERROR
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"Scenario '{SCENARIO}', test 'phy2phy_ct_tput': OVS refused the conntrack rule" in captured.err
    [results] = list(tmp_path.iterdir())
    meta = json.loads((results / "ovsperf-metadata.json").read_text())
    assert meta["flows"] == 1 and meta["flow_sweep"] == [1, 1000, 100_000]
    assert list(CATALOG.get(SCENARIO).flows) == [1, 1000, 100_000]
    assert leftovers(state_root, before) == []
