"""jumpavg's bit count of one group, exactly, and ``jumpavg.classify``'s result as plain numbers.

:func:`exact_bits` is ``BitCountingStats.for_runs_and_params([stats], …).bits`` of FD.io CSIT's
``jumpavg`` 0.4.2 (``bit_counting_stats.py``): the same ``math`` calls on the same operands in the
same order, so the same float (``tests/reporting/test_jumpfast.py`` compares them), without
building jumpavg's objects. :func:`reference` runs ``jumpavg.classify`` itself: the answer
:mod:`reporting.jumpfast` must give, and its path for magnitudes it does not take.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import jumpavg
import numpy as np

MAX_IN_UNITS = pow(2.0, 12.0 + 1.0) - 1.0
"""``classify``'s default resolution: the largest value is 8191 units (12 significant bits)."""


@dataclass(frozen=True)
class GroupStats:
    """One group of builds ``start`` to ``end - 1`` with jumpavg's statistics of its values."""

    start: int
    """Index of the first build [0-based]."""
    end: int
    """Index after the last build."""
    size: int
    """Number of values (every build's repeats) [1]."""
    average: float
    """jumpavg's average of the values [unit of the series]."""
    stdev: float
    """jumpavg's population standard deviation of the values [unit of the series]."""


@dataclass(frozen=True)
class Classification:
    """What ``jumpavg.classify`` returns, as plain numbers: the groups, the scale, the bits."""

    groups: tuple[GroupStats, ...]
    """Groups in build order."""
    max_value: float
    """Largest value of the series [unit of the series]."""
    unit: float
    """Resolution jumpavg counts bits in: ``max_value / 8191`` [unit of the series]."""
    bits: float
    """Bits of the whole grouping (``BitCountingGroupList.bits``) [bit]."""
    recounted: int = 0
    """Candidates counted again with jumpavg because numpy's count was too close to call [1]."""

    @property
    def bounds(self) -> list[tuple[int, int]]:
        """Return (first build, end) of each group."""
        return [(g.start, g.end) for g in self.groups]


def reference(values: Sequence[Sequence[float]]) -> Classification:
    """Return ``jumpavg.classify``'s grouping of ``values`` (per build its repeats), as is.

    :raises ZeroDivisionError: (or ValueError) as ``jumpavg.classify`` does on values it cannot code.
    """
    glist = jumpavg.classify([list(v) for v in values])
    groups, start = [], 0
    for group in glist:
        end = start + len(group.run_list)
        groups.append(GroupStats(start, end, group.stats.size, group.stats.avg, group.stats.stdev))
        start = end
    return Classification(tuple(groups), float(glist.max_value), float(glist.unit), float(glist.bits))


def repack(size: int, average: float, stdev: float) -> tuple[int, float, float]:
    """Return ``AvgStdevStats.for_runs([stats])`` of stats (size, average, stdev), operation by operation.

    What jumpavg's ``BitCountingGroup.copy`` and its bit count read: ``0.0 + average · size / size``
    and ``√((0.0 + stdev² · size) / size)`` (the second run term is 0 for finite squares).
    """
    return size, 0.0 + average * size / size, math.sqrt((0.0 + stdev * stdev * size) / size)


class SizeTables:
    """What a series' bit counts share: the per-size terms and the series' scale.

    Per size k [values]: ``log2(k(k+1))``; ``log 2 + (k−1)/2 · log π − lgamma((k−1)/2)``;
    ``log k · (k−2)/2`` — computed with ``math`` in ``BitCountingStats.__post_init__``'s order.
    """

    def __init__(self, total: int) -> None:
        self.size_bits = np.zeros(total + 1)
        self.sphere_head = np.zeros(total + 1)
        self.sphere_tail = np.zeros(total + 1)
        log_pi = math.log(math.pi)
        for k in range(1, total + 1):
            self.size_bits[k] = math.log(k * (k + 1), 2)
            if k >= 2:
                self.sphere_head[k] = math.log(2) + log_pi * ((k - 1) / 2) - math.lgamma((k - 1) / 2)
                self.sphere_tail[k] = math.log(k) * ((k - 2) / 2)
        self.size_bits_list: list[float] = self.size_bits.tolist()
        # What a group's bits owe to its size alone, for numpy's approximation (size 1: no stdev).
        self.per_size = self.size_bits + (self.sphere_head + self.sphere_tail) / math.log(2.0)
        self.per_size[:2] = self.size_bits[:2]
        self.sphere_head_list: list[float] = self.sphere_head.tolist()
        self.sphere_tail_list: list[float] = self.sphere_tail.tolist()


def exact_bits(
    tables: SizeTables,
    max_value: float,
    unit: float,
    size: int,
    average: float,
    stdev: float,
    prev: float | None,
) -> float:
    """Return ``BitCountingStats.for_runs_and_params([stats], max_value, unit, prev).bits`` [bit].

    The same ``math`` calls on the same operands in the same order as jumpavg's
    ``BitCountingStats.__post_init__`` (``tests/reporting/test_jumpfast.py`` compares the two).
    """
    size, average, stdev = repack(size, average, stdev)
    top = max_value / unit
    avg = average / unit
    bits = 0.0
    bits += tables.size_bits_list[size]
    if prev is None:
        bits += math.log(top + 1, 2)
    else:
        p = prev / unit
        norm = p * p
        norm -= (p - 1) * top
        norm += top * top / 2
        bits -= math.log((abs(avg - p) + 1) / norm, 2)
    if size < 2:
        return bits
    sd = stdev / unit
    bits += math.log((sd + 1) * (sd + 2), 2)
    bits += math.log(1 - 1 / (top + 2), 2)
    sphere = tables.sphere_head_list[size]
    sphere += math.log(sd + 1) * (size - 2)
    sphere += tables.sphere_tail_list[size]
    bits += sphere / math.log(2)
    return bits
