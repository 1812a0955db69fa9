"""Find the RFC 2544 throughput of one frame size with lua-trafficgen's binary search.

Pure logic over :class:`~ovsperf_lab.generators.api.TrafficGenerator`: no processes, no files.
The algorithm follows atheurer/lua-trafficgen ``trafficgen.lua`` (the MoonGen script the Beaker
lab ran through VSperf; reference: search_and_trending.md §1.3):

1. *Start rate*: the first search trial runs at the maximum (line) rate. If the generator
   cannot send that fast (the trial is invalid, the achieved TX rate is below the request, and
   nothing proves a DUT failure) the start rate is lowered to what it achieved, less a margin
   ("Start rate has been reduced from … to …").
2. *Bisection* with arithmetic midpoints and an absolute granularity [pps]:
   pass → ``next = (prev_fail + rate) / 2``, and when ``|next - rate| <= granularity`` the next
   trial is the *final validation* at the same rate (that pass does not become ``prev_pass``,
   as in lua, so a failed validation never sends the bisection back up towards it);
   fail → ``next = (prev_pass + rate) / 2``, and when ``|next - rate| < granularity`` the next
   trial is the final validation at ``next``.
3. *Final validation*: a longer trial (``validation_trial_s``); when it passes, its rate is the
   result. When it fails, the rate is lowered by one granularity (commit 55f8d3e "Lower rate by
   rate_granularity if final validation fails") and the search resumes.
4. A trial passes when every direction's loss ratio is at most the acceptable loss ratio
   (``acceptableLossPct``; per Tx→Rx pair, as ``acceptableLoss()`` does).
5. *Noise*: a search trial that fails at or below ``prev_pass`` shows that pass was noise
   (throughput is not monotonic in the offered load); lua would bisect towards it for ever, so
   ``prev_pass`` falls back to the highest earlier pass below the failing rate (0 if none).
6. *Ceiling*: when every repeat of a later trial falls short of its rate (lua aborts after
   ``maxRateAttempts`` with "ABORT TEST: difference between actual and requested Tx rate"), the
   rate becomes the search's new upper bound at the achieved rate less the calibration margin,
   as in step 1, at most ``max_rate_caps`` times; a result validated at that ceiling is marked
   ``generator_limited`` (the DUT's throughput is at least that rate).

Differences from the Lua script, on purpose: trials the generator marks invalid (it could not
send at the requested rate, or received more than it sent) are repeated up to
``max_invalid_repeats`` times and not counted (lua retries negative loss 3 times), except a
TX-limited trial that lost more than the acceptable ratio: the DUT already failed at a lower
offered load than requested, so it fails the requested one too (the monotonicity every binary
search assumes), and the trial counts as a fail; the number of counted trials is bounded
(``max_trials``); the start-rate calibration uses the generator's validity check instead of
lua's 5-s calibration transmits.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ovsperf_common.framemix import FrameSizeItem, item_text
from ovsperf_lab.errors import GeneratorLimitedError, SearchError
from ovsperf_lab.generators.api import TrafficGenerator
from ovsperf_lab.model import TrialResult, TrialSpec

CALIBRATION_MARGIN = 0.95
"""Fraction of the achieved unthrottled TX rate used as start rate when capped [1]."""

TX_SHORTFALL_RATIO = 0.99
"""A trial whose achieved TX rate is below this fraction of the request is TX-limited [1]."""


class TrialKind(enum.Enum):
    """Why a trial was run."""

    SEARCH = "search"
    """A binary-search trial (``searchRunTime``); the first ones also calibrate the start rate."""
    VALIDATION = "validation"
    """The final validation trial (``validationRunTime``)."""


class TrialOutcome(enum.Enum):
    """How the search judged a trial."""

    PASS = "pass"
    """Every direction lost at most the acceptable ratio."""
    FAIL = "fail"
    """A direction lost more than the acceptable ratio."""
    INVALID = "invalid"
    """The generator says the trial did not measure the DUT; it is repeated."""


@dataclass(frozen=True)
class SearchConfig:
    """Parameters of one throughput search (lua-trafficgen ``testParams`` equivalents)."""

    frame_size_bytes: FrameSizeItem
    """Ethernet frame size including FCS [B] (``frameSize``)."""
    max_rate_pps: float
    """Start rate per direction, usually line rate [pps] (``startRate``)."""
    rate_granularity_pps: float
    """Stop width of the bisection, absolute [pps] (``rate_granularity``, Mpps in Lua)."""
    loss_ratio_limit: float
    """Acceptable loss per direction [1] (``acceptableLossPct`` / 100); 0 searches the NDR."""
    search_trial_s: float
    """Duration of each search trial [s] (``searchRunTime``)."""
    validation_trial_s: float
    """Duration of the final validation trial [s] (``validationRunTime``)."""
    min_rate_pps: float = 0.0
    """Lowest rate worth trying [pps] (``minRate``); the search fails below it."""
    bidirectional: bool = True
    """Send both directions (``runBidirec``)."""
    flows: int = 1
    """UDP flows per direction [1] (``nrFlows``); :class:`~ovsperf_lab.plan.LabOptions` takes its default."""
    drain_s: float = 2.0
    """RX time after TX stops in every trial [s] (RFC 2544 §23: about 2 s); ``LabOptions`` takes
    its default."""
    calibrate: bool = True
    """Lower the start rate to what the generator achieves (step 1 of the module docstring)."""
    max_invalid_repeats: int = 3
    """How often an invalid trial is repeated before the search gives up [1]."""
    max_trials: int = 60
    """Upper bound on counted trials (search + validation) [1]; lua has none. ``LabOptions`` takes
    its default."""
    max_rate_caps: int = 3
    """How often the search may lower its ceiling because the generator could not sustain a
    rate (step 6 of the module docstring) [1]."""

    def __post_init__(self) -> None:
        if not self.max_rate_pps > 0:
            raise SearchError(f"Field 'max_rate_pps' must be positive, got {self.max_rate_pps!r}.")
        if not 0 < self.rate_granularity_pps < self.max_rate_pps:
            raise SearchError(
                "Field 'rate_granularity_pps' must be in (0, max_rate_pps), "
                f"got {self.rate_granularity_pps!r}."
            )
        if not 0 <= self.loss_ratio_limit < 1:
            raise SearchError(f"Field 'loss_ratio_limit' must be in [0, 1), got {self.loss_ratio_limit!r}.")
        for name in ("search_trial_s", "validation_trial_s"):
            if not getattr(self, name) > 0:
                raise SearchError(f"Field '{name}' must be positive, got {getattr(self, name)!r}.")
        if self.max_invalid_repeats < 0 or self.max_trials < 1:
            raise SearchError("Fields 'max_invalid_repeats' >= 0 and 'max_trials' >= 1 are required.")


@dataclass(frozen=True)
class TrialRecord:
    """One trial as the search ran and judged it (the trial log holds one per trial)."""

    index: int
    """Position among all trials of this search, invalid ones included, from 1 [1]."""
    kind: TrialKind
    """Calibration, search or validation."""
    rate_pps: float
    """Requested rate per direction [pps]."""
    outcome: TrialOutcome
    """Pass, fail or invalid."""
    result: TrialResult
    """The generator's counters."""
    started_at: float
    """Wall-clock start, ``time.time()`` [s]."""
    finished_at: float
    """Wall-clock end, ``time.time()`` [s]."""


