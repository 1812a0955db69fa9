"""Compare latency at shares of the PDR load, baseline against current; pure, no I/O.

Several runs on a side (repeats, several directories) are merged the HdrHistogram way: their
histograms are decoded one at a time within fixed bounds (:mod:`reporting.hdrdecode`) and added
into a histogram that covers every run's range, and the percentiles are read from the sum, so a
p99.9 is of every frame measured, not a mean of p99.9s. Without usable histograms the
percentiles of the runs are averaged. Min and max are the extremes over the runs; no percentile
is shown outside them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from hdrh.histogram import HdrHistogram

from ovsperf_common.framemix import TrafficKey
from reporting.hdrdecode import HistogramError, add_covering, decode_bounded
from reporting.model import LatencyCell
from reporting.resultmodel import LatencyPoint, TestRun

PERCENTILE_KEYS = (("p50_ns", 50.0), ("p90_ns", 90.0), ("p99_ns", 99.0), ("p999_ns", 99.9))
"""Percentiles read from a merged histogram: key, percentile [%]."""


def decode(hdrh: str | None) -> HdrHistogram | None:
    """Return the histogram of a base64 HdrHistogram V2 string; ``None`` when absent or unusable.

    Unusable: not such a string, or one that would inflate or allocate beyond the bounds of
    :mod:`reporting.hdrdecode`.
    """
    if not hdrh:
        return None
    try:
        return decode_bounded(hdrh)
    except HistogramError:
        return None


def within(value: float, low: float, high: float) -> float:
    """Return ``value`` clamped to [``low``, ``high``].

    A histogram percentile is the highest value of its bucket (HdrHistogram's
    ``get_value_at_percentile``), which can lie above the exact maximum the generator measured;
    a percentile is never shown outside the exact extremes.
    """
    return min(max(value, low), high)


def _merged_histogram(points: Sequence[LatencyPoint]) -> HdrHistogram | None:
    """Return the sum of the points' histograms, decoded one at a time.

    ``None`` when one is missing or unusable, or their sum would not fit the bounds of
    :mod:`reporting.hdrdecode`.
    """
    total: HdrHistogram | None = None
    for point in points:
        histogram = decode(point.hdrh)
        if histogram is None:
            return None
        try:
            total = histogram if total is None else add_covering(total, histogram)
        except HistogramError:
            return None
    return total


def merge(points: Sequence[LatencyPoint]) -> LatencyPoint | None:
    """Return one point for several runs of the same frame size and load; ``None`` for none.

    :returns: the point itself for one run; else percentiles of the summed histograms (mean of
        the runs' percentiles when a histogram is missing or unusable), min/max over the runs,
        every percentile within [min, max].
    """
    if not points:
        return None
    if len(points) == 1:
        return points[0]
    low, high = min(p.min_ns for p in points), max(p.max_ns for p in points)
    total = _merged_histogram(points)
    if total is not None:
        values = {
            key: within(float(total.get_value_at_percentile(p)), low, high) for key, p in PERCENTILE_KEYS
        }
        encoded = total.encode()
        hdrh = encoded.decode("ascii") if isinstance(encoded, bytes) else str(encoded)
    else:
        values = {
            key: within(sum(getattr(p, key) for p in points) / len(points), low, high)
            for key, _ in PERCENTILE_KEYS
        }
        hdrh = None
    return replace(
        points[0],
        rx_packets=sum(p.rx_packets for p in points),
        load_pps=sum(p.load_pps for p in points) / len(points),
        min_ns=low,
        max_ns=high,
        p50_ns=values["p50_ns"],
        p90_ns=values["p90_ns"],
        p99_ns=values["p99_ns"],
        p999_ns=values["p999_ns"],
        hdrh=hdrh,
        valid=all(p.valid for p in points),
    )


def compare_latency(baseline: Sequence[TestRun], current: Sequence[TestRun]) -> tuple[LatencyCell, ...]:
    """Return one cell per (frame size or mix, flows, share of PDR) either side measured, ascending.

    Empty when neither side has latency at shares of the PDR load.
    """
    keys = sorted(
        {(p.traffic, p.percent_of_pdr) for r in [*baseline, *current] for p in r.latency},
        key=lambda key: (key[0].sort_key(), key[1]),
    )

    def side(runs: Sequence[TestRun], traffic: TrafficKey, percent: float) -> LatencyPoint | None:
        return merge(
            [p for r in runs for p in r.latency if (p.traffic, p.percent_of_pdr) == (traffic, percent)]
        )

    return tuple(
        LatencyCell(
            traffic.frame_size_bytes,
            percent,
            side(baseline, traffic, percent),
            side(current, traffic, percent),
            mix=traffic.mix,
            flows=traffic.flows,
        )
        for traffic, percent in keys
    )
