"""The generator against a real, sandboxed OVS-DPDK in P2P: exact counting, exact loss, duplicates.

OVS runs with its own ovsdb-server/ovs-vswitchd and run/db/log directories; its two
``dpdkvhostuserclient`` ports connect to the generator's ``net_virtio_user`` servers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from ovsperf_lab.generators.dpdk import DpdkTrafficGenerator
from ovsperf_lab.generators.dpdk_config import FlowField, TxFullPolicy
from ovsperf_lab.model import TrialResult, TrialSpec
from tests.ovsperf_lab import tg_harness as h

pytestmark = pytest.mark.dpdk


@pytest.fixture(scope="module")
def binary() -> h.Path:
    return h.build_generator()


@pytest.fixture
def ovs(binary: h.Path) -> Iterator[h.OvsSandbox]:
    sockets = h.SocketDir()
    try:
        sandbox = h.OvsSandbox(sockets)
        try:
            yield sandbox
        finally:
            sandbox.stop()
    finally:
        sockets.remove()
    assert h.hugepage_files(sandbox.prefix) == []


def run(ovs: h.OvsSandbox, spec: TrialSpec, flow_field: FlowField = FlowField.SRC_PORT) -> TrialResult:
    # 'retry': on this shared 2-CPU machine a starved PMD thread must slow our TX, not drop.
    config = ovs.generator_config(on_tx_full=TxFullPolicy.RETRY, flow_field=flow_field, startup_timeout_s=30)
    assert config.file_prefix is not None
    with h.no_leftovers(config.file_prefix), DpdkTrafficGenerator(config) as gen:
        gen.wait_link(timeout_s=20)
        return gen.run_trial(spec)


def test_p2p_counting_is_exact(ovs: h.OvsSandbox) -> None:
    ovs.p2p_flows()
    trial = run(
        ovs,
        TrialSpec(frame_size_bytes=64, rate_pps=10_000, duration_s=0.5, flows=4, warmup_s=0.3, drain_s=0.5),
    )
    for d in trial.directions:
        assert d.tx_packets == 5_000
        assert d.rx_packets == 5_000
        assert d.duplicate_packets == 0
        assert d.latency_min_ns is not None and d.latency_p50_ns is not None and d.latency_max_ns is not None
        # No counted frame can be older than warm-up + trial + drain (0.3 + 0.5 + 0.5 s).
        assert 100 < d.latency_min_ns <= d.latency_p50_ns <= d.latency_max_ns < 1.3e9
    assert trial.loss_ratio == 0.0


@pytest.mark.parametrize(
    ("flows", "flow_field", "drop"),
    [
        (4, FlowField.SRC_PORT, ("udp,tp_src=1024",)),
        (5, FlowField.SRC_IP, ("udp,nw_src=198.18.0.3", "udp,nw_src=198.19.0.3")),
    ],
)
def test_dropping_one_of_n_flows_loses_exactly_1_over_n(
    ovs: h.OvsSandbox, flows: int, flow_field: FlowField, drop: tuple[str, ...]
) -> None:
    ovs.p2p_flows(tuple(f"priority=20,{match},actions=drop" for match in drop))
    # The warm-up installs the datapath flows first (RFC 2544 §23 learning frames).
    spec = TrialSpec(
        frame_size_bytes=64, rate_pps=10_000, duration_s=0.5, flows=flows, warmup_s=0.3, drain_s=0.5
    )
    trial = run(ovs, spec, flow_field)
    assert len(trial.directions) == 2
    for d in trial.directions:
        assert d.tx_packets == 5_000
        assert d.lost_packets == 5_000 // flows
        assert d.loss_ratio == pytest.approx(1 / flows, rel=1e-12)
        assert d.duplicate_packets == 0


def test_duplicated_frames_are_counted_once(ovs: h.OvsSandbox) -> None:
    ovs.p2p_flows(("priority=20,in_port=1,actions=output:2,output:2",))
    trial = run(
        ovs,
        TrialSpec(
            frame_size_bytes=128,
            rate_pps=5_000,
            duration_s=0.5,
            bidirectional=False,
            warmup_s=0.3,
            drain_s=0.5,
        ),
    )
    (d,) = trial.directions
    assert d.tx_packets == 2_500
    assert d.rx_packets == 2_500
    assert d.duplicate_packets == 2_500
    assert trial.valid or "generator-limited" in (trial.invalid_reason or "")


def test_frames_tagged_by_the_dut_are_still_counted(ovs: h.OvsSandbox) -> None:
    ovs.p2p_flows(("priority=20,in_port=1,actions=mod_vlan_vid:10,output:2",))
    trial = run(
        ovs, TrialSpec(frame_size_bytes=64, rate_pps=10_000, duration_s=0.5, warmup_s=0.3, drain_s=0.5)
    )
    assert [(d.tx_port, d.tx_packets, d.rx_packets) for d in trial.directions] == [
        (0, 5_000, 5_000),
        (1, 5_000, 5_000),
    ]


def test_two_queues_through_ovs_count_exactly(ovs: h.OvsSandbox) -> None:
    ovs.p2p_flows()
    config = ovs.generator_config(on_tx_full=TxFullPolicy.RETRY, queues=2, startup_timeout_s=30)
    assert config.file_prefix is not None
    with h.no_leftovers(config.file_prefix), DpdkTrafficGenerator(config) as gen:
        gen.wait_link(timeout_s=20)
        trial = gen.run_trial(
            TrialSpec(
                frame_size_bytes=64, rate_pps=10_000, duration_s=0.5, flows=8, warmup_s=0.3, drain_s=0.5
            )
        )
        assert [(d.tx_packets, d.rx_packets) for d in trial.directions] == [(5_000, 5_000)] * 2
        # Warm-up (3000 frames) and trial (5000) per port, half of the flows on each queue.
        assert [s["q_opackets"] for s in gen.port_stats()] == [[4_000, 4_000]] * 2
        # OVS polls a second, enabled queue on each vhost-user port.
        rxq = ovs.appctl("dpif-netdev/pmd-rxq-show")
        for port in ("vhu0", "vhu1"):
            assert re.search(rf"port: {port}\s+queue-id:\s+1 \(enabled\)", rxq), rxq


def test_many_tuple_flows_exercise_the_datapath_caches_not_the_openflow_table(ovs: h.OvsSandbox) -> None:
    from ovsperf_common.ovsstats import parse_pmd_stats, pmd_totals

    def hits(flows: int) -> dict[str, float | None]:
        ovs.appctl("dpif-netdev/pmd-stats-clear")
        spec = TrialSpec(
            frame_size_bytes=64, rate_pps=40_000, duration_s=1.0, flows=flows, warmup_s=0.5, drain_s=0.5
        )
        trial = run(ovs, spec, FlowField.TUPLE)
        assert all(d.tx_packets == 40_000 and d.rx_packets >= 39_600 for d in trial.directions)
        return pmd_totals(parse_pmd_stats(ovs.appctl("dpif-netdev/pmd-stats-show")))

    # Rules matching only in_port: OVS >= 2.17 classifies every packet by "simple match" on the
    # port, whatever the flow count: the 5-tuples never reach the EMC, SMC or megaflow cache.
    ovs.p2p_flows()
    assert (hits(20_000)["simple_match_hits_percent"] or 0) > 99
    # One rule per direction that also matches UDP: still one OpenFlow rule and one megaflow per
    # direction, but packets are looked up by their 5-tuple. One flow: EMC hits after the first
    # packet. 20,000 flows overflow the 8,192-entry EMC (OVS also inserts with probability
    # 1/100), so most packets fall through to the megaflow cache: the flow count reaches the caches.
    ovs.p2p_flows(
        ("priority=20,udp,in_port=1,actions=output:2", "priority=20,udp,in_port=2,actions=output:1")
    )
    one, many = hits(1), hits(20_000)
    assert (one["emc_hits_percent"] or 0) > 95
    assert (many["emc_hits_percent"] or 0) < 50
    assert (many["megaflow_hits_percent"] or 0) + (many["smc_hits_percent"] or 0) > 50