@dataclass(frozen=True)
class SearchResult:
    """The throughput found for one frame size: the rate whose final validation passed."""

    config: SearchConfig
    """What was searched."""
    rate_pps: float
    """Offered rate per direction of the passing validation [pps]."""
    start_rate_pps: float
    """Rate of the first search trial after calibration [pps]."""
    validation: TrialResult
    """The passing final-validation trial; the reported numbers come from it."""
    trials: tuple[TrialRecord, ...]
    """Every trial in order, calibration and invalid ones included."""
    generator_limited: bool = False
    """The validated rate is the ceiling the generator could sustain, not a rate the DUT failed
    above: the DUT's throughput is at least :attr:`rate_pps`."""

    @property
    def counted_trials(self) -> int:
        """Return the number of search and validation trials that were not invalid [1]."""
        return sum(1 for t in self.trials if t.outcome is not TrialOutcome.INVALID)


class SearchObserver:
    """Receive search progress; the default does nothing (``run.py`` shows and logs it)."""

    def trial_started(self, index: int, kind: TrialKind, rate_pps: float, duration_s: float) -> None:
        """Be told that trial ``index`` of ``kind`` at ``rate_pps`` [pps] for ``duration_s`` [s] starts."""

    def trial_finished(self, record: TrialRecord, best_pass_pps: float | None) -> None:
        """Be told how a trial ended and the best passing search rate so far [pps] (``None``: none)."""


