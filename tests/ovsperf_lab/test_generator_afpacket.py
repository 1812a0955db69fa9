"""The generator on ``net_af_packet`` ports over a veth pair in a network namespace we create.

The veth pair is a wire without a forwarder: port 0's frames arrive on port 1 and back. The kernel
sends its own frames (IPv6 neighbour discovery) on the interfaces; they must not be counted.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
from collections.abc import Iterator

import pytest

from ovsperf_lab.generators.dpdk import DpdkTrafficGenerator
from ovsperf_lab.generators.dpdk_config import GeneratorConfig
from ovsperf_lab.model import TrialSpec
from tests.ovsperf_lab import tg_harness as h

pytestmark = pytest.mark.dpdk

INJECT_FRAMES = """
import socket, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("tgv0", 0))
time.sleep(0.2)
for i in range(20):
    s.send(b"\\xff" * 6 + b"\\x02" * 6 + b"\\x88\\xb5" + bytes([i]) * 50)
"""


@pytest.fixture
def netns() -> Iterator[str]:
    name = f"ovsperf-tg-{secrets.token_hex(3)}"
    subprocess.run(["ip", "netns", "add", name], check=True, timeout=30)
    try:
        for cmd in (
            ["link", "add", "tgv0", "type", "veth", "peer", "name", "tgv1"],
            ["link", "set", "tgv0", "up"],
            ["link", "set", "tgv1", "up"],
        ):
            subprocess.run(["ip", "-n", name, *cmd], check=True, timeout=30)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False, timeout=30)


def test_veth_wire_counts_exactly_and_ignores_kernel_frames(netns: str) -> None:
    h.build_generator()
    config = GeneratorConfig(
        vdevs=("net_af_packet0,iface=tgv0", "net_af_packet1,iface=tgv1"),
        lcores=h.generator_cpu(),
        memory_mb=128,
        file_prefix=h.unique_prefix("afp"),
        binary=h.BINARY,
        netns=netns,
    )
    assert config.file_prefix is not None
    with h.no_leftovers(config.file_prefix), DpdkTrafficGenerator(config) as gen:
        ports = gen.wait_link(timeout_s=5)
        assert len(ports) == 2
        # Foreign frames on the wire during the trial: 20 raw frames (IEEE local experimental
        # ethertype 0x88b5) sent out of tgv0 by another process.
        sender = subprocess.Popen(
            ["ip", "netns", "exec", netns, sys.executable, "-c", INJECT_FRAMES],
            stderr=subprocess.PIPE,
        )
        try:
            trial = gen.run_trial(
                TrialSpec(frame_size_bytes=512, rate_pps=10_000, duration_s=0.6, flows=3, drain_s=0.3)
            )
        finally:
            _, err = sender.communicate(timeout=30)
        assert sender.returncode == 0, err
        for d in trial.directions:
            assert (d.tx_packets, d.rx_packets, d.duplicate_packets) == (6_000, 6_000, 0)
            assert d.latency_min_ns is not None and d.latency_min_ns > 0
        assert trial.generator_counters is not None
        assert trial.generator_counters.rx_foreign_packets[1] >= 20  # arrived, and were not counted
    assert gen.returncode == 0
