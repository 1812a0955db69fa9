"""Real OVS-DPDK in a sandbox, real topologies, dpdk-testpmd as stand-in generator and as the VNF."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from ovsperf_catalog.model import Topology
from ovsperf_lab import topology
from ovsperf_lab.errors import OvsError
from ovsperf_lab.ovs import OvsConfig, OvsSandbox, cpu_mask
from ovsperf_lab.state import SYS_CLASS_NET, LabRunState, check_tap_name, release
from ovsperf_lab.vnf import ForwarderProcess, make_testpmd_argv
from tests.ovsperf_lab.conftest import assert_released

pytestmark = pytest.mark.dpdk
TESTPMD = shutil.which("dpdk-testpmd") or "dpdk-testpmd"


def txonly(state: LabRunState, lay: topology.Layout, name: str = "tg-testpmd") -> ForwarderProcess:
    cpu = sorted(os.sched_getaffinity(0))[0]
    argv = make_testpmd_argv(
        binary=TESTPMD,
        cpu=cpu,
        file_prefix=state.new_file_prefix("tg"),
        memory_mb=256,
        sockets=(lay.generator_ports[0].socket, lay.generator_ports[1].socket),
        queues=1,
        forward_mode="txonly",
        extra_app_args=("-i",),
    )
    return ForwarderProcess(state, name, argv, state.run_dir / f"{name}.log")


def test_cpu_mask() -> None:
    assert cpu_mask((1,)) == "0x2"
    assert cpu_mask((0, 2, 3)) == "0xd"


def test_sandbox_is_confined_and_reports_versions(ovs: OvsSandbox, run_state: LabRunState) -> None:
    ovs_version, dpdk_version = ovs.versions()
    assert ovs_version.startswith("3.")
    assert dpdk_version.startswith("22.11")
    assert ovs.db_sock.is_socket() and str(ovs.db_sock).startswith(str(run_state.run_dir))
    other = ovs.vsctl("get", "Open_vSwitch", ".", "other_config")
    assert "--no-pci" in other and run_state.file_prefixes[0] in other
    assert set(ovs.pids) == {"ovsdb-server", "ovs-vswitchd"}
    cmdline = Path(f"/proc/{ovs.pids['ovs-vswitchd']}/cmdline").read_bytes().split(b"\0")
    assert cmdline[0].endswith(b"ovs-vswitchd-dpdk")
    assert any(str(ovs.run_dir).encode() in arg for arg in cmdline)


@pytest.mark.parametrize("match_udp", [False, True], ids=["ports", "udp"])
def test_p2p_rules_forward_port1_to_port2(ovs: OvsSandbox, run_state: LabRunState, match_udp: bool) -> None:
    lay = topology.layout(Topology.P2P, run_state.run_dir / "sock")
    topology.build(ovs, lay, n_rxq=1, match_udp=match_udp)
    flows = ovs.ofctl("--no-names", "dump-flows", ovs.bridge_target(ovs.bridge))
    match = "udp,in_port=" if match_udp else " in_port="
    assert f"{match}1 actions=output:2" in flows and f"{match}2 actions=output:1" in flows
    assert flows.count("actions=output:") == 2
    gen = txonly(run_state, lay)
    gen.start()
    try:
        topology.wait_links_up(ovs, lay)
        time.sleep(2.0)
        gen.command("stop")
        time.sleep(1.0)
        c = ovs.port_counters(ovs.bridge)
    finally:
        gen.stop()
    assert set(c) == {1, 2}
    assert (c[1].rx_packets or 0) > 1000 and (c[2].rx_packets or 0) > 1000
    # Everything received on port 1 left through port 2 (delivered or dropped at the full ring).
    assert (c[2].tx_packets or 0) + (c[2].tx_dropped or 0) == c[1].rx_packets
    assert (c[1].tx_packets or 0) + (c[1].tx_dropped or 0) == c[2].rx_packets


def test_pvp_crosses_the_testpmd_forwarder(ovs: OvsSandbox, run_state: LabRunState) -> None:
    lay = topology.layout(Topology.PVP, run_state.run_dir / "sock")
    topology.build(ovs, lay, n_rxq=1)
    cpu = sorted(os.sched_getaffinity(0))[0]
    vnf = ForwarderProcess(
        run_state,
        "vnf-testpmd",
        make_testpmd_argv(
            binary=TESTPMD,
            cpu=cpu,
            file_prefix=run_state.new_file_prefix("vnf"),
            memory_mb=256,
            sockets=(lay.vnf_ports[0].socket, lay.vnf_ports[1].socket),
            queues=1,
        ),
        run_state.run_dir / "vnf.log",
    )
    vnf.start()
    gen = txonly(run_state, lay)
    gen.start()
    try:
        topology.wait_links_up(ovs, lay)
        time.sleep(2.0)
        vnf.check_alive()
        gen.command("stop")
        time.sleep(1.0)
        c = ovs.port_counters(ovs.bridge)
    finally:
        gen.stop()
        vnf.stop()
    assert (c[4].rx_packets or 0) > 1000, c  # the forwarder sent frames back into OVS
    assert (c[2].tx_packets or 0) + (c[2].tx_dropped or 0) == c[4].rx_packets
    assert (c[3].tx_packets or 0) + (c[3].tx_dropped or 0) == c[1].rx_packets


def test_dead_vswitchd_is_detected(ovs: OvsSandbox) -> None:
    os.kill(ovs.pids["ovs-vswitchd"], 9)
    time.sleep(0.5)
    with pytest.raises(OvsError, match=r"ovs-vswitchd \(PID \d+\) died .*ovs-vswitchd.log"):
        ovs.check_alive()


def test_the_bridges_tap_device_is_deleted_at_stop_and_after_a_crash(state_root: Path) -> None:
    """OVS makes a netdev bridge's LOCAL port a persistent tap device in the host's namespace and
    leaves it when it stops: 383 of them had piled up on this machine before the lab deleted them."""
    for crash in (False, True):
        state = LabRunState.create(state_root, f"ovsperf-lab-tap{int(crash)}")
        try:
            sandbox = OvsSandbox(
                state, OvsConfig(lcore_cpu=0, pmd_cpus=(1,), file_prefix=state.new_file_prefix("ovs"))
            )
            sandbox.start()
            topology.build(sandbox, topology.layout(Topology.P2P, state.run_dir / "sock"), n_rxq=1)
            tap = SYS_CLASS_NET / sandbox.bridge
            assert (tap / "tun_flags").exists()  # the tap device OVS made
            assert state.taps == [sandbox.bridge, sandbox.underlay_bridge]
            if crash:
                os.kill(sandbox.pids["ovs-vswitchd"], 9)  # no stop(): release() must find it
            else:
                sandbox.stop()
                assert not tap.exists()
        finally:
            release(state)
        assert_released(state)
        assert not tap.exists()


def test_a_state_file_naming_a_foreign_device_is_refused(run_state: LabRunState) -> None:
    with pytest.raises(ValueError, match="'eth0' is not an ovsperf-lab bridge's"):
        run_state.track_taps("eth0")
    assert check_tap_name("olab0123abcd") == "olab0123abcd"
    for name in ("olab0123abc", "olp0123abcdx", "olab../x", "lo"):
        with pytest.raises(ValueError):
            check_tap_name(name)