def judge(result: TrialResult, loss_ratio_limit: float) -> TrialOutcome:
    """Return PASS, FAIL or INVALID for ``result`` against ``loss_ratio_limit`` [1].

    Invalid when the generator says so or a direction received more than it sent (negative
    loss, lua ``negativeLossRetry``); fail when any direction's loss ratio exceeds the limit
    (lua ``acceptableLoss()`` judges per Tx→Rx pair).
    """
    if not result.valid or not result.directions:
        return TrialOutcome.INVALID
    if any(d.lost_packets < 0 or d.tx_packets == 0 for d in result.directions):
        return TrialOutcome.INVALID
    if all(d.loss_ratio <= loss_ratio_limit for d in result.directions):
        return TrialOutcome.PASS
    return TrialOutcome.FAIL


def _achieved_tx_pps(result: TrialResult) -> float:
    """Return the lowest per-direction achieved TX rate [pps] (0 without directions)."""
    return min((d.tx_pps for d in result.directions), default=0.0)


class _Runner:
    """Run trials for one search: numbering, invalid repeats, observer calls, the trial list."""

    def __init__(
        self,
        generator: TrafficGenerator,
        config: SearchConfig,
        log: logging.Logger,
        observer: SearchObserver,
        clock: Callable[[], float],
    ) -> None:
        self.generator = generator
        self.config = config
        self.log = log
        self.observer = observer
        self.clock = clock
        self.trials: list[TrialRecord] = []
        self.best_pass_pps: float | None = None

    def once(self, kind: TrialKind, rate_pps: float, duration_s: float) -> TrialRecord:
        cfg = self.config
        spec = TrialSpec(
            frame_size_bytes=cfg.frame_size_bytes,
            rate_pps=rate_pps,
            duration_s=duration_s,
            bidirectional=cfg.bidirectional,
            flows=cfg.flows,
            drain_s=cfg.drain_s,
        )
        index = len(self.trials) + 1
        self.observer.trial_started(index, kind, rate_pps, duration_s)
        started = self.clock()
        result = self.generator.run_trial(spec)
        outcome = judge(result, cfg.loss_ratio_limit)
        if outcome is TrialOutcome.INVALID and _tx_limited_failure_of(result, rate_pps, cfg.loss_ratio_limit):
            outcome = TrialOutcome.FAIL
        record = TrialRecord(index, kind, rate_pps, outcome, result, started, self.clock())
        self.trials.append(record)
        if outcome is TrialOutcome.PASS:
            self.best_pass_pps = max(self.best_pass_pps or 0.0, rate_pps)
        self.log.info(
            "%s trial %d (%s) at %.0f pps/dir for %g s: %s, loss %.6f %%%s.",
            item_text(cfg.frame_size_bytes),
            index,
            kind.value,
            rate_pps,
            duration_s,
            outcome.value.upper(),
            result.loss_ratio * 100.0,
            f" ({result.invalid_reason})" if outcome is TrialOutcome.INVALID else "",
        )
        self.observer.trial_finished(record, self.best_pass_pps)
        return record

    def valid(self, kind: TrialKind, rate_pps: float, duration_s: float) -> TrialRecord:
        """Run until the trial is valid, repeating at most ``max_invalid_repeats`` times.

        :raises GeneratorLimitedError: when every attempt fell short of ``rate_pps``.
        :raises SearchError: when the attempts stayed invalid for other reasons.
        """
        reasons: list[str] = []
        achieved: list[float] = []
        for _attempt in range(self.config.max_invalid_repeats + 1):
            record = self.once(kind, rate_pps, duration_s)
            if record.outcome is not TrialOutcome.INVALID:
                return record
            reasons.append(record.result.invalid_reason or "negative loss or nothing sent")
            short = _achieved_tx_pps(record.result)
            if 0 < short < rate_pps * TX_SHORTFALL_RATIO:
                achieved.append(short)
        message = (
            f"{item_text(self.config.frame_size_bytes)}: {len(reasons)} invalid trials in a row at "
            f"{rate_pps:.0f} pps per direction ({'; '.join(dict.fromkeys(reasons))}); the generator, "
            "not the DUT, is the limit."
        )
        if len(achieved) == len(reasons):
            raise GeneratorLimitedError(message, achieved_pps=max(achieved))
        raise SearchError(message)


def _tx_limited_failure_of(result: TrialResult, rate_pps: float, loss_ratio_limit: float) -> bool:
    """Return whether ``result`` fell short of ``rate_pps`` yet lost more than the limit."""
    if not result.directions or any(d.lost_packets < 0 or d.tx_packets == 0 for d in result.directions):
        return False
    short = _achieved_tx_pps(result) < rate_pps
    return short and any(d.loss_ratio > loss_ratio_limit for d in result.directions)


