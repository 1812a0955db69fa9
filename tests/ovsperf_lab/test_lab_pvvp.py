"""PVVP in the real lab: two testpmd forwarders chained through OVS-DPDK, placement refusals.

The chain (VSperf's serial PXP with two VMs): generator port 0 → OVS 1 → 3 → forwarder 0 → 4 → 5 →
forwarder 1 → 6 → 2 → generator port 1, and back 2 → 6 → 5 → 4 → 3 → 1.
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import Topology, VsperfTest
from ovsperf_common.labfiles import GUEST_COLUMN, TELEMETRY_FILE
from ovsperf_lab import testbed, topology
from ovsperf_lab.crosscheck import CrossCheckedGenerator
from ovsperf_lab.errors import RefusedScenarioError, VnfError
from ovsperf_lab.generators.dpdk import start as dpdk_generator
from ovsperf_lab.machine import MachineFacts, probe_machine
from ovsperf_lab.model import TrialSpec
from ovsperf_lab.plan import LabOptions, VnfKind, plan_run
from ovsperf_lab.requirements import HUGEPAGE_HEADROOM, HUGEPAGE_MB
from ovsperf_lab.run import run_lab
from ovsperf_lab.state import HUGEPAGE_DIR, LabRunState, release
from tests.ovsperf_lab.conftest import assert_released
from tests.ovsperf_lab.test_lab_conntrack import leftovers
from tests.ovsperf_lab.test_lab_real import read_rows

CATALOG = load_catalog()
FACTS = probe_machine()
PVVP = CATALOG.get("OVS_DPDK1q_PVVP")


def machine(**kw: object) -> MachineFacts:
    base: dict[str, object] = dict(
        cpus=(0, 1),
        is_root=True,
        hugetlbfs_mounted=True,
        hugepages_2m_free=4096,
        testpmd="/usr/bin/dpdk-testpmd",
    )
    base.update(kw)
    return dataclasses.replace(FACTS, **base)  # type: ignore[arg-type]


def assert_torn_down(state: LabRunState, lay: topology.Layout) -> None:
    """No process, vhost-user socket or hugepage file of the testbed is left, nor after release."""
    assert [p.name for p in state.processes if p.alive()] == []
    assert [str(p.socket) for p in lay.ports if p.socket is not None and p.socket.exists()] == []
    assert [str(f) for prefix in state.file_prefixes for f in HUGEPAGE_DIR.glob(f"{prefix}map_*")] == []
    release(state)
    assert_released(state)


@pytest.fixture
def state(state_root: Path) -> Iterator[LabRunState]:
    run = LabRunState.create(state_root, f"ovsperf-lab-pv{state_root.name[-6:]}")
    try:
        yield run
    finally:
        release(run)


def test_layout_chains_two_forwarders_as_vsperf() -> None:
    lay = topology.layout(Topology.PVVP, Path("/s"))
    assert [(p.name, p.ofport) for p in lay.ports] == [
        ("tg0", 1),
        ("tg1", 2),
        ("vm0", 3),
        ("vm1", 4),
        ("vm2", 5),
        ("vm3", 6),
    ]
    assert lay.rules == ((1, 3), (4, 5), (6, 2), (2, 6), (5, 4), (3, 1))
    assert lay.forwarder_sockets == (
        (Path("/s/vm0.sock"), Path("/s/vm1.sock")),
        (Path("/s/vm2.sock"), Path("/s/vm3.sock")),
    )


def test_two_cpus_share_the_pmd_cpu_with_a_warning() -> None:
    plan = plan_run(PVVP, machine(), LabOptions())
    assert plan.vnf is VnfKind.TESTPMD and plan.cpus.vnf_cpus == (1, 1) and plan.cpus.vnf_cpu == 1
    assert "two PVVP forwarders run on CPUs 1 and 1" in plan.warnings[0]
    roomy = plan_run(PVVP, machine(cpus=(0, 1, 2, 3)), LabOptions())
    assert roomy.cpus.vnf_cpus == (2, 3) and roomy.warnings == ()
    config = testbed.TestbedConfig.for_plan(roomy, machine(cpus=(0, 1, 2, 3)))
    assert config.forwarder is not None
    assert (config.forwarder.cpu_of(0), config.forwarder.cpu_of(1)) == (2, 3)


def test_pinned_pmds_leaving_no_forwarder_cpus_are_refused_before_anything_starts() -> None:
    with pytest.raises(RefusedScenarioError) as refused:
        plan_run(PVVP, machine(cpus=(0, 1, 2, 3), pinnable_cpus=(0, 1, 2, 3)), LabOptions(pmd_cpus=(1, 2)))
    message = str(refused.value)
    assert message.startswith(
        "Scenario 'OVS_DPDK1q_PVVP' cannot run on this machine: PVVP runs two forwarders"
    )
    assert "PMD CPUs 1,2 leave 1 (3)" in message and "'--pmd-cpus'" in message
    placed = plan_run(PVVP, machine(cpus=(0, 1, 2, 3), pinnable_cpus=(0, 1, 2, 3)), LabOptions(pmd_cpus=(1,)))
    assert placed.cpus.vnf_cpus == (2, 3)


def test_pvvp_with_a_guest_image_chains_two_guests(tmp_path: Path) -> None:
    image = tmp_path / "guest.qcow2"
    image.write_bytes(b"QFI\xfb")
    facts = machine(qemu="/usr/bin/qemu-system-x86_64", kvm=True)
    plan = plan_run(PVVP, facts, LabOptions(guest_image=image, guest_memory_mb=512))
    assert plan.vnf is VnfKind.QEMU and plan.guest is not None and plan.guest.count == 2
    assert plan.cpus.vnf_cpus == (1, 1)  # tests/ovsperf_lab/test_lab_guests.py: boots and failures


def test_hugepages_count_both_forwarders() -> None:
    options = LabOptions()
    one = options.hugepage_memory_mb(vnf=True)
    assert options.hugepage_memory_mb(vnf=True, forwarders=2) == one + options.vnf_memory_mb
    enough_for_one = machine(hugepages_2m_free=one // HUGEPAGE_MB + HUGEPAGE_HEADROOM)
    plan_run(CATALOG.get("OVS_DPDK1q_GUEST_DPDK1q"), enough_for_one, options)
    with pytest.raises(RefusedScenarioError, match="hugepage"):
        plan_run(PVVP, enough_for_one, options)


@pytest.mark.dpdk
def test_frames_cross_all_six_ports_as_the_generator_counts(state: LabRunState) -> None:
    plan = plan_run(PVVP, FACTS, LabOptions(frame_sizes_bytes=(64,)))
    config = testbed.TestbedConfig.for_plan(plan, FACTS)
    switch = testbed.Switch(state, config, testbed.SwitchBuild())
    with switch, testbed.open_testbed(switch, Topology.PVVP, dpdk_generator) as bed:
        assert [v.name for v in bed.vnfs] == ["vnf-testpmd", "vnf-testpmd-2"]
        assert bed.vnf is bed.vnfs[0]
        assert all(os.getpriority(os.PRIO_PROCESS, v.pid) == -10 for v in bed.vnfs if v.pid is not None)
        assert set(topology.port_link_states(bed.ovs, bed.layout).values()) == {"up"}
        checked = CrossCheckedGenerator(bed.generator, bed.ovs, bed.ovs.bridge, (1, 2))
        spec = TrialSpec(frame_size_bytes=64, rate_pps=10_000.0, duration_s=0.5, drain_s=0.5)
        checked.run_trial(spec)  # warm-up: the forwarders' first frames (not counted here)
        result = checked.run_trial(spec)
        check = checked.last
        lay = bed.layout
    assert check is not None and check.ok, check
    east, west = result.directions  # generator port 0 → 1, then 1 → 0
    assert east.tx_packets == west.tx_packets == 5_000 and result.rx_packets > 0
    ports = [check.ovs_ports[p] for p in (1, 3, 4, 5, 6, 2)]  # along the chain from generator port 0
    # port 0 → 1: received on 1, sent to 3, back on 4, sent to 5, back on 6, sent to 2; and the reverse.
    forward = [ports[0]["rx_packets"], ports[1]["tx_packets"], ports[2]["rx_packets"]]
    forward += [ports[3]["tx_packets"], ports[4]["rx_packets"], ports[5]["tx_packets"]]
    backward = [ports[5]["rx_packets"], ports[4]["tx_packets"], ports[3]["rx_packets"]]
    backward += [ports[2]["tx_packets"], ports[1]["rx_packets"], ports[0]["tx_packets"]]
    # Every hop counts what the generator sent and received (a forwarder may only lose, never add).
    assert forward[0] == east.tx_packets and forward[-1] == east.rx_packets, forward
    assert backward[0] == west.tx_packets and backward[-1] == west.rx_packets, backward
    assert forward == sorted(forward, reverse=True) and backward == sorted(backward, reverse=True)
    if result.rx_packets == result.tx_packets:  # lossless (the usual case): all six agree exactly
        assert forward == [5_000] * 6 and backward == [5_000] * 6
    assert all(check.ovs_ports[p]["tx_dropped"] == 0 for p in range(1, 7))
    assert_torn_down(state, lay)


@pytest.mark.dpdk
def test_a_second_forwarder_that_does_not_come_up_is_named_with_its_log(
    state: LabRunState, tmp_path: Path
) -> None:
    real = FACTS.testpmd or "dpdk-testpmd"
    wrapper = tmp_path / "testpmd"
    wrapper.write_text(
        "#!/bin/sh\n"
        'case "$*" in *vm2.sock*) echo "EAL: cannot serve vm2.sock (test)" >&2; exit 3;; esac\n'
        f'exec {real} "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    plan = plan_run(PVVP, FACTS, LabOptions(frame_sizes_bytes=(64,)))
    config = testbed.TestbedConfig.for_plan(plan, FACTS)
    assert config.forwarder is not None
    config = dataclasses.replace(config, forwarder=dataclasses.replace(config.forwarder, binary=str(wrapper)))
    switch = testbed.Switch(state, config, testbed.SwitchBuild())
    lay = topology.layout(Topology.PVVP, state.run_dir / "sock")
    with (
        pytest.raises(VnfError) as raised,
        switch,
        testbed.open_testbed(switch, Topology.PVVP, dpdk_generator),
    ):
        pytest.fail("the testbed came up without its second forwarder")
    message = str(raised.value)
    assert "vnf-testpmd-2 (PID" in message and "exited with status 3" in message
    log_path = state.run_dir / "vnf-testpmd-2.log"
    assert f"see '{log_path}'" in message
    assert "cannot serve vm2.sock" in log_path.read_text()
    assert_torn_down(state, lay)


@pytest.mark.dpdk
@pytest.mark.slow
def test_pvvp_real_run(tmp_path: Path, state_root: Path) -> None:
    before = set(os.listdir(HUGEPAGE_DIR))
    options = LabOptions(
        frame_sizes_bytes=(64,),
        final_trial_s=0.5,
        duration_sum_s=2.0,
        search_duration_max_s=60.0,
        latency_levels_percent=(),
    )
    outcome = run_lab(plan_run(PVVP, FACTS, options), FACTS, output_root=tmp_path, state_root=state_root)
    assert outcome.complete, outcome.reason
    [row] = read_rows(outcome.results_dir / "result_0_pvvp_tput_pvvp.csv")
    assert float(row["throughput_rx_fps"]) > 0 and row[GUEST_COLUMN] == "testpmd"
    assert row["deployment"] == "pvvp"
    assert {p.name.split("_")[0] for p in outcome.results_dir.glob("vnf-testpmd*.log")} == {
        "vnf-testpmd",
        "vnf-testpmd-2",
    }
    telemetry = json.loads((outcome.results_dir / TELEMETRY_FILE).read_text())["trials"]
    mine = [t for t in telemetry if t["test"] == VsperfTest.PVVP_TPUT.value and t["valid"]]
    assert mine and all(t["totals"]["cycles_per_packet"] > 50 for t in mine if t["load_pps"] > 50_000)
    assert {p["port"] for t in mine for p in t["rxq"]} == {"tg0", "tg1", "vm0", "vm1", "vm2", "vm3"}
    meta = json.loads((outcome.results_dir / "ovsperf-metadata.json").read_text())
    assert any("two PVVP forwarders" in w for w in meta["warnings"]) or len(FACTS.cpus) > 3
    assert leftovers(state_root, before) == []
