import logging

import pytest

from ovsperf_lab.errors import GeneratorLimitedError, SearchError, TrafficGeneratorError
from ovsperf_lab.model import TrialSpec
from ovsperf_lab.search.binary import (
    Bisection,
    SearchConfig,
    SearchObserver,
    TrialKind,
    TrialOutcome,
    TrialRecord,
    search_throughput,
)
from tests.ovsperf_lab.fakes import FakeTrafficGenerator

LOG = logging.getLogger("test.search")


def config(**kw: object) -> SearchConfig:
    base: dict[str, object] = dict(
        frame_size_bytes=64,
        max_rate_pps=100.0,
        rate_granularity_pps=10.0,
        loss_ratio_limit=0.0,
        search_trial_s=10.0,
        validation_trial_s=30.0,
        calibrate=False,
    )
    base.update(kw)
    return SearchConfig(**base)  # type: ignore[arg-type]


def steps(result_trials: tuple[TrialRecord, ...]) -> list[tuple[str, float, str]]:
    return [(t.kind.value, t.rate_pps, t.outcome.value) for t in result_trials]


def test_lua_bisection_sequence() -> None:
    # max 100, granularity 10, capacity 37: 100 F, 50 F, 25 P, 37.5 F, then |31.25-37.5| < 10
    # makes the next trial the final validation at 31.25 (trafficgen.lua fail branch).
    gen = FakeTrafficGenerator(capacity_pps=37.0)
    res = search_throughput(gen, config(), log=LOG)
    assert steps(res.trials) == [
        ("search", 100.0, "fail"),
        ("search", 50.0, "fail"),
        ("search", 25.0, "pass"),
        ("search", 37.5, "fail"),
        ("validation", 31.25, "pass"),
    ]
    assert res.rate_pps == 31.25
    assert res.validation.loss_ratio == 0.0
    assert [s.duration_s for s in gen.specs] == [10.0, 10.0, 10.0, 10.0, 30.0]


def test_pass_at_start_rate_validates_same_rate() -> None:
    gen = FakeTrafficGenerator(capacity_pps=1000.0)
    res = search_throughput(gen, config(), log=LOG)
    assert steps(res.trials) == [("search", 100.0, "pass"), ("validation", 100.0, "pass")]


def test_pass_branch_final_when_within_granularity() -> None:
    # 100 F, 50 P -> next 75 (|25| > 10), 75 P -> next 87.5 (12.5 > 10), 87.5 F -> next 81.25
    # (|6.25| < 10) -> validation at 81.25 passes.
    gen = FakeTrafficGenerator(capacity_pps=85.0)
    res = search_throughput(gen, config(), log=LOG)
    assert steps(res.trials) == [
        ("search", 100.0, "fail"),
        ("search", 50.0, "pass"),
        ("search", 75.0, "pass"),
        ("search", 87.5, "fail"),
        ("validation", 81.25, "pass"),
    ]


def test_failed_validation_steps_down_by_granularity() -> None:
    # Long trials forward less (capacity 20 at 30 s, 37 at 10 s): validation at 31.25 fails,
    # the rate drops by one granularity to 21.25 (search), which fails too; the bisection goes
    # on from there.
    def cap(spec: TrialSpec) -> float:
        return 20.0 if spec.duration_s > 10 else 37.0

    gen = FakeTrafficGenerator(capacity_for=cap)
    res = search_throughput(gen, config(), log=LOG)
    seq = steps(res.trials)
    assert seq[:6] == [
        ("search", 100.0, "fail"),
        ("search", 50.0, "fail"),
        ("search", 25.0, "pass"),
        ("search", 37.5, "fail"),
        ("validation", 31.25, "fail"),
        ("search", 21.25, "pass"),
    ]
    assert seq[-1][0] == "validation" and seq[-1][2] == "pass"
    assert res.rate_pps <= 20.0
    assert res.validation.loss_ratio == 0.0


def test_pdr_accepts_loss_up_to_limit() -> None:
    # capacity 90 of 100 offered = 10 % loss; with 10 % acceptable the start rate passes.
    gen = FakeTrafficGenerator(capacity_pps=90.0)
    res = search_throughput(gen, config(loss_ratio_limit=0.10), log=LOG)
    assert res.rate_pps == 100.0
    assert res.validation.loss_ratio == pytest.approx(0.10)
    ndr = search_throughput(FakeTrafficGenerator(capacity_pps=90.0), config(), log=LOG)
    assert ndr.rate_pps < 90.0