def _first_trial(runner: _Runner) -> TrialRecord:
    """Run the first search trial, lowering the start rate while the generator cannot reach it.

    lua-trafficgen caps ``startRate`` at the TX rate its calibration achieves ("Start rate has
    been reduced from … to …"); here the first search trial doubles as that calibration.
    """
    cfg = runner.config
    rate = cfg.max_rate_pps
    for _attempt in range(cfg.max_invalid_repeats + 1):
        record = runner.once(TrialKind.SEARCH, rate, cfg.search_trial_s)
        if record.outcome is not TrialOutcome.INVALID:
            return record
        achieved = _achieved_tx_pps(record.result)
        if cfg.calibrate and 0 < achieved < rate:
            reduced = max(achieved * CALIBRATION_MARGIN, cfg.rate_granularity_pps * 2)
            runner.log.warning(
                "%s: start rate has been reduced from %.0f to %.0f pps per direction: the "
                "generator achieved only %.0f pps.",
                item_text(cfg.frame_size_bytes),
                rate,
                reduced,
                achieved,
            )
            rate = reduced
    raise SearchError(
        f"{item_text(cfg.frame_size_bytes)}: the first trials stayed invalid "
        f"({runner.trials[-1].result.invalid_reason}); cannot choose a start rate."
    )


@dataclass
class Bisection:
    """The state of lua-trafficgen's bisection and its rules, applied one trial outcome at a time.

    Steps 2, 3, 5 and 6 of the module docstring; pure apart from the injected ``log`` (as CSIT's
    MLRsearch keeps its selector state apart from the measurer). :func:`search_throughput` runs
    the trials; this object decides the next rate and whether the next trial is the validation.
    All rates are per direction [pps].
    """

    frame_size_bytes: FrameSizeItem
    """Frame size of the search, for messages [B]."""
    granularity_pps: float
    """Stop width of the bisection [pps]."""
    floor_pps: float
    """Lowest rate tried; a fail there ends the search [pps]."""
    rate_pps: float
    """The rate of the next (or current) trial [pps]."""
    log: logging.Logger
    """Where the rules say why they moved."""
    prev_pass_pps: float = 0.0
    """Highest pass the bisection builds on (0 when none) [pps]."""
    prev_fail_pps: float = 0.0
    """Lowest fail above ``prev_pass_pps``; starts at the start rate [pps]."""
    final: bool = False
    """Whether the trial at ``rate_pps`` is the final validation."""
    passes: list[float] = field(default_factory=list)
    """Every pass recorded as ``prev_pass_pps`` so far [pps]."""
    ceiling_pps: float | None = None
    """Upper bound set when the generator could not sustain a rate (step 6) [pps]."""

    def __post_init__(self) -> None:
        """Start with the start rate as the first fail bound (nothing above it is tried)."""
        if not self.prev_fail_pps:
            self.prev_fail_pps = self.rate_pps

    @property
    def kind(self) -> TrialKind:
        """Return the kind of the trial at :attr:`rate_pps`."""
        return TrialKind.VALIDATION if self.final else TrialKind.SEARCH

    @property
    def at_ceiling(self) -> bool:
        """Return whether :attr:`rate_pps` is at the generator's ceiling (the DUT does at least that)."""
        return self.ceiling_pps is not None and self.rate_pps >= self.ceiling_pps

    def passed(self) -> bool:
        """Apply a pass at :attr:`rate_pps`; return ``True`` when it was the final validation.

        Step 2: ``next = (prev_fail + rate) / 2``; within one granularity the next trial is the
        validation at the same rate, and that pass does not become ``prev_pass`` (trafficgen.lua),
        so a failed validation never climbs back towards it.
        """
        if self.final:
            return True
        rate = self.rate_pps
        next_rate = (self.prev_fail_pps + rate) / 2.0
        if abs(next_rate - rate) <= self.granularity_pps:
            self.final = True
            return False
        self.prev_pass_pps = rate
        self.passes.append(rate)
        self.rate_pps = next_rate
        return False

    def failed(self, loss_ratio: float) -> None:
        """Apply a fail at :attr:`rate_pps` (loss ``loss_ratio`` [1]).

        Step 3: a failed validation lowers the rate by one granularity. Step 2: otherwise
        ``next = (prev_pass + rate) / 2``, the validation when within one granularity. Step 5: a
        fail at or below ``prev_pass`` marks that pass as noise; the highest earlier pass below the
        failing rate (0 if none) takes its place. The next rate never goes below the floor.

        :raises SearchError: when the failing rate is the floor.
        """
        rate = self.rate_pps
        if rate <= self.floor_pps:
            raise SearchError(
                f"{item_text(self.frame_size_bytes)}: could not pass the minimum rate "
                f"{self.floor_pps:.0f} pps per direction (loss {loss_ratio * 100:.6f} %)."
            )
        if self.final:
            self.final = False
            next_rate = rate - self.granularity_pps
            self.log.info(
                "%s: final validation failed at %.0f pps; lowering by one granularity.",
                item_text(self.frame_size_bytes),
                rate,
            )
        else:
            if self.prev_pass_pps >= rate:
                self.passes = [p for p in self.passes if p < rate]
                self.log.info(
                    "%s: fail at %.0f pps below the pass at %.0f pps; the search continues below it.",
                    item_text(self.frame_size_bytes),
                    rate,
                    self.prev_pass_pps,
                )
                self.prev_pass_pps = max(self.passes, default=0.0)
            next_rate = (self.prev_pass_pps + rate) / 2.0
            if abs(next_rate - rate) < self.granularity_pps:
                self.final = True
        self.prev_fail_pps = rate
        self.rate_pps = max(next_rate, self.floor_pps)

    def capped(self, ceiling_pps: float, best_pass_pps: float | None) -> None:
        """Apply step 6: the generator cannot send faster than ``ceiling_pps``; search below it.

        When a trial at or above the ceiling already passed (``best_pass_pps``), the next trial
        validates the ceiling directly.
        """
        self.ceiling_pps = ceiling_pps
        self.prev_fail_pps = self.rate_pps = ceiling_pps
        self.final = (best_pass_pps or 0.0) >= ceiling_pps


