"""Find the NDR and the PDR of one frame size in one search with FD.io CSIT's MLRsearch.

MLRsearch (IETF draft-ietf-bmwg-mlrsearch; PyPI ``MLRsearch`` 1.2.1, CSIT's own package, used as
a library, not copied) searches several loss-ratio goals at once: short trials first, longer ones
only near the answer, and a goal *exceed ratio* that tolerates a bounded share of bad trials, so
one scheduler stall on a shared machine does not move the answer. This module adapts it to the
lab's :class:`~ovsperf_lab.generator_api.TrafficGenerator`:

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
from dataclasses import dataclass, field

from MLRsearch import AbstractMeasurer, Config, MeasurementResult, MultipleLossRatioSearch, SearchGoal

from ovsperf_lab.errors import LabError, SearchError
from ovsperf_lab.generator_api import TrafficGenerator
from ovsperf_lab.model import TrialSpec
from ovsperf_lab.plan import LabOptions

CSIT_MIN_LOAD_PPS = 9001.0
"""CSIT's minimum load: enough frames for a latency histogram [pps] (``Config.min_load``)."""


@dataclass(frozen=True)
class MlrConfig:
    """Parameters of one MLRsearch; ``LabError`` names the command-line option of a bad one."""

    frame_size_bytes: int
    """Ethernet frame size including FCS [B]."""
    max_rate_pps: float
    """Highest load tried, per direction, usually line rate [pps] (``Config.max_load``)."""
    loss_ratio_goals: tuple[float, ...] = (0.0, 0.005)
    """Goal loss ratios [1]: 0 is the NDR, 0.005 CSIT's PDR (``--goal`` in %)."""
    exceed_ratio: float = 0.5
    """Share of trial time allowed above the goal loss ratio at a lower bound [1] (draft: RECOMMENDED 0.5)."""
    relative_width: float = 0.005
    """Goal width as a share of the load [1] (``--goal-width`` in %)."""
    initial_trial_s: float = 1.0
    """Shortest trial [s]."""
    final_trial_s: float = 1.0
    """Trial duration the final target requires [s] (``--final-trial-duration``)."""
    duration_sum_s: float = 21.0
    """Trial time that classifies a load [s] (``--duration-sum``)."""
    search_duration_max_s: float = 1200.0
    """The search fails when it runs longer [s] (``--search-duration-max``)."""
    min_rate_pps: float = CSIT_MIN_LOAD_PPS
    """Lowest load tried, per direction [pps]."""
    bidirectional: bool = True
    """Send both directions."""
    flows: int = LabOptions.flows
    """UDP flows per direction [1]."""
    drain_s: float = 0.5
    """RX time after TX stops in each trial [s] (short: MLRsearch counts it as overhead)."""

    def __post_init__(self) -> None:
        """Check every field against its range.

        :raises LabError: naming the command-line option and the accepted range.
        """
        if not self.loss_ratio_goals or any(not 0 <= g < 1 for g in self.loss_ratio_goals):
            raise LabError(
                f"Option '--goal' must be loss percentages in [0, 100), got {self.loss_ratio_goals!r}."
            )
        if not 0 <= self.exceed_ratio < 1:
            raise LabError(f"Option '--exceed-ratio' must be in [0, 1), got {self.exceed_ratio!r}.")
        if not 0 < self.relative_width < 1:
            raise LabError(f"Option '--goal-width' must be in (0, 100) %, got {self.relative_width * 100!r}.")
        for option, value, upper in (
            ("--initial-trial-duration", self.initial_trial_s, 3600.0),
            ("--final-trial-duration", self.final_trial_s, 3600.0),
            ("--duration-sum", self.duration_sum_s, 86400.0),
            ("--search-duration-max", self.search_duration_max_s, 7 * 86400.0),
        ):
            if not (math.isfinite(value) and 0 < value <= upper):
                raise LabError(f"Option '{option}' must be in (0, {upper:g}] s, got {value!r}.")
        if self.final_trial_s < self.initial_trial_s or self.duration_sum_s < self.final_trial_s:
            raise LabError(
                "Trial durations must grow: initial <= final <= duration sum "
                f"({self.initial_trial_s:g} / {self.final_trial_s:g} / {self.duration_sum_s:g} s)."
            )
        if not 0 < self.min_rate_pps < self.max_rate_pps:
            raise LabError(
                f"Loads must satisfy 0 < min < max, got {self.min_rate_pps!r} / {self.max_rate_pps!r} pps."
            )


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


@dataclass
class _Measurer(AbstractMeasurer):  # type: ignore[misc]
    """Run MLRsearch's trials on a :class:`TrafficGenerator` and keep them."""

    generator: TrafficGenerator
    config: MlrConfig
    log: logging.Logger
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
        self.trials.append(MlrTrial(spec.rate_pps, spec.duration_s, ratios, result.valid))
        self.log.info(
            "%d B MLR trial %d at %.0f pps/dir for %g s: loss %s%s.",
            self.config.frame_size_bytes,
            len(self.trials),
            spec.rate_pps,
            spec.duration_s,
            " / ".join(f"{r * 100:.4f} %" for r in ratios),
            "" if result.valid else f" (generator: {result.invalid_reason})",
        )
        return MeasurementResult(
            intended_duration=intended_duration,
            intended_load=intended_load,
            offered_count=intended,
            forwarding_count=forwarded,
            duration_with_overheads=max(wall, float(intended_duration)),
        )


def search_mlr(generator: TrafficGenerator, config: MlrConfig, *, log: logging.Logger) -> MlrResult:
    """Search every goal of ``config`` at once with MLRsearch; return the answers and the trials.

    :raises SearchError: when MLRsearch gives up (the search duration limit passed, or the minimum
        load is already an upper bound with ``fail_fast``).
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
    measurer = _Measurer(generator, config, log)
    start = time.monotonic()
    try:
        found = MultipleLossRatioSearch(config=mlr_config).search(measurer=measurer, debug=log.debug)
    except RuntimeError as err:
        raise SearchError(
            f"{config.frame_size_bytes} B: MLRsearch gave up after {len(measurer.trials)} trials: {err}"
        ) from err
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
    return MlrResult(config, tuple(answers), tuple(measurer.trials), time.monotonic() - start)