def test_invalid_trials_are_repeated_not_counted() -> None:
    gen = FakeTrafficGenerator(capacity_pps=37.0, invalid_trials=frozenset({2, 3}))
    res = search_throughput(gen, config(), log=LOG)
    outcomes = [(t.rate_pps, t.outcome) for t in res.trials]
    assert outcomes[1:4] == [
        (50.0, TrialOutcome.INVALID),
        (50.0, TrialOutcome.INVALID),
        (50.0, TrialOutcome.FAIL),
    ]
    assert res.rate_pps == 31.25
    assert res.counted_trials == 5
    assert len(res.trials) == 7


def test_too_many_invalid_trials_fail_the_search() -> None:
    gen = FakeTrafficGenerator(capacity_pps=37.0, invalid_trials=frozenset(range(2, 10)))
    with pytest.raises(SearchError, match=r"4 invalid trials in a row at 50 pps.*injected"):
        search_throughput(gen, config(max_invalid_repeats=3), log=LOG)
    assert len(gen.specs) == 5


def test_nothing_passes_fails_at_minimum_rate() -> None:
    gen = FakeTrafficGenerator(capacity_pps=0.0)
    with pytest.raises(SearchError, match="could not pass the minimum rate 10 pps"):
        search_throughput(gen, config(), log=LOG)
    assert len(gen.specs) < 10


def test_calibration_caps_start_rate_at_generator_limit(caplog: pytest.LogCaptureFixture) -> None:
    gen = FakeTrafficGenerator(capacity_pps=1e9, max_tx_pps=60.0)
    with caplog.at_level(logging.WARNING):
        res = search_throughput(gen, config(calibrate=True), log=LOG)
    assert steps(res.trials) == [
        ("search", 100.0, "invalid"),
        ("search", pytest.approx(57.0), "pass"),
        ("validation", pytest.approx(57.0), "pass"),
    ]
    assert res.start_rate_pps == pytest.approx(57.0)
    assert res.rate_pps == pytest.approx(57.0)
    assert "start rate has been reduced from 100 to 57" in caplog.text


def test_trial_bound() -> None:
    with pytest.raises(SearchError, match="no validated rate after 2 counted trials"):
        search_throughput(FakeTrafficGenerator(capacity_pps=37.0), config(max_trials=2), log=LOG)


def test_generator_crash_propagates() -> None:
    with pytest.raises(TrafficGeneratorError):
        search_throughput(FakeTrafficGenerator(capacity_pps=37.0, fail_at_trial=3), config(), log=LOG)


def test_observer_sees_every_trial_and_best_so_far() -> None:
    seen: list[tuple[int, float | None]] = []
    started: list[int] = []

    class Obs(SearchObserver):
        def trial_started(self, index: int, kind: TrialKind, rate_pps: float, duration_s: float) -> None:
            started.append(index)

        def trial_finished(self, record: TrialRecord, best_pass_pps: float | None) -> None:
            seen.append((record.index, best_pass_pps))

    search_throughput(FakeTrafficGenerator(capacity_pps=37.0), config(), log=LOG, observer=Obs())
    assert started == [1, 2, 3, 4, 5]
    assert seen == [(1, None), (2, None), (3, 25.0), (4, 25.0), (5, 31.25)]


@pytest.mark.parametrize(
    "field,value",
    [
        ("max_rate_pps", 0.0),
        ("rate_granularity_pps", 0.0),
        ("rate_granularity_pps", 200.0),
        ("loss_ratio_limit", 1.0),
        ("search_trial_s", 0.0),
        ("max_trials", 0),
    ],
)
def test_config_rejects_bad_fields(field: str, value: float) -> None:
    with pytest.raises(SearchError, match=field):
        config(**{field: value})


def test_tx_limited_trial_with_excess_loss_counts_as_fail() -> None:
    # The generator tops out at 60 pps; at 100 requested it sends 60 and the DUT (37) loses:
    # the DUT failed below the requested load, so the trial is a fail and the bisection goes on.
    gen = FakeTrafficGenerator(capacity_pps=37.0, max_tx_pps=60.0)
    res = search_throughput(gen, config(), log=LOG)
    assert steps(res.trials) == [
        ("search", 100.0, "fail"),
        ("search", 50.0, "fail"),
        ("search", 25.0, "pass"),
        ("search", 37.5, "fail"),
        ("validation", 31.25, "pass"),
    ]
    assert res.trials[0].result.valid is False
    assert res.counted_trials == 5


