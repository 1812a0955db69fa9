"""Real overlay runs: OVS-DPDK userspace tunnelling (VXLAN, Geneve) with ovsperf-trafficgen (CI, root)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path

import pytest

from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import Topology, TunnelType, VsperfTest
from ovsperf_common.labfiles import CSV_COLUMNS, GOAL_COLUMNS, TELEMETRY_FILE, TRIALS_FILE, TUNNEL_COLUMN
from ovsperf_common.metadata import METADATA_FILE
from ovsperf_lab import overlay
from ovsperf_lab.crosscheck import CrossCheckedGenerator
from ovsperf_lab.errors import OvsError
from ovsperf_lab.generators.registry import generator_backend
from ovsperf_lab.machine import probe_machine
from ovsperf_lab.model import TrialSpec
from ovsperf_lab.plan import LabOptions, LabPlan, plan_run
from ovsperf_lab.run import run_lab
from ovsperf_lab.state import HUGEPAGE_DIR, NETNS_DIR, LabRunState, release
from ovsperf_lab.testbed import Switch, SwitchBuild, TestbedConfig, open_testbed
from tests.ovsperf_lab.test_lab_real import leftovers

pytestmark = [pytest.mark.dpdk, pytest.mark.slow]
CATALOG = load_catalog()
FACTS = probe_machine()


def overlay_plan(name: str, tests: tuple[VsperfTest, ...] | None = None, **options: object) -> LabPlan:
    """MLRsearch with short trials (0.5 s, 2 s per load, 2 % goal width), no latency levels, 114 B only."""
    lab = LabOptions(
        frame_sizes_bytes=(114,),
        final_trial_s=0.5,
        duration_sum_s=2.0,
        goal_width_percent=2.0,
        search_duration_max_s=120.0,
        latency_levels_percent=(),
        tests=tests,
        **options,  # type: ignore[arg-type]
    )
    return plan_run(CATALOG.get(name), FACTS, lab)


def own(found: list[str]) -> list[str]:
    """Return the leftovers of this process's runs (run ids end in its PID; other jobs share the host)."""
    return [f for f in found if f"-{os.getpid()}-" in f or "/ovsperf-lab-t" in f]


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def check_overlay_results(results_dir: Path, csv_name: str, tunnel: str) -> dict[str, str]:
    """Check one overlay test's row, trials (one-way, cross-checked) and telemetry; return the row."""
    [row] = read_rows(results_dir / csv_name)
    assert list(row) == [*CSV_COLUMNS, *GOAL_COLUMNS, TUNNEL_COLUMN] and row[TUNNEL_COLUMN] == tunnel
    assert row["deployment"] == "op2p" and row["packet_size"] == "114"
    ndr, pdr = float(row["throughput_rx_fps"]), float(row["pdr_throughput_rx_fps"])
    assert 9000 < ndr <= pdr * 1.01
    test = row["id"]
    trials = [t for t in json.loads((results_dir / TRIALS_FILE).read_text())["trials"] if t["test"] == test]
    search = [t for t in trials if t["kind"] == "search"]
    assert search and all(len(t["rx_packets"]) == 1 for t in search), "one direction only"
    clean = [t for t in search if t["rx_packets"][0] == t["intended_packets_per_direction"] > 0]
    assert clean, search
    for trial in clean:
        # Counts and sizes agree: OVS received every frame on generator port 0's OVS port and
        # delivered every one to port 1's, 50 B longer (encapsulation) or shorter
        # (decapsulation): the cross-check compares OVS's byte counters too.
        check = trial["crosscheck"]
        assert check["ok"] is True, check
        sent = trial["intended_packets_per_direction"]
        assert check["ovs_rx_packets"]["0"] == sent == check["ovs_tx_packets"]["1"], check
    ports = clean[-1]["crosscheck"]["ovs_ports"]
    assert set(ports) == {"1", "2", str(overlay.TUNNEL_OFPORT)}, ports
    telemetry = json.loads((results_dir / TELEMETRY_FILE).read_text())["trials"]
    mine = [t for t in telemetry if t["test"] == test and t["valid"] and t["load_pps"] > 9001]
    assert mine, f"no telemetry for {test}"
    for trial in mine:
        totals = trial["totals"]
        assert 50 < totals["cycles_per_packet"] < 1_000_000, totals
        assert totals["packets"] > 0
    return row


