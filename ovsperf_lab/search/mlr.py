"""Find the NDR and the PDR of one frame size in one search with FD.io CSIT's MLRsearch.

MLRsearch (IETF draft-ietf-bmwg-mlrsearch; PyPI ``MLRsearch`` 1.2.1, CSIT's own package, used as
a library, not copied) searches several loss-ratio goals at once: short trials first, longer ones
only near the answer, and a goal *exceed ratio* that tolerates a bounded share of bad trials, so
one scheduler stall on a shared machine does not move the answer. This module adapts it to the
lab's :class:`~ovsperf_lab.generators.api.TrafficGenerator`:

* the *load* MLRsearch asks for is the offered rate of one direction [pps] ("a per-port rate",
  CSIT ``AbstractMeasurer``); a bidirectional trial offers it on both;
* a trial reports what should have been sent (``intended`` count) and what came back (``rx``), so
  frames the generator failed to send count as loss (CSIT does the same beyond 10 µs of
  shortfall): a generator-limited load is never mistaken for a DUT that forwards it;
* the *conditional throughput* of a goal (``GoalResult.conditional_throughput``) is per direction
  [pps]; :attr:`GoalThroughput.aggregate_pps` is the sum over directions, as VSperf reports.

Defaults are CSIT's (``OptimizedSearch.perform_mlr_search``): goals 0 % (NDR) and 0.5 % (PDR), exceed
ratio 0.5, relative width 0.5 %, initial and final trial 1 s, duration sum 21 s, search duration
limit 1200 s, minimum load 9001 pps.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from MLRsearch import (
    AbstractMeasurer,
    Config,
    GoalResult,
    MeasurementResult,
    MultipleLossRatioSearch,
    SearchGoal,
)

from ovsperf_common.framemix import item_text
from ovsperf_lab.errors import SearchError
from ovsperf_lab.generators.api import TrafficGenerator
from ovsperf_lab.model import TrialSpec
from ovsperf_lab.search.mlrconfig import MlrConfig as MlrConfig  # re-exported: the search's parameters


@dataclass(frozen=True)
class MlrTrial:
    """One trial MLRsearch asked for, as ``ovsperf-trials.json`` keeps it."""

    load_pps: float
    """Offered load per direction [pps]."""
    duration_s: float
    """Intended duration [s]."""
    loss_ratios: tuple[float, ...]
    """Loss ratio per direction, shortfall of the generator included [1]."""
    valid: bool
    """Whether the generator sent what was asked (an invalid trial's shortfall counts as loss)."""
    intended_packets: int = 0
    """Frames that should have been sent per direction: ``round(load × duration)`` [1]."""
    rx_packets: tuple[int, ...] = ()
    """Frames received per direction [1]."""
    invalid_reason: str | None = None
    """The generator's reason when :attr:`valid` is false."""
    started_at: float = 0.0
    """Wall-clock start, seconds since the epoch [s]."""
    wall_s: float = 0.0
    """Time the trial took, overheads included [s]."""
    per_size: tuple[tuple[tuple[int, int, int], ...] | None, ...] = ()
    """Per direction, for a mix: (frame size [B], sent, received) per size; ``None`` for one size."""


@dataclass(frozen=True)
class GoalThroughput:
    """The answer for one loss-ratio goal."""

    loss_ratio_limit: float
    """The goal loss ratio [1]: 0 is the NDR, else a PDR."""
    conditional_throughput_pps: float | None
    """Conditional throughput per direction [pps] (draft-ietf-bmwg-mlrsearch); ``None`` when even the
    minimum load is an upper bound."""
    lower_bound_pps: float | None
    """Relevant lower bound per direction [pps]."""
    upper_bound_pps: float | None
    """Relevant upper bound per direction [pps]; ``None`` when the maximum load is a lower bound."""
    directions: int
    """Directions the load was offered on [1]."""

    @property
    def aggregate_pps(self) -> float | None:
        """Return the conditional throughput summed over directions [pps] (VSperf's ``throughput_rx_fps``)."""
        if self.conditional_throughput_pps is None:
            return None
        return self.conditional_throughput_pps * self.directions


@dataclass(frozen=True)
class MlrResult:
    """What one MLRsearch found, and every trial it ran."""

    config: MlrConfig
    """The search's parameters."""
    goals: tuple[GoalThroughput, ...]
    """One per goal, in the order of ``config.loss_ratio_goals``."""
    trials: tuple[MlrTrial, ...]
    """Every trial, in order."""
    duration_s: float
    """Wall time of the search [s]."""

    def goal(self, loss_ratio_limit: float) -> GoalThroughput:
        """Return the answer for ``loss_ratio_limit``.

        :raises KeyError: when the search had no such goal.
        """
        for goal in self.goals:
            if goal.loss_ratio_limit == loss_ratio_limit:
                return goal
        raise KeyError(loss_ratio_limit)


TrialCallback = Callable[[MlrTrial], None]
"""Called after every trial (the run writes it to ``ovsperf-trials.json`` at once)."""


@dataclass
class _Measurer(AbstractMeasurer):  # type: ignore[misc]
    """Run MLRsearch's trials on a :class:`TrafficGenerator` and keep them."""

    generator: TrafficGenerator
    config: MlrConfig
    log: logging.Logger
    on_trial: TrialCallback | None = None
    trials: list[MlrTrial] = field(default_factory=list)

    def measure(self, intended_duration: float, intended_load: float) -> MeasurementResult:
        """Run one trial at ``intended_load`` per direction [pps] for ``intended_duration`` [s]."""
        spec = TrialSpec(
            frame_size_bytes=self.config.frame_size_bytes,
            rate_pps=float(intended_load),
            duration_s=float(intended_duration),
            bidirectional=self.config.bidirectional,
            flows=self.config.flows,
            drain_s=self.config.drain_s,
        )
        started_at = time.time()
        start = time.monotonic()
        result = self.generator.run_trial(spec)
        wall = time.monotonic() - start
        intended_per_direction = round(spec.rate_pps * spec.duration_s)
        intended = intended_per_direction * len(result.directions)
        forwarded = min(sum(d.rx_packets for d in result.directions), intended)
        ratios = tuple(
            max(0.0, 1.0 - d.rx_packets / intended_per_direction) if intended_per_direction else 0.0
            for d in result.directions
        )
        trial = MlrTrial(
            load_pps=spec.rate_pps,
            duration_s=spec.duration_s,
            loss_ratios=ratios,
            valid=result.valid,
            intended_packets=intended_per_direction,
            rx_packets=tuple(d.rx_packets for d in result.directions),
            invalid_reason=result.invalid_reason,
            started_at=started_at,
            wall_s=wall,
            per_size=tuple(d.per_size for d in result.directions),
        )
        self.trials.append(trial)
        self.log.info(
            "%s MLR trial %d at %.0f pps/dir for %g s: loss %s%s.",
            item_text(self.config.frame_size_bytes),
            len(self.trials),
            spec.rate_pps,
            spec.duration_s,
            " / ".join(f"{r * 100:.4f} %" for r in ratios),
            "" if result.valid else f" (generator: {result.invalid_reason})",
        )
        if self.on_trial is not None:
            self.on_trial(trial)
        return MeasurementResult(
            intended_duration=intended_duration,
            intended_load=intended_load,
            offered_count=intended,
            forwarding_count=forwarded,
            duration_with_overheads=max(wall, float(intended_duration)),
        )


class MlrIncompleteError(SearchError):
    """MLRsearch stopped before every goal reached its width; :attr:`partial` holds the bounds found."""

    def __init__(self, message: str, partial: MlrResult | None) -> None:
        """Keep ``message`` and the bounds found so far (``None`` when not even one trial ran)."""
        super().__init__(message)
        self.partial = partial


def search_mlr(
    generator: TrafficGenerator,
    config: MlrConfig,
    *,
    log: logging.Logger,
    on_trial: TrialCallback | None = None,
) -> MlrResult:
    """Search every goal of ``config`` at once with MLRsearch; return the answers and the trials.

    :param on_trial: called after every trial with its record.
    :raises MlrIncompleteError: when the search duration limit passed before every goal reached
        its width (``partial`` has the relevant bounds found so far, as ``MultipleLossRatioSearch``
        computes them at its end), or MLRsearch gave up otherwise.
    :raises TrafficGeneratorError: from the generator (it died, hung or refused a trial).
    """
    goals = tuple(
        SearchGoal(
            loss_ratio=ratio,
            exceed_ratio=config.exceed_ratio,
            relative_width=config.relative_width,
            initial_trial_duration=config.initial_trial_s,
            final_trial_duration=config.final_trial_s,
            duration_sum=config.duration_sum_s,
        )
        for ratio in config.loss_ratio_goals
    )
    mlr_config = Config()
    mlr_config.goals = goals
    mlr_config.min_load = config.min_rate_pps
    mlr_config.max_load = config.max_rate_pps
    mlr_config.search_duration_max = config.search_duration_max_s
    mlr_config.warmup_duration = None
    measurer = _Measurer(generator, config, log, on_trial)
    search = MultipleLossRatioSearch(config=mlr_config)
    start = time.monotonic()
    try:
        found = search.search(measurer=measurer, debug=log.debug)
    except RuntimeError as err:
        partial = _partial(search, config, goals, measurer.trials, time.monotonic() - start)
        raise MlrIncompleteError(
            f"{item_text(config.frame_size_bytes)}: MLRsearch stopped after {len(measurer.trials)} trials "
            f"({str(err).split(': ', 1)[0]}); bounds found: {_bounds_text(partial)}",
            partial,
        ) from err
    return _result(config, goals, found, measurer.trials, time.monotonic() - start)


def _result(
    config: MlrConfig,
    goals: tuple[SearchGoal, ...],
    found: Mapping[SearchGoal, GoalResult],
    trials: list[MlrTrial],
    duration_s: float,
) -> MlrResult:
    """Return the :class:`MlrResult` of MLRsearch's per-goal ``found``."""
    directions = 2 if config.bidirectional else 1
    answers = []
    for ratio, goal in zip(config.loss_ratio_goals, goals, strict=True):
        result = found[goal]
        lower, upper = result.relevant_lower_bound, result.relevant_upper_bound
        throughput = result.conditional_throughput
        answers.append(
            GoalThroughput(
                loss_ratio_limit=ratio,
                conditional_throughput_pps=None if throughput is None else float(throughput),
                lower_bound_pps=None if lower is None else float(lower),
                upper_bound_pps=None if upper is None else float(upper),
                directions=directions,
            )
        )
    return MlrResult(config, tuple(answers), tuple(trials), duration_s)


def _partial(
    search: MultipleLossRatioSearch,
    config: MlrConfig,
    goals: tuple[SearchGoal, ...],
    trials: list[MlrTrial],
    duration_s: float,
) -> MlrResult | None:
    """Return the relevant bounds a stopped search had found, as its own end would (``None``: none)."""
    try:
        found = {
            goal: GoalResult.from_bounds(
                bounds=search.database.get_relevant_bounds(target=search.scaling.goal_to_final_target[goal])
            )
            for goal in goals
        }
    except (AttributeError, KeyError, RuntimeError, ValueError):
        return None  # stopped before its database existed
    return _result(config, goals, found, trials, duration_s)


def _bounds_text(partial: MlrResult | None) -> str:
    """Return ``'0 %: [lower, upper] pps/dir; 0.5 %: …'`` for a log line or error message."""
    if partial is None:
        return "none"

    def pps(value: float | None) -> str:
        return "none" if value is None else f"{value:.0f}"

    return "; ".join(
        f"{g.loss_ratio_limit * 100:g} %: [{pps(g.lower_bound_pps)}, {pps(g.upper_bound_pps)}] pps/dir"
        for g in partial.goals
    )


def relevance(result: MlrResult, trial: MlrTrial) -> list[dict[str, object]]:
    """Return the goals whose final relevant bound is ``trial``'s load, for ``ovsperf-trials.json``.

    :returns: ``[{"goal_loss_percent": 0.5, "bound": "lower"}, …]``; empty for a trial that only
        led the search there.
    """
    marks: list[dict[str, object]] = []
    for goal in result.goals:
        for bound, load in (("lower", goal.lower_bound_pps), ("upper", goal.upper_bound_pps)):
            if load is not None and math.isclose(load, trial.load_pps, rel_tol=1e-9):
                marks.append({"goal_loss_percent": goal.loss_ratio_limit * 100.0, "bound": bound})
    return marks