def test_tx_limited_trial_without_loss_ends_the_search_without_calibration() -> None:
    gen = FakeTrafficGenerator(capacity_pps=1000.0, max_tx_pps=60.0)
    with pytest.raises(SearchError, match="achieved TX 60 < requested 100"):
        search_throughput(gen, config(max_invalid_repeats=1, calibrate=False), log=LOG)


def test_drain_time_is_passed_to_every_trial() -> None:
    gen = FakeTrafficGenerator(capacity_pps=37.0)
    search_throughput(gen, config(drain_s=0.5), log=LOG)
    assert {s.drain_s for s in gen.specs} == {0.5}


def test_validation_the_generator_cannot_sustain_lowers_the_ceiling(caplog: pytest.LogCaptureFixture) -> None:
    # The DUT never loses; the generator sustains 60 pps in 10-s search trials but only 50 pps in
    # 30-s validations: the validation at 57 stays TX-limited, so the search continues below
    # 0.95 * 50 = 47.5 and validates there, marking the result as the generator's ceiling.
    gen = FakeTrafficGenerator(
        capacity_pps=1e9, max_tx_for=lambda spec: 60.0 if spec.duration_s < 30 else 50.0
    )
    with caplog.at_level(logging.WARNING):
        res = search_throughput(gen, config(calibrate=True, max_invalid_repeats=1), log=LOG)
    assert steps(res.trials) == [
        ("search", 100.0, "invalid"),
        ("search", pytest.approx(57.0), "pass"),
        ("validation", pytest.approx(57.0), "invalid"),
        ("validation", pytest.approx(57.0), "invalid"),
        ("validation", pytest.approx(47.5), "pass"),
    ]
    assert res.rate_pps == pytest.approx(47.5)
    assert res.generator_limited is True
    assert (
        "could not sustain 57 pps per direction (best 50); the search continues below 48 pps" in caplog.text
    )


def test_ceiling_below_a_dut_failure_is_not_generator_limited() -> None:
    # Ceiling 47.5 as above, but the DUT forwards only 40 pps: the trial at the ceiling fails and
    # the bisection finds the DUT's own rate below it.
    gen = FakeTrafficGenerator(
        capacity_pps=40.0, max_tx_for=lambda spec: 60.0 if spec.duration_s < 30 else 50.0
    )
    res = search_throughput(gen, config(calibrate=True, max_invalid_repeats=0), log=LOG)
    assert res.generator_limited is False
    assert res.rate_pps < 40.0
    assert res.validation.loss_ratio == 0.0


def test_a_generator_that_never_sustains_its_rate_ends_the_search() -> None:
    # Search trials run at any rate, validations reach only 90 % of theirs, however low.
    gen = FakeTrafficGenerator(
        capacity_pps=1e9,
        max_tx_for=lambda spec: spec.rate_pps * (0.9 if spec.duration_s >= 30 else 1.0),
    )
    with pytest.raises(GeneratorLimitedError, match="invalid trials in a row") as err:
        search_throughput(gen, config(calibrate=False, max_invalid_repeats=0, max_rate_caps=2), log=LOG)
    assert err.value.achieved_pps == pytest.approx(100.0 * 0.9 * 0.95 * 0.9 * 0.95 * 0.9, rel=1e-3)
    assert len(gen.specs) == 4  # one search trial, three validations (two ceilings)


def test_after_a_failed_validation_the_search_never_climbs_back() -> None:
    # trafficgen.lua keeps prevPassRate at the last pass that did *not* lead into the final
    # validation. Capacity 65, but trials 5 and 6 lose frames (a noisy machine): after the
    # validation at 62.5 and the step-down trial at 52.5 fail, the next rate is between the
    # last real pass (50) and 52.5 -- not back up towards the 62.5 that just failed.
    calls = iter(range(1, 100))

    def capacity(spec: TrialSpec) -> float:
        return 0.0 if next(calls) in (5, 6) else 65.0

    res = search_throughput(FakeTrafficGenerator(capacity_for=capacity), config(), log=LOG)
    assert steps(res.trials) == [
        ("search", 100.0, "fail"),
        ("search", 50.0, "pass"),
        ("search", 75.0, "fail"),
        ("search", 62.5, "pass"),
        ("validation", 62.5, "fail"),
        ("search", 52.5, "fail"),
        ("validation", 51.25, "pass"),
    ]
    assert res.rate_pps == 51.25


