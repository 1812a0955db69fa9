"""resultstore.trend.analyse_series classifies series together: the same analyses as one by one.

Cold series of equal and different lengths, series extended from a cached analysis, in one
process and in worker processes: every analysis must equal :func:`analyse` (cold) or
:func:`extend` (cached) of that series alone, verdict for verdict and number for number.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from reporting.changepoints import analyse, extend
from resultstore.model import Series, SeriesKey, SeriesPoint
from resultstore.trend import PARALLEL_FROM, analyse_series, series_digest

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _series(number: int, builds: int, rng: random.Random) -> Series:
    metric = "ndr_fps" if number % 3 else "latency_avg_ns"  # one direction and the other
    key = SeriesKey("OVS_DPDK1q", "phy2phy_tput", "p2p", 64 + number, metric, "")
    step = rng.randrange(builds) if builds > 1 else 0
    points = []
    for b in range(builds):
        level = 1e7 * (0.93 if b >= step else 1.0)
        repeats = 1 if number % 4 else 2
        values = tuple(
            level * rng.gauss(1.0, 0.02) * (0.5 if rng.random() < 0.03 else 1.0) for _ in range(repeats)
        )
        points.append(
            SeriesPoint(f"r{b}", T0 + timedelta(days=b), values, None, None, None, None, None, None)
        )
    return Series(key, tuple(points))


def _better(series: Series) -> bool:
    return series.key.metric == "ndr_fps"


@pytest.mark.parametrize("workers", [1, 2])
def test_series_analysed_together_equal_each_analysed_alone(workers: int) -> None:
    rng = random.Random(7)
    lengths = [1, 2, 5, 40, 40, 40, 97, 97, 150] * 3
    series = [_series(n, builds, rng) for n, builds in enumerate(lengths)]
    assert len(series) >= PARALLEL_FROM  # the worker processes are used with 2 workers

    # A cache of each series' first builds (all but 7): those are extended, the others cold.
    cache = {}
    for s in series[::2]:
        if len(s.points) > 8:
            head = Series(s.key, s.points[:-7])
            cache[s.key] = (
                series_digest(head),
                analyse([p.values for p in head.points], higher_is_better=_better(s)).to_json(),
            )
    trends, new_cache = analyse_series(series, {}, cache=cache, workers=workers)

    assert len(new_cache) == len(series)
    by_key = {t.series.key: t.analysis for t in trends}
    for s in series:
        values = [p.values for p in s.points]
        if s.key in cache:
            head = analyse(values[:-7], higher_is_better=_better(s))
            alone = extend(head, values, higher_is_better=_better(s))
        else:
            alone = analyse(values, higher_is_better=_better(s))
        assert by_key[s.key] == alone, s.key
