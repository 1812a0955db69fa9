"""Latency at fixed shares of the PDR load: levels, loads, HdrHistogram summaries that merge."""

from __future__ import annotations

import logging

import pytest
from hdrh.histogram import HdrHistogram

from ovsperf_lab.errors import LabError, TrafficGeneratorError
from ovsperf_lab.model import DirectionResult
from ovsperf_lab.search.latency import level_load_pps, measure_levels, summarize
from ovsperf_lab.search.mlrconfig import CSIT_MIN_LOAD_PPS
from tests.ovsperf_lab.fakes import FakeTrafficGenerator

LOG = logging.getLogger("test.latency")


def _direction(
    buckets: tuple[tuple[float, int], ...], *, tx: int = 0, avg: float = 1500.0
) -> DirectionResult:
    rx = sum(c for _, c in buckets)
    return DirectionResult(
        tx_port=tx,
        rx_port=1 - tx,
        tx_packets=rx,
        rx_packets=rx,
        tx_pps=float(rx),
        tx_duration_s=1.0,
        reordered_packets=0,
        duplicate_packets=0,
        latency_min_ns=buckets[0][0],
        latency_avg_ns=avg,
        latency_max_ns=buckets[-1][0],
        latency_p50_ns=None,
        latency_p99_ns=None,
        latency_p999_ns=None,
        latency_histogram=buckets,
    )


def test_levels_run_at_shares_of_the_pdr_with_histograms() -> None:
    generator = FakeTrafficGenerator(capacity_pps=750_000.0, latency_ns=20_000.0)
    levels = measure_levels(
        generator,
        frame_size_bytes=64,
        pdr_pps=600_000.0,
        levels_percent=(90.0, 0.0, 50.0, 10.0),
        duration_s=2.0,
        flows=4,
        drain_s=0.5,
        log=LOG,
    )
    assert [lv.percent_of_pdr for lv in levels] == [0.0, 10.0, 50.0, 90.0]
    assert [s.rate_pps for s in generator.specs] == [CSIT_MIN_LOAD_PPS, 60_000.0, 300_000.0, 540_000.0]
    assert all(s.latency_histogram and s.duration_s == 2.0 and s.flows == 4 for s in generator.specs)
    top = levels[-1]
    assert top.all is not None and top.valid and top.loss_ratio == 0.0
    frames = 2 * 540_000 * 2
    assert top.all.rx_packets == frames
    # 1 % of the frames sit at twice the latency: p50 and p90 at 20 µs, p99.9 at 40 µs (3 digits).
    assert top.all.p50_ns == pytest.approx(20_000, rel=1e-3)
    assert top.all.p90_ns == pytest.approx(20_000, rel=1e-3)
    assert top.all.p999_ns == pytest.approx(40_000, rel=1e-3)
    assert (top.all.min_ns, top.all.max_ns, top.all.avg_ns) == (10_000.0, 60_000.0, 20_000.0)
    assert [(tx, rx) for tx, rx, _ in top.directions] == [(0, 1), (1, 0)]
    # The encoded merged histogram decodes to the same counts and percentiles.
    decoded = HdrHistogram.decode(top.all.hdrh)
    assert decoded.get_total_count() == frames
    assert decoded.get_value_at_percentile(99.9) == pytest.approx(top.all.p999_ns)
    json = top.to_json()
    assert json["load_fps_per_direction"] == 540_000.0 and json["all"]["p99_ns"] == top.all.p99_ns
    assert json["directions"][1]["tx_port"] == 1 and json["directions"][1]["rx_packets"] == frames // 2


