"""One search per traffic item: its trial records as they end, marked, then its latency, and its row."""

from __future__ import annotations

import time
from typing import Any, cast

import pytest

from ovsperf_catalog.catalog import load_catalog
from ovsperf_lab.crosscheck import CrossCheckedGenerator
from ovsperf_lab.errors import SearchError
from ovsperf_lab.machine import probe_machine
from ovsperf_lab.measure import MeasureObserver, flows_sent, measure_binary, measure_mlr, search_text
from ovsperf_lab.model import TrialSpec
from ovsperf_lab.plan import LabOptions, LabPlan, SearchMethod, plan_run
from ovsperf_lab.search.binary import TrialKind, TrialRecord
from ovsperf_lab.search.mlr import MlrIncompleteError, MlrTrial, relevance
from tests.ovsperf_lab.fakes import FakeTrafficGenerator
from tests.ovsperf_lab.test_plan import facts

CATALOG = load_catalog()
FACTS = facts(probe_machine())


def plan(**options: Any) -> LabPlan:
    return plan_run(CATALOG.get("OVS_DPDK2q"), FACTS, LabOptions(**options))


class Unchecked(FakeTrafficGenerator):
    """The fake generator where the run puts a cross-checked one (no OVS here: nothing checked)."""

    last = None


def unchecked(**kw: Any) -> CrossCheckedGenerator:
    return cast(CrossCheckedGenerator, Unchecked(**kw))


class Seen(MeasureObserver):
    def __init__(self) -> None:
        self.events: list[str] = []

    def trial_started(self, index: int, kind: TrialKind, rate_pps: float, duration_s: float) -> None:
        self.events.append(f"start {index}")

    def trial_finished(self, record: TrialRecord, best_pass_pps: float | None) -> None:
        self.events.append(f"end {record.index}")

    def mlr_trial_finished(self, number: int, trial: MlrTrial) -> None:
        self.events.append(f"mlr {number}")

    def latency_started(self, percent_of_pdr: float, load_pps: float, duration_s: float) -> None:
        self.events.append(f"latency {percent_of_pdr:g}")


def test_binary_sends_each_trial_as_it_ends_and_returns_the_row() -> None:
    binary = plan(search=SearchMethod.BINARY, search_trial_s=1, validation_trial_s=2, loss_percent=0.5)
    calls: list[list[dict[str, Any]]] = []
    seen = Seen()
    row = measure_binary(
        unchecked(capacity_pps=700_000.0),
        64,
        1,
        10_000,
        binary,
        on_trials=lambda r: calls.append(list(r)),
        observer=seen,
    )
    assert [len(c) for c in calls] == list(range(1, len(calls) + 1))
    assert all(c[:-1] == calls[i] for i, c in enumerate(calls[1:]))
    assert [t["index"] for t in calls[-1]] == list(range(1, len(calls) + 1))
    assert all(t["search"] == "binary" and t["crosscheck"] is None for t in calls[-1])
    assert calls[-1][-1]["kind"] == "validation" and calls[-1][-1]["flows"] == 2  # one flow per queue
    assert seen.events == [e for i in range(1, len(calls) + 1) for e in (f"start {i}", f"end {i}")]
    assert row.search_method == "binary" and row.flows == 2 and row.frame_size_bytes == 64
    assert row.goals[0].loss_ratio_limit == 0.005
    assert 0.99 * 1.4e6 <= (row.goals[0].rx_fps or 0.0) <= 1.4e6


def test_binary_failure_raises_after_sending_its_trials() -> None:
    binary = plan(search=SearchMethod.BINARY, search_trial_s=1, validation_trial_s=2)
    calls: list[list[dict[str, Any]]] = []
    with pytest.raises(SearchError, match="could not pass"):
        measure_binary(
            unchecked(capacity_pps=0.0),
            1518,
            1,
            10_000,
            binary,
            on_trials=lambda r: calls.append(list(r)),
            observer=Seen(),
        )
    assert calls and all(t["outcome"] == "fail" for t in calls[-1])


def test_mlr_sends_trials_then_their_marks_then_latency_and_returns_the_row() -> None:
    mlr = plan(goals_percent=(0.0, 0.5), latency_levels_percent=(50.0, 90.0), latency_trial_s=1.0, flows=1000)
    calls: list[list[dict[str, Any]]] = []
    seen = Seen()
    row = measure_mlr(
        unchecked(capacity_pps=700_000.0, latency_ns=8_000.0),
        1518,
        1000,
        10_000,
        mlr,
        on_trials=lambda r: calls.append(list(r)),
        observer=seen,
    )
    *growing, marked, with_latency = calls
    assert [len(c) for c in growing] == list(range(1, len(growing) + 1))
    assert all(t["relevant_to"] == [] and t["flows"] == 1000 for t in growing[-1])
    assert [{**t, "relevant_to": []} for t in marked] == growing[-1]
    assert {(m["goal_loss_percent"], m["bound"]) for t in marked for m in t["relevant_to"]} == {
        (0.0, "lower"), (0.0, "upper"), (0.5, "lower"), (0.5, "upper"),
    }  # fmt: skip
    assert with_latency[: len(marked)] == marked
    assert [(t["kind"], t["percent_of_pdr"]) for t in with_latency[len(marked) :]] == [
        ("latency", 50.0),
        ("latency", 90.0),
    ]
    assert seen.events == [f"mlr {i}" for i in range(1, len(growing) + 1)] + ["latency 50", "latency 90"]
    assert [g.loss_ratio_limit for g in row.goals] == [0.0, 0.005] and row.flows == 1000
    assert [lv.percent_of_pdr for lv in row.latency_levels] == [50.0, 90.0]
    assert row.latency_ns == (4000.0, 8000.0, 24000.0)


def test_mlr_stopped_at_its_limit_still_marks_its_trials() -> None:
    mlr = plan(search_duration_max_s=0.1, latency_levels_percent=())
    calls: list[list[dict[str, Any]]] = []

    def slow(spec: TrialSpec) -> float:
        time.sleep(0.02)
        return 700_000.0

    with pytest.raises(MlrIncompleteError, match="bounds found") as caught:
        measure_mlr(
            unchecked(capacity_for=slow),
            64,
            1,
            10_000,
            mlr,
            on_trials=lambda r: calls.append(list(r)),
            observer=Seen(),
        )
    partial = caught.value.partial
    assert partial is not None and len(partial.trials) == len(calls[-1]) == len(calls[-2])
    # The last call marks the trials with the partial result's bounds.
    assert [t["relevant_to"] for t in calls[-1]] == [relevance(partial, t) for t in partial.trials]
    assert [t["load_pps_per_direction"] for t in calls[-1]] == [t.load_pps for t in partial.trials]


def test_search_text_and_flows() -> None:
    sweep = plan(flows=1, flow_sweep=(1, 1000))
    assert search_text(sweep, 64, 1000) == "64 B, 1000 flows" and search_text(plan(), 64, 1) == "64 B"
    assert (flows_sent(sweep, 1), flows_sent(sweep, 1000)) == (2, 1000)  # 2 queues: one flow each at least
