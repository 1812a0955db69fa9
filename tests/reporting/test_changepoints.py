"""reporting.changepoints: jumpavg groups plus our outlier and confidence rules, on series whose
answer is known by construction."""

from __future__ import annotations

import random

import jumpavg
import pytest

from reporting import changepoints
from reporting.changepoints import MIN_SAVED_BITS, ChangePointVerdict, SeriesAnalysis, analyse, extend


def noisy(level: float, n: int, cv: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [level * rng.gauss(1.0, cv) for _ in range(n)]


def single(values: list[float]) -> list[list[float]]:
    return [[v] for v in values]


def test_flat_series_has_one_group_and_no_change() -> None:
    values = noisy(7e6, 120, 0.02, 1)
    result = analyse(single(values))
    assert result.changes == ()
    assert len(result.groups) == 1
    assert result.groups[0].start == 0 and result.groups[0].end == 120
    assert result.groups[0].average == pytest.approx(sum(values) / 120)
    assert set(result.verdicts) == {ChangePointVerdict.NORMAL}


def test_step_down_is_a_regression_at_its_build_with_size_and_confidence() -> None:
    values = noisy(7e6, 40, 0.01, 2) + noisy(7e6 * 0.94, 40, 0.01, 3)
    result = analyse(single(values))
    assert len(result.changes) == 1
    change = result.changes[0]
    assert abs(change.index - 40) <= 1
    assert change.verdict is ChangePointVerdict.REGRESSION
    assert change.step_percent == pytest.approx(-6.0, abs=0.8)
    assert change.confidence > 0.999
    assert result.verdicts[change.index] is ChangePointVerdict.REGRESSION
    assert [g.end - g.start for g in result.groups] == [change.index, 80 - change.index]


def test_step_up_is_a_progression_and_latency_rise_a_regression() -> None:
    values = noisy(5e6, 30, 0.01, 4) + noisy(5.5e6, 30, 0.01, 5)
    assert analyse(single(values)).changes[0].verdict is ChangePointVerdict.PROGRESSION
    latency = analyse(single(values), higher_is_better=False)
    assert latency.changes[0].verdict is ChangePointVerdict.REGRESSION


def test_single_dip_is_an_outlier_not_two_changes() -> None:
    values = noisy(7e6, 60, 0.02, 6)
    values[30] = 3e6
    result = analyse(single(values))
    assert result.changes == ()
    assert result.verdicts[30] is ChangePointVerdict.OUTLIER
    assert [i for i, v in enumerate(result.verdicts) if v is not ChangePointVerdict.NORMAL] == [30]
    # The outlier does not pull its group's average down.
    assert result.groups[0].average == pytest.approx(sum(values[:30] + values[31:]) / 59)


def test_two_build_dip_and_a_bad_first_build_are_outliers() -> None:
    values = noisy(7e6, 60, 0.02, 7)
    values[20] = values[21] = 3.5e6
    values[0] = 2e6
    result = analyse(single(values))
    assert result.changes == ()
    assert {i for i, v in enumerate(result.verdicts) if v is ChangePointVerdict.OUTLIER} == {0, 20, 21}


def test_newest_build_far_off_is_a_change_not_an_outlier() -> None:
    values = [*noisy(7e6, 50, 0.01, 8), 5e6]
    result = analyse(single(values))
    assert [(c.index, c.verdict) for c in result.changes] == [(50, ChangePointVerdict.REGRESSION)]


def test_weak_split_is_merged() -> None:
    # A 0.5 % step under 5 % noise cannot save MIN_SAVED_BITS: no change point.
    values = noisy(7e6, 40, 0.05, 9) + noisy(7e6 * 0.995, 40, 0.05, 10)
    assert analyse(single(values)).changes == ()
    assert MIN_SAVED_BITS == pytest.approx(3.3219, abs=1e-3)


def test_repeats_are_one_build() -> None:
    rng = random.Random(11)
    builds = [[7e6 * rng.gauss(1, 0.02) for _ in range(3)] for _ in range(20)]
    builds += [[6.3e6 * rng.gauss(1, 0.02) for _ in range(3)] for _ in range(20)]
    result = analyse(builds)
    assert len(result.verdicts) == 40
    assert [(c.index, c.verdict) for c in result.changes] == [(20, ChangePointVerdict.REGRESSION)]


def test_analysis_round_trips_through_json() -> None:
    values = noisy(7e6, 30, 0.01, 12) + noisy(6e6, 30, 0.01, 13)
    values[10] = 1e6
    result = analyse(single(values))
    assert SeriesAnalysis.from_json(result.to_json()) == result


@pytest.mark.parametrize("bad", [[[]], [[0.0]], [[-1.0]], [[float("nan")]], [[float("inf")]]])
def test_values_that_are_not_finite_and_positive_are_refused(bad: list[list[float]]) -> None:
    with pytest.raises(ValueError, match="build 1 of the series"):
        analyse([[7e6], *bad])  # type: ignore[list-item]


def test_empty_series() -> None:
    assert analyse([]) == SeriesAnalysis((), (), ())


def test_extend_equals_a_full_analysis_and_keeps_old_boundaries() -> None:
    rng = random.Random(14)
    values = [[7e6 * rng.gauss(1, 0.02) * (0.94 if i >= 150 else 1.0)] for i in range(365)]
    values[40] = [3e6]
    full = analyse(values)
    earlier = analyse(values[:330])
    extended = extend(earlier, values)
    assert [(c.index, c.verdict) for c in extended.changes] == [(c.index, c.verdict) for c in full.changes]
    assert extended.verdicts == full.verdicts
    assert [(g.start, g.end) for g in extended.groups] == [(g.start, g.end) for g in full.groups]
    assert extended.changes[0].step_percent == pytest.approx(full.changes[0].step_percent, abs=1e-9)
    # A step among the new builds is found there.
    grown = values + [[6.0e6 * rng.gauss(1, 0.02)] for _ in range(10)]
    later = extend(full, grown)
    assert [(c.index, c.verdict) for c in later.changes][-1] == (365, ChangePointVerdict.REGRESSION)
    with pytest.raises(ValueError, match="fewer than the 365"):
        extend(full, values[:300])


def test_extend_of_a_short_history_is_a_full_analysis() -> None:
    values = [[v] for v in noisy(7e6, 40, 0.01, 15)]
    assert extend(analyse(values[:30]), values) == analyse(values)


def _glist_bits(parts: list[list[list[float]]], max_value: float, unit: float) -> float:
    """Return jumpavg's own bit count of consecutive groups (each a list of builds' repeats)."""
    glist = jumpavg.BitCountingGroupList(max_value=max_value, unit=unit)
    for part in parts:
        glist = glist.append_group_of_runs([jumpavg.AvgStdevStats.for_runs(r) for r in part])
    return float(glist.bits)


def test_the_carried_statistics_count_the_bits_jumpavgs_group_list_counts() -> None:
    """The merge of weak splits carries a group's Welford state on (linear); the bits are jumpavg's."""
    rng = random.Random(4)
    for _ in range(300):
        level = 10.0 ** rng.uniform(-5, 9)
        groups = [
            [[level * rng.choice([1.0, 1.05]) * rng.gauss(1.0, 0.02) for _ in range(rng.randint(1, 3))]
             for _ in range(rng.randint(1, 40))]
            for _ in range(2)
        ]  # fmt: skip
        max_value = max(v for g in groups for r in g for v in r)
        unit = max_value / 8191.0
        before, after = (changepoints._welford(changepoints._build_stats(g)) for g in groups)
        joined = changepoints._welford(changepoints._build_stats(groups[1]), before)
        expected = _glist_bits([groups[0] + groups[1]], max_value, unit) - _glist_bits(
            groups, max_value, unit
        )
        assert changepoints._saved_bits(before, after, joined, max_value, unit) == expected
