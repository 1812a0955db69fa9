"""Check the pure comparison: single-run thresholds, t-test statistics and INVALID handling."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from scipy import stats

from ovsperf_common.errors import FieldError
from reporting.compare import compare, decide, link_speed
from reporting.model import Method, SideStats, Thresholds, Verdict
from reporting.resultmodel import ResultSet, TestRun, ThroughputRow

TH = Thresholds()


def _side(*mpps: float) -> SideStats:
    return SideStats(tuple(x * 1e6 for x in mpps))


@pytest.mark.parametrize(
    ("base", "cur", "verdict"),
    [
        (10.0, 9.5, Verdict.REGRESSION),  # exactly −5 %
        (10.0, 9.51, Verdict.PASS),
        (10.0, 10.5, Verdict.IMPROVEMENT),  # exactly +5 %
        (10.0, 10.49, Verdict.PASS),
        (10.0, 10.0, Verdict.PASS),
    ],
)
def test_single_run_thresholds(base: float, cur: float, verdict: Verdict) -> None:
    decision = decide(_side(base), _side(cur), TH)
    assert decision.method is Method.SINGLE and decision.verdict is verdict
    assert decision.rel_change_percent == pytest.approx((cur / base - 1) * 100)
    assert decision.p_value is None and decision.ci_low_percent is None
    assert "no noise estimate possible" in decision.reason


def test_welch_matches_scipy_and_detects_regression() -> None:
    base = _side(10.0, 10.2, 9.8, 10.1, 9.9)
    cur = _side(9.3, 9.4, 9.2, 9.5, 9.3)
    decision = decide(base, cur, TH)
    assert decision.method is Method.WELCH_T and decision.verdict is Verdict.REGRESSION
    ref = stats.ttest_ind(cur.samples_pps, base.samples_pps, equal_var=False)
    assert decision.p_value == pytest.approx(ref.pvalue)
    low, high = ref.confidence_interval(0.95)
    assert decision.ci_low_percent == pytest.approx(low / base.mean_pps * 100)
    assert decision.ci_high_percent == pytest.approx(high / base.mean_pps * 100)
    assert decision.rel_change_percent == pytest.approx((9.34 / 10.0 - 1) * 100)


def test_significant_but_small_change_passes() -> None:
    decision = decide(_side(10.0, 10.01, 9.99, 10.0), _side(9.9, 9.91, 9.89, 9.9), TH)
    assert decision.p_value is not None and decision.p_value < 0.05
    assert decision.verdict is Verdict.PASS  # −1 %, interval well inside ±5 %


def test_noisy_repeats_are_unstable() -> None:
    decision = decide(_side(10.0, 11.0, 9.0), _side(9.4, 10.6, 8.0), TH)
    assert decision.verdict is Verdict.UNSTABLE and "run more repeats" in decision.reason
    assert decision.ci_low_percent is not None and decision.ci_low_percent < -5


def test_improvement_with_repeats() -> None:
    decision = decide(_side(10.0, 10.1, 9.9), _side(11.0, 11.1, 10.9), TH)
    assert decision.verdict is Verdict.IMPROVEMENT


def test_one_sample_against_single_baseline() -> None:
    decision = decide(_side(10.0), _side(9.0, 9.02, 8.98, 9.01), TH)
    assert decision.method is Method.ONE_SAMPLE_T and decision.verdict is Verdict.REGRESSION
    ref = stats.ttest_1samp([9.0e6, 9.02e6, 8.98e6, 9.01e6], popmean=10.0e6)
    assert decision.p_value == pytest.approx(ref.pvalue)


def test_identical_samples_without_spread() -> None:
    same = decide(_side(5.0, 5.0), _side(5.0, 5.0), TH)
    assert same.verdict is Verdict.PASS and same.p_value == 1.0 and same.ci_low_percent == 0.0
    drop = decide(_side(5.0, 5.0), _side(4.0, 4.0), TH)
    assert drop.verdict is Verdict.REGRESSION and drop.p_value == 0.0


def _run(
    test: str, values: dict[int, float | None], path: Path = Path("/r/results_x/result_0_t_p2p.csv")
) -> TestRun:
    trials = tuple(
        ThroughputRow(size, rx, None, None, None, None, None, None, path, line)
        for line, (size, rx) in enumerate(values.items(), start=2)
    )
    return TestRun(test, "p2p", 0, path, trials, None, None, None, None, None)


def _set(name: str, *runs: TestRun) -> ResultSet:
    return ResultSet(Path(f"/r/{name}"), runs, (), None, (), (), ())


def test_zero_and_missing_are_invalid_never_minus_100() -> None:
    base = _set("b", _run("t", {64: 10e6, 128: 8e6, 256: 4e6}))
    cur = _set("c", _run("t", {64: 0.0, 128: None, 512: 2e6}))
    result = compare([base], [cur], TH)
    cells = {c.frame_size_bytes: c for c in result.tests[0].cells}
    assert set(cells) == {64, 128, 256, 512}
    for size in (64, 128, 256):
        assert cells[size].verdict is Verdict.INVALID and cells[size].rel_change_percent is None
    assert "Throughput 0 on the current side" in cells[64].reason
    assert "missing or unparsable" in cells[128].reason
    assert "No 256 B row on the current side" in cells[256].reason
    # A size the baseline never measured is new, not broken: shown, not compared.
    assert cells[512].verdict is Verdict.NO_BASELINE and cells[512].rel_change_percent is None
    assert "No 512 B row on the baseline side: a new frame size" in cells[512].reason
    assert result.overall == "INVALID"


def test_a_size_missing_from_a_damaged_baseline_stays_invalid() -> None:
    # The baseline CSV lost a row: its 512 B may be the lost one, so the cell is not "new".
    damaged = dataclasses.replace(_run("t", {64: 10e6}), rows_skipped=1)
    result = compare([_set("b", damaged)], [_set("c", _run("t", {64: 10e6, 512: 2e6}))], TH)
    cells = {c.frame_size_bytes: c for c in result.tests[0].cells}
    assert cells[512].verdict is Verdict.INVALID
    assert "No 512 B row on the baseline side" in cells[512].reason and "lost rows" in cells[512].reason
    assert cells[64].verdict is Verdict.PASS


def test_improvement_is_never_a_failure() -> None:
    result = compare([_set("b", _run("t", {64: 10e6}))], [_set("c", _run("t", {64: 12e6}))], TH)
    assert result.counts["IMPROVEMENT"] == 1 and result.overall == "PASS"


def test_partly_invalid_repeats_use_the_valid_samples() -> None:
    base = _set("b", _run("t", {64: 10e6}))
    cur1 = _set("c1", _run("t", {64: 9.0e6}))
    cur2 = _set("c2", _run("t", {64: 0.0}))
    cur3 = _set("c3", _run("t", {64: 9.1e6}))
    (cell,) = compare([base], [cur1, cur2, cur3], TH).tests[0].cells
    assert cell.current is not None and cell.current.n == 2
    assert "1 invalid sample(s) left out" in cell.reason
    assert [r.rx_pps for r in cell.per_result] == [9.0e6, None, 9.1e6]


def test_link_speed_from_vsperf_percent_and_default() -> None:
    path = Path("/r/x.csv")
    trial = ThroughputRow(64, 14203716.0, None, 47.724, None, None, None, None, path, 2)
    run = TestRun("t", "p2p", 0, path, (trial,), None, None, None, None, None)
    assert link_speed([_set("a", run)]).bps == 20e9
    assert link_speed([_set("b", _run("t", {64: 1e6}))]).source.startswith("assumed")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"regression_percent": 0.0}, "regression_percent"),
        ({"improvement_percent": math.nan}, "improvement_percent"),
        ({"warning_percent": 150.0}, "warning_percent"),
        ({"alpha": 0.0}, "alpha"),
    ],
)
def test_threshold_validation(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(FieldError) as info:
        Thresholds(**kwargs)
    assert info.value.field == field and field in str(info.value)


def test_verdict_from_spec() -> None:
    assert Verdict.from_spec(" regression ") is Verdict.REGRESSION
    with pytest.raises(ValueError, match="'PASS', 'REGRESSION', 'IMPROVEMENT', 'UNSTABLE', 'INVALID'"):
        Verdict.from_spec("FAILED")
    assert Method.from_spec("welch-t") is Method.WELCH_T


def test_test_only_on_current_side_is_no_baseline() -> None:
    base = _set("b", _run("old", {64: 10e6}))
    cur = _set("c", _run("old", {64: 10.1e6}), _run("new", {64: 5e6, 128: 0.0}))
    result = compare([base], [cur], TH)
    old, new = result.tests
    assert [c.verdict for c in old.cells] == [Verdict.PASS]
    cells = {c.frame_size_bytes: c for c in new.cells}
    assert cells[64].verdict is Verdict.NO_BASELINE and cells[64].method is Method.NONE
    assert cells[64].rel_change_percent is None and cells[64].baseline is None
    assert cells[64].current is not None and cells[64].current.mean_pps == 5e6
    # A zero row of the new test is still an invalid measurement, named as the current side's.
    assert cells[128].verdict is Verdict.INVALID
    assert "Throughput 0 on the current side" in cells[128].reason
    assert result.counts["NO_BASELINE"] == 1 and result.counts["INVALID"] == 1
    assert any("'new'" in w and "NO_BASELINE" in w for w in result.warnings)


def test_no_baseline_leaves_the_overall_verdict_to_the_other_cells() -> None:
    base = _set("b", _run("old", {64: 10e6, 128: 8e6}))
    passing = _set("c", _run("old", {64: 10e6, 128: 8e6}), _run("new", {64: 5e6}))
    result = compare([base], [passing], TH)
    assert result.counts["PASS"] == 2 and result.counts["NO_BASELINE"] == 1
    assert result.overall == "PASS"
    regressing = _set("c", _run("old", {64: 9e6, 128: 8e6}), _run("new", {64: 5e6}))
    assert compare([base], [regressing], TH).overall == "REGRESSION"


def test_test_missing_on_current_side_stays_invalid() -> None:
    base = _set("b", _run("old", {64: 10e6}), _run("gone", {64: 5e6}))
    cur = _set("c", _run("old", {64: 10e6}))
    result = compare([base], [cur], TH)
    (cell,) = result.tests[1].cells
    assert cell.verdict is Verdict.INVALID and "Test not present on the current side" in cell.reason
    assert result.overall == "INVALID"


def test_test_the_baseline_failed_is_invalid_not_new() -> None:
    """A baseline whose log names the test as failed is broken, not missing the test by design."""
    base = ResultSet(Path("/r/b"), (_run("old", {64: 10e6}),), (), None, (), ("new",), ())
    cur = _set("c", _run("old", {64: 10e6}), _run("new", {64: 5e6}))
    result = compare([base], [cur], TH)
    (cell,) = result.tests[1].cells
    assert cell.verdict is Verdict.INVALID and "Test not present on the baseline side" in cell.reason
    assert any("failed in '/r/b'" in w and "INVALID" in w for w in result.warnings)


def test_only_new_tests_compare_nothing_so_nothing_passes() -> None:
    from reporting.model import Cell, Comparison, TestComparison

    cell = Cell(
        64, None, _side(5.0), 29.76e6, None, None, None, None, Method.NONE, Verdict.NO_BASELINE, "", False
    )
    comparison = Comparison((TestComparison("new", "p2p", (cell,), (), ()),), TH)
    assert comparison.overall == "INVALID"