def search_throughput(
    generator: TrafficGenerator,
    config: SearchConfig,
    *,
    log: logging.Logger,
    observer: SearchObserver | None = None,
    clock: Callable[[], float] = time.time,
) -> SearchResult:
    """Search the highest rate whose validation trial loses at most ``config.loss_ratio_limit``.

    :returns: the validated rate, its validation trial and every trial run.
    :raises SearchError: when even ``min_rate_pps`` (or one granularity) fails, when a trial
        stays invalid ``max_invalid_repeats + 1`` times, or after ``max_trials`` counted trials.
    :raises TrafficGeneratorError: from the generator (it died, hung or refused a trial).
    """
    runner = _Runner(generator, config, log, observer or SearchObserver(), clock)
    gran = config.rate_granularity_pps
    floor = max(config.min_rate_pps, gran)
    log.info(
        "%s: searching from %.0f pps per direction, granularity %.0f pps, acceptable loss %g %%.",
        item_text(config.frame_size_bytes),
        config.max_rate_pps,
        gran,
        config.loss_ratio_limit * 100.0,
    )
    record = _first_trial(runner)
    start = record.rate_pps
    bisection = Bisection(config.frame_size_bytes, gran, floor, start, log)
    caps = 0
    for counted in range(config.max_trials):
        if counted > 0:
            duration = config.validation_trial_s if bisection.final else config.search_trial_s
            try:
                record = runner.valid(bisection.kind, bisection.rate_pps, duration)
            except GeneratorLimitedError as limited:
                caps += 1
                ceiling = limited.achieved_pps * CALIBRATION_MARGIN
                if caps > config.max_rate_caps or ceiling <= floor:
                    raise
                log.warning(
                    "%s: the generator could not sustain %.0f pps per direction (best %.0f); "
                    "the search continues below %.0f pps.",
                    item_text(config.frame_size_bytes),
                    bisection.rate_pps,
                    limited.achieved_pps,
                    ceiling,
                )
                bisection.capped(ceiling, runner.best_pass_pps)
                continue
        if record.outcome is not TrialOutcome.PASS:
            bisection.failed(record.result.loss_ratio)
            continue
        if bisection.passed():
            rate = bisection.rate_pps
            log.info(
                "%s: final validation passed at %.0f pps per direction after %d trials%s.",
                item_text(config.frame_size_bytes),
                rate,
                len(runner.trials),
                " (the generator's ceiling: the DUT's throughput is at least this)"
                if bisection.at_ceiling
                else "",
            )
            return SearchResult(
                config,
                rate,
                start,
                record.result,
                tuple(runner.trials),
                generator_limited=bisection.at_ceiling,
            )
    raise SearchError(
        f"{item_text(config.frame_size_bytes)}: no validated rate after {config.max_trials} counted trials."
    )
