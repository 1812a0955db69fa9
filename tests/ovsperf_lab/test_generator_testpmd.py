"""The generator through a real forwarder: dpdk-testpmd io-forwarding between two vhost-user ports.

testpmd runs as the vhost-user server (``net_vhost``), the generator as ``net_virtio_user``
client; both ``--no-pci``, own file prefixes, pinned to different CPUs.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from ovsperf_lab.errors import TrafficGeneratorError
from ovsperf_lab.generators.dpdk import DpdkTrafficGenerator
from ovsperf_lab.generators.dpdk_config import TxFullPolicy
from ovsperf_lab.model import TrialSpec
from tests.ovsperf_lab import tg_harness as h

pytestmark = pytest.mark.dpdk


@pytest.fixture(scope="module")
def binary() -> h.Path:
    return h.build_generator()


@pytest.fixture
def testpmd(binary: h.Path) -> Iterator[h.Testpmd]:
    sockets = h.SocketDir()
    try:
        pmd = h.Testpmd(sockets)
        try:
            yield pmd
        finally:
            pmd.stop()
    finally:
        sockets.remove()
    assert h.hugepage_files(pmd.prefix) == []


def test_counting_through_testpmd_is_exact(testpmd: h.Testpmd) -> None:
    # 'retry': a descheduled forwarder (shared 2-CPU machine) slows our TX down instead of
    # dropping at our TX queue; 10 kpps with 1024-entry rings rides out ~100 ms of starvation.
    config = testpmd.generator_config(on_tx_full=TxFullPolicy.RETRY)
    assert config.file_prefix is not None
    with h.no_leftovers(config.file_prefix), DpdkTrafficGenerator(config) as gen:
        ports = gen.wait_link(timeout_s=10)
        assert [p.link_up for p in ports] == [True, True]
        assert all(p.link_speed_mbps is None for p in ports)  # virtio_user reports no speed
        for frame_size in (64, 1518):
            spec = TrialSpec(
                frame_size_bytes=frame_size, rate_pps=10_000, duration_s=0.5, flows=4, drain_s=0.5
            )
            trial = gen.run_trial(spec)
            assert [(d.tx_port, d.rx_port) for d in trial.directions] == [(0, 1), (1, 0)]
            for d in trial.directions:
                assert d.tx_packets == 5_000
                assert d.rx_packets == d.tx_packets
                assert d.duplicate_packets == 0
                assert d.reordered_packets == 0
                assert d.latency_min_ns is not None and d.latency_max_ns is not None
                assert d.latency_p50_ns is not None and d.latency_p999_ns is not None
                # Two vhost-user hops take more than 100 ns; no counted frame is older than trial + drain.
                assert (
                    100 < d.latency_min_ns <= d.latency_p50_ns <= d.latency_p999_ns <= d.latency_max_ns < 1e9
                )
            assert trial.loss_ratio == 0.0
            assert trial.generator_counters is not None
            assert trial.generator_counters.rx_foreign_packets == (0, 0)


def test_ports_report_the_rings_they_run_with(testpmd: h.Testpmd) -> None:
    # The vdev offers 1024 descriptors; the generator asks for 512 per queue and must say so
    # (a virtio_user ring holds the smaller of queue_size and the queue setup's count).
    config = testpmd.generator_config(ring_size=512)
    assert config.file_prefix is not None
    with h.no_leftovers(config.file_prefix), DpdkTrafficGenerator(config) as gen:
        ports = gen.wait_link(timeout_s=10)
        assert [(p.rx_descriptors, p.tx_descriptors) for p in ports] == [(512, 512), (512, 512)]


def test_unidirectional_trial(testpmd: h.Testpmd) -> None:
    config = testpmd.generator_config(on_tx_full=TxFullPolicy.RETRY)
    assert config.file_prefix is not None
    with h.no_leftovers(config.file_prefix), DpdkTrafficGenerator(config) as gen:
        gen.wait_link(timeout_s=10)
        trial = gen.run_trial(
            TrialSpec(frame_size_bytes=256, rate_pps=10_000, duration_s=0.5, bidirectional=False, drain_s=0.5)
        )
        (d,) = trial.directions
        assert (d.tx_port, d.rx_port, d.tx_packets, d.rx_packets) == (0, 1, 5_000, 5_000)


def test_peer_disappearing_mid_trial_is_an_error(testpmd: h.Testpmd) -> None:
    config = testpmd.generator_config()
    assert config.file_prefix is not None
    with h.no_leftovers(config.file_prefix), DpdkTrafficGenerator(config) as gen:
        gen.wait_link(timeout_s=10)
        killer = threading.Timer(0.7, lambda: os.kill(testpmd.proc.pid, signal.SIGKILL))
        killer.start()
        started = time.monotonic()
        try:
            with pytest.raises(TrafficGeneratorError, match=r"Port \d link went down during the trial"):
                gen.run_trial(TrialSpec(frame_size_bytes=64, rate_pps=50_000, duration_s=5.0))
        finally:
            killer.cancel()
        assert time.monotonic() - started < 4.5  # aborted, not run to the end
        assert gen.returncode is None  # the generator survives its peer
        with pytest.raises(TrafficGeneratorError, match=r"Port 0 link still down after 0\.5 s"):
            gen.wait_link(timeout_s=0.5)
        with pytest.raises(TrafficGeneratorError, match=r"link still down after 5\.0 s"):
            gen.run_trial(TrialSpec(frame_size_bytes=64, rate_pps=1000, duration_s=0.1, drain_s=0.1))
    assert gen.returncode == 0


def test_frames_the_forwarder_does_not_take_are_lost_not_invalid(testpmd: h.Testpmd) -> None:
    config = testpmd.generator_config()  # on_tx_full 'loss', the default
    assert config.file_prefix is not None
    with h.no_leftovers(config.file_prefix), DpdkTrafficGenerator(config) as gen:
        gen.wait_link(timeout_s=10)
        assert testpmd.proc.stdin is not None
        testpmd.proc.stdin.write(b"stop\n")  # testpmd stops polling: our TX ring fills up
        testpmd.proc.stdin.flush()
        time.sleep(0.5)
        trial = gen.run_trial(
            TrialSpec(frame_size_bytes=64, rate_pps=20_000, duration_s=0.5, bidirectional=False, drain_s=0.2)
        )
        (d,) = trial.directions
        assert d.tx_packets == 10_000
        assert d.rx_packets == 0
        assert trial.loss_ratio == 1.0
        assert trial.generator_counters is not None
        refused = trial.generator_counters.tx_refused_packets[0]
        assert 10_000 - 1024 <= refused < 10_000  # all but what the 1024-entry ring held
        # 'retry' into a port that takes nothing: TX gives up after 1 s without progress, no hang.
        started = time.monotonic()
        result = gen.run_raw_trial(
            {"frame_size_bytes": 64, "rate_pps": 20_000, "duration_s": 0.5, "bidirectional": False,
             "on_tx_full": "retry", "drain_s": 0.2}
        )  # fmt: skip
        assert time.monotonic() - started < 4
        (d,) = result["directions"]
        assert d["tx_stalled"] is True
        assert d["tx_packets"] < 10_000
        assert result["valid"] is False
        assert result["invalid_reason"].startswith("port 0 stopped taking frames")


def test_flows_are_spread_over_queues_like_rss(binary: h.Path) -> None:
    sockets = h.SocketDir()
    try:
        pmd = h.Testpmd(sockets, queues=2)
        try:
            config = pmd.generator_config(on_tx_full=TxFullPolicy.RETRY)
            assert config.file_prefix is not None
            with h.no_leftovers(config.file_prefix), DpdkTrafficGenerator(config) as gen:
                gen.wait_link(timeout_s=10)
                trial = gen.run_trial(
                    TrialSpec(frame_size_bytes=64, rate_pps=10_000, duration_s=0.5, bidirectional=False,
                              flows=4, drain_s=0.5)
                )  # fmt: skip
                (d,) = trial.directions
                assert (d.tx_packets, d.rx_packets) == (5_000, 5_000)
                stats = gen.port_stats()
                # Flows 0 and 2 on queue 0, flows 1 and 3 on queue 1.
                assert stats[0]["q_opackets"] == [2_500, 2_500]
                assert sum(stats[1]["q_ipackets"]) == 5_000
        finally:
            pmd.stop()
    finally:
        sockets.remove()
