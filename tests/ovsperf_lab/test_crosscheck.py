"""Cross-check of generator counts with OVS port counters (pure: synthetic counters)."""

from __future__ import annotations

import dataclasses

import pytest

from ovsperf_lab.crosscheck import compare, generator_caused_failure
from ovsperf_lab.errors import LabError
from ovsperf_lab.model import GeneratorCounters, TrialSpec
from ovsperf_lab.ovs import PortCounters
from tests.ovsperf_lab.fakes import FakeTrafficGenerator

ZERO = {1: PortCounters(0, 0, 0, 0), 2: PortCounters(0, 0, 0, 0)}


def test_agreeing_counts_are_ok() -> None:
    result = FakeTrafficGenerator(capacity_pps=900.0).run_trial(TrialSpec(64, 1000.0, 1.0))
    after = {1: PortCounters(1000, 0, 900, 0), 2: PortCounters(1000, 0, 900, 0)}
    check = compare(ZERO, after, result, (1, 2))
    assert check.ok and check.mismatches == ()
    assert check.ovs_rx_packets == {0: 1000, 1: 1000} and check.ovs_ports[1]["tx_packets"] == 900


def test_frames_missing_in_ovs_and_lost_in_generator_are_named() -> None:
    result = FakeTrafficGenerator(capacity_pps=900.0).run_trial(TrialSpec(64, 1000.0, 1.0))
    # OVS saw only 950 of the 1000 sent on port 0, and delivered 990 to port 1 where the
    # generator counted 900 (+ refusals unknown): both are mismatches.
    after = {1: PortCounters(950, 0, 900, 0), 2: PortCounters(1000, 0, 990, 0)}
    check = compare(ZERO, after, result, (1, 2))
    assert not check.ok
    assert "Generator port 0 sent 1000 frames into OVS, OVS port 1 received 950." in check.mismatches
    assert any("lost inside the generator, not the DUT" in m for m in check.mismatches)


def test_refused_frames_never_reached_ovs() -> None:
    result = FakeTrafficGenerator(capacity_pps=900.0).run_trial(TrialSpec(64, 1000.0, 1.0))
    after = {1: PortCounters(900, 0, 900, 0), 2: PortCounters(900, 0, 900, 0)}
    assert not compare(ZERO, after, result, (1, 2)).ok
    counters = GeneratorCounters(tx_refused_packets=(100, 100), rx_foreign_packets=(0, 0))
    assert compare(ZERO, after, dataclasses.replace(result, generator_counters=counters), (1, 2)).ok


def test_foreign_and_warmup_frames_are_the_generator_s() -> None:
    result = FakeTrafficGenerator(capacity_pps=900.0).run_trial(TrialSpec(64, 1000.0, 1.0, warmup_s=0.5))
    # OVS counted 500 warm-up frames per port into it, and delivered 30 foreign frames to port 1.
    after = {1: PortCounters(1500, 0, 900, 0), 2: PortCounters(1500, 0, 930, 0)}
    assert not compare(ZERO, after, result, (1, 2)).ok
    counters = GeneratorCounters(rx_foreign_packets=(0, 30), warmup_tx_packets=1000)
    assert compare(ZERO, after, dataclasses.replace(result, generator_counters=counters), (1, 2)).ok
    with pytest.raises(LabError, match="Field 'warmup_tx_packets' must be a whole number >= 0"):
        GeneratorCounters(warmup_tx_packets=-1)


def test_loss_only_from_generator_rx_makes_the_trial_generator_caused() -> None:
    result = FakeTrafficGenerator(capacity_pps=990.0).run_trial(TrialSpec(64, 1000.0, 1.0))
    # Each direction lost 10 frames, exactly the 10 OVS could not deliver to the generator.
    after = {1: PortCounters(1000, 0, 990, 10), 2: PortCounters(1000, 0, 990, 10)}
    check = compare(ZERO, after, result, (1, 2))
    assert any("could not deliver 10 frames to generator port 0" in m for m in check.mismatches)
    assert generator_caused_failure(result, check, 0.0) == 20
    # A DUT that lost more than those frames failed on its own.
    worse = FakeTrafficGenerator(capacity_pps=900.0).run_trial(TrialSpec(64, 1000.0, 1.0))
    assert generator_caused_failure(worse, check, 0.0) == 0
    # A passing trial is never turned invalid.
    assert generator_caused_failure(result, check, 0.02) == 0


def test_an_overlay_trial_checks_the_frame_sizes_the_tunnel_makes() -> None:
    # Encapsulation, 114 B sent one way: OVS receives 110 B frames (no FCS) and delivers 160 B ones.
    spec = TrialSpec(114, 1000.0, 1.0, bidirectional=False)
    result = FakeTrafficGenerator(capacity_pps=2000.0).run_trial(spec)
    zero = {1: PortCounters(0, 0, 0, 0, 0, 0), 2: PortCounters(0, 0, 0, 0, 0, 0)}
    right = {1: PortCounters(1000, 0, 0, 0, 110_000, 0), 2: PortCounters(0, 0, 1000, 0, 0, 160_000)}
    check = compare(zero, right, result, (1, 2), delivered_delta_bytes=50)
    assert check.ok, check.mismatches
    # Frames delivered at the size sent: the tunnel did not run; decapsulation would be 60 B.
    plain = {1: right[1], 2: PortCounters(0, 0, 1000, 0, 0, 110_000)}
    check = compare(zero, plain, result, (1, 2), delivered_delta_bytes=50)
    assert check.mismatches == (
        "OVS port 2 delivered 1000 frames of 110000 B, not 1000 × 160 B = 160000 B: the frames are not "
        "the size the tunnel makes them.",
    )
    assert compare(zero, plain, result, (1, 2)).ok  # a P2P test does not look at bytes
    decap = {1: right[1], 2: PortCounters(0, 0, 1000, 0, 0, 60_000)}
    assert compare(zero, decap, result, (1, 2), delivered_delta_bytes=-50).ok
