"""Translate a lab trial to a TRex trial request and TRex's counters back to a ``TrialResult``.

Pure functions of :mod:`ovsperf_lab.generators.trex` (the ``trex`` backend); the request and reply
shapes are :mod:`ovsperf_common.trexdriver`'s ``trial``.

**Counts.** Per direction *p → q*: TX is TRex port *p*'s ``opackets``, RX port *q*'s ``ipackets``
(TRex's per-port counters, ``get_port_stats``, cleared before the counted traffic). A latency
trial sends one latency stream per direction (``STLFlowLatencyStats``) *inside* the offered rate
(at most :data:`LATENCY_PPS`, CSIT's 9 kpps), so the load stays the one the search asked for.

**Latency, and what can be reconstructed.** TRex timestamps latency-stream frames in software
and reports per stream, in **whole microseconds** (FD.io CSIT, ``methodology_packet_latency.rst``:
"1usec is the measurement accuracy advertised by TRex"): ``total_min``, ``total_max``, an
``average`` that is a low-pass filter over sampling periods (not the mean of the frames), a coarse
log histogram (keys are bucket floors in µs: 10, 20, … 90, 100, 200, …; frames below its lowest
bucket are in none), and, since TRex v2.8x, the same samples as an encoded HdrHistogram
(``hdrh``). With ``hdrh`` the histogram is decoded at its own precision (µs values × 1000 → ns; each
bucket's median-equivalent value) and the mean is the histogram's; without, each coarse bucket is
recorded at its middle (a 10 µs bucket ±5 µs, a 100 µs bucket ±50 µs), frames TRex put in no
bucket are missing, and the mean is TRex's filtered ``average``. Either way: nothing below 1 µs,
percentiles no finer than TRex's histogram (kept within TRex's min and max), and only the latency
stream's frames (9 kpps, not every frame as ``trafficgen`` measures) are in it.
``reordered_packets``/``duplicate_packets`` are the latency
stream's ``out_of_order``/``dup`` (0 for a trial without latency: TRex checks no sequence on the
other streams).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ovsperf_common.framemix import FrameMix, reduced_weights
from ovsperf_lab.errors import TrafficGeneratorError
from ovsperf_lab.model import DirectionResult, GeneratorCounters, TrialResult, TrialSpec

LATENCY_PPS = 9000.0
"""Rate of a latency stream per direction [pps] (FD.io CSIT's latency streams: 9 kpps)."""

TX_SHORTFALL_LIMIT = 0.01
"""A direction that sent less than ``1 - this`` of ``rate × duration`` frames is invalid [1]."""

MAX_FRAME_BYTES = 9216
"""Largest frame TRex sends [B] (incl. FCS; its ``--mbuf-factor``-free maximum)."""


def trial_request(spec: TrialSpec, timeout_s: float) -> dict[str, Any]:
    """Return the driver's ``trial`` request for ``spec`` (frames incl. FCS, weights reduced).

    :raises TrafficGeneratorError: for a frame larger than :data:`MAX_FRAME_BYTES`.
    """
    item = spec.frame_size_bytes
    frames = (
        [[size, weight] for size, weight in reduced_weights(item)]
        if isinstance(item, FrameMix)
        else [[item, 1]]
    )
    big = [size for size, _ in frames if size > MAX_FRAME_BYTES]
    if big:
        raise TrafficGeneratorError(
            f"Field 'frame_size_bytes': the 'trex' generator sends frames up to {MAX_FRAME_BYTES} B, "
            f"not {big[0]} B."
        )
    return {
        "cmd": "trial",
        "frames": frames,
        "rate_pps": spec.rate_pps,
        "duration_s": spec.duration_s,
        "drain_s": spec.drain_s,
        "warmup_s": spec.warmup_s,
        "bidirectional": spec.bidirectional,
        "flows": spec.flows,
        "latency": spec.latency_histogram,
        "latency_pps": LATENCY_PPS,
        "timeout_s": timeout_s,
    }


def trial_result(spec: TrialSpec, reply: Mapping[str, Any], index_of: Mapping[int, int]) -> TrialResult:
    """Return the lab's result of TRex's trial ``reply``.

    :param index_of: TRex port index → the lab's generator port (0 west, 1 east).
    :raises TrafficGeneratorError: when the reply lacks a counter (the message names it).
    """
    try:
        duration_s = float(reply["tx_duration_s"]) or spec.duration_s
        directions = tuple(
            _direction(d, index_of, duration_s, spec.latency_histogram) for d in reply["directions"]
        )
        warmup = int(reply.get("warmup_tx_packets", 0))
    except (KeyError, TypeError, ValueError) as err:
        raise TrafficGeneratorError(f"TRex's trial reply lacks a counter: {err!r}.") from err
    asked = spec.rate_pps * spec.duration_s
    short = [d for d in directions if d.tx_packets < asked * (1 - TX_SHORTFALL_LIMIT)]
    reason = None
    if short:
        d = short[0]
        reason = (
            f"TRex sent {d.tx_packets} frames on port {d.tx_port}, fewer than the "
            f"{asked:.0f} asked ({spec.rate_pps:.0f} pps for {spec.duration_s:g} s)"
        )
    return TrialResult(
        spec=spec,
        directions=directions,
        valid=not short,
        invalid_reason=reason,
        generator_counters=GeneratorCounters(warmup_tx_packets=warmup),
    )


def _direction(
    obj: Mapping[str, Any], index_of: Mapping[int, int], duration_s: float, histogram: bool
) -> DirectionResult:
    tx, rx = int(obj["opackets"]), int(obj["ipackets"])
    latency = obj.get("latency")
    fields = _latency_fields(latency, histogram) if latency else _NO_LATENCY
    return DirectionResult(
        tx_port=index_of[int(obj["tx_port"])],
        rx_port=index_of[int(obj["rx_port"])],
        tx_packets=tx,
        rx_packets=rx,
        tx_pps=tx / duration_s,
        tx_duration_s=duration_s,
        reordered_packets=int(latency.get("out_of_order", 0)) if latency else 0,
        duplicate_packets=int(latency.get("dup", 0)) if latency else 0,
        **fields,
    )


_NO_LATENCY: dict[str, Any] = {
    "latency_min_ns": None,
    "latency_avg_ns": None,
    "latency_max_ns": None,
    "latency_p50_ns": None,
    "latency_p99_ns": None,
    "latency_p999_ns": None,
    "latency_histogram": None,
}


def latency_buckets(record: Mapping[str, Any]) -> tuple[tuple[float, int], ...]:
    """Return TRex's latency record as ``(middle [ns], frames)`` buckets, ascending (module docstring)."""
    hdrh = record.get("hdrh")
    if isinstance(hdrh, str) and hdrh:
        from hdrh.histogram import HdrHistogram

        decoded = HdrHistogram.decode(hdrh)
        buckets = []
        for item in decoded.get_recorded_iterator():
            value = item.value_iterated_to
            low, high = (
                decoded.get_lowest_equivalent_value(value),
                decoded.get_highest_equivalent_value(value),
            )
            buckets.append(((low + high) / 2.0 * 1000.0, int(item.count_at_value_iterated_to)))
        return tuple(buckets)
    floors = sorted((int(k), int(v)) for k, v in (record.get("histogram_us") or {}).items() if int(v) > 0)
    buckets = []
    for floor, count in floors:
        width = 10 ** max(len(str(floor)) - 1, 0) if floor else 10
        buckets.append(((floor + width / 2) * 1000.0, count))
    return tuple(buckets)


def _latency_fields(record: Mapping[str, Any], histogram: bool) -> dict[str, Any]:
    """Return the ``latency_*`` fields of :class:`DirectionResult` from TRex's record (µs → ns)."""
    low, high = record.get("total_min_us"), record.get("total_max_us")
    buckets = latency_buckets(record)
    if low is None or high is None or not buckets:
        return dict(_NO_LATENCY)
    low_ns, high_ns = float(low) * 1000.0, float(high) * 1000.0
    total = sum(count for _, count in buckets)
    if record.get("hdrh"):
        avg_ns = sum(middle * count for middle, count in buckets) / total
    else:
        avg_ns = float(record.get("average_us") or 0.0) * 1000.0
    return {
        "latency_min_ns": low_ns,
        "latency_avg_ns": min(max(avg_ns, low_ns), high_ns),
        "latency_max_ns": high_ns,
        "latency_p50_ns": _percentile(buckets, total, 50.0, low_ns, high_ns),
        "latency_p99_ns": _percentile(buckets, total, 99.0, low_ns, high_ns),
        "latency_p999_ns": _percentile(buckets, total, 99.9, low_ns, high_ns),
        "latency_histogram": buckets if histogram else None,
    }


def _percentile(
    buckets: Sequence[tuple[float, int]], total: int, percent: float, low: float, high: float
) -> float:
    """Return the middle of the bucket holding the ``percent`` percentile, within [low, high] [ns]."""
    wanted = total * percent / 100.0
    seen = 0
    for middle, count in buckets:
        seen += count
        if seen >= wanted:
            return min(max(middle, low), high)
    return high
