"""reporting.changepoints against other projects' published change-point series.

The inputs are the series those projects publish in their own tests, written here in our format
(one list of repeats per build); the expected indexes are theirs unless a test says why ours
differ (docs/trending.md, "Checked against published series"):

* MongoDB signal-processing-algorithms 2.1.6 (E-Divisive means), ``tests/test_detection.py``,
  commit aec099a9696d17ccd1e85a357313614a01f859a2: ``test_finds_simple_regression``,
  ``test_finds_ahead``, ``test_finds_behind``, ``test_finds_simple_regression2``,
  ``test_regression_and_recovery``, ``test_two_regressions``, ``test_no_regressions``,
  ``test_random_ish_data``;
* Apache Otava 0.8.0 (tag 0.8.0-incubating-rc2, commit 1ceb1537a49d516cf6cef9a79bea6926002082f8):
  the rows of ``examples/postgresql/init-db/schema.sql`` and the report ``tests/postgres_e2e_test.py``
  expects from them (``otava analyze aggregate_mem``: config 1, one change, −5.6 % in
  ``process_cumulative_rate_mean`` at the fourth experiment, none in the other metrics); on
  MongoDB's series, Otava's answers as its ``compute_change_points`` gives them (see ``Case``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from reporting.changepoints import ChangePointVerdict, SeriesAnalysis, analyse, extend

MONGODB = "mongodb/signal-processing-algorithms@aec099a9 tests/test_detection.py"
OTAVA = "apache/otava@1ceb1537 examples/postgresql/init-db/schema.sql, tests/postgres_e2e_test.py"


def single(values: Sequence[float]) -> list[list[float]]:
    return [[float(v)] for v in values]


def with_levels(length: int, base: float, levels: dict[tuple[int, int], float]) -> list[float]:
    """MongoDB's construction: ``np.full(length, base)`` then ``series[a:b] = level`` per entry."""
    series = [base] * length
    for (a, b), level in levels.items():
        series[a:b] = [level] * (b - a)
    return series


def outliers(result: SeriesAnalysis) -> set[int]:
    return {i for i, v in enumerate(result.verdicts) if v is ChangePointVerdict.OUTLIER}


# MongoDB's test_random_ish_data: randint(1, 50) x 20, randint(60, 120) x 20, randint(150, 250) x 20.
RANDOM_ISH: list[float] = [
    41, 18, 23, 3, 32, 11, 40, 13, 29, 48, 47, 35, 18, 21, 6, 2, 23, 3, 4, 7,
    120, 103, 102, 81, 71, 62, 115, 61, 108, 63, 70, 98, 65, 96, 64, 74, 70, 113, 90, 114,
    208, 196, 153, 150, 225, 179, 206, 165, 177, 151, 218, 217, 244, 245, 229, 195, 225, 229, 176, 250,
]  # fmt: skip

Case = tuple[str, list[float], list[int], list[int], list[int], set[int]]
"""(MongoDB test, series, MongoDB's change points, Otava's, ours, our outliers).

Otava's: what Apache Otava 0.8.0's ``compute_change_points`` (window 30, p ≤ 0.001, as
benchmarks/bench_changepoints.py runs it through benchmarks/otava_driver.py) gives on the series,
run 2026-11-26; MongoDB's: what its test asserts.
"""

MONGODB_CASES: list[Case] = [
    ("test_finds_simple_regression", with_levels(30, 50, {(15, 30): 100}), [15], [15], [15], set()),
    # 74 is nearer 50 than 100: the last build of the old level, the step at 15.
    ("test_finds_ahead", [50.0] * 14 + [74.0] + [100.0] * 15, [15], [14, 15], [15], set()),
    # 76 is nearer 100: the first build of the new level, the step at 14 (not an outlier then 15).
    ("test_finds_behind", with_levels(30, 50, {(14, 15): 76, (15, 30): 100}), [14], [14, 15], [14], set()),
    (
        "test_finds_simple_regression2",
        with_levels(30, 50, {(2, 3): 100, (15, 30): 100}),
        [15],
        [15],
        [15],
        {2},
    ),
    # MongoDB reports the recovery at 33, after the lone 100 at 32; the series is back at 50 from
    # build 30, so ours is 30 (as Otava's) with 32 an outlier of the recovered group.
    (
        "test_regression_and_recovery",
        with_levels(45, 50, {(2, 3): 100, (15, 30): 100, (32, 33): 100}),
        [15, 33],
        [15, 30],
        [15, 30],
        {2, 32},
    ),
    (
        "test_two_regressions",
        with_levels(45, 50, {(2, 3): 100, (15, 30): 100, (30, 45): 150}),
        [15, 30],
        [15, 30],
        [15, 30],
        {2},
    ),
    ("test_no_regressions", [50.0] * 30, [], [], [], set()),
    ("test_random_ish_data", RANDOM_ISH, [20, 40], [20, 40, 50], [20, 40], set()),
]


@pytest.mark.parametrize(
    ("series", "mongodb", "otava", "ours", "ours_outliers"),
    [case[1:] for case in MONGODB_CASES],
    ids=[case[0] for case in MONGODB_CASES],
)
def test_mongodb_e_divisive_series(
    series: list[float], mongodb: list[int], otava: list[int], ours: list[int], ours_outliers: set[int]
) -> None:
    result = analyse(single(series))
    assert [c.index for c in result.changes] == ours, MONGODB
    assert outliers(result) == ours_outliers
    # On every series ours are the change points of one of the two references, or both.
    assert ours in (sorted(mongodb), otava)
    for change in result.changes:
        assert result.verdicts[change.index] is change.verdict


