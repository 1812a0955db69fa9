"""Latency at defined loads: trials at fixed shares of the PDR load, kept as HdrHistograms.

After the throughput search, CSIT measures latency at 0 % (a small fixed rate), 10 %, 50 % and
90 % of the PDR load (CSIT trending: "latency at 50 % PDR"; NFVbench does the same at fractions of
its NDR/PDR), not at the zero-loss edge where a scheduler stall decides the tail. Each trial asks
the generator for its latency histogram (``"latency_histogram": true``, docs/trafficgen.md) and
records the buckets into an HdrHistogram (PyPI ``hdrhistogram``, the Python port of Gil Tene's
HdrHistogram), which is kept encoded (HdrHistogram V2 compressed, base64) so that it can be merged
with other runs and re-plotted later (``HdrHistogram.decode``). Format: docs/results-format.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hdrh.histogram import HdrHistogram

from ovsperf_common.framemix import FrameSizeItem, item_text
from ovsperf_lab.errors import LabError
from ovsperf_lab.generators.api import TrafficGenerator
from ovsperf_lab.model import DirectionResult, TrialSpec
from ovsperf_lab.search.mlrconfig import CSIT_MIN_LOAD_PPS

HDR_LOWEST_NS = 1
"""Smallest value the histograms resolve [ns]."""
HDR_HIGHEST_NS = 60_000_000_000
"""Largest value the histograms hold [ns] (60 s; larger values are clamped)."""
HDR_SIGNIFICANT_DIGITS = 3
"""Value precision of the histograms: 3 significant decimal digits (0.1 %)."""

PERCENTILES = (("p50_ns", 50.0), ("p90_ns", 90.0), ("p99_ns", 99.0), ("p999_ns", 99.9))
"""Percentiles kept with every summary: key, percentile [%]."""


def new_histogram() -> HdrHistogram:
    """Return an empty histogram with the lab's range and precision (values in ns)."""
    return HdrHistogram(HDR_LOWEST_NS, HDR_HIGHEST_NS, HDR_SIGNIFICANT_DIGITS)


def record_buckets(histogram: HdrHistogram, buckets: Sequence[tuple[float, int]]) -> None:
    """Record the generator's ``(middle [ns], count)`` buckets into ``histogram``.

    Middles are rounded to whole ns and clamped to [:data:`HDR_LOWEST_NS`, :data:`HDR_HIGHEST_NS`].
    """
    for middle_ns, count in buckets:
        value = min(max(round(middle_ns), HDR_LOWEST_NS), HDR_HIGHEST_NS)
        histogram.record_value(value, count)


@dataclass(frozen=True)
class LatencySummary:
    """Latency of the frames of one direction (or of all directions) of one trial."""

    rx_packets: int
    """Frames the histogram holds [1]."""
    min_ns: float
    """Exact minimum, from the generator [ns]."""
    avg_ns: float
    """Exact mean, from the generator (weighted by frames over directions) [ns]."""
    max_ns: float
    """Exact maximum, from the generator [ns]."""
    p50_ns: float
    """Median from the histogram [ns] (value at or below which 50 % of frames lie)."""
    p90_ns: float
    """90th percentile from the histogram [ns]."""
    p99_ns: float
    """99th percentile from the histogram [ns]."""
    p999_ns: float
    """99.9th percentile from the histogram [ns]."""
    hdrh: str
    """The histogram, HdrHistogram V2 compressed and base64-encoded."""

    def to_json(self) -> dict[str, Any]:
        """Return the JSON object of ``ovsperf-latency.json`` (keys as docs/results-format.md)."""
        return {
            "rx_packets": self.rx_packets,
            "min_ns": self.min_ns,
            "avg_ns": self.avg_ns,
            "p50_ns": self.p50_ns,
            "p90_ns": self.p90_ns,
            "p99_ns": self.p99_ns,
            "p999_ns": self.p999_ns,
            "max_ns": self.max_ns,
            "hdrh": self.hdrh,
        }


def summarize(directions: Sequence[DirectionResult]) -> LatencySummary | None:
    """Merge the histograms of ``directions`` into one summary; ``None`` when none has latency.

    Percentiles come from the merged histogram, so they are of every frame received, each the
    highest value of its bucket (within 0.1 %, 3 significant digits) clamped to [min, max]; min,
    max and mean are the generator's exact values.
    """
    measured = [
        d
        for d in directions
        if d.latency_histogram
        and d.latency_min_ns is not None
        and d.latency_max_ns is not None
        and d.latency_avg_ns is not None
    ]
    if not measured:
        return None
    histogram = new_histogram()
    for d in measured:
        record_buckets(histogram, d.latency_histogram or ())
    frames = histogram.get_total_count()
    weights = sum(d.rx_packets for d in measured) or 1
    low = min(d.latency_min_ns for d in measured if d.latency_min_ns is not None)
    high = max(d.latency_max_ns for d in measured if d.latency_max_ns is not None)
    # HdrHistogram answers a percentile with the highest value of its bucket, which can lie above
    # the exact maximum: a percentile is kept within the exact extremes.
    values = {key: min(max(float(histogram.get_value_at_percentile(p)), low), high) for key, p in PERCENTILES}
    return LatencySummary(
        rx_packets=frames,
        min_ns=low,
        avg_ns=sum((d.latency_avg_ns or 0.0) * d.rx_packets for d in measured) / weights,
        max_ns=high,
        hdrh=histogram.encode().decode("ascii"),
        **values,
    )


