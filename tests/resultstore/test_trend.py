"""Trend verdicts from the store's history: each build judged with the builds before it, open
regressions, tester marks, the analysis cache, and the cells of a new result."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from reporting.changepoints import ChangePointVerdict
from reporting.model import TREND_MIN_HISTORY, TrendVerdict
from resultstore.model import SeriesKey
from resultstore.samples import BuildInfo, Sample, samples_from_sets
from resultstore.store import ResultStore
from resultstore.trend import analyse_series, judge, load_sets, trend_for_sets
from tests.resultstore.history import T0, add_builds, add_history_of

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "results"
KEY64 = SeriesKey("OVS_DPDK1q", "phy2phy_tput", "p2p", 64, "ndr_fps")


@pytest.fixture
def store(tmp_path: Path) -> ResultStore:
    with ResultStore.open(f"sqlite:///{tmp_path / 'results.sqlite'}") as opened:
        yield opened  # type: ignore[misc]


def series64(store: ResultStore):  # type: ignore[no-untyped-def]
    return next(s for s in store.series() if s.key == KEY64)


def test_each_build_is_judged_with_its_past(store: ResultStore) -> None:
    names = add_builds(store, [7e6] * 30 + [6.5e6] * 10)
    series = series64(store)
    assert [p.result_name for p in series.points] == names
    marks = store.trend_marks()
    first = judge(series, 0, marks)
    assert first.verdict is TrendVerdict.NO_HISTORY and first.history == 0 and not first.decides
    assert judge(series, 20, marks).verdict is TrendVerdict.NORMAL
    at_step = judge(series, 30, marks)
    assert at_step.verdict is TrendVerdict.REGRESSION
    assert at_step.since == names[30] and at_step.decides
    assert at_step.step_percent == pytest.approx(-7.1, abs=1.0)
    assert "a worse group starts here" in at_step.reason and "Mpps" in at_step.reason
    later = judge(series, 39, marks)
    assert later.verdict is TrendVerdict.REGRESSION and later.since == names[30]
    assert "still open" in later.reason and later.history == 39


def test_marked_regression_is_expected_not_alarmed(store: ResultStore) -> None:
    names = add_builds(store, [7e6] * 30 + [6.5e6] * 10)
    store.add_trend_mark(names[30], KEY64, bug_id="FDP-123", comment="new default", tester="qe")
    series = series64(store)
    cell = judge(series, 39, store.trend_marks())
    assert cell.verdict is TrendVerdict.EXPECTED
    assert "FDP-123" in cell.reason and "qe" in cell.reason
    # Only that series is marked: the 1518 B one still alarms.
    other = next(s for s in store.series() if s.key.frame_size == 1518)
    assert judge(other, 39, store.trend_marks()).verdict is TrendVerdict.REGRESSION


def test_recovery_closes_the_regression(store: ResultStore) -> None:
    add_builds(store, [7e6] * 20 + [6.3e6] * 10 + [7e6] * 10)
    series = series64(store)
    assert judge(series, 39, store.trend_marks()).verdict is TrendVerdict.NORMAL


def test_single_bad_build_in_the_past_is_an_outlier(store: ResultStore) -> None:
    add_builds(store, [7e6] * 15 + [3e6] + [7e6] * 15)
    trends, _ = analyse_series(store.series(), store.trend_marks())
    trend = next(t for t in trends if t.series.key == KEY64)
    assert trend.analysis.verdicts[15] is ChangePointVerdict.OUTLIER
    assert trend.last.verdict is TrendVerdict.NORMAL


def test_an_open_regression_is_dated_at_the_build_half_way_through_the_step(store: ResultStore) -> None:
    # MongoDB signal-processing-algorithms 2.1.6, tests/test_detection.py::test_finds_behind
    # (commit aec099a9696d17ccd1e85a357313614a01f859a2): 50 × 14, 76, 100 × 15, change at 14;
    # here as a throughput drop of the same shape (10, 7.4, 5 Mpps: 7.4 is nearer the new level).
    names = add_builds(store, [10e6] * 14 + [7.4e6] + [5e6] * 15, cv=0.0)
    trends, _ = analyse_series(store.series(), store.trend_marks())
    trend = next(t for t in trends if t.series.key == KEY64)
    assert [(c.index, c.verdict) for c in trend.analysis.changes] == [(14, ChangePointVerdict.REGRESSION)]
    assert ChangePointVerdict.OUTLIER not in trend.analysis.verdicts
    assert trend.last.verdict is TrendVerdict.REGRESSION
    assert trend.last.since == names[14] and "3.1.0-14.el9" in trend.last.reason
    assert trend.last.step_percent == pytest.approx(((7.4 + 15 * 5) / 16 / 10 - 1) * 100)
    # When build 15 arrived, the regression was already dated at 14 (not moved to 15).
    assert judge(series64(store), 15, store.trend_marks()).since == names[14]


def test_analysis_cache_is_used_until_a_build_is_added(store: ResultStore) -> None:
    add_builds(store, [7e6] * 20)
    first, cache = analyse_series(store.series(), {})
    assert set(cache) == {s.series.key for s in first} and len(cache) == 2
    store.cache_analyses(cache)
    again, new = analyse_series(store.series(), {}, cache=store.cached_analyses())
    assert new == {}
    assert [t.analysis for t in again] == [t.analysis for t in first]
    add_builds(store, [7e6], start=20)
    _, after = analyse_series(store.series(), {}, cache=store.cached_analyses())
    assert len(after) == 2  # both series have a new build


def test_series_order_filters_and_gaps(store: ResultStore) -> None:
    add_builds(store, [7e6] * 3)
    # Same start time as build 2 (equal timestamps): ordered by name; only 64 B measured (a gap).
    add_builds(store, [7e6], start=2, prefix="zz-", cells=[("phy2phy_tput", "p2p", 64)])
    series = {s.key.frame_size: s for s in store.series()}
    assert [p.result_name for p in series[64].points][-2:] == ["openvswitch3.1-3.1.0-2.el9", "zz-2.el9"]
    assert len(series[1518].points) == 3
    assert store.series(scenario="OTHER") == []
    assert store.series(metrics=["pdr_fps"]) == []
    since = store.series(since=T0 + timedelta(days=2))
    assert {len(s.points) for s in since} == {1, 2}


def test_new_result_cells_are_judged_against_the_stored_history(store: ResultStore) -> None:
    sets = load_sets([EXAMPLES / "candidate_ovs-2.9.1_dpdk-17.11.2"])
    ndr = [s for s in samples_from_sets(sets) if s.metric == "ndr_fps"]
    assert ndr, "the example holds NDR samples"
    cells = [(s.test, s.deployment, s.frame_size) for s in ndr]
    level = {(s.test, s.deployment, s.frame_size): s.value for s in ndr}
    # History: every cell 10 % above what the candidate measured, 1 % noise, TREND_MIN_HISTORY builds.
    for number in range(TREND_MIN_HISTORY):
        add_builds(store, [1.0], cells=[], start=number)  # the build, no samples yet
    for number in range(TREND_MIN_HISTORY):
        name = f"openvswitch3.1-3.1.0-{number}.el9"
        samples = [
            Sample(t, d, f, "ndr_fps", 0, level[(t, d, f)] * 1.10 * (1 + 0.005 * ((number % 3) - 1)))
            for t, d, f in cells
        ]
        when = T0.replace(year=2018) + timedelta(days=number)  # before the candidate's 2018-04-10
        store.record_samples(name, BuildInfo(when, None, None, None, ()), samples)
    trend = trend_for_sets(store, sets, scenario="OVS_DPDK1q", name="candidate")
    assert set(trend) == {(t, d, f, "", 0.0) for t, d, f in cells}
    for cell in trend.values():
        assert cell.history == TREND_MIN_HISTORY and cell.decides
        assert cell.verdict is TrendVerdict.REGRESSION
        assert cell.step_percent == pytest.approx(-9.1, abs=0.6)
        assert cell.since == "candidate"
    # Another scenario has no history: no trend possible.
    other = trend_for_sets(store, sets, scenario="OVS_DPDK2q")
    assert {c.verdict for c in other.values()} == {TrendVerdict.NO_HISTORY}


def test_a_grown_series_is_extended_from_the_cache(
    store: ResultStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_builds(store, [7e6] * 100 + [6.5e6] * 10)
    _, cache = analyse_series(store.series(), {})
    store.cache_analyses(cache)
    add_builds(store, [6.5e6] * 2, start=110)
    calls: list[str] = []
    import resultstore.trend as trend_module

    real_extend, real_analyse = trend_module.extend, trend_module.analyse
    monkeypatch.setattr(
        trend_module, "extend", lambda *a, **k: calls.append("extend") or real_extend(*a, **k)
    )
    monkeypatch.setattr(
        trend_module, "analyse", lambda *a, **k: calls.append("analyse") or real_analyse(*a, **k)
    )
    trends, new = analyse_series(store.series(), {}, cache=store.cached_analyses(), workers=1)
    assert calls == ["extend", "extend"] and len(new) == 2
    trend = next(t for t in trends if t.series.key == KEY64)
    assert len(trend.analysis.verdicts) == 112
    assert [c.index for c in trend.analysis.changes] == [100]
    assert trend.last.verdict is TrendVerdict.REGRESSION and "still open" in trend.last.reason


def test_build_versions_prefer_package_nvrs() -> None:
    from resultstore.samples import build_info

    sets = load_sets([EXAMPLES / "candidate_ovs-2.9.1_dpdk-17.11.2"])
    plain = build_info(sets, None)
    assert (plain.ovs_version, plain.dpdk_version) == ("2.9.1", "17.11.2")
    assert plain.started_at is not None and plain.started_at.isoformat() == "2018-04-10T22:01:55+00:00"
    meta = {
        "started_at": "2026-11-20T02:00:00Z",
        "hosts": {"dut": "dut1.lab", "trafficgen": "tg1.lab"},
        "packages": {
            "openvswitch3.1-test": "3.1.0-65.el9fdp.noarch",
            "openvswitch3.1": "3.1.0-65.el9fdp.x86_64",
            "dpdk": "22.11-4.el9.x86_64",
            "dpdk-tools": "22.11-4.el9.x86_64",
            "kernel": "5.14.0-427.el9.x86_64",
        },
    }
    info = build_info(sets, meta)
    assert info.ovs_version == "openvswitch3.1-3.1.0-65.el9fdp.x86_64"
    assert info.dpdk_version == "dpdk-22.11-4.el9.x86_64"
    assert info.qemu_version == "2.6.0"  # no qemu-kvm package listed: VSperf's environment (VNF) says
    assert info.hosts == ("dut1.lab", "tg1.lab")
    assert info.started_at is not None and info.started_at.isoformat() == "2026-11-20T02:00:00+00:00"


def test_a_new_result_is_judged_by_extending_the_cached_history(store: ResultStore) -> None:
    sets = load_sets([EXAMPLES / "candidate_ovs-2.9.1_dpdk-17.11.2"])
    add_history_of(store, [EXAMPLES / "candidate_ovs-2.9.1_dpdk-17.11.2"], scenario="S", builds=90,
                   factors={("pvp_tput", 64): 1.08})  # fmt: skip
    without_cache = trend_for_sets(store, sets, scenario="S", name="candidate")
    _, cache = analyse_series(store.series(scenario="S"), {})
    store.cache_analyses(cache)
    with_cache = trend_for_sets(store, sets, scenario="S", name="candidate")
    assert with_cache == without_cache
    assert with_cache[("pvp_tput", "pvp", 64, "", 0.0)].verdict is TrendVerdict.REGRESSION
    assert with_cache[("phy2phy_tput", "p2p", 64, "", 0.0)].verdict is TrendVerdict.NORMAL
