"""Measure one traffic item on a running testbed: one search from the generator to the item's row.

Per search method one function, from (the cross-checked generator, one frame size or mix at one
flow count, the link speed, the plan) to the item's :class:`~ovsperf_lab.resultrow.FrameSizeResult`:

* :func:`measure_binary`: lua-trafficgen's bisection with its validation trial
  (:mod:`ovsperf_lab.search.binary`);
* :func:`measure_mlr`: FD.io CSIT's MLRsearch (:mod:`ovsperf_lab.search.mlr`), then latency at shares of
  the PDR load (:mod:`ovsperf_lab.search.latency`), each trial marked with the goals it bounds.

Every trial's record (the ``ovsperf-trials.json`` object, docs/results-format.md) goes to
``on_trials`` as the trial ends, so that a crash keeps it; progress goes to a
:class:`MeasureObserver`. Loss goals are ratios [1] throughout; the results writer turns them into
the percentages its formats carry.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any

from ovsperf_common.framemix import FrameSizeItem, item_line_rate_pps, item_text
from ovsperf_lab.crosscheck import CrossCheckedGenerator
from ovsperf_lab.plan import LabPlan
from ovsperf_lab.resultrow import FrameSizeResult
from ovsperf_lab.search.binary import SearchConfig, SearchObserver, TrialKind, TrialRecord, search_throughput
from ovsperf_lab.search.latency import LatencyLevel, measure_levels
from ovsperf_lab.search.mlr import MlrIncompleteError, MlrResult, MlrTrial, relevance, search_mlr
from ovsperf_lab.trialjson import binary_trial_to_json, latency_trial_to_json, mlr_trial_to_json

log = logging.getLogger(__name__)

TrialsCallback = Callable[[Sequence[dict[str, Any]]], None]
"""Receives the search's trial records so far, in order, each time one ends or they change
(MLRsearch's goal marks); each call replaces the records of the call before."""


class MeasureObserver(SearchObserver):
    """Receive the progress of one search (binary trials through :class:`SearchObserver`)."""

    def mlr_trial_finished(self, number: int, trial: MlrTrial) -> None:
        """Be told MLRsearch's trial ``number`` (1-based, per search) ended."""

    def latency_started(self, percent_of_pdr: float, load_pps: float, duration_s: float) -> None:
        """Be told a latency trial at ``percent_of_pdr`` [%] (``load_pps`` per direction) starts."""


def search_text(plan: LabPlan, frame_size: FrameSizeItem, flows: int) -> str:
    """Return what one search measures, for progress lines: ``'64 B'`` or ``'imix, 1000 flows'``."""
    return item_text(frame_size) + (f", {flows} flows" if plan.options.flow_sweep else "")


def flows_sent(plan: LabPlan, flows: int) -> int:
    """Return the flows per direction a search at ``flows`` sends [1].

    At least one per queue, so that every queue carries traffic.
    """
    return max(flows, plan.queues)


def search_config(
    plan: LabPlan, frame_size: FrameSizeItem, flows: int, link_speed_mbps: int, *, bidirectional: bool = True
) -> SearchConfig:
    """Return the binary search's parameters for ``frame_size`` [B] (or a mix) at ``flows`` [1].

    The start rate is the line rate of ``link_speed_mbps`` [Mbit/s] (``ovsperf_common.units``);
    ``bidirectional`` false sends port 0 → 1 only (the overlay tests, VSperf ``bidir`` False).
    """
    max_rate = item_line_rate_pps(frame_size, link_speed_mbps * 1e6)
    return SearchConfig(
        frame_size_bytes=frame_size,
        max_rate_pps=max_rate,
        rate_granularity_pps=max_rate * plan.options.granularity_percent / 100.0,
        loss_ratio_limit=plan.loss_ratio_limit,
        search_trial_s=plan.search_trial_s,
        validation_trial_s=plan.validation_trial_s,
        flows=flows_sent(plan, flows),
        drain_s=plan.options.drain_s,
        max_trials=plan.options.max_trials,
        bidirectional=bidirectional,
    )


class _BinaryTrials(SearchObserver):
    """Record each binary-search trial with its cross-check as it ends; forward progress."""

    def __init__(
        self, generator: CrossCheckedGenerator, on_trials: TrialsCallback, observer: SearchObserver
    ) -> None:
        self.generator = generator
        self.on_trials = on_trials
        self.observer = observer
        self.records: list[dict[str, Any]] = []

    def trial_started(self, index: int, kind: TrialKind, rate_pps: float, duration_s: float) -> None:
        self.observer.trial_started(index, kind, rate_pps, duration_s)

    def trial_finished(self, record: TrialRecord, best_pass_pps: float | None) -> None:
        check = self.generator.last.to_json() if self.generator.last is not None else None
        self.records.append(binary_trial_to_json(record, check))
        self.on_trials(tuple(self.records))
        self.observer.trial_finished(record, best_pass_pps)


def measure_binary(
    generator: CrossCheckedGenerator,
    frame_size: FrameSizeItem,
    flows: int,
    link_speed_mbps: int,
    plan: LabPlan,
    *,
    on_trials: TrialsCallback,
    observer: MeasureObserver,
    bidirectional: bool = True,
) -> FrameSizeResult:
    """Search ``frame_size`` [B] (or a mix) at ``flows`` [1] with the lua-compatible binary search.

    ``bidirectional`` false: port 0 → 1 only (the overlay tests); rates are then one direction's.

    :param link_speed_mbps: the generator ports' speed [Mbit/s]; the search starts at its line rate.
    :returns: the row (the passing validation trial's numbers).
    :raises SearchError: when the search ends without a validated rate.
    :raises TrafficGeneratorError: from the generator.
    """
    found = search_throughput(
        generator,
        search_config(plan, frame_size, flows, link_speed_mbps, bidirectional=bidirectional),
        log=logging.getLogger("ovsperf_lab.search.binary"),
        observer=_BinaryTrials(generator, on_trials, observer),
    )
    return FrameSizeResult.from_binary(found, link_speed_mbps)


def _marked(
    records: Sequence[dict[str, Any]], trials: Sequence[MlrTrial], result: MlrResult
) -> list[dict[str, Any]]:
    """Return ``records`` (one per trial of ``trials``) with ``relevant_to``: the goals each bounds."""
    return [
        {**record, "relevant_to": relevance(result, trial)}
        for record, trial in zip(records, trials, strict=True)
    ]


def measure_mlr(
    generator: CrossCheckedGenerator,
    frame_size: FrameSizeItem,
    flows: int,
    link_speed_mbps: int,
    plan: LabPlan,
    *,
    on_trials: TrialsCallback,
    observer: MeasureObserver,
    bidirectional: bool = True,
) -> FrameSizeResult:
    """Search ``frame_size`` [B] (or a mix) at ``flows`` [1] with MLRsearch, then latency at PDR shares.

    ``bidirectional`` false: port 0 → 1 only (the overlay tests); the row's rates are that one
    direction's.

    Every trial's record goes to ``on_trials`` as it ends; after the search (also one stopped at
    its duration limit) each is marked with the goals whose relevant bound it is, and the latency
    trials follow (CSIT's ``perform_mlr_search``, then its latency trials).

    :param link_speed_mbps: the generator ports' speed [Mbit/s]; loads go up to its line rate.
    :returns: the row: every goal's throughput, latency at the 90 % PDR level.
    :raises SearchError: (:class:`~ovsperf_lab.search.mlr.MlrIncompleteError`) when the search
        stopped before its goals reached their width; the message has the bounds found.
    :raises TrafficGeneratorError: from the generator.
    """
    options = plan.options
    config = options.mlr_config(
        frame_size, item_line_rate_pps(frame_size, link_speed_mbps * 1e6), flows=flows_sent(plan, flows)
    )
    if not bidirectional:
        config = dataclasses.replace(config, bidirectional=False)
    records: list[dict[str, Any]] = []
    trials: list[MlrTrial] = []

    def record(trial: MlrTrial) -> None:
        entry = mlr_trial_to_json(trial, frame_size, config.flows)
        last = generator.last
        # two-host mode: NIC counts; a conntrack test: its connection count
        if last is not None and (
            generator.wire_names is not None
            or last.expected_connections is not None
            or generator.delivered_delta_bytes is not None  # overlay: two bridges, frame sizes
        ):
            entry["crosscheck"] = last.to_json()
        records.append(entry)
        trials.append(trial)
        on_trials(tuple(records))
        observer.mlr_trial_finished(len(trials), trial)

    try:
        found = search_mlr(
            generator, config, log=logging.getLogger("ovsperf_lab.search.mlr"), on_trial=record
        )
    except MlrIncompleteError as err:
        if err.partial is not None:
            on_trials(_marked(records, trials, err.partial))
        raise
    records = _marked(records, trials, found)
    on_trials(records)
    pdr = max(found.goals, key=lambda g: g.loss_ratio_limit)
    levels: tuple[LatencyLevel, ...] = ()
    if options.latency_levels_percent and pdr.lower_bound_pps:
        levels = measure_levels(
            generator,
            frame_size_bytes=frame_size,
            pdr_pps=pdr.lower_bound_pps,
            levels_percent=options.latency_levels_percent,
            duration_s=options.latency_trial_s,
            flows=config.flows,
            drain_s=config.drain_s,
            log=logging.getLogger("ovsperf_lab.search.latency"),
            on_start=observer.latency_started,
            min_load_pps=options.min_load_pps,
            bidirectional=config.bidirectional,
        )
        on_trials([*records, *(latency_trial_to_json(level, frame_size, config.flows) for level in levels)])
    elif options.latency_levels_percent:
        log.warning("%s: no PDR load found, so no latency trials.", item_text(frame_size))
    return FrameSizeResult.from_mlr(found, levels, link_speed_mbps)
