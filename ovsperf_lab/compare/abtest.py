"""Measure two OVS/DPDK sides interleaved: rounds in random A/B order, one side's OVS at a time.

Each round brings up side A's and side B's testbed (:mod:`ovsperf_lab.testbed`: sandboxed OVS, P2P
topology, generator) one after the other, in a freshly randomised order (never both at once: an
idle PMD still busy-polls its CPU), warms up, measures the **MRR** (maximum receive rate at full offered load,
FD.io CSIT's trending metric: received frames per second, both directions, offering line rate
for a fixed trial time) and tears everything down. After every round the paired estimate
(:mod:`ovsperf_lab.compare.abstats`) is updated; the run stops once the minimum detectable change is
below the target (after ``min_rounds``), or at ``max_rounds``. Everything started is torn down on
every exit; the rounds measured so far are written even when the run is interrupted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ovsperf_catalog.model import Topology
from ovsperf_common.units import line_rate_pps
from ovsperf_lab.compare.abstats import PairedEstimate, estimate
from ovsperf_lab.compare.config import CompareConfig
from ovsperf_lab.compare.cpusteal import CpuSteal
from ovsperf_lab.compare.sides import Side
from ovsperf_lab.errors import OvsError, OvsOverloadedError, SearchError
from ovsperf_lab.generators.api import GeneratorFactory, TrafficGenerator
from ovsperf_lab.model import TrialResult, TrialSpec
from ovsperf_lab.plan import CpuPlan
from ovsperf_lab.search.mlr import MlrConfig, search_mlr
from ovsperf_lab.state import LabRunState, release
from ovsperf_lab.testbed import Switch, SwitchBuild, TestbedConfig, open_testbed

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RoundValue:
    """One side's measurement in one round."""

    round: int
    """Round number, from 1."""
    side: str
    """``A`` or ``B``."""
    position: int
    """0: measured first in its round, 1: second."""
    mrr_pps: float
    """The side's value, both directions [pps]: MRR (received rate at full offered load) or, with
    ``--metric pdr``, the PDR."""
    tx_pps: float
    """Offered (achieved) rate, both directions [pps]."""
    started_at: str
    """ISO time the measurement started."""


class SideCrashedError(OvsError):
    """A side's OVS would not start or died: the message names the side and the log kept."""

    def __init__(self, message: str, *, side: str, log_path: Path | None) -> None:
        super().__init__(message)
        self.side = side
        """``A`` or ``B``."""
        self.log_path = log_path
        """Its ``ovs-vswitchd`` log (or, without one, its stdout and stderr), copied out of the run
        directory before teardown; ``None`` when no crash-log directory was given or neither exists."""


class CompareObserver:
    """Receive progress (the CLI prints it); the default does nothing."""

    def measured(self, value: RoundValue, current: PairedEstimate | None) -> None:
        """Be told a side's value, and the estimate when its round is complete."""