def test_vxlan_decap_and_encap_run_one_way_with_tunnel_rows_crosschecks_and_telemetry(
    tmp_path: Path, state_root: Path
) -> None:
    before = set(os.listdir(HUGEPAGE_DIR))
    outcome = run_lab(
        overlay_plan("OVS_DPDK1q_VXLAN"), FACTS, output_root=tmp_path / "out", state_root=state_root
    )
    assert outcome.complete, outcome.reason
    results = outcome.results_dir
    decap = check_overlay_results(results, "result_0_overlay_p2p_decap_tput_op2p.csv", "vxlan")
    encap = check_overlay_results(results, "result_1_overlay_p2p_tput_op2p.csv", "vxlan")
    assert decap["id"] == "overlay_p2p_decap_tput" and encap["id"] == "overlay_p2p_tput"
    meta = json.loads((results / METADATA_FILE).read_text())
    assert meta["complete"] is True
    assert [(t["test"], t["deployment"], t["tunnel_type"]) for t in meta["tests"]] == [
        ("overlay_p2p_decap_tput", "op2p", "vxlan"),
        ("overlay_p2p_tput", "op2p", "vxlan"),
    ]
    assert meta["vnf"] is None
    assert meta["tests"][0]["frame_size"].startswith("the tunnel frame sent, outer headers and FCS")
    assert meta["tests"][1]["frame_size"].endswith("received tunnel-encapsulated, 50 B longer")
    # The throughput is one direction's (VSperf bidir False): the offered load is the NDR's load.
    [entry] = meta["throughput"]["result_0_overlay_p2p_decap_tput"]
    ndr = entry["goals"][0]
    assert ndr["tx_rate_fps"] == pytest.approx(ndr["lower_bound_pps_per_direction"])
    assert own(leftovers(state_root, before)) == []
    assert not any(
        p.name.startswith("ovsperf-lab-") for p in NETNS_DIR.glob("*") if state_root.name in p.name
    )


def test_geneve_decap_runs_through_the_cli_plan(tmp_path: Path, state_root: Path) -> None:
    before = set(os.listdir(HUGEPAGE_DIR))
    plan = overlay_plan("OVS_DPDK1q_GENEVE", tests=(VsperfTest.OVERLAY_P2P_DECAP_TPUT,))
    outcome = run_lab(plan, FACTS, output_root=tmp_path / "out", state_root=state_root)
    assert outcome.complete, outcome.reason
    check_overlay_results(outcome.results_dir, "result_0_overlay_p2p_decap_tput_op2p.csv", "geneve")
    assert own(leftovers(state_root, before)) == []


def _switch(state: LabRunState) -> Switch:
    plan = overlay_plan("OVS_DPDK1q_VXLAN")
    config = TestbedConfig.for_plan(plan, FACTS)
    assert config.ovs_netns is True
    return Switch(state, config, SwitchBuild(vswitchd=Path(FACTS.ovs_vswitchd_dpdk or "")))


