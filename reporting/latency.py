"""Compare latency at shares of the PDR load, baseline against current; pure, no I/O.

Several runs on a side (repeats, several directories) are merged the HdrHistogram way: their
histograms are decoded and added (``HdrHistogram.add``), and the percentiles are read from the sum,
so a p99.9 is of every frame measured, not a mean of p99.9s. Without histograms the percentiles
of the runs are averaged. Min and max are the extremes over the runs.
"""

from __future__ import annotations

import binascii
import zlib
from collections.abc import Sequence
from dataclasses import replace

from hdrh.codec import HdrCookieException, HdrHistogramSettingsException, HdrLengthException
from hdrh.histogram import HdrHistogram

from ovsperf_common.framemix import TrafficKey
from reporting.model import LatencyCell
from reporting.resultmodel import LatencyPoint, TestRun

PERCENTILE_KEYS = (("p50_ns", 50.0), ("p90_ns", 90.0), ("p99_ns", 99.0), ("p999_ns", 99.9))
"""Percentiles read from a merged histogram: key, percentile [%]."""


def decode(hdrh: str | None) -> HdrHistogram | None:
    """Return the histogram of a base64 HdrHistogram V2 string; ``None`` when absent or unreadable."""
    if not hdrh:
        return None
    try:
        return HdrHistogram.decode(hdrh)
    except (
        binascii.Error,
        zlib.error,
        ValueError,
        TypeError,
        IndexError,
        OverflowError,
        HdrCookieException,
        HdrHistogramSettingsException,
        HdrLengthException,
    ):
        return None


def merge(points: Sequence[LatencyPoint]) -> LatencyPoint | None:
    """Return one point for several runs of the same frame size and load; ``None`` for none.

    :returns: the point itself for one run; else percentiles of the summed histograms (mean of
        the runs' percentiles when a histogram is missing or unreadable), min/max over the runs.
    """
    if not points:
        return None
    if len(points) == 1:
        return points[0]
    histograms = [decode(p.hdrh) for p in points]
    first = points[0]
    if all(h is not None for h in histograms):
        total = histograms[0]
        assert total is not None
        for other in histograms[1:]:
            total.add(other)
        values = {key: float(total.get_value_at_percentile(p)) for key, p in PERCENTILE_KEYS}
        encoded = total.encode()
        hdrh = encoded.decode("ascii") if isinstance(encoded, bytes) else str(encoded)
    else:
        values = {key: sum(getattr(p, key) for p in points) / len(points) for key, _ in PERCENTILE_KEYS}
        hdrh = None
    return replace(
        first,
        rx_packets=sum(p.rx_packets for p in points),
        load_pps=sum(p.load_pps for p in points) / len(points),
        min_ns=min(p.min_ns for p in points),
        max_ns=max(p.max_ns for p in points),
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
