"""Statistics of an interleaved A/B comparison: paired rounds, change, interval, verdict, MDC.

Each round measures side A and side B back to back (in random order), so slow drift of the
machine hits both values of a round alike and cancels in their ratio (randomized multiple
interleaved trials: A. Abedi and T. Brecht, "Conducting Repeatable Experiments in Highly Variable
Cloud Computing Environments", ICPE 2017; FD.io CSIT's per-patch jobs measure parent and patched
builds alternately for the same reason). Per round the log ratio ``d = ln(B / A)``; over ``n``
rounds its mean and sample standard deviation ``s`` give:

* the change ``exp(mean) − 1`` and its ``1 − alpha`` confidence interval from Student's t with
  ``n − 1`` degrees of freedom (a paired t-test on log ratios, ``scipy.stats.ttest_1samp``);
* the **minimum detectable change** (MDC) at significance ``alpha`` and power ``1 − beta``:
  ``(t(1 − alpha/2, n−1) + t(1 − beta, n−1)) · s / √n`` in log space (the usual sample-size
  formula of a paired two-sided t-test, e.g. Cohen 1988 §2.4; t instead of z for small n):
  a real change at least that large would have been found with probability ``1 − beta``;
* the verdict: REGRESSION when the whole interval lies below 0 and the change is at least the
  practical threshold; IMPROVEMENT likewise above; else NO CHANGE (with the MDC saying how large
  a change could still hide).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats as scipy_stats

from ovsperf_common.spec import SpecEnum


class AbVerdict(SpecEnum):
    """Outcome of an A/B comparison (B against A)."""

    REGRESSION = "REGRESSION"
    """B is slower: the whole interval below 0 and the change beyond the threshold."""
    IMPROVEMENT = "IMPROVEMENT"
    """B is faster: the whole interval above 0 and the change beyond the threshold."""
    NO_CHANGE = "NO_CHANGE"
    """No change larger than the MDC went unseen (or too few rounds to say)."""


@dataclass(frozen=True)
class PairedEstimate:
    """B against A over the paired rounds so far."""

    rounds: int
    """Complete rounds (pairs) [1]."""
    change_percent: float
    """``exp(mean log ratio) − 1`` [%]: the geometric-mean change of B against A."""
    ci_low_percent: float | None
    """Lower end of the ``1 − alpha`` interval [%]; ``None`` with fewer than 2 rounds."""
    ci_high_percent: float | None
    """Upper end [%]."""
    p_value: float | None
    """Two-sided p of the paired t-test on log ratios; ``None`` with fewer than 2 rounds."""
    mdc_percent: float | None
    """Minimum detectable change at ``alpha`` and ``power`` [%]; ``None`` with fewer than 2 rounds."""
    verdict: AbVerdict
    """See the module docstring."""
    alpha: float
    """Significance level [1]."""
    power: float
    """Power the MDC is stated for [1]."""


def _percent(log_ratio: float) -> float:
    return (math.exp(log_ratio) - 1.0) * 100.0


def estimate(
    a: Sequence[float],
    b: Sequence[float],
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    threshold_percent: float = 1.0,
) -> PairedEstimate:
    """Return the paired estimate of B against A.

    :param a: side A's value per round, > 0 (e.g. MRR [pps]).
    :param b: side B's value per round, > 0, same rounds in the same order.
    :param threshold_percent: smallest change called a regression or improvement [%].
    :raises ValueError: when the lengths differ, a value is not positive and finite, or no round
        is given.
    """
    if len(a) != len(b) or not a:
        raise ValueError(f"Need the same number (>= 1) of rounds per side, got {len(a)} and {len(b)}.")
    if any(not (math.isfinite(v) and v > 0) for v in (*a, *b)):
        raise ValueError("Every round's value must be a positive finite number.")
    logs = [math.log(y / x) for x, y in zip(a, b, strict=True)]
    n = len(logs)
    mean = statistics.fmean(logs)
    if n < 2:
        return PairedEstimate(n, _percent(mean), None, None, None, None, AbVerdict.NO_CHANGE, alpha, power)
    sd = statistics.stdev(logs)
    se = sd / math.sqrt(n)
    t_alpha = float(scipy_stats.t.ppf(1 - alpha / 2, n - 1))
    t_beta = float(scipy_stats.t.ppf(power, n - 1))
    if se > 0:
        p_value = float(scipy_stats.ttest_1samp(logs, 0.0).pvalue)
    else:
        p_value = 0.0 if mean != 0 else 1.0
    low, high = mean - t_alpha * se, mean + t_alpha * se
    mdc = _percent((t_alpha + t_beta) * se)
    change = _percent(mean)
    if _percent(high) < 0 and change <= -threshold_percent:
        verdict = AbVerdict.REGRESSION
    elif _percent(low) > 0 and change >= threshold_percent:
        verdict = AbVerdict.IMPROVEMENT
    else:
        verdict = AbVerdict.NO_CHANGE
    return PairedEstimate(n, change, _percent(low), _percent(high), p_value, mdc, verdict, alpha, power)
