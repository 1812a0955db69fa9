"""The testbed run and compare stand on: real OVS-DPDK, the real generator, teardown on every exit.

After the ``with`` block, whatever happened in it (success, a dead generator, Ctrl-C), no process
of the testbed runs, no vhost-user socket and no hugepage file of its DPDK prefixes is left, and
a failure that a dead OVS explains is raised as that death.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import Topology, VsperfTest
from ovsperf_lab import testbed, topology
from ovsperf_lab.errors import OvsError, TrafficGeneratorError, VnfError
from ovsperf_lab.generators.api import DEFAULT_LINK_SPEED_MBPS, GeneratorRequest, PortInfo, TrafficGenerator
from ovsperf_lab.generators.dpdk import start as dpdk_generator
from ovsperf_lab.machine import probe_machine
from ovsperf_lab.model import TrialSpec
from ovsperf_lab.plan import LabOptions, VnfKind, plan_run
from ovsperf_lab.state import HUGEPAGE_DIR, LabRunState, release
from tests.ovsperf_lab.conftest import assert_released
from tests.ovsperf_lab.fakes import FakeTrafficGenerator

pytestmark = pytest.mark.dpdk
FACTS = probe_machine()
PLAN = plan_run(load_catalog().get("OVS_DPDK1q"), FACTS, LabOptions(frame_sizes_bytes=(64,)))
CONFIG = testbed.TestbedConfig.for_plan(PLAN, FACTS)


@pytest.fixture
def state(state_root: Path) -> Iterator[LabRunState]:
    run = LabRunState.create(state_root, f"ovsperf-lab-tb{state_root.name[-6:]}")
    try:
        yield run
    finally:
        release(run)


def assert_torn_down(state: LabRunState, lay: topology.Layout) -> None:
    """No process, vhost-user socket or hugepage file of the testbed is left; the run state's
    release then leaves nothing at all (OVS's empty DPDK runtime directory, the run directory)."""
    assert [p.name for p in state.processes if p.alive()] == []
    assert [str(p.socket) for p in lay.ports if p.socket.exists()] == []
    assert [str(f) for prefix in state.file_prefixes for f in HUGEPAGE_DIR.glob(f"{prefix}map_*")] == []
    release(state)
    assert_released(state)


def test_success_brings_everything_up_and_down(state: LabRunState) -> None:
    switch = testbed.Switch(state, CONFIG, testbed.SwitchBuild())
    with switch, testbed.open_testbed(switch, Topology.P2P, dpdk_generator) as bed:
        assert bed.versions[0].startswith("3.") and bed.versions[1].startswith("22.11")
        assert topology.port_link_states(bed.ovs, bed.layout) == {"tg0": "up", "tg1": "up"}
        assert [p.name for p in state.processes] == ["ovsdb-server", "ovs-vswitchd", "ovsperf-trafficgen"]
        assert all(p.alive() for p in state.processes)
        assert all(p.socket.exists() for p in bed.layout.ports)
        # virtio_user reports no speed: the lab assumes 10 GbE.
        assert bed.link_speed_mbps == DEFAULT_LINK_SPEED_MBPS == 10_000
        assert bed.generator.pid is not None
        assert os.getpriority(os.PRIO_PROCESS, bed.generator.pid) == CONFIG.nice == -10
        assert os.getpriority(os.PRIO_PROCESS, bed.ovs.pids["ovs-vswitchd"]) == -10
        result = bed.generator.run_trial(
            TrialSpec(frame_size_bytes=64, rate_pps=10_000.0, duration_s=0.5, drain_s=0.5)
        )
        assert result.rx_packets == result.tx_packets == 2 * 5_000
        lay = bed.layout
    assert_torn_down(state, lay)


def test_a_generator_that_fails_to_start_leaves_the_bridge_removed(state: LabRunState) -> None:
    def refuse(request: GeneratorRequest) -> TrafficGenerator:
        raise TrafficGeneratorError("the generator refused to start")

    switch = testbed.Switch(state, CONFIG, testbed.SwitchBuild())
    with switch:
        with pytest.raises(TrafficGeneratorError, match="refused to start"):
            with testbed.open_testbed(switch, Topology.P2P, refuse):
                pytest.fail("the testbed came up without a generator")
        # OVS still runs (the next test of a run builds its own topology): the bridge is gone.
        assert switch.ovs.vsctl("list-br").split() == []
    assert_torn_down(state, topology.layout(Topology.P2P, state.run_dir / "sock"))


def test_a_generator_killed_mid_test_is_raised_and_cleaned_up(state: LabRunState) -> None:
    switch = testbed.Switch(state, CONFIG, testbed.SwitchBuild())
    with pytest.raises(TrafficGeneratorError) as raised:
        with switch, testbed.open_testbed(switch, Topology.P2P, dpdk_generator) as bed:
            lay = bed.layout
            assert bed.generator.pid is not None
            os.kill(bed.generator.pid, signal.SIGKILL)
            bed.generator.run_trial(TrialSpec(frame_size_bytes=64, rate_pps=10_000.0, duration_s=0.5))
    assert type(raised.value) is TrafficGeneratorError  # OVS lived: the generator's own error
    assert_torn_down(state, lay)


def test_keyboard_interrupt_tears_everything_down(state: LabRunState) -> None:
    switch = testbed.Switch(state, CONFIG, testbed.SwitchBuild())
    with pytest.raises(KeyboardInterrupt):
        with switch, testbed.open_testbed(switch, Topology.P2P, dpdk_generator) as bed:
            lay = bed.layout
            raise KeyboardInterrupt
    assert_torn_down(state, lay)


class _LinksDown(FakeTrafficGenerator):
    def wait_link(self, timeout_s: float) -> tuple[PortInfo, ...]:
        raise TrafficGeneratorError("port 0's link stayed down")


def test_ovs_dying_during_bring_up_is_named_as_the_root_cause(state: LabRunState) -> None:
    switch = testbed.Switch(state, CONFIG, testbed.SwitchBuild())

    def kill_ovs(generator: TrafficGenerator) -> None:
        os.kill(switch.ovs.pids["ovs-vswitchd"], signal.SIGKILL)

    with pytest.raises(OvsError, match=r"ovs-vswitchd \(PID \d+\) died with status -9") as raised:
        with (
            switch,
            testbed.open_testbed(switch, Topology.P2P, lambda request: _LinksDown(), on_generator=kill_ovs),
        ):
            pytest.fail("the testbed came up with its links down")
    assert isinstance(raised.value.__cause__, TrafficGeneratorError)
    assert "link stayed down" in str(raised.value.__cause__)
    assert_torn_down(state, topology.layout(Topology.P2P, state.run_dir / "sock"))


def test_a_side_whose_ovs_does_not_start_is_named_and_stopped(state: LabRunState, tmp_path: Path) -> None:
    fake = tmp_path / "ovs-vswitchd"
    fake.write_text("#!/bin/sh\necho 'simulated start-up failure' >&2; exit 1\n")
    fake.chmod(0o755)
    build = testbed.SwitchBuild(vswitchd=fake, name=f"Side B ({fake})")
    with pytest.raises(OvsError, match=rf"^Side B \({fake}\): ovs-vswitchd \(PID \d+\) died with status 1"):
        with testbed.Switch(state, CONFIG, build):
            pytest.fail("a failing ovs-vswitchd started")
    assert [p.name for p in state.processes if p.alive()] == []  # ovsdb-server stopped too


def test_a_forwarder_dying_mid_test_is_named_as_the_root_cause(state: LabRunState) -> None:
    pvp = plan_run(
        load_catalog().get("OVS_DPDK1q_GUEST_DPDK1q"),
        FACTS,
        LabOptions(frame_sizes_bytes=(64,), tests=(VsperfTest.PVP_TPUT,)),
    )
    config = testbed.TestbedConfig.for_plan(pvp, FACTS)
    assert config.forwarder is not None and config.forwarder.kind is VnfKind.TESTPMD
    switch = testbed.Switch(state, config, testbed.SwitchBuild())
    fake = FakeTrafficGenerator()
    with pytest.raises(VnfError, match=r"vnf-testpmd \(PID \d+\) exited with status -9") as raised:
        with switch, testbed.open_testbed(switch, Topology.PVP, lambda request: fake) as bed:
            lay = bed.layout
            # OVS saw the forwarder's ports up before the testbed was handed out.
            assert topology.port_link_states(bed.ovs, lay)["vm0"] == "up"
            assert bed.vnf is not None and bed.vnf.pid is not None
            assert os.getpriority(os.PRIO_PROCESS, bed.vnf.pid) == -10
            os.kill(bed.vnf.pid, signal.SIGKILL)
            raise TrafficGeneratorError("no frames came back")  # the symptom a trial would show
    assert str(raised.value.__cause__) == "no frames came back"
    assert fake.closed == 1
    assert_torn_down(state, lay)