@dataclass
class CompareOutcome:
    """What a comparison produced."""

    sides: tuple[Side, Side]
    """A and B."""
    config: CompareConfig
    """How it was measured."""
    values: list[RoundValue] = field(default_factory=list)
    """Every measurement, in run order."""
    versions: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Side → (OVS, DPDK) as the running daemon reported them."""
    estimate: PairedEstimate | None = None
    """B against A over the complete rounds; ``None`` before two sides of a round were measured."""
    complete: bool = False
    """Whether the run ended by its own rule (MDC reached or ``--rounds`` done)."""
    reason: str | None = None
    """Why it is incomplete, or why it stopped."""

    def pairs(self) -> tuple[list[float], list[float]]:
        """Return (A values, B values) of the complete rounds, in round order [pps]."""
        by_round: dict[int, dict[str, float]] = {}
        for value in self.values:
            by_round.setdefault(value.round, {})[value.side] = value.mrr_pps
        complete = [r for r in sorted(by_round) if len(by_round[r]) == 2]
        return [by_round[r]["A"] for r in complete], [by_round[r]["B"] for r in complete]


class _SideRun:
    """Bring one side's testbed up (:mod:`ovsperf_lab.testbed`), measure once, tear it down."""

    def __init__(
        self,
        side: Side,
        cpus: CpuPlan,
        config: CompareConfig,
        state_root: Path,
        run_id: str,
        generator_factory: GeneratorFactory,
        crash_log_dir: Path | None = None,
    ) -> None:
        self.side, self.cpus, self.config = side, cpus, config
        self.state_root, self.run_id, self.generator_factory = state_root, run_id, generator_factory
        self.crash_log_dir = crash_log_dir

    def testbed(self) -> TestbedConfig:
        """Return the testbed of a comparison: P2P, the configuration's queues, rings, nice and memory."""
        config = self.config
        return TestbedConfig(
            cpus=self.cpus,
            queues=config.queues,
            ring_size=config.ring_size,
            nice=config.nice,
            ovs_socket_mem_mb=config.ovs_socket_mem_mb,
            generator_memory_mb=config.generator_memory_mb,
            generator=config.generator,
            flows=config.flows,
        )

    def measure(self) -> tuple[float, float, tuple[str, str]]:
        """Return (MRR [pps], offered [pps], (OVS, DPDK) versions).

        :raises SideCrashedError: naming the side and its log when its OVS fails to start or dies
            (the log copied into ``crash_log_dir`` first, as the run directory goes at teardown).
        :raises OvsOverloadedError: when a wait for OVS ran out on an overloaded machine (no crash).
        :raises LabError: (TrafficGeneratorError, …) from the generator or the test aid.
        """
        side = self.side
        state = LabRunState.create(self.state_root, self.run_id)
        try:
            switch = Switch(
                state,
                self.testbed(),
                SwitchBuild(
                    vswitchd=side.vswitchd,
                    other_config=side.other_config,
                    library_dir=side.library_dir,
                    name=f"Side {side.label} ({side.vswitchd})",
                ),
            )
            with contextlib.ExitStack() as stack:
                try:
                    stack.enter_context(switch)
                    bed = stack.enter_context(open_testbed(switch, Topology.P2P, self.generator_factory))
                    if side.label == "B" and self.config.b_cpu_steal_percent:
                        steal = CpuSteal(self.config.b_cpu_steal_percent, f"{self.run_id}-steal")
                        stack.callback(steal.release)
                        steal.apply(bed.ovs.pids["ovs-vswitchd"])
                    return self._measure(bed.generator, bed.link_speed_mbps, switch)
                except OvsOverloadedError:
                    raise  # the machine's fault, not the side's: never counted as its crash
                except OvsError as err:
                    raise self._crashed(err, switch.ovs.vswitchd_log) from err
        finally:
            for line in release(state):
                log.debug("Teardown: %s.", line)

    def _crashed(self, err: OvsError, vswitchd_log: Path) -> SideCrashedError:
        """Return the error naming the side, its log and stderr copied into ``crash_log_dir``.

        What is copied: ``ovs-vswitchd.log`` and ``ovs-vswitchd.out`` (its stdout and stderr: a
        crash's last words), those that exist; the error's ``log_path`` is the log, else the output.
        """
        kept: list[Path] = []
        for source in (vswitchd_log, vswitchd_log.with_suffix(".out")):
            if self.crash_log_dir is None or not source.is_file():
                continue
            target = self.crash_log_dir / f"side-{self.side.label}-{self.run_id}-{source.name}"
            try:
                shutil.copyfile(source, target)
                kept.append(target)
            except OSError as copy_err:
                log.warning("Could not keep '%s': %s.", source, copy_err.strerror)
        message = str(err)
        if not message.startswith(f"Side {self.side.label} "):
            message = f"Side {self.side.label} ({self.side.vswitchd}): {message}"
        if kept:
            message += " Kept: " + ", ".join(f"'{path}'" for path in kept) + "."
        return SideCrashedError(message, side=self.side.label, log_path=kept[0] if kept else None)

    def _measure(
        self, generator: TrafficGenerator, speed_mbps: int, switch: Switch
    ) -> tuple[float, float, tuple[str, str]]:
        """Warm up and run the MRR trial (or the PDR search) at ``speed_mbps``'s line rate [Mbit/s].

        :raises OvsError: when OVS died during the trial.
        :raises LabError: from the generator, or the search.
        """
        config = self.config
        load = line_rate_pps(config.frame_size_bytes, speed_mbps * 1e6)
        if config.metric == "pdr":
            return self._pdr(generator, load), load * 2, switch.versions

        def trial(duration_s: float, drain_s: float) -> TrialResult:
            spec = TrialSpec(
                frame_size_bytes=config.frame_size_bytes,
                rate_pps=load,
                duration_s=duration_s,
                flows=config.flows,
                drain_s=drain_s,
            )
            return generator.run_trial(spec)

        trial(config.warmup_s, config.warmup_drain_s)  # warm-up: flow caches, rings; not counted
        result = trial(config.trial_s, config.drain_s)
        switch.ovs.check_alive()
        return result.rx_pps, result.tx_pps, switch.versions

    def _pdr(self, generator: TrafficGenerator, max_load: float) -> float:
        """Return the 0.5 % PDR of a short MLRsearch, both directions [pps].

        :raises SearchError: naming the side when the search finds none.
        """
        config = MlrConfig(
            frame_size_bytes=self.config.frame_size_bytes,
            max_rate_pps=max_load,
            loss_ratio_goals=(0.005,),
            final_trial_s=1.0,
            duration_sum_s=self.config.pdr_duration_sum_s,
            search_duration_max_s=600.0,
            flows=self.config.flows,
        )
        try:
            found = search_mlr(generator, config, log=logging.getLogger("ovsperf_lab.search.mlr")).goal(0.005)
        except SearchError as err:
            raise SearchError(f"Side {self.side.label}: {err}") from err
        if found.aggregate_pps is None:
            raise SearchError(f"Side {self.side.label}: no PDR (even the minimum load lost more than 0.5 %).")
        return found.aggregate_pps


