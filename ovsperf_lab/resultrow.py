"""The row model of the lab's results: one frame size's throughput goals and latency; the DUT environment.

:class:`FrameSizeResult` is one row of a VSperf result CSV (docs/results-format.md), built from a
binary search (:meth:`FrameSizeResult.from_binary`) or an MLRsearch and its latency levels
(:meth:`FrameSizeResult.from_mlr`); it goes to ``ovsperf-metadata.json`` as it is
(:meth:`FrameSizeResult.to_json`). :class:`Environment` is the DUT written beside the rows. Loss
goals are ratios [1] here; :func:`goal_percent` gives the percentages the results formats carry.
Rendering the rows is :mod:`ovsperf_lab.resultrender`'s, writing them :mod:`ovsperf_lab.results`'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ovsperf_common.framemix import FrameSizeItem, item_json
from ovsperf_lab.model import TrialResult
from ovsperf_lab.search.binary import SearchResult
from ovsperf_lab.search.latency import LatencyLevel
from ovsperf_lab.search.mlr import MlrResult


@dataclass(frozen=True)
class Environment:
    """The DUT environment recorded with the results (STYLE.md §5)."""

    os_name: str
    """``PRETTY_NAME`` of ``/etc/os-release``."""
    kernel: str
    """``uname -r``."""
    cpu_model: str
    """CPU model name."""
    cpu_count: int
    """CPUs available to the lab [1]."""
    memory_kb: int
    """``MemTotal`` [kB]."""
    cmdline: str
    """``/proc/cmdline``."""
    vswitch: str
    """VSperf vswitch name, e.g. ``'OvsDpdkVhost'``."""
    ovs_version: str
    """OVS version the running daemon reports."""
    dpdk_version: str
    """DPDK version OVS is built with."""
    generator: str
    """Traffic generator name."""
    generator_version: str | None
    """Generator version or build id, ``None`` when unknown."""
    nic: str
    """What stands in for the NICs, e.g. ``'virtio_user ↔ OVS dpdkvhostuserclient'``."""
    vnf: str | None
    """PVP forwarder description, ``None`` without PVP."""
    cpu_plan: str
    """Which CPU runs what, e.g. ``'generator CPU 0, OVS PMD CPUs 1'``."""


def goal_percent(loss_ratio_limit: float) -> float:
    """Return a loss goal [1] as the results formats carry it [%] (docs/results-format.md)."""
    return loss_ratio_limit * 100.0


@dataclass(frozen=True)
class GoalRow:
    """The throughput of one frame size at one loss-ratio goal (docs/results-format.md)."""

    loss_ratio_limit: float
    """The goal [1]: 0 is the NDR (written as ``loss_goal_percent``)."""
    rx_fps: float | None
    """Throughput summed over directions [fps]; ``None`` when even the lowest load lost too much."""
    tx_fps: float | None
    """Offered load summed over directions [fps]: the validated rate (binary), the relevant lower
    bound (MLRsearch)."""
    frame_loss_percent: float | None
    """Loss at that load [%]: the validation trial's (binary), the loss-ratio quantile the
    conditional throughput discounts (MLRsearch)."""
    lower_bound_pps: float | None = None
    """Relevant lower bound per direction [pps] (MLRsearch; binary: the validated rate)."""
    upper_bound_pps: float | None = None
    """Relevant upper bound per direction [pps] (MLRsearch); ``None`` when unknown."""


@dataclass(frozen=True)
class FrameSizeResult:
    """One CSV row: what the search of one frame size found, and its latency."""

    frame_size_bytes: FrameSizeItem
    """Ethernet frame size including FCS [B], or the mix searched."""
    link_speed_mbps: int | None
    """Generator port speed [Mbit/s]; ``None`` when the port reports none (no % of line rate)."""
    directions: int
    """Directions the load was offered on [1]."""
    flows: int
    """UDP flows per direction [1] (VSperf ``stream_count``)."""
    search_method: str
    """``'mlr'`` or ``'binary'`` (the CSV's ``search_method``)."""
    goals: tuple[GoalRow, ...]
    """One or two goals, ascending: the first goes to VSperf's columns, the second to ``pdr_*``."""
    latency_ns: tuple[float | None, float | None, float | None] = (None, None, None)
    """(min, avg, max) latency for VSperf's columns [ns]: the validation trial's (binary), the 90 %
    PDR level's (MLRsearch); ``None`` when not measured."""
    latency_levels: tuple[LatencyLevel, ...] = ()
    """Latency trials at shares of the PDR load, ascending (MLRsearch)."""
    generator_limited: bool = False
    """The binary search validated the generator's ceiling, not a rate the DUT failed above."""

    @classmethod
    def from_binary(cls, search: SearchResult, link_speed_mbps: int | None) -> FrameSizeResult:
        """Return the row of a binary search: its passing validation trial gives the numbers."""
        validation = search.validation
        return cls(
            frame_size_bytes=search.config.frame_size_bytes,
            link_speed_mbps=link_speed_mbps,
            directions=len(validation.directions),
            flows=search.config.flows,
            search_method="binary",
            goals=(
                GoalRow(
                    loss_ratio_limit=search.config.loss_ratio_limit,
                    rx_fps=validation.rx_pps,
                    tx_fps=validation.tx_pps,
                    frame_loss_percent=validation.loss_ratio * 100.0,
                    lower_bound_pps=search.rate_pps,
                ),
            ),
            latency_ns=aggregate_latency(validation),
            generator_limited=search.generator_limited,
        )

    @classmethod
    def from_mlr(
        cls, result: MlrResult, levels: tuple[LatencyLevel, ...], link_speed_mbps: int | None
    ) -> FrameSizeResult:
        """Return the row of an MLRsearch and its latency levels (docs/results-format.md)."""
        goals = []
        for goal in sorted(result.goals, key=lambda g: g.loss_ratio_limit):
            throughput, lower = goal.conditional_throughput_pps, goal.lower_bound_pps
            goals.append(
                GoalRow(
                    loss_ratio_limit=goal.loss_ratio_limit,
                    rx_fps=goal.aggregate_pps,
                    tx_fps=None if lower is None else lower * goal.directions,
                    frame_loss_percent=(
                        None if throughput is None or not lower else 100.0 * (1.0 - throughput / lower)
                    ),
                    lower_bound_pps=lower,
                    upper_bound_pps=goal.upper_bound_pps,
                )
            )
        at_90 = [lv for lv in levels if lv.percent_of_pdr == LATENCY_COLUMNS_LEVEL and lv.all is not None]
        summary = at_90[0].all if at_90 else None
        return cls(
            frame_size_bytes=result.config.frame_size_bytes,
            link_speed_mbps=link_speed_mbps,
            directions=2 if result.config.bidirectional else 1,
            flows=result.config.flows,
            search_method="mlr",
            goals=tuple(goals),
            latency_ns=(None, None, None)
            if summary is None
            else (summary.min_ns, summary.avg_ns, summary.max_ns),
            latency_levels=levels,
        )

    def to_json(self) -> dict[str, Any]:
        """Return the entry of ``ovsperf-metadata.json``'s ``throughput`` lists."""
        return {
            **item_json(self.frame_size_bytes),
            "flows": self.flows,
            "search_method": self.search_method,
            "generator_limited": self.generator_limited,
            "goals": [
                {
                    "loss_goal_percent": goal_percent(g.loss_ratio_limit),
                    "throughput_rx_fps": g.rx_fps,
                    "tx_rate_fps": g.tx_fps,
                    "frame_loss_percent": g.frame_loss_percent,
                    "lower_bound_pps_per_direction": g.lower_bound_pps,
                    "upper_bound_pps_per_direction": g.upper_bound_pps,
                }
                for g in self.goals
            ],
        }


LATENCY_COLUMNS_LEVEL = 90.0
"""The latency level whose numbers go to VSperf's ``*_latency_ns`` columns with MLRsearch [% of
PDR]: the highest fixed load, closest to RFC 2544 §26.2's "at the throughput rate"."""


def aggregate_latency(result: TrialResult) -> tuple[float | None, float | None, float | None]:
    """Return (min, avg, max) latency over all directions [ns]; avg weighted by received frames.

    ``None`` entries when no direction measured latency (never 0: STYLE.md §3).
    """
    dirs = [d for d in result.directions if d.latency_avg_ns is not None and d.rx_packets > 0]
    if not dirs:
        return None, None, None
    mins = [d.latency_min_ns for d in dirs if d.latency_min_ns is not None]
    maxs = [d.latency_max_ns for d in dirs if d.latency_max_ns is not None]
    total = sum(d.rx_packets for d in dirs)
    avg = sum((d.latency_avg_ns or 0.0) * d.rx_packets for d in dirs) / total
    return (min(mins) if mins else None, avg, max(maxs) if maxs else None)