def test_the_datapath_pops_and_pushes_tunnels_and_counts_agree(run_state: LabRunState) -> None:
    factory = generator_backend("trafficgen").start
    with _switch(run_state) as switch:
        ovs = switch.ovs
        assert ovs.netns is not None and (NETNS_DIR / ovs.netns).exists()
        for tunnel_type in (TunnelType.VXLAN, TunnelType.GENEVE):
            for test in (VsperfTest.OVERLAY_P2P_DECAP_TPUT, VsperfTest.OVERLAY_P2P_TPUT):
                spec = overlay.OverlaySpec.for_test("OVS_DPDK1q_X", test, tunnel_type)
                assert spec is not None
                with open_testbed(switch, Topology.OP2P, factory, tunnel=spec) as bed:
                    gen = CrossCheckedGenerator(
                        overlay.OverlayGenerator(bed.generator, spec),
                        ovs,
                        ovs.bridge,
                        (1, 2),
                        counters=lambda: overlay.port_counters(ovs),
                        delivered_delta_bytes=spec.delivered_delta_bytes,
                    )
                    for size in (114, 1024):
                        result = gen.run_trial(
                            TrialSpec(frame_size_bytes=size, rate_pps=20_000, duration_s=0.2)
                        )
                        [direction] = result.directions
                        assert direction.tx_packets == direction.rx_packets == 4000, (spec, size)
                        check = gen.last
                        assert check is not None and check.ok, check
                        assert check.ovs_rx_packets[0] == check.ovs_tx_packets[1] == 4000
                    flows = overlay.datapath_flows(ovs)
                    assert spec.datapath_action in flows, flows
                    if not spec.decap:
                        assert ("vxlan(" if tunnel_type is TunnelType.VXLAN else "geneve(") in flows, flows
                    # The VTEP address stays in OVS's namespace, on a device that is down.
                    link = ovs.ip("-br", "addr", "show", "dev", ovs.underlay_bridge)
                    assert "DOWN" in link and overlay.VTEP_IP in link, link
        host = subprocess.run(["ip", "-br", "addr"], capture_output=True, text=True, check=True).stdout
        assert overlay.VTEP_IP not in host
    assert not (NETNS_DIR / (ovs.netns or "none")).exists()


def test_a_tunnel_option_ovs_refuses_names_the_scenario_and_quotes_ovs(run_state: LabRunState) -> None:
    factory = generator_backend("trafficgen").start
    with _switch(run_state) as switch:
        spec = overlay.OverlaySpec.for_test(
            "OVS_DPDK1q_VXLAN",
            VsperfTest.OVERLAY_P2P_TPUT,
            TunnelType.VXLAN,
            (("remote_ip", "198.19.254.300"),),
        )
        assert spec is not None
        with pytest.raises(OvsError) as caught:
            with open_testbed(switch, Topology.OP2P, factory, tunnel=spec):
                pass
        text = str(caught.value)
        assert "Scenario 'OVS_DPDK1q_VXLAN': OVS refused the vxlan tunnel port 'tun0'" in text, text
        assert "options:remote_ip=198.19.254.300" in text, text
        assert "tun0: bad vxlan 'remote_ip'" in text, text  # OVS's own words


def test_release_deletes_the_namespace_a_crashed_run_left(run_state: LabRunState) -> None:
    prefix = run_state.new_file_prefix("ovs")
    subprocess.run(["ip", "netns", "add", prefix], check=True, timeout=30)
    try:
        assert f"deleted network namespace {prefix}" in release(run_state, keep_dir=True)
        assert not (NETNS_DIR / prefix).exists()
    finally:
        subprocess.run(["ip", "netns", "del", prefix], check=False, timeout=30, capture_output=True)


def test_the_cli_refuses_a_bad_tunnel_option_with_the_scenario_and_ovs_message(
    tmp_path: Path, state_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ovsperf_lab.cli import main

    argv = ["--state-dir", str(state_root), "run", "--config", "OVS_DPDK1q_GENEVE",
            "--test", "overlay_p2p_tput", "--frame-sizes", "114", "--tunnel-option",
            "remote_ip=198.19.254.300", "--output", str(tmp_path), "--no-progress"]  # fmt: skip
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "Scenario 'OVS_DPDK1q_GENEVE': OVS refused the geneve tunnel port 'tun0'" in err, err
    assert "tun0: bad geneve 'remote_ip'" in err, err
    assert own(leftovers(state_root, set(os.listdir(HUGEPAGE_DIR)))) == []
