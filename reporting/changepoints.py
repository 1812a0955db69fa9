"""Change points of one trend series with FD.io CSIT's ``jumpavg``: groups, steps, per-build verdicts.

A series is one number per build (or several: a build's repeats), in build order. ``jumpavg``
splits it into groups of builds whose values look like one normal population, choosing the split
with the fewest bits under the minimum description length principle (CSIT trending methodology,
"Trend Analysis": docs.fd.io/csit/master/report/ → *Methodology* → *Trending*; package ``jumpavg``
on PyPI; its ``classify`` computed by :mod:`reporting.jumpfast`, the same groups to the last bit in
far fewer interpreter steps, several series at once: :func:`analyse_many`). What we add on top,
each rule stated where it is applied:

* a group of one or two builds between two others (or a first group of one build), and a run of
  such short groups, does not decide where changes are: a stalled host, a bad run, or a build
  half-way through a step. Its builds are left out of the bit counts below;
* each remaining group boundary is a **change point** when splitting there saves at least
  :data:`MIN_SAVED_BITS` over one merged group (else the groups are merged);
* then each short run's builds are placed: inside one group, a build within the group's band
  (average ± :data:`BAND_SIGMAS` standard deviations) is NORMAL, one outside an **OUTLIER**; at a
  change point, the change starts at the first build nearer the new level than the old one
  (MongoDB's "behind" series: 50 × 14, 76, 100 × 15 changes at 14) and a build off the band
  between the two levels, or nearer the level of the other side, is an OUTLIER. Checked against
  MongoDB's and Apache Otava's published series (docs/trending.md);
* a change point is REGRESSION when the new group's average is worse than the previous group's
  (lower throughput, or higher latency/loss), PROGRESSION when better; its size is the relative
  step between the two averages and its **confidence** is ``1 − 2^−Δbits`` (MDL: a model cheaper
  by Δ bits is 2^Δ times more probable, Rissanen 1978; the bit counts are jumpavg's own, of the
  groups without their short runs' builds).

The choice of ``jumpavg`` over Apache Otava (E-divisive means with t-tests) is measured in
``benchmarks/bench_changepoints.py`` and explained in docs/trending.md.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

import jumpavg

from ovsperf_common.spec import SpecEnum
from reporting import jumpfast
from reporting.jumpcount import Classification


class ChangePointVerdict(SpecEnum):
    """What the change-point analysis says of one build in one series.

    Raw analysis only; the report's verdict of a cell (with EXPECTED and NO_HISTORY) is
    :class:`reporting.model.TrendVerdict`, which ``resultstore.trend`` derives from this one.
    """

    REGRESSION = "REGRESSION"
    """A change point starts at this build and the new group is worse."""
    PROGRESSION = "PROGRESSION"
    """A change point starts at this build and the new group is better."""
    NORMAL = "NORMAL"
    """The build belongs to the group before it."""
    OUTLIER = "OUTLIER"
    """A build of a short jumpavg group that lies off its group's band (a stalled host, a bad run)."""


@dataclass(frozen=True)
class Group:
    """Consecutive builds that look like one population: points ``start`` to ``end - 1``."""

    start: int
    """Index of the first build [0-based]."""
    end: int
    """Index after the last build."""
    average: float
    """Mean of every value of the group's builds (repeats included) [unit of the series]."""
    stdev: float
    """Standard deviation of those values [unit of the series]."""


@dataclass(frozen=True)
class Change:
    """A change point: the group starting at build ``index`` differs from the one before."""

    index: int
    """First build of the new group [0-based]."""
    verdict: ChangePointVerdict
    """REGRESSION or PROGRESSION."""
    step_percent: float
    """(new group average / previous group average − 1) × 100 [%]."""
    confidence: float
    """1 − 2^−Δbits, Δbits = bits(merged) − bits(split) of the two groups [0, 1]."""