def test_a_lucky_pass_above_the_capacity_does_not_trap_the_search(caplog: pytest.LogCaptureFixture) -> None:
    # Capacity 40, but trial 2 at 50 passes by luck. Once 46.25 fails below that pass, the pass
    # is known to be noise and the bisection restarts below 46.25 instead of circling 50.
    calls = iter(range(1, 100))

    def capacity(spec: TrialSpec) -> float:
        return 100.0 if next(calls) == 2 else 40.0

    with caplog.at_level(logging.INFO):
        res = search_throughput(FakeTrafficGenerator(capacity_for=capacity), config(), log=LOG)
    assert steps(res.trials) == [
        ("search", 100.0, "fail"),
        ("search", 50.0, "pass"),
        ("search", 75.0, "fail"),
        ("search", 62.5, "fail"),
        ("validation", 56.25, "fail"),
        ("search", 46.25, "fail"),
        ("search", 23.125, "pass"),
        ("search", 34.6875, "pass"),
        ("validation", 34.6875, "pass"),
    ]
    assert res.rate_pps == 34.6875 and res.validation.loss_ratio == 0.0
    assert "fail at 46 pps below the pass at 50 pps" in caplog.text


def _bisection(start: float = 1000.0, gran: float = 10.0, floor: float = 10.0) -> Bisection:
    return Bisection(64, gran, floor, start, logging.getLogger("test.bisection"))


def test_bisection_pass_goes_halfway_up_to_the_last_fail() -> None:
    b = _bisection()
    b.failed(0.01)  # 1000 fails: next is halfway down to prev_pass 0
    assert (b.rate_pps, b.prev_fail_pps, b.final) == (500.0, 1000.0, False)
    assert b.passed() is False
    assert (b.rate_pps, b.prev_pass_pps, b.passes) == (750.0, 500.0, [500.0])


def test_bisection_pass_within_granularity_validates_at_that_rate_without_becoming_prev_pass() -> None:
    b = _bisection(start=1000.0, gran=10.0)
    b.prev_pass_pps, b.prev_fail_pps, b.rate_pps = 980.0, 1000.0, 990.0
    assert b.passed() is False
    assert (b.rate_pps, b.final, b.kind) == (990.0, True, TrialKind.VALIDATION)
    assert b.prev_pass_pps == 980.0  # lua rule: the pass leading into validation is not prev_pass
    assert b.passed() is True  # the validation passed: the search is done


def test_bisection_failed_validation_lowers_by_one_granularity() -> None:
    b = _bisection(gran=10.0)
    b.rate_pps, b.final = 990.0, True
    b.failed(0.001)
    assert (b.rate_pps, b.final, b.prev_fail_pps) == (980.0, False, 990.0)


def test_bisection_fail_at_or_below_prev_pass_marks_that_pass_as_noise() -> None:
    b = _bisection(start=1000.0, gran=1.0)
    b.passes = [400.0, 700.0]
    b.prev_pass_pps = 700.0
    b.rate_pps = 650.0  # fails below the pass at 700: that pass was noise
    b.failed(0.02)
    assert b.prev_pass_pps == 400.0 and b.passes == [400.0]
    assert b.rate_pps == 525.0  # halfway between the highest pass still below and the fail


def test_bisection_fail_within_granularity_of_prev_pass_validates_there() -> None:
    b = _bisection(start=1000.0, gran=10.0)
    b.prev_pass_pps, b.rate_pps = 500.0, 505.0
    b.failed(0.01)
    assert (b.rate_pps, b.final) == (502.5, True)


def test_bisection_never_goes_below_the_floor_and_fails_there() -> None:
    b = _bisection(start=30.0, gran=10.0, floor=25.0)
    b.failed(0.5)
    assert b.rate_pps == 25.0
    with pytest.raises(SearchError, match="could not pass the minimum rate 25 pps"):
        b.failed(0.5)


def test_bisection_ceiling_validates_directly_when_a_pass_was_above_it() -> None:
    b = _bisection(start=1000.0)
    b.capped(800.0, best_pass_pps=900.0)
    assert (b.rate_pps, b.prev_fail_pps, b.final, b.at_ceiling) == (800.0, 800.0, True, True)
    b = _bisection(start=1000.0)
    b.capped(800.0, best_pass_pps=None)
    assert (b.final, b.at_ceiling) == (False, True)
    b.failed(0.1)
    assert b.rate_pps == 400.0 and not b.at_ceiling