def test_a_build_half_way_through_a_step_starts_the_new_group() -> None:
    """MongoDB's 'behind' series: the step is at 14, the build there is no outlier."""
    series = with_levels(30, 50, {(14, 15): 76, (15, 30): 100})
    result = analyse(single(series))
    assert [(g.start, g.end) for g in result.groups] == [(0, 14), (14, 30)]
    assert result.verdicts[14] is ChangePointVerdict.PROGRESSION
    assert set(result.verdicts[:14]) == set(result.verdicts[15:]) == {ChangePointVerdict.NORMAL}
    assert result.groups[1].average == pytest.approx((76 + 15 * 100) / 16)
    assert result.changes[0].step_percent == pytest.approx(((76 + 1500) / 16 / 50 - 1) * 100)
    # The same series as latency (lower is better): a regression at 14.
    latency = analyse(single(series), higher_is_better=False)
    assert [(c.index, c.verdict) for c in latency.changes] == [(14, ChangePointVerdict.REGRESSION)]
    # 'ahead': the build half-way stays with the old level.
    ahead = analyse(single([50] * 14 + [74] + [100] * 15))
    assert [(g.start, g.end) for g in ahead.groups] == [(0, 15), (15, 30)]
    assert ahead.verdicts[14] is ChangePointVerdict.NORMAL


def test_two_short_groups_after_a_step_back_are_the_recovery() -> None:
    """MongoDB's 'regression and recovery' series: 50, 50 then a lone 100 after the 100s."""
    series = with_levels(45, 50, {(2, 3): 100, (15, 30): 100, (32, 33): 100})
    result = analyse(single(series))
    assert [(g.start, g.end) for g in result.groups] == [(0, 15), (15, 30), (30, 45)]
    assert [(c.index, c.verdict) for c in result.changes] == [
        (15, ChangePointVerdict.PROGRESSION),
        (30, ChangePointVerdict.REGRESSION),
    ]
    assert result.verdicts[30] is ChangePointVerdict.REGRESSION
    assert result.verdicts[31] is ChangePointVerdict.NORMAL
    assert result.verdicts[32] is ChangePointVerdict.OUTLIER
    # Outliers stay out of their group's statistics.
    assert result.groups[2].average == pytest.approx(50.0) and result.groups[2].stdev == 0.0
    assert result.changes[1].step_percent == pytest.approx(-50.0)


def test_a_dip_at_a_step_is_an_outlier_of_the_group_before() -> None:
    """A build far beyond both levels at a step stays an outlier; the change is the next build."""
    series = [100.0] * 20 + [30.0] + [94.0] * 20
    rng = random.Random(3)
    noisy = [v * rng.gauss(1.0, 0.003) for v in series]
    result = analyse(single(noisy))
    assert [(c.index, c.verdict) for c in result.changes] == [(21, ChangePointVerdict.REGRESSION)]
    assert outliers(result) == {20}


# Otava's PostgreSQL example, config 1 of experiments 36e5ccd2, d5460f38, bc9425cb, 14df1b11,
# ac40c0d8, 0af4ccbc (commit_ts order): process_cumulative_rate_{mean,stderr,diff}.
OTAVA_MEAN = [61160, 60160, 60960, 57123, 57980, 56950]
OTAVA_STDERR = [2052, 2142, 2052, 2052, 2052, 2052]
OTAVA_DIFF = [13558, 13454, 13053, 14052, 13521, 13532]


def test_otava_postgres_first_build_equal_to_its_group_is_normal() -> None:
    """Otava reports no change in stderr; the first build is the group's level, not an outlier."""
    result = analyse(single(OTAVA_STDERR), higher_is_better=False)
    assert result.changes == (), OTAVA
    assert outliers(result) == {1}
    assert result.verdicts[0] is ChangePointVerdict.NORMAL
    assert [(g.start, g.end) for g in result.groups] == [(0, 6)]
    assert result.groups[0].average == pytest.approx(2052.0) and result.groups[0].stdev == 0.0


def test_otava_postgres_mean_and_diff() -> None:
    """Otava: −5.6 % at the fourth build in the mean, nothing in diff. Ours: nothing in six builds.

    A deliberate difference: a change point must save log2(10) bits (docs/trending.md), and three
    builds on each side do not (jumpavg keeps one group); the same two levels over twelve builds
    are a change at the same place, with Otava's step.
    """
    assert analyse(single(OTAVA_DIFF), higher_is_better=False).changes == ()
    assert analyse(single(OTAVA_MEAN)).changes == ()
    longer = OTAVA_MEAN[:3] * 2 + OTAVA_MEAN[3:] * 2
    result = analyse(single(longer))
    assert [(c.index, c.verdict) for c in result.changes] == [(6, ChangePointVerdict.REGRESSION)]
    assert result.changes[0].step_percent == pytest.approx(-5.6, abs=0.05)


def test_a_bad_first_build_is_still_an_outlier() -> None:
    values = [2052.0 * 3, *OTAVA_STDERR[1:]]
    assert outliers(analyse(single(values))) == {0, 1}


@pytest.mark.parametrize("case", ["test_finds_behind", "test_regression_and_recovery"])
def test_extend_gives_the_full_analysis_of_the_reference_series(case: str) -> None:
    """The nightly path (a cached analysis extended) finds the same changes and outliers."""
    series = next(c[1] for c in MONGODB_CASES if c[0] == case)
    ours = next(c[4] for c in MONGODB_CASES if c[0] == case)
    values = single([50.0] * 80 + series)
    full = analyse(values)
    extended = extend(analyse(values[:70]), values)
    assert [c.index - 80 for c in full.changes] == ours
    assert [(c.index, c.verdict) for c in extended.changes] == [(c.index, c.verdict) for c in full.changes]
    assert [(g.start, g.end) for g in extended.groups] == [(g.start, g.end) for g in full.groups]
    assert extended.verdicts == full.verdicts