@dataclass(frozen=True)
class SeriesAnalysis:
    """The analysis of one series: its groups, its change points and a verdict per build."""

    groups: tuple[Group, ...]
    """Groups in build order (outliers excluded from their group's statistics)."""
    changes: tuple[Change, ...]
    """Change points in build order."""
    verdicts: tuple[ChangePointVerdict, ...]
    """One verdict per build, same order as the input."""

    def to_json(self) -> dict[str, Any]:
        """Return the analysis as a JSON-ready dict (:meth:`from_json` reads it back)."""
        return {
            "groups": [[g.start, g.end, g.average, g.stdev] for g in self.groups],
            "changes": [[c.index, c.verdict.value, c.step_percent, c.confidence] for c in self.changes],
            "verdicts": [v.value for v in self.verdicts],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SeriesAnalysis:
        """Return the analysis :meth:`to_json` wrote.

        :raises ValueError: (or KeyError, TypeError) when ``data`` is not such a document.
        """
        return cls(
            tuple(Group(int(a), int(b), float(m), float(sd)) for a, b, m, sd in data["groups"]),
            tuple(
                Change(int(i), ChangePointVerdict(v), float(st), float(cf))
                for i, v, st, cf in data["changes"]
            ),
            tuple(ChangePointVerdict(v) for v in data["verdicts"]),
        )

    def group_of(self, index: int) -> Group:
        """Return the group that build ``index`` belongs to (an outlier: the group around it)."""
        for group in self.groups:
            if group.start <= index < group.end:
                return group
        raise IndexError(index)


MAX_OUTLIER_RUN = 2
"""Longest jumpavg group that can be made of outliers (between two others; a first group: 1) [builds]."""

MIN_SAVED_BITS = math.log2(10.0)
"""Bits a split must save to be a change point: confidence 1 − 2^−bits ≥ 0.9 (the split is at
least 10 times more probable than one group, MDL). Chosen with benchmarks/bench_changepoints.py."""

BAND_SIGMAS = 3.0
"""Half-width of a group's band in standard deviations of its builds: a build of a short group
inside the band of the group it falls in is NORMAL, outside it an OUTLIER."""


RULES = (
    f"jumpavg {version('jumpavg')}; outlier run {MAX_OUTLIER_RUN}; min bits {MIN_SAVED_BITS:.6f}; tail 60; "
    f"band {BAND_SIGMAS} sd; transitions to the nearer level"
)
"""What an analysis depends on besides the data: a cached analysis made under other rules is redone."""


def _stats(runs: Sequence[Sequence[float]]) -> tuple[float, float]:
    values = [v for run in runs for v in run]
    mean = math.fsum(values) / len(values)
    var = math.fsum((v - mean) ** 2 for v in values) / len(values)
    return mean, math.sqrt(var)


_Welford = tuple[int, float, float]
"""The state of ``jumpavg.AvgStdevStats.for_runs``'s loop: (values [1], average [unit], second moment
[unit²]); the sum of squared deviations, not yet divided by the values."""


def _build_stats(runs: Sequence[Sequence[float]]) -> list[jumpavg.AvgStdevStats]:
    """Return each build's statistics as jumpavg's groups hold them: ``for_runs`` of its repeats."""
    return [jumpavg.AvgStdevStats.for_runs(list(r)) for r in runs]


def _welford(builds: Iterable[jumpavg.AvgStdevStats], state: _Welford = (0, 0.0, 0.0)) -> _Welford:
    """Continue ``jumpavg.AvgStdevStats.for_runs``'s loop over ``builds`` from ``state``.

    ``for_runs`` (jumpavg 0.4.2, ``avg_stdev_stats.py``) is one pass over its runs carrying
    this state; the same operations in the same order here, so the state after runs A and then B
    is the state ``for_runs(A + B)`` ends with, to the last bit, and a group extended by more
    builds costs only the new builds (the merge loop of :func:`_judged` was quadratic without).
    """
    size, average, moment = state
    for run in builds:
        if run.size < 1:
            continue
        old_size = size
        delta = run.avg - average
        size += run.size
        average += delta * run.size / size
        moment += run.stdev * run.stdev * run.size
        moment += delta * delta * old_size * run.size / size
    return size, average, moment


def _group_bits(state: _Welford, max_value: float, unit: float, prev_avg: float | None) -> float:
    """Return a group's bits as ``jumpavg.BitCountingGroup.bits`` counts them from its state [bit]."""
    size, average, moment = state
    stats = jumpavg.AvgStdevStats(size=size, avg=average, stdev=math.sqrt(moment / size))
    bits = jumpavg.BitCountingStats.for_runs_and_params(
        runs=[stats], max_value=max_value, unit=unit, prev_avg=prev_avg
    ).bits
    return float(bits)


def _saved_bits(before: _Welford, after: _Welford, joined: _Welford, max_value: float, unit: float) -> float:
    """Return the bits one group ``joined`` needs more than the groups ``before`` and ``after`` [bit].

    As ``jumpavg.BitCountingGroupList`` sums them: ``0.0 + bits(first)``, then each next group
    counted with the previous group's average.
    """
    split = 0.0 + _group_bits(before, max_value, unit, None)
    split += _group_bits(after, max_value, unit, before[1])
    return (0.0 + _group_bits(joined, max_value, unit, None)) - split


def _short_runs(bounds: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Return the maximal runs (first build, end) of consecutive short jumpavg groups.

    A group is short when it has at most :data:`MAX_OUTLIER_RUN` builds and lies between two
    others, or is a first group of one build with more after it. The last group never is: the
    newest builds cannot be told from a new level yet.
    """
    runs: list[tuple[int, int]] = []
    for i, (lo, hi) in enumerate(bounds):
        middle = 0 < i < len(bounds) - 1 and hi - lo <= MAX_OUTLIER_RUN
        first_alone = i == 0 and len(bounds) > 1 and hi - lo == 1
        if not (middle or first_alone):
            continue
        if runs and runs[-1][1] == lo:
            runs[-1] = (runs[-1][0], hi)
        else:
            runs.append((lo, hi))
    return runs


def _within(value: float, low: float, high: float) -> bool:
    slack = 1e-9 * max(abs(low), abs(high))
    return low - slack <= value <= high + slack


def _resplit(
    levels: Sequence[float], before: tuple[float, float], after: tuple[float, float]
) -> tuple[int, list[bool]]:
    """Place a change inside a run of short-group builds between two levels.

    :param levels: the run's build values (mean of each build's repeats) [unit of the series].
    :param before: (average, stdev) of the group before the run; ``after``: of the group after.
    :returns: (k, outlier flags): the change starts at the run's k-th build (k = len: after it);
        a build is an outlier when it lies outside the band from one level to the other (widened
        by :data:`BAND_SIGMAS` deviations at each edge) or on the wrong side of the change
        (nearer the other level). k is the place with fewest such wrong-side builds, the latest
        on a tie (builds outside the band join the group before).
    """
    (avg_p, sd_p), (avg_n, sd_n) = before, after
    if avg_p <= avg_n:
        low, high = avg_p - BAND_SIGMAS * sd_p, avg_n + BAND_SIGMAS * sd_n
    else:
        low, high = avg_n - BAND_SIGMAS * sd_n, avg_p + BAND_SIGMAS * sd_p
    # Per build: True nearer the new level, False nearer the old (half-way: old), None off the band.
    side = [abs(x - avg_n) < abs(x - avg_p) if _within(x, low, high) else None for x in levels]
    # wrong(k) = new-side builds before k + old-side builds from k on, counted on as k moves (linear).
    wrong = sum(s is False for s in side)
    best_k, best_wrong = 0, wrong
    for k, s in enumerate(side, start=1):
        wrong += 1 if s is True else -1 if s is False else 0
        if wrong <= best_wrong:
            best_k, best_wrong = k, wrong
    flags = [s is None or s is not (j >= best_k) for j, s in enumerate(side)]
    return best_k, flags


def analyse(values: Sequence[Sequence[float]], *, higher_is_better: bool = True) -> SeriesAnalysis:
    """Group the series ``values`` (one sequence of repeats per build, build order) and judge each build.

    :param values: per build its measured values (at least one each, all finite and > 0) [any unit].
    :param higher_is_better: True for throughput; False for latency and loss (a rise is a regression).
    :returns: the groups, the change points and one :class:`ChangePointVerdict` per build; an empty
        series gives an empty analysis.
    :raises ValueError: when a build has no value or a value is not finite and positive.
    """
    return analyse_many([values], [higher_is_better])[0]


def _checked(values: Sequence[Sequence[float]]) -> list[tuple[float, ...]]:
    """Return the series as tuples of floats.

    :raises ValueError: when a build has no value or a value is not finite and positive.
    """
    runs = [tuple(float(v) for v in build) for build in values]
    for i, run in enumerate(runs):
        if not run or not all(math.isfinite(v) and v > 0 for v in run):
            raise ValueError(f"build {i} of the series has no finite positive value: {run!r}")
    return runs


def analyse_many(
    series: Sequence[Sequence[Sequence[float]]], higher_is_better: Sequence[bool]
) -> list[SeriesAnalysis]:
    """Return :func:`analyse` of each series (``higher_is_better``: one flag per series).

    The classifications run together (:func:`reporting.jumpfast.classify_many`: the series of one
    length share the interpreter's steps); each series is then judged on its own.

    :raises ValueError: when a build of any series has no value or a value is not finite and positive.
    """
    checked = [_checked(values) for values in series]
    classified = jumpfast.classify_many([runs for runs in checked if runs])
    found = iter(classified)
    return [
        _judged(runs, next(found), better) if runs else SeriesAnalysis((), (), ())
        for runs, better in zip(checked, higher_is_better, strict=True)
    ]


def _judged(
    runs: Sequence[tuple[float, ...]], classified: Classification, higher_is_better: bool
) -> SeriesAnalysis:
    """Apply our rules (module docstring) to jumpavg's groups of ``runs``."""
    max_value, unit = classified.max_value, classified.unit
    bounds = classified.bounds

    # Short groups (a stalled host, a bad run, a build half-way through a step) do not decide
    # where changes are: their builds are left out of the bit counts below, each run of them
    # provisionally joined to the group before it (a first run: to the group after).
    short = _short_runs(bounds)
    provisional = {k for lo, hi in short for k in range(lo, hi)}
    starts = [lo for lo, _ in bounds if lo not in provisional]
    starts[0] = 0
    segments = list(itertools.pairwise([*starts, len(runs)]))

    def kept(lo: int, hi: int, left_out: set[int]) -> list[int]:
        """Return builds lo..hi − 1 not left out; when none is, the first stands for the group."""
        return [k for k in range(lo, hi) if k not in left_out] or [lo]

    def members(lo: int, hi: int, left_out: set[int]) -> list[tuple[float, ...]]:
        return [runs[k] for k in kept(lo, hi, left_out)]

    # Change points: keep a boundary only when the split saves at least MIN_SAVED_BITS. The
    # merged group's statistics are carried on (_welford), so the loop is linear in the builds.
    build_stats = _build_stats(runs)

    def state(builds: Iterable[int], start: _Welford = (0, 0.0, 0.0)) -> _Welford:
        return _welford((build_stats[k] for k in builds), start)

    def all_left_out(lo: int, hi: int) -> bool:
        return all(k in provisional for k in range(lo, hi))

    merged: list[tuple[int, int]] = [segments[0]]
    merged_state = state(kept(*segments[0], provisional))
    merged_empty = all_left_out(*segments[0])
    saved_bits: list[float] = []
    for lo, hi in segments[1:]:
        prev_lo = merged[-1][0]
        after = state(kept(lo, hi, provisional))
        after_empty = all_left_out(lo, hi)
        if not (merged_empty or after_empty):  # the joined group's builds: the merged one's, then these
            joined = state(kept(lo, hi, provisional), merged_state)
        else:  # a part stood for itself by its first build: the joined group counted again
            joined = state(kept(prev_lo, hi, provisional))
        saved = _saved_bits(merged_state, after, joined, max_value, unit)
        if saved < MIN_SAVED_BITS:
            merged[-1] = (prev_lo, hi)
            merged_state, merged_empty = joined, merged_empty and after_empty
        else:
            merged.append((lo, hi))
            merged_state, merged_empty = after, after_empty
            saved_bits.append(saved)

    # Each short run's builds: at a change point, the change starts at the first build nearer the
    # new level (_resplit); inside one group, a build within the group's band is NORMAL.
    level = [math.fsum(r) / len(r) for r in runs]
    outliers: set[int] = set()
    cuts = [lo for lo, _ in merged[1:]]
    merged_starts = [a for a, _ in merged]
    merged_stats: dict[int, tuple[float, float]] = {}

    def stats_of(g: int) -> tuple[float, float]:
        if g not in merged_stats:
            merged_stats[g] = _stats(members(*merged[g], provisional))
        return merged_stats[g]

    for lo, hi in short:
        g = bisect.bisect_right(merged_starts, lo) - 1
        if g + 1 < len(merged) and merged[g][1] == hi:
            k, flags = _resplit(level[lo:hi], stats_of(g), stats_of(g + 1))
            cuts[g] = lo + k
        else:
            mean, stdev = stats_of(g)
            band = (mean - BAND_SIGMAS * stdev, mean + BAND_SIGMAS * stdev)
            flags = [not _within(x, *band) for x in level[lo:hi]]
        outliers.update(lo + j for j, off in enumerate(flags) if off)

    groups = []
    for lo, hi in itertools.pairwise([0, *cuts, len(runs)]):
        mean, stdev = _stats(members(lo, hi, outliers))
        groups.append(Group(lo, hi, mean, stdev))
    verdicts = [ChangePointVerdict.NORMAL] * len(runs)
    for k in outliers:
        verdicts[k] = ChangePointVerdict.OUTLIER
    changes: list[Change] = []
    for prev, cur, saved in zip(groups[:-1], groups[1:], saved_bits, strict=True):
        step = (cur.average / prev.average - 1.0) * 100.0
        better = step > 0 if higher_is_better else step < 0
        verdict = ChangePointVerdict.PROGRESSION if better else ChangePointVerdict.REGRESSION
        changes.append(Change(cur.start, verdict, step, 1.0 - 2.0 ** (-saved)))
        verdicts[cur.start] = verdict
    return SeriesAnalysis(tuple(groups), tuple(changes), tuple(verdicts))


TAIL_BUILDS = 60
"""Builds :func:`extend` analyses again at the end of an earlier analysis; older boundaries stay."""


def _unit(runs: Sequence[Sequence[float]]) -> tuple[float, float]:
    """Return (max value, unit) as ``jumpavg.classify`` derives them (12 significant bits)."""
    max_value = max(v for run in runs for v in run)
    return max_value, max_value / (2.0**13 - 1.0)


def extend(
    previous: SeriesAnalysis,
    values: Sequence[Sequence[float]],
    *,
    higher_is_better: bool = True,
    tail: SeriesAnalysis | None = None,
) -> SeriesAnalysis:
    """Analyse a series that grew: keep ``previous``'s verdicts older than :data:`TAIL_BUILDS` builds.

    ``previous`` is the analysis of ``values[: len(previous.verdicts)]`` (the caller checks that
    those builds are unchanged). The last :data:`TAIL_BUILDS` builds it covered and the new ones
    are analysed again (:func:`analyse`), and the group the cut falls into is joined to the tail's
    first group when one group describes them in fewer than :data:`MIN_SAVED_BITS` more bits, as
    :func:`analyse` does. The cost is bounded by the tail, so a nightly update grows linearly with
    the history (a full :func:`analyse` grows with its square). Boundaries older than the tail are
    final (the approach of Otava's incremental mode, Fleming et al. 2023 §4).

    :param tail: :func:`analyse` of ``values[max(extension_cut(previous, values), 0):]`` when the
        caller analysed it already (many tails together: :func:`analyse_many`).
    :raises ValueError: as :func:`analyse`, or when ``values`` is shorter than ``previous``.
    """
    cut = extension_cut(previous, values)
    if tail is None:
        tail = analyse(values[max(cut, 0) :], higher_is_better=higher_is_better)
    return _joined(previous, values, cut, tail, higher_is_better=higher_is_better)


def extension_cut(previous: SeriesAnalysis, values: Sequence[Sequence[float]]) -> int:
    """Return the first build :func:`extend` analyses again (≤ 0: the whole series is analysed).

    :raises ValueError: when ``values`` is shorter than ``previous``.
    """
    done = len(previous.verdicts)
    if len(values) < done:
        raise ValueError(f"the series has {len(values)} builds, fewer than the {done} analysed before")
    cut = done - TAIL_BUILDS
    # Never cut through an outlier run: it belongs with its neighbours.
    while cut > 0 and ChangePointVerdict.OUTLIER in (previous.verdicts[cut], previous.verdicts[cut - 1]):
        cut -= 1
    return cut


def _joined(
    previous: SeriesAnalysis,
    values: Sequence[Sequence[float]],
    cut: int,
    tail: SeriesAnalysis,
    *,
    higher_is_better: bool = True,
) -> SeriesAnalysis:
    """Return :func:`extend`'s analysis from ``tail``, :func:`analyse` of ``values[max(cut, 0):]``.

    ``cut`` is :func:`extension_cut`'s; when it is ≤ 0, ``tail`` is the whole series' analysis.
    """
    if cut <= 0:
        return tail
    runs = [tuple(float(v) for v in build) for build in values]
    outliers = {i for i, v in enumerate(previous.verdicts[:cut]) if v is ChangePointVerdict.OUTLIER}
    outliers |= {cut + i for i, v in enumerate(tail.verdicts) if v is ChangePointVerdict.OUTLIER}

    def members(lo: int, hi: int) -> list[tuple[float, ...]]:
        kept = [runs[k] for k in range(lo, hi) if k not in outliers]
        return kept or [runs[lo]]

    head = [g for g in previous.groups if g.start < cut]
    last = head.pop()
    before = members(last.start, cut)
    first = tail.groups[0]
    after = members(cut + first.start, cut + first.end)
    max_value, unit = _unit(before + after)
    before_state, after_state = _welford(_build_stats(before)), _welford(_build_stats(after))
    joined = _welford(_build_stats(after), before_state)
    saved = _saved_bits(before_state, after_state, joined, max_value, unit)

    groups = list(head)
    changes = [c for c in previous.changes if c.index < cut]
    verdicts = list(previous.verdicts[:cut]) + list(tail.verdicts)
    shifted = [Group(cut + g.start, cut + g.end, g.average, g.stdev) for g in tail.groups]
    if saved < MIN_SAVED_BITS:
        mean, stdev = _stats(members(last.start, shifted[0].end))
        groups.append(Group(last.start, shifted[0].end, mean, stdev))
        if verdicts[cut] is not ChangePointVerdict.OUTLIER:
            verdicts[cut] = ChangePointVerdict.NORMAL
    else:
        mean, stdev = _stats(before)
        groups.append(Group(last.start, cut, mean, stdev))
        groups.append(shifted[0])
        step = (shifted[0].average / mean - 1.0) * 100.0
        better = step > 0 if higher_is_better else step < 0
        verdict = ChangePointVerdict.PROGRESSION if better else ChangePointVerdict.REGRESSION
        changes.append(Change(cut, verdict, step, 1.0 - 2.0 ** (-saved)))
        verdicts[cut] = verdict
    groups.extend(shifted[1:])
    changes.extend(Change(cut + c.index, c.verdict, c.step_percent, c.confidence) for c in tail.changes)
    # Steps from the final groups' averages (a group may have grown since the change was found).
    average = {g.start: g.average for g in groups}
    previous_start = {cur.start: prev.start for prev, cur in itertools.pairwise(groups)}
    changes = [
        Change(
            c.index,
            c.verdict,
            (average[c.index] / average[previous_start[c.index]] - 1.0) * 100.0,
            c.confidence,
        )
        for c in changes
    ]
    return SeriesAnalysis(tuple(groups), tuple(changes), tuple(verdicts))
