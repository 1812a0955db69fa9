"""FD.io CSIT's ``jumpavg.classify`` computed exactly, its inner loop over split points in numpy.

``jumpavg.classify`` (package ``jumpavg`` 0.4.2, ``classify.py``) is a dynamic program over the
builds of a series: after build ``i`` it knows the cheapest grouping of builds ``0..i`` (the
*record*), and it finds it by trying every ``j ≤ i`` as the start of the last group — the record
after build ``j − 1`` followed by one group ``j..i``. Each try costs a few Python objects, so a
series of n builds costs n²/2 tries in the interpreter (a year of nightlies: 66,000 per series).
Here the same program runs with one numpy operation per step over all the open starts ``j``, so
the interpreter does O(n) steps and numpy O(n²) element operations of a few nanoseconds.

**Exactly the same groups.** Every number the comparisons of ``jumpavg`` read is reproduced:

* a group's statistics (size, average, stdev) are jumpavg's Welford updates
  (``AvgStdevStats.for_runs([stats, run])``), written with the same IEEE operations in the same
  order, element-wise — numpy's ``+ − × ÷ √`` on float64 are correctly rounded as Python's are, so
  the statistics are bit-identical (the re-packing ``for_runs([stats])`` that jumpavg applies when
  it copies a group or counts its bits is reproduced too);
* a group's bits (``BitCountingStats``) use ``math.log`` and ``math.lgamma``. numpy computes an
  approximation of every candidate's count: its ``log`` may differ from the C library's by a few
  units in the last place, it adds the terms in another order, and it reads the statistics
  before jumpavg's re-packing (at most an ulp away). Its error is a few 2^−52 of the terms'
  magnitudes; the bound used is :data:`RELATIVE_TOLERANCE` (2^−30, about a million times more)
  of (1 + the largest count + (log2(top + 2) + 1) · (values + 2)), which bounds the terms (a stdev
  is at most top / 2 in units, so log2(stdev + 1) < log2(top + 2)); the logs of a candidate are
  taken as log(sd + 1) and log((sd + 2) / (|avg − prev| + 1)). Every
  candidate within twice that bound of the cheapest is counted again exactly — the same ``math``
  calls on the same operands in the same order as ``BitCountingStats.__post_init__``
  (:func:`reporting.jumpcount.exact_bits`, compared with jumpavg's own in the tests) — and the
  winner is chosen as ``classify`` does (the new group first, then the starts ascending,
  replaced only by a strictly smaller count). A candidate left out costs more than the cheapest
  by more than the error of both, so it cannot be the winner. The record's bits, carried to the
  next step, are always the exact count of the winner.

So the groups, their statistics and the total bits equal ``jumpavg.classify``'s to the last bit
(``tests/reporting/test_jumpfast.py`` checks it on generated and published series).

**Series together.** :func:`classify_many` steps through the series of one length at once
(arrays series × starts), so the interpreter's O(n) steps are shared by all of them: a year of
196 nightly series is 365 steps of whole-array operations, plus one exact count per series and
build (the winner's).

**No pruning.** A PELT-style rule (drop a start that can no longer win) is exact when a group's
cost is sub-additive up to a constant K and the candidate is K worse than the record. jumpavg's
count is not: it codes a group's average relative to the previous group's (up to ~38 bits apart
between partitions at 12 significant bits), its size, and its stdev with ``+1`` offsets
(``(n − 2) · log(stdev + 1)``), which gives K of the order of 100 bits — more than the cost of
one extra group inside a level, so inside a level nothing would ever be pruned — and no tighter
constant could be proved. So every start stays open: O(n²) element operations in numpy
(20,000 builds of one series: seconds), O(n) interpreter steps. (Measured on bench_trend's year:
with a bound of 100 bits, half of the candidates would stay open; with 40, still 40 %.)

**Magnitudes.** The fast path takes values in [:data:`SAFE_MIN`, :data:`SAFE_MAX`] (no square
in the Welford updates can overflow or become subnormal there); a series outside that range is
classified by ``jumpavg.classify`` itself (the same answer, or the same error, as before) up to
:data:`MAX_REFERENCE_BUILDS` builds, and refused beyond (jumpavg's time grows with the square of
the builds: hours for 20,000).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jumpavg
import numpy as np
from numpy.typing import NDArray

from reporting.jumpcount import (
    MAX_IN_UNITS,
    Classification,
    GroupStats,
    SizeTables,
    exact_bits,
    reference,
    repack,
)

SAFE_MIN = 2.0**-400
"""Smallest value the fast path takes [unit of the series]; below it, ``jumpavg.classify``."""
SAFE_MAX = 2.0**400
"""Largest value the fast path takes [unit of the series]; above it, ``jumpavg.classify``."""
RELATIVE_TOLERANCE = 2.0**-30
"""Bound on the relative error of a numpy bit count against jumpavg's [1] (actual: a few 2^−52)."""
_LN2 = math.log(2.0)
"""Natural log of 2: numpy's bit counts are nats / ln 2, as ``math.log(x, 2)`` computes them."""


