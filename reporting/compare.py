"""Compare baseline and current VSperf results per (test, deployment, frame size, loss goal); pure.

Throughputs compare only with the same loss-ratio goal: NDR with NDR, PDR with PDR
(docs/results-format.md); a goal the baseline never measured is NO_BASELINE. Latency at shares of
the PDR load is compared percentile by percentile (``reporting.latency``), without a verdict.

Method (stated on the report page):

* **One valid run per side** (the original thesis behaviour): relative change
  ``current / baseline − 1``; REGRESSION when ≤ −``regression_percent``, IMPROVEMENT when
  ≥ +``improvement_percent``, else PASS. No noise estimate is possible.
* **Several runs on a side** (repeats: the same test with different indices in one results
  directory, or several directories per side): mean, sample standard deviation and a
  ``1 − alpha`` confidence interval of the relative change. Both sides with ≥ 2 samples: Welch's
  unequal-variance t-test (``scipy.stats.ttest_ind(equal_var=False)``), Welch–Satterthwaite
  degrees of freedom for the interval. One side with a single sample: a one-sample t-test of the
  other side's samples against that value (``scipy.stats.ttest_1samp``). Verdict, after
  Perfherder's "magnitude gate and significance" rule (reference search_and_trending §7, §9.3):
  REGRESSION / IMPROVEMENT when p < alpha **and** the mean change passes the threshold; PASS
  when the whole interval lies inside (−regression, +improvement); otherwise UNSTABLE (more
  repeats needed). The relative interval is the difference interval divided by the baseline
  mean (its own uncertainty is neglected).
* Zero, missing or unparsable throughput, a frame size the current side lacks, a test the
  baseline has but the current side lacks: INVALID, never a −100 % regression (VSperf writes
  zeros when it cannot parse MoonGen's output, reference vsperf §7.1; LNST's
  NonzeroFlowEvaluator). A test measured before and missing now is suspicious. A physically
  impossible row is INVALID too (``reporting.plausibility``): the loader checks each row and each
  test's rows against the link they imply; :func:`check_against_link` checks a test without
  percentages against the link the compared results derive.
* A test only the current side has (a new test, no baseline yet; no baseline log names it as
  failed), or a frame size the baseline's intact CSVs do not have, with valid throughput:
  NO_BASELINE, shown but not compared. It is neither a pass nor
  a failure and leaves the exit code to the other cells.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from scipy import stats as scipy_stats

from ovsperf_common.framemix import TrafficKey
from ovsperf_common.goals import goal_label
from ovsperf_common.units import line_rate_pps
from reporting.latency import compare_latency
from reporting.model import Cell, Comparison, Method, RunValue, SideStats, TestComparison, Thresholds, Verdict
from reporting.plausibility import derive_link_bps, implied_link_bps, link_problem
from reporting.resultmodel import ResultSet, TestRun, ThroughputRow
from reporting.telemetry import compare_telemetry

DEFAULT_LINK_BPS = 2 * 10e9
"""Aggregate line speed assumed when the results carry no rate percentage: 2 × 10 GbE [bit/s]
(VSperf's MoonGen wrapper supports only 10 Gbps, bidirectional = 2 streams, reference vsperf §3.7)."""


@dataclass(frozen=True)
class LinkSpeed:
    """Aggregate line speed used for the theoretical line rate."""

    bps: float
    """[bit/s], both directions summed."""
    source: str
    """How it was found, for the page."""
    derived: bool = False
    """True when the results' own percentages gave it; False when :data:`DEFAULT_LINK_BPS` is assumed."""


def link_speed(result_sets: Sequence[ResultSet]) -> LinkSpeed:
    """Derive the aggregate line speed from VSperf's ``throughput_rx_percent`` [bit/s].

    VSperf computes ``percent = 100 · rx_fps / (streams · 10e9 / 8 / (frame + 20))``, so
    ``link = rx_fps · 100 / percent · (frame + 20) · 8``
    (:func:`reporting.plausibility.implied_link_bps`); the median over rows, rounded to
    1 Gbit/s. Falls back to :data:`DEFAULT_LINK_BPS` without usable rows.
    """
    estimates = [
        bps
        for rs in result_sets
        for run in rs.runs
        for t in run.rows
        for bps in [implied_link_bps(t)]
        if bps is not None
    ]
    if not estimates:
        return LinkSpeed(DEFAULT_LINK_BPS, "assumed 2 × 10 GbE (no rate percentage in the results)")
    bps = round(statistics.median(estimates) / 1e9) * 1e9
    if bps <= 0:
        return LinkSpeed(DEFAULT_LINK_BPS, "assumed 2 × 10 GbE (rate percentages unusable)")
    return LinkSpeed(bps, "derived from VSperf's throughput_rx_percent", derived=True)


def check_against_link(
    result_sets: Sequence[ResultSet], link: LinkSpeed, warnings: list[str]
) -> tuple[ResultSet, ...]:
    """Mark INVALID the rows of test runs without a link of their own that contradict ``link``.

    A run whose rows imply a link was checked against it when loaded (``reporting.load``); a run
    without percentages (VSperf's TRex driver writes ``Unknown``) is checked here against the
    link the compared results derived (:func:`reporting.plausibility.link_problem`), when they
    derived one. Each marked row adds a warning to ``warnings``.

    :returns: ``result_sets`` with those rows' ``implausible`` set.
    """
    if not link.derived:
        return tuple(result_sets)
    checked: list[ResultSet] = []
    for rs in result_sets:
        runs: list[TestRun] = []
        for run in rs.runs:
            if derive_link_bps(run.rows) is None:
                rows: list[ThroughputRow] = []
                for row in run.rows:
                    problem = link_problem(row, link.bps, "that the compared results' percentages imply")
                    if problem is not None:
                        warnings.append(
                            f"'{row.path}' line {row.line}: Physically impossible at {row.traffic.text()} "
                            f"({goal_label(row.loss_goal_percent)}): {problem}; marked INVALID."
                        )
                        row = replace(row, implausible=problem)
                    rows.append(row)
                run = replace(run, rows=tuple(rows))
            runs.append(run)
        checked.append(replace(rs, runs=tuple(runs)))
    return tuple(checked)


def compare(
    baseline: Sequence[ResultSet],
    current: Sequence[ResultSet],
    thresholds: Thresholds,
) -> Comparison:
    """Compare every (test, deployment) found on either side.

    :param baseline: result directories pooled as the baseline samples.
    :param current: result directories pooled as the current samples; each also gets its own
        per-result value and change in every cell.
    :returns: tests in baseline order, then current-only tests; cells ascending by frame size.
    """
    link = link_speed([*baseline, *current])
    warnings: list[str] = []
    baseline = check_against_link(baseline, link, warnings)
    current = check_against_link(current, link, warnings)
    keys: list[tuple[str, str]] = []
    for rs in [*baseline, *current]:
        for run in rs.runs:
            if (run.test, run.deployment) not in keys:
                keys.append((run.test, run.deployment))
    tests = []
    for test, deployment in keys:
        b_runs = _runs(baseline, test, deployment)
        c_runs = _runs(current, test, deployment)
        baseline_failed = any(test in rs.failed_tests for rs in baseline)
        for side, runs, sets in (("baseline", b_runs, baseline), ("current", c_runs, current)):
            if not runs:
                failed = [rs.path for rs in sets if test in rs.failed_tests]
                why = f" (failed in {', '.join(repr(str(p)) for p in failed)})" if failed else ""
                outcome = (
                    "new test: its cells are NO_BASELINE (shown, not compared) until a baseline has it"
                    if side == "baseline" and not failed
                    else "its cells are INVALID"
                )
                warnings.append(
                    f"Test '{test}' ({deployment}) has no result on the {side} side{why}; {outcome}."
                )
        keys_here = sorted(
            {(t.traffic, t.loss_goal_percent) for r in [*b_runs, *c_runs] for t in r.rows},
            key=lambda key: (key[0].sort_key(), key[1]),
        )
        cells = tuple(
            _cell(traffic, goal, b_runs, c_runs, current, test, deployment, link, thresholds, baseline_failed)
            for traffic, goal in keys_here
        )
        for cell in cells:
            if (
                cell.verdict is Verdict.INVALID
                and b_runs
                and c_runs
                and (cell.baseline is None or cell.current is None)
            ):
                warnings.append(
                    f"Test '{test}' ({deployment}) {cell.traffic.text()} "
                    f"{goal_label(cell.loss_goal_percent)}: {cell.reason}"
                )
        tests.append(
            TestComparison(
                test=test,
                deployment=deployment,
                cells=cells,
                baseline_runs=b_runs,
                current_runs=c_runs,
                latency=compare_latency(b_runs, c_runs),
                telemetry=compare_telemetry(b_runs, c_runs, thresholds),
            )
        )
    return Comparison(
        tests=tuple(tests),
        thresholds=thresholds,
        warnings=tuple(warnings),
        link_bps=link.bps,
        link_source=link.source,
    )


def _runs(sets: Sequence[ResultSet], test: str, deployment: str) -> tuple[TestRun, ...]:
    return tuple(r for rs in sets for r in rs.runs if r.test == test and r.deployment == deployment)


def _rows(runs: Sequence[TestRun], traffic: TrafficKey, goal: float) -> list[ThroughputRow]:
    return [t for r in runs for t in r.rows if t.traffic == traffic and t.loss_goal_percent == goal]


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _side(trials: list[ThroughputRow]) -> SideStats | None:
    samples = tuple(t.rx_pps for t in trials if t.valid and t.rx_pps is not None)
    return SideStats(samples) if samples else None


def _invalid_reason(
    side: str, trials: list[ThroughputRow], runs: Sequence[TestRun], traffic: TrafficKey, goal: float
) -> str:
    if not runs:
        return f"Test not present on the {side} side."
    if not trials:
        damaged = sorted({r.csv_path.name for r in runs if r.rows_skipped})
        if damaged:
            shown = ", ".join(f"'{name}'" for name in damaged)
            return f"No {traffic.text()} row on the {side} side: {shown} lost rows (see Warnings)."
        if goal != 0 or any(t.traffic == traffic for r in runs for t in r.rows):
            return f"No {goal_label(goal)} at {traffic.text()} on the {side} side (it measured other goals)."
        same_frame = any(
            (t.frame_size_bytes, t.mix) == (traffic.frame_size_bytes, traffic.mix)
            for r in runs
            for t in r.rows
        )
        differ = "flow counts differ" if same_frame else "frame sizes differ"
        return f"No {traffic.text()} row on the {side} side ({differ})."
    bad = trials[0]
    if bad.implausible is not None:
        what = f"implausible ({bad.implausible})"
    elif bad.rx_pps is not None and bad.rx_pps <= 0:
        what = "0" if bad.rx_pps == 0 else f"negative ({bad.rx_pps:g} fps)"
    else:
        what = "missing or unparsable"
    return f"Throughput {what} on the {side} side ('{bad.path.name}' line {bad.line})."


def _cell(
    traffic: TrafficKey,
    goal: float,
    b_runs: tuple[TestRun, ...],
    c_runs: tuple[TestRun, ...],
    current_sets: Sequence[ResultSet],
    test: str,
    deployment: str,
    link: LinkSpeed,
    thresholds: Thresholds,
    baseline_failed: bool,
) -> Cell:
    b_trials = _rows(b_runs, traffic, goal)
    c_trials = _rows(c_runs, traffic, goal)
    base = _side(b_trials)
    cur = _side(c_trials)
    per_result = tuple(_run_value(rs, test, deployment, traffic, goal, base) for rs in current_sets)
    new_test = not b_runs and not baseline_failed
    # A frame size the baseline never measured (its CSVs are whole, it just has other sizes).
    new_size = (
        bool(b_runs) and not b_trials and not baseline_failed and not any(r.rows_skipped for r in b_runs)
    )
    if new_test and cur is not None:
        decision = _not_compared(
            Verdict.NO_BASELINE,
            "Test not present on the baseline side: a new test, no baseline yet; shown, not compared "
            "(add it to the baseline to compare it).",
        )
    elif new_size and cur is not None:
        other_goal = any(t.traffic == traffic for r in b_runs for t in r.rows)
        what = f"{goal_label(goal)} at {traffic.text()}" if other_goal else f"{traffic.text()} row"
        kind = "goal (e.g. an older NDR-only baseline)" if other_goal else "frame size or flow count"
        decision = _not_compared(
            Verdict.NO_BASELINE,
            f"No {what} on the baseline side: a new {kind}, no baseline yet; shown, not "
            "compared (add it to the baseline to compare it).",
        )
    elif base is None or cur is None:
        if base is None and not new_test:
            reason = _invalid_reason("baseline", b_trials, b_runs, traffic, goal)
        else:
            reason = _invalid_reason("current", c_trials, c_runs, traffic, goal)
        decision = _not_compared(Verdict.INVALID, reason)
    else:
        decision = decide(base, cur, thresholds)
    dropped = sum(1 for t in [*b_trials, *c_trials] if not t.valid)
    if dropped and decision.verdict is not Verdict.INVALID:
        decision = replace(decision, reason=f"{decision.reason} {dropped} invalid sample(s) left out.")
    rel = decision.rel_change_percent
    average = traffic.average_frame_bytes
    return Cell(
        frame_size_bytes=traffic.frame_size_bytes,
        mix=traffic.mix,
        flows=traffic.flows,
        loss_goal_percent=goal,
        baseline=base,
        current=cur,
        line_rate_pps=None if average is None else line_rate_pps(average, link.bps),
        rel_change_percent=rel,
        ci_low_percent=decision.ci_low_percent,
        ci_high_percent=decision.ci_high_percent,
        p_value=decision.p_value,
        method=decision.method,
        verdict=decision.verdict,
        reason=decision.reason,
        warn=rel is not None and abs(rel) >= thresholds.warning_percent,
        baseline_latency_avg_ns=_mean([t.latency_avg_ns for t in b_trials]),
        current_latency_avg_ns=_mean([t.latency_avg_ns for t in c_trials]),
        baseline_latency_max_ns=_mean([t.latency_max_ns for t in b_trials]),
        current_latency_max_ns=_mean([t.latency_max_ns for t in c_trials]),
        baseline_frame_loss_percent=_mean([t.frame_loss_percent for t in b_trials]),
        current_frame_loss_percent=_mean([t.frame_loss_percent for t in c_trials]),
        per_result=per_result,
    )


def _run_value(
    rs: ResultSet, test: str, deployment: str, traffic: TrafficKey, goal: float, base: SideStats | None
) -> RunValue:
    trials = _rows([r for r in rs.runs if r.test == test and r.deployment == deployment], traffic, goal)
    valid = [t.rx_pps for t in trials if t.valid and t.rx_pps is not None]
    value = sum(valid) / len(valid) if valid else None
    rel = (value / base.mean_pps - 1.0) * 100.0 if value is not None and base is not None else None
    return RunValue(label=rs.path.name, rx_pps=value, rel_change_percent=rel)


@dataclass(frozen=True)
class StatisticalVerdict:
    """A cell's verdict with the statistics behind it.

    The result of :func:`decide`, or of a cell not compared (INVALID or NO_BASELINE: numbers None).
    """

    rel_change_percent: float | None
    ci_low_percent: float | None
    ci_high_percent: float | None
    p_value: float | None
    method: Method
    verdict: Verdict
    reason: str


def _not_compared(verdict: Verdict, reason: str) -> StatisticalVerdict:
    """Return a decision without numbers (INVALID or NO_BASELINE)."""
    return StatisticalVerdict(
        rel_change_percent=None,
        ci_low_percent=None,
        ci_high_percent=None,
        p_value=None,
        method=Method.NONE,
        verdict=verdict,
        reason=reason,
    )


def decide(base: SideStats, cur: SideStats, thresholds: Thresholds) -> StatisticalVerdict:
    """Return the verdict for valid samples on both sides (see the module docstring).

    :param base: baseline samples, each > 0 [pps].
    :param cur: current samples, each > 0 [pps].
    """
    reg, imp = thresholds.regression_percent, thresholds.improvement_percent
    b_mean, c_mean = base.mean_pps, cur.mean_pps
    rel = (c_mean / b_mean - 1.0) * 100.0
    if base.n == 1 and cur.n == 1:
        if rel <= -reg:
            verdict = Verdict.REGRESSION
        elif rel >= imp:
            verdict = Verdict.IMPROVEMENT
        else:
            verdict = Verdict.PASS
        return StatisticalVerdict(
            rel_change_percent=rel,
            ci_low_percent=None,
            ci_high_percent=None,
            p_value=None,
            method=Method.SINGLE,
            verdict=verdict,
            reason=(
                f"One run per side, no noise estimate possible: {rel:+.3f} % against thresholds "
                f"−{reg:g} % / +{imp:g} %."
            ),
        )
    diff = c_mean - b_mean
    if base.n >= 2 and cur.n >= 2:
        method = Method.WELCH_T
        vb = (base.stdev_pps or 0.0) ** 2 / base.n
        vc = (cur.stdev_pps or 0.0) ** 2 / cur.n
        se = math.sqrt(vb + vc)
        if se > 0:
            df = (vb + vc) ** 2 / (
                (vb**2 / (base.n - 1) if vb else 0.0) + (vc**2 / (cur.n - 1) if vc else 0.0)
            )
            if vb and vc:
                p_value = float(
                    scipy_stats.ttest_ind(cur.samples_pps, base.samples_pps, equal_var=False).pvalue
                )
            else:
                # One side without spread: Welch's test reduces to a one-sample test of the other
                # side against that constant (same t and df); scipy's two-sample code would warn
                # about catastrophic cancellation here.
                spread, constant = (cur, b_mean) if vc else (base, c_mean)
                p_value = float(scipy_stats.ttest_1samp(spread.samples_pps, popmean=constant).pvalue)
    else:
        method = Method.ONE_SAMPLE_T
        many, single = (cur, b_mean) if cur.n >= 2 else (base, c_mean)
        se = (many.stdev_pps or 0.0) / math.sqrt(many.n)
        df = many.n - 1
        if se > 0:
            p_value = float(scipy_stats.ttest_1samp(many.samples_pps, popmean=single).pvalue)
    if se > 0:
        half = float(scipy_stats.t.ppf(1.0 - thresholds.alpha / 2.0, df)) * se
    else:
        # Identical samples on every side with repeats: no spread, the difference is exact.
        half = 0.0
        p_value = 0.0 if diff != 0 else 1.0
    low = (diff - half) / b_mean * 100.0
    high = (diff + half) / b_mean * 100.0
    confidence = 100.0 * (1.0 - thresholds.alpha)
    detail = (
        f"{rel:+.3f} %, {confidence:g} % CI [{low:+.3f}, {high:+.3f}] %, p = {p_value:.3g} "
        f"(n = {base.n} vs {cur.n})"
    )
    if p_value < thresholds.alpha and rel <= -reg:
        verdict, why = Verdict.REGRESSION, f"Significant drop beyond −{reg:g} %"
    elif p_value < thresholds.alpha and rel >= imp:
        verdict, why = Verdict.IMPROVEMENT, f"Significant rise beyond +{imp:g} %"
    elif low > -reg and high < imp:
        verdict, why = Verdict.PASS, f"Whole interval within −{reg:g} % … +{imp:g} %"
    else:
        verdict, why = (
            Verdict.UNSTABLE,
            "Too noisy to decide (interval crosses a threshold); run more repeats",
        )
    return StatisticalVerdict(
        rel_change_percent=rel,
        ci_low_percent=low,
        ci_high_percent=high,
        p_value=p_value,
        method=method,
        verdict=verdict,
        reason=f"{why}: {detail}.",
    )