@dataclass(frozen=True)
class LatencyLevel:
    """The latency trial at one share of the PDR load."""

    percent_of_pdr: float
    """Share of the PDR load [%]; 0 means the fixed minimum load."""
    load_pps: float
    """Offered load per direction [pps]."""
    duration_s: float
    """Trial duration [s]."""
    valid: bool
    """Whether the generator sent what was asked."""
    invalid_reason: str | None
    """The generator's reason when not :attr:`valid`."""
    loss_ratio: float
    """Aggregate loss ratio of the trial [1] (expected near 0 below the PDR load)."""
    all: LatencySummary | None
    """All directions merged; ``None`` when no frame came back."""
    directions: tuple[tuple[int, int, LatencySummary | None], ...]
    """``(tx_port, rx_port, summary)`` per direction."""

    def to_json(self) -> dict[str, Any]:
        """Return one ``levels[]`` object of ``ovsperf-latency.json``."""
        return {
            "percent_of_pdr": self.percent_of_pdr,
            "load_fps_per_direction": self.load_pps,
            "duration_s": self.duration_s,
            "valid": self.valid,
            "invalid_reason": self.invalid_reason,
            "loss_ratio": self.loss_ratio,
            "all": None if self.all is None else self.all.to_json(),
            "directions": [
                {"tx_port": tx, "rx_port": rx, **({} if s is None else s.to_json())}
                for tx, rx, s in self.directions
            ],
        }


def level_load_pps(percent_of_pdr: float, pdr_pps: float, min_load_pps: float = CSIT_MIN_LOAD_PPS) -> float:
    """Return the load of a latency level per direction [pps].

    ``pdr × percent / 100``, at least ``min_load_pps`` (0 % is CSIT's minimum load, enough frames
    for a histogram).
    """
    return max(min_load_pps, pdr_pps * percent_of_pdr / 100.0)


def measure_levels(
    generator: TrafficGenerator,
    *,
    frame_size_bytes: FrameSizeItem,
    pdr_pps: float,
    levels_percent: Sequence[float],
    duration_s: float,
    flows: int,
    drain_s: float,
    log: logging.Logger,
    bidirectional: bool = True,
    on_start: Callable[[float, float, float], None] | None = None,
    min_load_pps: float = CSIT_MIN_LOAD_PPS,
) -> tuple[LatencyLevel, ...]:
    """Run one latency trial per level of ``levels_percent`` (ascending) at shares of ``pdr_pps``.

    :param pdr_pps: the PDR load per direction [pps] (MLRsearch's relevant lower bound).
    :param on_start: called with (percent of PDR, load per direction [pps], duration [s]) before
        each trial (progress).
    :param min_load_pps: the lowest load of a level (the search's minimum load) [pps].
    :returns: one :class:`LatencyLevel` per level, ascending.
    :raises LabError: when ``pdr_pps`` is not positive.
    :raises TrafficGeneratorError: from the generator.
    """
    if not pdr_pps > 0:
        raise LabError(f"Latency trials need a positive PDR load, got {pdr_pps!r} pps.")
    levels: list[LatencyLevel] = []
    for percent in sorted(levels_percent):
        load = level_load_pps(percent, pdr_pps, min_load_pps)
        if on_start is not None:
            on_start(percent, load, duration_s)
        spec = TrialSpec(
            frame_size_bytes=frame_size_bytes,
            rate_pps=load,
            duration_s=duration_s,
            bidirectional=bidirectional,
            flows=flows,
            drain_s=drain_s,
            latency_histogram=True,
        )
        result = generator.run_trial(spec)
        level = LatencyLevel(
            percent_of_pdr=percent,
            load_pps=load,
            duration_s=duration_s,
            valid=result.valid,
            invalid_reason=result.invalid_reason,
            loss_ratio=result.loss_ratio,
            all=summarize(result.directions),
            directions=tuple((d.tx_port, d.rx_port, summarize((d,))) for d in result.directions),
        )
        summary = level.all
        log.info(
            "%s latency at %g %% of PDR (%.0f pps/dir, %g s): %s%s.",
            item_text(frame_size_bytes),
            percent,
            load,
            duration_s,
            "no frames"
            if summary is None
            else f"p50 {summary.p50_ns / 1e3:.1f} µs, p99 {summary.p99_ns / 1e3:.1f} µs, "
            f"p99.9 {summary.p999_ns / 1e3:.1f} µs, max {summary.max_ns / 1e3:.1f} µs",
            "" if result.valid else f" (invalid: {result.invalid_reason})",
        )
        levels.append(level)
    return tuple(levels)