MAX_REFERENCE_BUILDS = 1000
"""Builds of a series outside the fast path's range that ``jumpavg.classify`` still classifies [1].

Its time grows with the square of the builds: 1,000 take seconds, 2,000 ten, 20,000 hours;
longer series outside the range are refused rather than left to run that long."""

MAX_BATCH_ELEMENTS = 1 << 18
"""Series × builds classified together at most (each of the ~15 arrays: 2 MiB) [1]."""


def classify(values: Sequence[Sequence[float]]) -> Classification:
    """Return the grouping ``jumpavg.classify`` gives ``values`` (per build its repeats, build order).

    :param values: per build at least one finite positive value [any unit]; an empty series
        gives no groups.
    :returns: groups, scale and bits equal to :func:`reference`'s (module docstring: why).
    :raises ZeroDivisionError: (or ValueError) as ``jumpavg.classify`` does, for a series
        outside [:data:`SAFE_MIN`, :data:`SAFE_MAX`] (classified by jumpavg itself).
    """
    return classify_many([values])[0]


def classify_many(series: Sequence[Sequence[Sequence[float]]]) -> list[Classification]:
    """Return :func:`classify` of each series; series of equal length run as one program.

    The dynamic program steps through the builds of every series of one length at once (arrays
    series × starts), so its interpreter steps are shared: a year of 196 series costs 365 steps.

    :raises ZeroDivisionError: (or ValueError) as :func:`classify`.
    :raises ValueError: for a series outside [:data:`SAFE_MIN`, :data:`SAFE_MAX`] of more than
        :data:`MAX_REFERENCE_BUILDS` builds.
    """
    out: list[Classification | None] = [None] * len(series)
    runs_of: list[list[list[float]]] = [[list(v) for v in values] for values in series]
    by_length: dict[int, list[int]] = {}
    for index, runs in enumerate(runs_of):
        if not runs:
            out[index] = Classification((), 0.0, 0.0, 0.0)
        elif not all(SAFE_MIN <= x <= SAFE_MAX for run in runs for x in run):
            if len(runs) > MAX_REFERENCE_BUILDS:
                raise ValueError(
                    f"a series of {len(runs)} builds has values outside [2^-400, 2^400], which only "
                    f"jumpavg's own classification groups exactly, in a time that grows with the "
                    f"square of the builds: refused beyond {MAX_REFERENCE_BUILDS} builds (rescale "
                    "the values, or analyse fewer builds)."
                )
            out[index] = reference(runs)
        else:
            by_length.setdefault(len(runs), []).append(index)
    for length, members in sorted(by_length.items()):
        rows = max(1, MAX_BATCH_ELEMENTS // length)
        for first in range(0, len(members), rows):
            batch = members[first : first + rows]
            for index, result in zip(batch, _classify_batch([runs_of[i] for i in batch]), strict=True):
                out[index] = result
    return [c for c in out if c is not None]


def _classify_batch(batch: Sequence[Sequence[Sequence[float]]]) -> list[Classification]:
    """Classify series of one length (each build at least one value, all in the safe range)."""
    shape = (len(batch), len(batch[0]))
    built_count = np.zeros(shape, dtype=np.int64)
    built_avg = np.zeros(shape)
    built_sd = np.zeros(shape)
    max_values, units = [], []
    for row, runs in enumerate(batch):
        for col, run in enumerate(runs):
            if len(run) == 1:  # for_runs([x]) is (1, x, 0.0) for a finite square
                built_count[row, col], built_avg[row, col] = 1, run[0]
            else:
                stats = jumpavg.AvgStdevStats.for_runs(run)
                built_count[row, col], built_avg[row, col], built_sd[row, col] = (
                    stats.size,
                    stats.avg,
                    stats.stdev,
                )
        max_value = max(x for run in runs for x in run)
        max_values.append(max_value)
        units.append(max_value / MAX_IN_UNITS)
    tables = SizeTables(int(built_count.sum(axis=1).max()))
    program = _Program(tables, built_count, built_avg, built_sd, max_values, units)
    program.run()
    return [program.result(row) for row in range(len(batch))]


class _Program:
    """classify's dynamic program for a batch of series of one length (module docstring).

    Arrays are series × start ``j`` of a candidate last group; after build ``i`` they hold the
    statistics of builds ``j..i`` (``count``/``size``, ``average``, ``stdev``: jumpavg's Welford
    updates), the exact bits of the record before ``j`` (``head_bits``) and the average of that
    record's last group as jumpavg copies it (``prev``). ``choice[s, i]`` is the start of the
    record's last group after build ``i``; ``won_*[s, i]`` that group's statistics.
    """

    def __init__(
        self,
        tables: SizeTables,
        built_count: NDArray[np.int64],
        built_avg: NDArray[np.float64],
        built_sd: NDArray[np.float64],
        max_values: list[float],
        units: list[float],
    ) -> None:
        self.tables = tables
        self.max_values, self.units = max_values, units
        self.built_count = built_count
        self.built_size = built_count.astype(np.float64)
        self.built_avg, self.built_sd = built_avg, built_sd
        rows, n = built_count.shape
        self.rows = np.arange(rows)
        self.unit = np.array(units)
        self.top = np.array(max_values) / self.unit
        self.first_bits = np.array([math.log(t + 1, 2) for t in self.top])
        self.cutoff_bits = np.array([math.log(1 - 1 / (t + 2), 2) for t in self.top])
        # A group opened at build i: BitCountingGroup([run]) holds for_runs([run]).
        size = self.built_size
        self.open_avg = 0.0 + built_avg * size / size
        self.open_sd = np.sqrt((0.0 + built_sd * built_sd * size) / size)
        self.count = np.zeros((rows, n), dtype=np.int64, order="F")
        self.size = np.zeros((rows, n), order="F")
        self.average = np.zeros((rows, n), order="F")
        self.stdev = np.zeros((rows, n), order="F")
        self.prev = np.zeros((rows, n), order="F")
        self.prev_units = np.zeros((rows, n), order="F")
        self.n = n
        self.inv_unit = (1.0 / self.unit)[:, None]
        self.single = bool((built_count == 1).all())
        self.descending = np.arange(n, 0, -1, dtype=np.float64)  # n, n − 1, …, 1
        self.below = np.arange(n - 1, -1, -1, dtype=np.float64)  # n − 1, …, 0: a group's size − 1
        # What a candidate's bits owe to its start alone (head, the average's normalisation, the
        # stdev cutoff), set when the start opens [bit]; and scratch arrays for the steps.
        self.base = np.zeros((rows, n), order="F")
        self.scratch = [np.zeros((rows, n), order="F") for _ in range(3)]
        self.sd_bound = np.log2(self.top + 2)  # ≥ log2(stdev + 1) in units: a stdev is at most top / 2
        self.per_size_descending = tables.per_size[n:0:-1]  # used when every build has one value
        self.head_bits = np.zeros((rows, n), order="F")
        self.choice = np.zeros((rows, n), dtype=np.int64, order="F")
        self.won_count = np.zeros((rows, n), dtype=np.int64, order="F")
        self.won_avg = np.zeros((rows, n), order="F")
        self.won_sd = np.zeros((rows, n), order="F")
        self.record_bits = [0.0] * rows
        self.recounted = [0] * rows

    def _exact(self, row: int, size: int, average: float, stdev: float, prev: float | None) -> float:
        return exact_bits(self.tables, self.max_values[row], self.units[row], size, average, stdev, prev)

    def _counts(self, i: int, starts: NDArray[np.int64]) -> NDArray[np.int64]:
        """Return per series the values of the group from ``starts[s]`` to build ``i``, included [1]."""
        if self.single:
            return i + 1 - starts
        return self.count[self.rows, starts]

    def _size_of_first(self, i: int) -> NDArray[np.float64]:
        """Return per series the values of builds 0..i, the largest group [1]."""
        return self._counts(i, np.zeros(len(self.rows), dtype=np.int64)).astype(np.float64)

    def _open(self, i: int) -> None:
        self.count[:, i] = self.built_count[:, i]
        self.size[:, i] = self.built_size[:, i]
        self.average[:, i] = self.open_avg[:, i]
        self.stdev[:, i] = self.open_sd[:, i]

    def run(self) -> None:
        """Step through the builds; fill ``choice``, ``won_*`` and the records' bits."""
        n = self.count.shape[1]
        self._open(0)
        self.won_count[:, 0], self.won_avg[:, 0], self.won_sd[:, 0] = (
            self.count[:, 0],
            self.average[:, 0],
            self.stdev[:, 0],
        )
        self.base[:, 0] = self.first_bits + self.cutoff_bits  # no head; the average coded uniformly
        for row in self.rows.tolist():
            stats = (int(self.count[row, 0]), float(self.average[row, 0]), float(self.stdev[row, 0]))
            self.record_bits[row] = 0.0 + self._exact(row, *stats, None)
        for i in range(1, n):
            self._step(i)

    def _step(self, i: int) -> None:
        rows, tables = self.rows, self.tables
        # The record's last group as copy_fast copies it: for_runs([stats]).
        k = self.choice[:, i - 1]
        last_count = self._counts(i - 1, k)
        last_size = last_count.astype(np.float64)
        last_avg = 0.0 + self.average[rows, k] * last_size / last_size
        if i == 1:  # the record's last group was never counted: counted now, from the copy
            last_sd = np.sqrt((0.0 + self.stdev[rows, k] * self.stdev[rows, k] * last_size) / last_size)
            for row, (size, average, stdev) in enumerate(
                zip(last_count.tolist(), last_avg.tolist(), last_sd.tolist(), strict=True)
            ):
                self.record_bits[row] = 0.0 + self._exact(row, size, average, stdev, None)
        # Every open group takes build i: AvgStdevStats.for_runs([stats, run]), operation by operation.
        w1, w2, w3 = (a[:, :i] for a in self.scratch)
        if self.single:  # one value per build: run (1, x, 0.0); ×1 and +0.0 are exact, so left out
            n_old_1d = self.descending[self.n - i :]  # i, i − 1, …, 1
            n_new = self.descending[self.n - 1 - i : self.n - 1]
            avg = self.average[:, :i]  # updated in place
            avg *= n_old_1d
            avg /= n_old_1d
            moment = np.multiply(self.stdev[:, :i], self.stdev[:, :i], out=w1)
            moment *= n_old_1d
            delta = np.subtract(self.built_avg[:, i : i + 1], avg, out=w2)
            avg += np.divide(delta, n_new, out=w3)
            delta *= delta
            delta *= n_old_1d
            delta /= n_new
            moment += delta
            moment /= n_new
        else:
            n_old = self.size[:, :i]
            run_size = self.built_size[:, i : i + 1]
            run_sd = self.built_sd[:, i : i + 1]
            avg = 0.0 + self.average[:, :i] * n_old / n_old
            moment = 0.0 + self.stdev[:, :i] * self.stdev[:, :i] * n_old
            delta = self.built_avg[:, i : i + 1] - avg
            n_new = n_old + run_size
            avg = avg + delta * run_size / n_new
            moment = moment + run_sd * run_sd * run_size
            moment = moment + delta * delta * n_old * run_size / n_new
            moment /= n_new
            self.size[:, :i] = n_new
            self.count[:, :i] += self.built_count[:, i : i + 1]
            self.average[:, :i] = avg
        np.sqrt(moment, out=self.stdev[:, :i])
        # The new group i after the record.
        self._open(i)
        self.prev[:, i] = last_avg
        p = last_avg / self.unit
        self.prev_units[:, i] = p
        log_norm = np.log(p * p - (p - 1) * self.top + self.top * self.top / 2)
        self.head_bits[:, i] = self.record_bits
        self.base[:, i] = self.head_bits[:, i] + log_norm / _LN2 + self.cutoff_bits

        # Every candidate's bits as BitCountingStats counts them, in numpy (approximate: the logs, and
        # the stats not re-packed by for_runs([stats]), which moves them by an ulp at most), first as
        # if every group had two values or more:
        # base + per size + ((size − 1) log(sd + 1) + log((sd + 2) / (|avg − prev| + 1))) / ln 2,
        # which is log((sd + 1)(sd + 2)) + (size − 2) log(sd + 1) − log((|avg − prev| + 1) / norm) in
        # bits; a first group codes its average as log2(top + 1) (in its base: no ratio's denominator).
        m = i + 1
        inv_unit = self.inv_unit
        w1, w2 = (a[:, :m] for a in self.scratch[:2])
        sd_units = np.multiply(self.stdev[:, :m], inv_unit, out=w1)
        sd_units += 1  # now sd + 1
        cost = np.log(sd_units)
        if self.single:
            cost *= self.below[self.n - 1 - i :]  # sizes − 1: i, …, 0
            per_size: NDArray[np.float64] = self.per_size_descending[self.n - 1 - i :]  # sizes i + 1, …, 1
        else:
            sizes = self.count[:, :m]
            cost *= self.size[:, :m] - 1
            per_size = tables.per_size[sizes]
        sd_units += 1  # now sd + 2
        avg_units = np.multiply(self.average[:, :m], inv_unit, out=w2)
        avg_units -= self.prev_units[:, :m]
        np.abs(avg_units, out=avg_units)
        avg_units += 1
        avg_units[:, 0] = 1.0  # a first group: its average is in its base
        sd_units /= avg_units
        cost += np.log(sd_units, out=sd_units)
        cost *= 1.0 / _LN2
        cost += self.base[:, :m]
        cost += per_size
        # A group of one value (only the new one can be): no stdev coded, no cutoff.
        one = self.built_count[:, i] == 1 if not self.single else None
        new_bits = self.head_bits[:, i] + tables.size_bits[1]
        new_bits += (log_norm - np.log(np.abs(self.average[:, i] / self.unit - p) + 1)) / _LN2
        if one is None:
            cost[:, i] = new_bits
        else:
            cost[:, i] = np.where(one, new_bits, cost[:, i])
        best = cost.min(axis=1)
        largest = np.maximum(cost.max(axis=1), -best)
        bound = RELATIVE_TOLERANCE * (1.0 + largest + (self.sd_bound + 1.0) * (self._size_of_first(i) + 2))
        near = cost <= (best + 2 * bound)[:, None]
        winner = cost.argmin(axis=1)
        tied: dict[int, float] = {}  # row → the record's exact bits, counted by _tie already
        for row in np.flatnonzero(near.sum(axis=1) > 1).tolist():
            winner[row], tied[row] = self._tie(row, i, np.flatnonzero(near[row]).tolist())
        self.choice[:, i] = winner
        # The record's exact bits: head + jumpavg's count of the winning group.
        won = (
            self._counts(i, winner),
            self.average[rows, winner],
            self.stdev[rows, winner],
        )
        self.won_count[:, i], self.won_avg[:, i], self.won_sd[:, i] = won
        heads = self.head_bits[rows, winner].tolist()
        prevs = self.prev[rows, winner].tolist()
        for row, (j, size, average, stdev) in enumerate(
            zip(winner.tolist(), won[0].tolist(), won[1].tolist(), won[2].tolist(), strict=True)
        ):
            if row in tied:
                self.record_bits[row] = tied[row]
            else:
                self.record_bits[row] = heads[row] + self._exact(
                    row, size, average, stdev, prevs[row] if j else None
                )

    def _tie(self, row: int, i: int, near: list[int]) -> tuple[int, float]:
        """Return the winner among starts ``near`` by jumpavg's own counts and order, and its count [bit].

        The count is the record's: the head's exact bits plus the group's (module docstring).
        """
        self.recounted[row] += len(near)
        # classify's order: the new group first, then the starts ascending; only strictly less wins.
        order = [i, *(j for j in near if j != i)] if i in near else near
        counted = {
            j: float(self.head_bits[row, j])
            + self._exact(
                row,
                i + 1 - j if self.single else int(self.count[row, j]),
                float(self.average[row, j]),
                float(self.stdev[row, j]),
                float(self.prev[row, j]) if j else None,
            )
            for j in order
        }
        winner = order[0]
        for j in order[1:]:
            if counted[j] < counted[winner]:
                winner = j
        return winner, counted[winner]

    def result(self, row: int) -> Classification:
        """Return series ``row``'s groups (by the choices, from the end), scale and bits."""
        bounds: list[tuple[int, int]] = []
        end = self.count.shape[1]
        while end > 0:
            start = int(self.choice[row, end - 1])
            bounds.append((start, end))
            end = start
        bounds.reverse()
        groups = []
        for number, (start, end) in enumerate(bounds):
            stats = (
                int(self.won_count[row, end - 1]),
                float(self.won_avg[row, end - 1]),
                float(self.won_sd[row, end - 1]),
            )
            if number < len(bounds) - 1:
                stats = repack(*stats)  # copied when the next group was opened
            groups.append(GroupStats(start, end, *stats))
        return Classification(
            tuple(groups), self.max_values[row], self.units[row], self.record_bits[row], self.recounted[row]
        )