def run_compare(
    sides: tuple[Side, Side],
    cpus: CpuPlan,
    config: CompareConfig,
    *,
    state_root: Path,
    generator_factory: GeneratorFactory,
    observer: CompareObserver | None = None,
    on_round: Callable[[CompareOutcome], None] | None = None,
    crash_log_dir: Path | None = None,
) -> CompareOutcome:
    """Measure ``sides`` in interleaved rounds until the MDC target or ``max_rounds``.

    :param on_round: called after every complete round with the outcome so far (the CLI writes
        the results then, so an interrupted run keeps them).
    :param crash_log_dir: where a side whose OVS fails keeps its ``ovs-vswitchd`` log
        (:class:`SideCrashedError`); ``None``: the log goes with the run directory.
    :returns: the outcome; ``complete`` is true when the run ended by its own rule.
    :raises LabError: when a side cannot be measured (the message names it); ``on_round`` has
        seen every complete round before.
    :raises KeyboardInterrupt: on Ctrl-C/SIGTERM, after tearing down.
    """
    obs = observer or CompareObserver()
    rng = random.Random(config.seed)
    outcome = CompareOutcome(sides, config)
    compare_id = f"ovsperf-lab-ab-{datetime.now():%Y%m%d%H%M%S}-{os.getpid()}"
    by_label = {s.label: s for s in sides}
    for number in range(1, config.max_rounds + 1):
        order = ["A", "B"]
        rng.shuffle(order)
        for position, label in enumerate(order):
            started = datetime.now().astimezone().isoformat(timespec="seconds")
            t0 = time.monotonic()
            run = _SideRun(
                by_label[label],
                cpus,
                config,
                state_root,
                f"{compare_id}-r{number}{label}",
                generator_factory,
                crash_log_dir,
            )
            mrr, tx, versions = run.measure()
            outcome.versions.setdefault(label, versions)
            value = RoundValue(number, label, position, mrr, tx, started)
            outcome.values.append(value)
            a, b = outcome.pairs()
            outcome.estimate = (
                estimate(
                    a, b, alpha=config.alpha, power=config.power, threshold_percent=config.threshold_percent
                )
                if a
                else None
            )
            log.info(
                "Round %d, side %s: MRR %.4f Mpps (%.0f s).", number, label, mrr / 1e6, time.monotonic() - t0
            )
            obs.measured(value, outcome.estimate if position == 1 else None)
        if on_round is not None:
            on_round(outcome)
        current = outcome.estimate
        if (
            number >= config.min_rounds
            and current is not None
            and current.mdc_percent is not None
            and current.mdc_percent <= config.target_mdc_percent
        ):
            outcome.reason = (
                f"the MDC reached {current.mdc_percent:.2f} % <= {config.target_mdc_percent:g} % "
                f"after {number} rounds"
            )
            break
    else:
        outcome.reason = f"{config.max_rounds} rounds done"
    outcome.complete = True
    return outcome
