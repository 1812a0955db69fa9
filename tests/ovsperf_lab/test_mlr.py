"""MLRsearch on the lab's generator interface: NDR and PDR in one search, stalls tolerated, bad input."""

from __future__ import annotations

import logging
import random
import time

import pytest

from ovsperf_lab.errors import LabError, SearchError, TrafficGeneratorError
from ovsperf_lab.model import TrialSpec
from ovsperf_lab.search.mlr import MlrConfig, MlrIncompleteError, MlrTrial, relevance, search_mlr
from ovsperf_lab.search.mlrconfig import CSIT_MIN_LOAD_PPS
from tests.ovsperf_lab.fakes import FakeTrafficGenerator

LINE_RATE_64B = 14_880_952.0
LOG = logging.getLogger("test.mlr")


def test_ndr_and_pdr_in_one_search_within_the_goal_width() -> None:
    generator = FakeTrafficGenerator(capacity_pps=750_000.0)
    result = search_mlr(generator, MlrConfig(frame_size_bytes=64, max_rate_pps=LINE_RATE_64B), log=LOG)
    ndr, pdr = result.goal(0.0), result.goal(0.005)
    assert ndr.conditional_throughput_pps is not None and pdr.conditional_throughput_pps is not None
    assert 750_000 * (1 - 0.005) <= ndr.conditional_throughput_pps <= 750_000
    assert ndr.conditional_throughput_pps <= pdr.conditional_throughput_pps <= 750_000 * 1.001
    assert ndr.aggregate_pps == 2 * ndr.conditional_throughput_pps
    assert len(result.trials) == len(generator.specs) and all(s.bidirectional for s in generator.specs)
    assert {round(s.duration_s, 6) for s in generator.specs} <= {1.0}


def test_a_stall_in_some_trials_does_not_drag_the_answer_down() -> None:
    rng = random.Random(7)

    def stalls(spec: TrialSpec) -> float:
        # One trial in five loses frames whatever its load: a 4 ms CPU stall on a shared machine.
        return 0.0 if rng.random() < 0.2 else 750_000.0

    generator = FakeTrafficGenerator(capacity_for=stalls)
    result = search_mlr(generator, MlrConfig(frame_size_bytes=64, max_rate_pps=LINE_RATE_64B), log=LOG)
    pdr = result.goal(0.005).conditional_throughput_pps
    assert pdr is not None and pdr >= 750_000 * 0.98


def test_a_generator_that_falls_short_is_not_taken_for_the_dut() -> None:
    generator = FakeTrafficGenerator(capacity_pps=5_000_000.0, max_tx_pps=1_000_000.0)
    result = search_mlr(generator, MlrConfig(frame_size_bytes=64, max_rate_pps=LINE_RATE_64B), log=LOG)
    ndr = result.goal(0.0).conditional_throughput_pps
    assert ndr is not None and ndr <= 1_000_000  # what was not sent counts as lost
    assert any(not t.valid for t in result.trials)


def test_a_dut_that_forwards_nothing_fails_the_search() -> None:
    generator = FakeTrafficGenerator(capacity_pps=0.0)
    with pytest.raises(
        MlrIncompleteError, match=r"No lower bound\); bounds found: 0 %: \[none, 9001\]"
    ) as info:
        search_mlr(generator, MlrConfig(frame_size_bytes=64, max_rate_pps=LINE_RATE_64B), log=LOG)
    assert isinstance(info.value, SearchError)
    partial = info.value.partial
    assert partial is not None and len(partial.trials) == len(generator.specs)
    assert [(g.lower_bound_pps, g.upper_bound_pps, g.conditional_throughput_pps) for g in partial.goals] == [
        (None, CSIT_MIN_LOAD_PPS, None),
        (None, CSIT_MIN_LOAD_PPS, None),
    ]


def test_a_search_past_its_duration_limit_reports_the_bounds_found() -> None:
    def slow(spec: TrialSpec) -> float:
        time.sleep(0.003)
        return 750_000.0

    generator = FakeTrafficGenerator(capacity_for=slow)
    seen: list[MlrTrial] = []
    config = MlrConfig(frame_size_bytes=64, max_rate_pps=LINE_RATE_64B, search_duration_max_s=0.02)
    with pytest.raises(MlrIncompleteError, match="takes too long") as info:
        search_mlr(generator, config, log=LOG, on_trial=seen.append)
    partial = info.value.partial
    assert partial is not None and partial.trials == tuple(seen) and len(seen) == len(generator.specs) >= 2
    ndr = partial.goal(0.0)
    # The first trials bracket the capacity: whatever bounds exist hold it between them.
    assert ndr.upper_bound_pps is None or ndr.upper_bound_pps > 750_000 * 0.99
    assert ndr.lower_bound_pps is None or ndr.lower_bound_pps <= 750_000


def test_trials_are_recorded_and_marked_with_their_goals() -> None:
    generator = FakeTrafficGenerator(capacity_pps=750_000.0)
    seen: list[MlrTrial] = []
    result = search_mlr(
        generator, MlrConfig(frame_size_bytes=64, max_rate_pps=LINE_RATE_64B), log=LOG, on_trial=seen.append
    )
    assert tuple(seen) == result.trials
    first = result.trials[0]
    assert first.load_pps == LINE_RATE_64B and first.intended_packets == round(LINE_RATE_64B)
    assert first.rx_packets == (750_000, 750_000)
    assert first.loss_ratios[0] == pytest.approx(1 - 750_000 / round(LINE_RATE_64B))
    marks = [m for t in result.trials for m in relevance(result, t)]
    for goal in result.goals:
        for bound, load in (("lower", goal.lower_bound_pps), ("upper", goal.upper_bound_pps)):
            mark = {"goal_loss_percent": goal.loss_ratio_limit * 100, "bound": bound}
            hits = [t for t in result.trials if mark in relevance(result, t)]
            assert hits and all(t.load_pps == load for t in hits)
    assert relevance(result, first) == [] and len(marks) >= 4


def test_a_generator_dying_mid_search_propagates() -> None:
    generator = FakeTrafficGenerator(fail_at_trial=3)
    with pytest.raises(TrafficGeneratorError, match="died in trial 3"):
        search_mlr(generator, MlrConfig(frame_size_bytes=64, max_rate_pps=LINE_RATE_64B), log=LOG)


@pytest.mark.parametrize(
    ("changes", "option"),
    [
        ({"loss_ratio_goals": (1.0,)}, "--goal"),
        ({"loss_ratio_goals": ()}, "--goal"),
        ({"exceed_ratio": 1.0}, "--exceed-ratio"),
        ({"relative_width": 0.0}, "--goal-width"),
        ({"final_trial_s": 0.0}, "--final-trial-duration"),
        ({"duration_sum_s": float("inf")}, "--duration-sum"),
        ({"search_duration_max_s": -1.0}, "--search-duration-max"),
        ({"final_trial_s": 30.0, "duration_sum_s": 21.0}, "initial <= final <= duration sum"),
    ],
)
def test_bad_parameters_name_the_option(changes: dict[str, object], option: str) -> None:
    with pytest.raises(LabError, match=option):
        MlrConfig(frame_size_bytes=64, max_rate_pps=LINE_RATE_64B, **changes)  # type: ignore[arg-type]
