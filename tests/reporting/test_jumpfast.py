"""reporting.jumpfast against jumpavg.classify itself: the same groups, statistics and bits.

The reference is ``jumpavg.classify`` (FD.io CSIT's package, the version pinned): every case
compares the boundaries, each group's size, average and stdev, the scale (max value, unit) and
the total bits, all for exact equality. Series: generated ones (steps, drifts, outliers, repeats,
constant values, few distinct values, one build, large and small magnitudes) and the published
ones of tests/reporting/test_changepoint_references.py (MongoDB signal-processing-algorithms'
``tests/test_detection.py``, Apache Otava's ``examples/postgresql`` rows).
"""

from __future__ import annotations

import json
import math
import random

import jumpavg
import pytest

from reporting import jumpcount, jumpfast
from reporting.changepoints import ChangePointVerdict, analyse
from tests.reporting.test_changepoint_references import MONGODB_CASES, OTAVA_DIFF, OTAVA_MEAN, RANDOM_ISH


def _same(values: list[list[float]]) -> jumpfast.Classification:
    """Assert the fast classification equals jumpavg's in every number; return it."""
    fast = jumpfast.classify(values)
    ref = jumpfast.reference(values)
    assert fast.bounds == ref.bounds
    assert fast.groups == ref.groups  # sizes, averages and stdevs to the last bit
    assert (fast.max_value, fast.unit, fast.bits) == (ref.max_value, ref.unit, ref.bits)
    return fast


def _generated(seed: int) -> list[list[float]]:
    """One generated series of 1–150 builds; the kind and its parameters come from ``seed``."""
    rng = random.Random(seed)
    n = rng.randint(1, 150)
    kind = seed % 9
    scale = 10.0 ** rng.uniform(-60, 60) if kind == 8 else rng.choice([1.0, 1e3, 1.4e7])
    noise = rng.choice([0.0005, 0.01, 0.03, 0.1])
    steps = sorted(rng.sample(range(n), min(n, rng.randint(0, 4))))
    factors = [rng.choice([0.5, 0.9, 0.94, 1.04, 1.1, 2.0]) for _ in steps]
    series = []
    for b in range(n):
        level = scale * math.prod(f for s, f in zip(steps, factors, strict=True) if b >= s)
        if kind == 1:
            level *= 1 + 0.3 * b / n  # a drift
        if kind == 2 and rng.random() < 0.08:
            level *= rng.choice([0.4, 0.6, 1.5])  # outliers
        repeats = rng.randint(1, 5) if kind == 3 else 1
        values = [level * rng.gauss(1.0, noise) for _ in range(repeats)]
        if kind == 4:
            values = [scale] * repeats  # constant
        if kind == 5:
            values = [scale * rng.choice([1.0, 2.0, 3.0]) for _ in range(repeats)]  # few distinct values
        if kind == 6:
            values = [round(v, 3 - int(math.log10(scale))) for v in values]  # coarse: many repeats
        if kind == 7:
            values = [level * (1.0 + 0.05 * (b % 2))]  # alternating
        series.append([abs(v) or scale for v in values])
    return series


@pytest.mark.parametrize("seed", range(400))
def test_generated_series_are_grouped_as_jumpavg_groups_them(seed: int) -> None:
    _same(_generated(seed))


@pytest.mark.parametrize("case", MONGODB_CASES, ids=[c[0] for c in MONGODB_CASES])
def test_published_mongodb_series_are_grouped_as_jumpavg_groups_them(case: tuple[object, ...]) -> None:
    series = case[1]
    assert isinstance(series, list)
    _same([[float(v)] for v in series])


def test_published_otava_series_and_a_random_ish_one_with_repeats() -> None:
    _same([[float(v)] for v in OTAVA_MEAN])
    _same([[float(v)] for v in OTAVA_DIFF])
    _same([[float(a), float(b)] for a, b in zip(RANDOM_ISH[::2], RANDOM_ISH[1::2], strict=True)])


def test_one_build_and_one_value_give_one_group() -> None:
    one = _same([[7.0]])
    assert one.bounds == [(0, 1)]
    assert one.groups[0].average == 7.0
    assert jumpfast.classify([]).groups == ()