def test_direction_histograms_merge_into_all_frames() -> None:
    fast = _direction(((1000.0, 900), (2000.0, 100)), tx=0, avg=1100.0)
    slow = _direction(((5000.0, 1000),), tx=1, avg=5000.0)
    merged = summarize((fast, slow))
    assert merged is not None
    assert merged.rx_packets == 2000
    assert merged.p50_ns == pytest.approx(2000, rel=1e-3)  # 1000th of 2000 frames: the 2 µs bucket
    assert merged.p90_ns == pytest.approx(5000, rel=1e-3)
    assert merged.avg_ns == pytest.approx((1100 * 1000 + 5000 * 1000) / 2000)
    assert (merged.min_ns, merged.max_ns) == (1000.0, 5000.0)
    alone = summarize((fast,))
    assert alone is not None and alone.p90_ns == pytest.approx(1000, rel=1e-3)
    assert alone.p99_ns == pytest.approx(2000, rel=1e-3)
    # A histogram can be re-merged later from its encoding.
    again = HdrHistogram.decode(alone.hdrh)
    again.add(HdrHistogram.decode(summarize((slow,)).hdrh))  # type: ignore[union-attr]
    assert again.get_total_count() == 2000
    assert again.get_value_at_percentile(50) == pytest.approx(merged.p50_ns)


def test_nothing_received_is_not_measured() -> None:
    generator = FakeTrafficGenerator(capacity_pps=0.0)
    (level,) = measure_levels(
        generator,
        frame_size_bytes=64,
        pdr_pps=1e6,
        levels_percent=(50,),
        duration_s=1,
        flows=1,
        drain_s=0,
        log=LOG,
    )
    assert level.all is None and level.loss_ratio == 1.0
    assert level.to_json()["all"] is None and level.to_json()["directions"][0] == {"tx_port": 0, "rx_port": 1}


def test_loads_and_bad_input() -> None:
    assert level_load_pps(0.0, 1e6) == CSIT_MIN_LOAD_PPS
    assert level_load_pps(0.5, 1e6) == CSIT_MIN_LOAD_PPS  # 5000 pps is below the minimum
    assert level_load_pps(50.0, 1e6) == 500_000.0
    with pytest.raises(LabError, match="positive PDR load"):
        measure_levels(
            FakeTrafficGenerator(), frame_size_bytes=64, pdr_pps=0.0, levels_percent=(50,), duration_s=1,
            flows=1, drain_s=0, log=LOG,
        )  # fmt: skip
    with pytest.raises(TrafficGeneratorError, match="died in trial 2"):
        measure_levels(
            FakeTrafficGenerator(fail_at_trial=2), frame_size_bytes=64, pdr_pps=1e6, levels_percent=(10, 50),
            duration_s=1, flows=1, drain_s=0, log=LOG,
        )  # fmt: skip


def test_percentiles_stay_within_the_exact_extremes() -> None:
    """HdrHistogram_py's ``test_large_numbers`` values (HdrHistogram/HdrHistogram_py
    test/test_hdrhistogram.py, commit b18247acad11cda2664674dc5267e652d6850b7d; also HdrHistogram_c's
    ``test_create_with_large_values``): 20,000,000, 30,000,000 and 100,000,000 ns. In the lab's
    histogram 100,000,000 lies in the bucket [99,942,400, 100,007,935], and HdrHistogram answers
    p99 with 100,007,935: above the generator's exact maximum (issue 25: p99.9 238,026.8 µs with
    max 237,849.5 µs)."""
    reference = HdrHistogram(1, 60_000_000_000, 3)
    for value in (100_000_000, 20_000_000, 30_000_000):
        reference.record_value(value)
    assert reference.get_value_at_percentile(99.0) == 100_007_935
    summary = summarize([_direction(((20_000_000.0, 1), (30_000_000.0, 1), (100_000_000.0, 1)))])
    assert summary is not None and summary.max_ns == 100_000_000.0
    assert summary.p90_ns == summary.p99_ns == summary.p999_ns == 100_000_000.0
    assert reference.values_are_equivalent(30_000_000, summary.p50_ns)
    # The same at the bottom: one frame, every percentile is that frame's exact latency.
    [alone] = [summarize([_direction(((237_849_500.0, 1),))])]
    assert alone is not None
    assert {alone.p50_ns, alone.p999_ns, alone.max_ns, alone.min_ns} == {237_849_500.0}
