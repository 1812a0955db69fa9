"""Compare the DUT's own view, baseline against current: cycles per packet, PMD busy, cache hits.

One :class:`~reporting.model.TelemetryCell` per frame size either side has telemetry for
(``ovsperf-telemetry.json``, :mod:`reporting.load_telemetry`). Several runs on a side are pooled
by the mean of each figure. Cycles per packet is compared like throughput but inverted (more
cycles per packet is worse): its change is marked when it reaches the regression threshold.
It does not change the verdict (docs/reporting.md says why).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from ovsperf_common.framemix import TrafficKey
from reporting.metrics import METRICS
from reporting.model import TelemetryCell, Thresholds
from reporting.resultmodel import TelemetryPoint, TestRun

CYCLES_PER_PACKET = METRICS["cycles_per_packet"]
"""How cycles per packet is compared: lower is better, a rise marked (``Metric.compare``)."""


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.fmean(known) if known else None


def _side(runs: Sequence[TestRun], key: tuple[int | None, str, int | None]) -> tuple[TelemetryPoint, ...]:
    return tuple(p for r in runs for p in r.telemetry if p.key == key)


def compare_telemetry(
    baseline: Sequence[TestRun], current: Sequence[TestRun], thresholds: Thresholds
) -> tuple[TelemetryCell, ...]:
    """Return one cell per (frame size or mix, flows) with telemetry on either side; empty when none has.

    VSperf's whole-test windows (frame size None) form one cell, first, compared only with each
    other: a test window mixes every frame size's trials and is never set against one lab trial.
    """
    keys = sorted(
        {p.key for r in [*baseline, *current] for p in r.telemetry},
        key=lambda key: (-1, "", 0) if key[0] is None else TrafficKey(key[0], key[1], key[2]).sort_key(),
    )
    cells = []
    for key in keys:
        base, cur = _side(baseline, key), _side(current, key)
        b_cpp = _mean([p.cycles_per_packet for p in base])
        c_cpp = _mean([p.cycles_per_packet for p in cur])
        change, marked = CYCLES_PER_PACKET.compare(b_cpp, c_cpp, thresholds.regression_percent)
        cells.append(
            TelemetryCell(
                frame_size_bytes=key[0],
                mix=key[1],
                flows=key[2],
                baseline=base,
                current=cur,
                baseline_cycles_per_packet=b_cpp,
                current_cycles_per_packet=c_cpp,
                cycles_change_percent=change,
                marked=marked,
                baseline_busy_percent=_mean([p.pmd_busy_percent for p in base]),
                current_busy_percent=_mean([p.pmd_busy_percent for p in cur]),
            )
        )
    return tuple(cells)