def test_near_ties_are_decided_by_jumpavgs_own_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the error bound made huge every candidate is recounted by jumpavg: still the same groups."""
    monkeypatch.setattr(jumpfast, "RELATIVE_TOLERANCE", 1.0)
    for seed in (0, 4, 5, 7, 11, 16):
        fast = _same(_generated(seed))
        assert fast.recounted > 0 or len(fast.groups) == len(_generated(seed))


def test_a_year_of_nightlies_needs_no_recount() -> None:
    rng = random.Random(11)
    series = [[1.2e7 * (0.94 if b >= 300 else 1.0) * rng.gauss(1.0, 0.02)] for b in range(365)]
    fast = _same(series)
    assert fast.recounted == 0
    assert 300 <= fast.groups[-1].start <= 305  # the step at 300 (noise 2 %, step 6 %)


@pytest.mark.parametrize("value", [1e200, 1e-200, 2.0**401])
def test_magnitudes_outside_the_fast_range_are_jumpavgs_own_answer(
    value: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """jumpavg's squares overflow from ~1e154 (NaN stdevs: each build a group); the answer is its own."""
    series = [[value * (1.0 + 0.01 * (b % 3))] for b in range(12)] + [[value * 2]] * 12
    assert repr(jumpfast.classify(series)) == repr(jumpfast.reference(series))
    today = json.dumps(analyse(series).to_json())
    monkeypatch.setattr(jumpfast, "classify", jumpfast.reference)  # the analysis as it was: jumpavg's
    assert today == json.dumps(analyse(series).to_json())


def test_a_subnormal_series_is_refused_as_jumpavg_refuses_it() -> None:
    """5e-324 / 8191 is 0: jumpavg divides by a zero unit; so does the analysis, as before."""
    with pytest.raises(ZeroDivisionError):
        jumpfast.reference([[5e-324], [5e-324]])
    with pytest.raises(ZeroDivisionError):
        analyse([[5e-324], [5e-324]])


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 0.0, -1.0])
def test_nan_inf_and_non_positive_values_are_refused_naming_the_build(bad: float) -> None:
    with pytest.raises(ValueError, match=r"build 2 of the series has no finite positive value"):
        analyse([[1.0], [1.1], [1.0, bad], [1.0]])


def test_a_build_without_values_is_refused() -> None:
    with pytest.raises(ValueError, match=r"build 1 of the series has no finite positive value: \(\)"):
        analyse([[1.0], []])


@pytest.mark.timeout(300)
def test_twenty_thousand_builds_are_analysed_without_hanging() -> None:
    """The interpreter steps grow linearly; 20,000 builds take seconds (jumpavg itself: hours)."""
    rng = random.Random(5)
    n = 20_000
    series = [[1e7 * (0.9 if b >= 15_000 else 1.0) * rng.gauss(1.0, 0.02)] for b in range(n)]
    result = analyse(series)
    assert [c.index for c in result.changes] == [15_000]
    assert result.changes[0].verdict is ChangePointVerdict.REGRESSION
    assert len(result.verdicts) == n


def test_constant_series_is_one_group() -> None:
    fast = _same([[3.0]] * 200)
    assert fast.bounds == [(0, 200)]
    assert fast.groups[0].stdev == 0.0


def test_series_classified_together_are_each_grouped_as_jumpavg_groups_them() -> None:
    """classify_many runs series of one length as one program: no series may see another's numbers."""
    series = [_generated(seed) for seed in range(60)]
    series += [[[v * 1.5 for v in build] for build in s] for s in series[:10]]  # same lengths, other values
    together = jumpfast.classify_many(series)
    assert len(together) == len(series)
    for values, result in zip(series, together, strict=True):
        ref = jumpfast.reference(values)
        assert (result.groups, result.bits, result.unit) == (ref.groups, ref.bits, ref.unit)


def test_the_exact_count_is_jumpavgs_bit_count_to_the_last_bit() -> None:
    rng = random.Random(3)
    tables = jumpcount.SizeTables(64)
    for _ in range(3000):
        max_value = 10.0 ** rng.uniform(-30, 30)
        unit = max_value / jumpcount.MAX_IN_UNITS
        size = rng.randint(1, 64)
        average = max_value * rng.uniform(0.01, 1.0)
        stdev = average * rng.choice([0.0, 1e-9, 0.01, 0.3])
        prev = None if rng.random() < 0.2 else max_value * rng.uniform(0.01, 1.0)
        expected = jumpavg.BitCountingStats.for_runs_and_params(
            runs=[jumpavg.AvgStdevStats(size=size, avg=average, stdev=stdev)],
            max_value=max_value,
            unit=unit,
            prev_avg=prev,
        ).bits
        assert jumpcount.exact_bits(tables, max_value, unit, size, average, stdev, prev) == expected


# ---- bad input (issue 31): the same answers or refusals as jumpavg's own path, never a hang ----


def _as_before(series: list[list[float]], monkeypatch: pytest.MonkeyPatch) -> str:
    """Return the analysis of ``series`` with jumpavg.classify itself, as the analysis ran before jumpfast."""
    with monkeypatch.context() as patch:
        patch.setattr(jumpfast, "classify_many", lambda many: [jumpfast.reference(s) for s in many])
        return json.dumps(analyse(series).to_json())


def test_one_build_is_analysed_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    for series in ([[7.0]], [[7.0, 7.5, 6.5]]):
        result = analyse(series)
        assert [(g.start, g.end) for g in result.groups] == [(0, 1)]
        assert result.changes == () and result.verdicts == (ChangePointVerdict.NORMAL,)
        assert json.dumps(result.to_json()) == _as_before(series, monkeypatch)


def test_constant_values_are_analysed_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    for series in ([[3.0]] * 500, [[3.0, 3.0]] * 300, [[1.4e7]] * 2 + [[1.5e7]] * 2):
        result = analyse(series)
        assert json.dumps(result.to_json()) == _as_before(series, monkeypatch)
    flat = analyse([[3.0]] * 500)
    assert [(g.start, g.end, g.average, g.stdev) for g in flat.groups] == [(0, 500, 3.0, 0.0)]
    assert set(flat.verdicts) == {ChangePointVerdict.NORMAL}


@pytest.mark.parametrize("exponent", [-399, -200, -60, 60, 200, 399])
def test_huge_and_tiny_magnitudes_inside_the_fast_range_are_grouped_as_jumpavg_groups_them(
    exponent: int,
) -> None:
    rng = random.Random(exponent)
    scale = 2.0**exponent
    series = [[scale * (0.9 if b >= 40 else 1.0) * rng.gauss(1.0, 0.02)] for b in range(80)]
    fast = _same(series)
    assert [g.start for g in fast.groups][-1] in range(38, 43)  # the step at 40 is found at any scale


@pytest.mark.timeout(120)
def test_a_long_series_outside_the_fast_range_is_refused_at_once_not_left_to_run_for_hours() -> None:
    """jumpavg.classify alone groups it, in hours for 20,000 builds: refused at once, the limit named."""
    series = [[1e200 * (1.0 + 0.01 * (b % 3))] for b in range(20_000)]
    message = r"a series of 20000 builds has values outside \[2\^-400, 2\^400\].*refused beyond 1000 builds"
    with pytest.raises(ValueError, match=message):
        analyse(series)
    with pytest.raises(ValueError, match=message):
        jumpfast.classify_many([[[1.0]] * 5, series])
    assert len(jumpfast.classify([[1e200]] * 30).groups) >= 1  # a short one still gets jumpavg's answer


@pytest.mark.timeout(300)
def test_tens_of_thousands_of_builds_with_outliers_throughout_are_judged_without_hanging() -> None:
    """Every tenth build an outlier: 1,200 short groups between 1,200 others, all merged back into one.

    The merge of weak splits recounted the growing group at every boundary and each outlier's band
    re-read it (quadratic: minutes); both now carry the group on (linear).
    """
    rng = random.Random(2)
    n = 12_000
    series = [[1e7 * (0.5 if b % 10 == 5 else 1.0) * rng.gauss(1.0, 0.02)] for b in range(n)]
    assert len(jumpfast.classify(series).groups) > 2000
    result = analyse(series)
    assert len(result.verdicts) == n
    assert result.changes == () and [(g.start, g.end) for g in result.groups] == [(0, n)]
    outliers = [b for b, v in enumerate(result.verdicts) if v is ChangePointVerdict.OUTLIER]
    assert set(range(5, n, 10)) <= set(outliers)  # every dip, and a rare noisy build besides
    assert len(outliers) - n // 10 <= 5
