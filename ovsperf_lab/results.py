"""Write a lab run as a VSperf results directory, so ``reporting`` reads it like Beaker results.

Layout (VSperf ``vsperf`` main and ``testcases/testcase.py``; reference vsperf.md §1):

* ``results_<YYYY-mm-dd_HH-MM-SS>/`` (local time, like VSperf), created empty and never reused;
* ``result_<i>_<test>_<deployment>.csv``: one row per frame size, VSperf's MoonGen columns in
  VSperf's order, plus ``frame_loss_percent`` after the latency columns (where VSperf's Dummy and
  Trex drivers put it) and the goal columns (:data:`GOAL_COLUMNS`: NDR and PDR,
  docs/results-format.md); latency is measured (``''``, i.e. "not measured", when none);
* ``result_<i>_<test>_<deployment>.md`` and ``.rst``: the environment block in VSperf's
  ``* vSwitch: X, Version: Y, GIT tag: Z`` style and a metrics table per frame size;
* ``ovsperf-trials.json``: every trial of every search (rewritten after each trial);
* ``ovsperf-telemetry.json``: DUT telemetry around final / validation trials;
* ``ovsperf-latency.json``: latency at shares of the PDR load, with HdrHistograms (MLRsearch);
* ``vswitchd_<ts>.log`` and the forwarder/generator logs (copied at the end);
* ``ovsperf-metadata.json``: written LAST; ``"complete": false`` with the reason when the run
  crashed or was interrupted (the CSV then holds the frame sizes finished so far).

Every file is written atomically (a reader never sees half a row). The run feeds the writer
through :class:`ResultsSink`: each search's trials as they end, its row (or its failure) once it
ends, the metadata once at the end. Loss goals arrive as ratios [1]; the percentages of the CSV
and the JSON files are made here, when a row is written (:func:`goal_percent`).
"""

from __future__ import annotations

import csv
import io
import json
import logging
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from ovsperf_catalog.model import GuestLoopback, VsperfTest
from ovsperf_common.atomicio import atomic_write_text
from ovsperf_common.framemix import FrameSizeItem, item_entries, item_json, item_name
from ovsperf_common.labfiles import (
    COL_AVG_LAT,
    COL_DEPLOYMENT,
    COL_EXEC_TIME,
    COL_FRAME_LOSS,
    COL_ID,
    COL_LOSS_GOAL,
    COL_MATCH_TYPE,
    COL_MAX_LAT,
    COL_MIN_LAT,
    COL_PACKET_SIZE,
    COL_PDR_GOAL,
    COL_PDR_RX_FPS,
    COL_PDR_RX_MBPS,
    COL_PDR_RX_PERCENT,
    COL_PDR_TX_FPS,
    COL_PREINSTALLED_FLOWS,
    COL_RX_FPS,
    COL_RX_MBPS,
    COL_RX_PERCENT,
    COL_SEARCH,
    COL_START,
    COL_STOP,
    COL_STREAM_COUNT,
    COL_TRAFFIC_TYPE,
    COL_TX_FPS,
    COL_TX_MBPS,
    COL_TX_PERCENT,
    COL_TYPE,
    COL_VSWITCH,
    CSV_COLUMNS,
    GOAL_COLUMNS,
    GUEST_COLUMN,
    HDRH_ENCODING,
    LATENCY_FILE,
    LATENCY_SCHEMA,
    TELEMETRY_FILE,
    TELEMETRY_SCHEMA,
    TRIALS_FILE,
    TRIALS_SCHEMA,
)
from ovsperf_common.metadata import METADATA_FILE, RunMetadata
from ovsperf_common.metadata import write as write_metadata
from ovsperf_common.resultdir import result_csv_name
from ovsperf_common.units import mix_rates
from ovsperf_lab.errors import LabError
from ovsperf_lab.model import TrialResult
from ovsperf_lab.search.binary import SearchResult, TrialRecord
from ovsperf_lab.search.latency import LatencyLevel
from ovsperf_lab.search.mlr import MlrResult, MlrTrial

log = logging.getLogger(__name__)

_TIME_FMT = "%Y-%m-%d %H:%M:%S"


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


def _fmt(value: float | None, digits: int) -> str:
    return "" if value is None else f"{value:.{digits}f}"


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


def csv_row(
    row: FrameSizeResult,
    *,
    test: VsperfTest,
    vswitch: str,
    start: datetime,
    stop: datetime,
    guest: GuestLoopback | None,
) -> dict[str, str]:
    """Return the VSperf CSV row of one frame size (values formatted as VSperf's MoonGen driver).

    ``throughput_rx_fps``/``tx_rate_fps`` are aggregates over both directions [fps] of the first
    goal, ``pdr_*`` of the second (docs/results-format.md); ``*_mbps`` are L1 rates
    ``fps * (size + 20) * 8 / 1e6``; ``*_percent`` is relative to ``directions × line rate``
    (VSperf-341), empty without a link speed.
    """
    entries = item_entries(row.frame_size_bytes)
    line = (
        mix_rates(entries, 1.0, row.link_speed_mbps * 1e6).line_rate_pps * row.directions
        if row.link_speed_mbps
        else None
    )

    def percent(fps: float | None) -> float | None:
        return None if fps is None or line is None else 100.0 * fps / line

    def mbps(fps: float | None) -> float | None:
        return None if fps is None else mix_rates(entries, fps, 1.0).l1_bps / 1e6

    first = row.goals[0]
    second = row.goals[1] if len(row.goals) > 1 else None
    lat_min, lat_avg, lat_max = row.latency_ns
    values = {
        COL_RX_FPS: _fmt(first.rx_fps, 6),
        COL_RX_MBPS: _fmt(mbps(first.rx_fps), 3),
        COL_RX_PERCENT: _fmt(percent(first.rx_fps), 3),
        COL_TX_FPS: _fmt(first.tx_fps, 6),
        COL_TX_MBPS: _fmt(mbps(first.tx_fps), 3),
        COL_TX_PERCENT: _fmt(percent(first.tx_fps), 3),
        COL_MIN_LAT: _fmt(lat_min, 3),
        COL_MAX_LAT: _fmt(lat_max, 3),
        COL_AVG_LAT: _fmt(lat_avg, 3),
        COL_FRAME_LOSS: _fmt(first.frame_loss_percent, 6),
        COL_TYPE: "rfc2544_throughput",
        COL_PACKET_SIZE: item_name(row.frame_size_bytes),
        COL_ID: test.value,
        COL_DEPLOYMENT: test.topology.value,
        COL_VSWITCH: vswitch,
        COL_TRAFFIC_TYPE: "udp",
        COL_EXEC_TIME: time.strftime("%H:%M:%S", time.gmtime((stop - start).total_seconds())),
        COL_START: start.strftime(_TIME_FMT),
        COL_STOP: stop.strftime(_TIME_FMT),
        COL_STREAM_COUNT: str(row.flows),
        COL_MATCH_TYPE: "L4",
        COL_PREINSTALLED_FLOWS: "No",
        COL_LOSS_GOAL: f"{goal_percent(first.loss_ratio_limit):g}",
        COL_SEARCH: row.search_method,
        COL_PDR_GOAL: "" if second is None else f"{goal_percent(second.loss_ratio_limit):g}",
        COL_PDR_RX_FPS: "" if second is None else _fmt(second.rx_fps, 6),
        COL_PDR_RX_MBPS: "" if second is None else _fmt(mbps(second.rx_fps), 3),
        COL_PDR_RX_PERCENT: "" if second is None else _fmt(percent(second.rx_fps), 3),
        COL_PDR_TX_FPS: "" if second is None else _fmt(second.tx_fps, 6),
    }
    if guest is not None:
        values[GUEST_COLUMN] = guest.value
    return values


def _env_lines(env: Environment, deployment: str, bullet: str) -> list[str]:
    lines = [
        "Below is the environment that the test was performed in:",
        "",
        f"{bullet} OS: {env.os_name}",
        f"{bullet} Kernel Version: {env.kernel}",
        f"{bullet} NIC(s):",
        f"    {bullet} {env.nic}",
        f"{bullet} CPU: {env.cpu_model}",
        f"{bullet} CPU cores: {env.cpu_count}",
        f"{bullet} Memory: {env.memory_kb} kB",
        f"{bullet} Virtual Switch Set-up: {deployment}",
        f"{bullet} Traffic Generator: {env.generator}, Version: {env.generator_version}, GIT tag: None",
        f"{bullet} vSwitch: {env.vswitch}, Version: {env.ovs_version}, GIT tag: None",
        f"{bullet} DPDK Version: {env.dpdk_version}, GIT tag: None",
        f"{bullet} Kernel command line: {env.cmdline}",
        f"{bullet} CPU assignment: {env.cpu_plan}",
    ]
    if env.vnf is not None:
        lines += [f"{bullet} VNF: {env.vnf}", f"{bullet} VM loopback apps:", f"    {bullet} {env.vnf}"]
    return lines


def render_md(test: VsperfTest, env: Environment, rows: Sequence[dict[str, str]], complete: bool) -> str:
    """Return the ``.md`` summary of one test (VSperf ``tools/report/report.jinja`` shape)."""
    out = [
        f"# Local lab test report: {test.value} ({test.topology.value})",
        "",
        "Produced by ovsperf-lab (RFC 2544 throughput: MLRsearch's NDR and PDR, or the lua-trafficgen "
        "compatible binary search; see search_method).",
        "" if complete else "**INCOMPLETE: the run stopped early; only the frame sizes below finished.**",
        "",
        "##### Test Environment",
        "",
        *_env_lines(env, test.topology.value, "*"),
        "",
    ]
    for row in rows:
        out += [
            f"#### Test ID: {test.value.upper()}",
            "",
            "##### Results/Metrics Collected",
            "",
            f"| {'Metric':^30} | {'Result':^30} |",
            f"| {'-' * 30} | {'-' * 30} |",
        ]
        out += [
            f"| {k:<30} | {v or 'n/a':>30} |" for k, v in row.items() if k not in (COL_ID, COL_DEPLOYMENT)
        ]
        out.append("")
    return "\n".join(out) + "\n"


def render_rst(test: VsperfTest, env: Environment, rows: Sequence[dict[str, str]], complete: bool) -> str:
    """Return the ``.rst`` report of one test (VSperf ``report_rst.jinja`` shape)."""
    title = f"Test: {test.value}"
    out = [title, "=" * len(title), ""]
    if not complete:
        out += ["**INCOMPLETE: the run stopped early; only the frame sizes below finished.**", ""]
    out += [*_env_lines(env, test.topology.value, "*"), ""]
    for row in rows:
        head = f"Test results for packet size: {row[COL_PACKET_SIZE]}"
        out += [head, "-" * len(head), "", "=" * 30 + " " + "=" * 30]
        out += [f"{k:<30} {v or 'n/a':>30}" for k, v in row.items() if k not in (COL_ID, COL_DEPLOYMENT)]
        out += ["=" * 30 + " " + "=" * 30, ""]
    return "\n".join(out) + "\n"


def trial_to_json(record: TrialRecord, crosscheck: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return one trial as a JSON-ready dict (units in the key names)."""
    result = record.result
    return {
        "index": record.index,
        "kind": record.kind.value,
        "outcome": record.outcome.value,
        **item_json(result.spec.frame_size_bytes),
        "rate_pps": record.rate_pps,
        "duration_s": result.spec.duration_s,
        "bidirectional": result.spec.bidirectional,
        "flows": result.spec.flows,
        "started_at": datetime.fromtimestamp(record.started_at).astimezone().isoformat(),
        "finished_at": datetime.fromtimestamp(record.finished_at).astimezone().isoformat(),
        "valid": result.valid,
        "invalid_reason": result.invalid_reason,
        "tx_packets": result.tx_packets,
        "rx_packets": result.rx_packets,
        "loss_ratio": result.loss_ratio,
        "tx_pps": result.tx_pps,
        "rx_pps": result.rx_pps,
        "directions": [
            {
                "tx_port": d.tx_port,
                "rx_port": d.rx_port,
                "tx_packets": d.tx_packets,
                "rx_packets": d.rx_packets,
                "loss_ratio": d.loss_ratio,
                "tx_pps": d.tx_pps,
                "tx_duration_s": d.tx_duration_s,
                "reordered_packets": d.reordered_packets,
                "duplicate_packets": d.duplicate_packets,
                "latency_min_ns": d.latency_min_ns,
                "latency_avg_ns": d.latency_avg_ns,
                "latency_max_ns": d.latency_max_ns,
                "latency_p50_ns": d.latency_p50_ns,
                "latency_p99_ns": d.latency_p99_ns,
                "latency_p999_ns": d.latency_p999_ns,
                **({} if d.per_size is None else {"per_size": _per_size_json(d.per_size)}),
            }
            for d in result.directions
        ],
        "crosscheck": crosscheck,
    }


def binary_trial_to_json(record: TrialRecord, crosscheck: dict[str, Any] | None) -> dict[str, Any]:
    """Return one binary-search trial as its ``ovsperf-trials.json`` object (``search``: ``'binary'``)."""
    return {"search": "binary", **trial_to_json(record, crosscheck)}


def _per_size_json(per_size: tuple[tuple[int, int, int], ...]) -> list[dict[str, Any]]:
    """Return a mix's per-size counters of one direction as ``per_size`` entries (loss ratio added)."""
    return [
        {
            "frame_size_bytes": size,
            "tx_packets": tx,
            "rx_packets": rx,
            "loss_ratio": (tx - rx) / tx if tx else 0.0,
        }
        for size, tx, rx in per_size
    ]


def mlr_trial_to_json(trial: MlrTrial, frame_size_bytes: FrameSizeItem, flows: int) -> dict[str, Any]:
    """Return one MLRsearch trial as a JSON-ready dict (``relevant_to`` is added after the search)."""
    return {
        "search": "mlr",
        "kind": "search",
        **item_json(frame_size_bytes),
        "flows": flows,
        "load_pps_per_direction": trial.load_pps,
        "duration_s": trial.duration_s,
        "started_at": datetime.fromtimestamp(trial.started_at).astimezone().isoformat(),
        "wall_s": trial.wall_s,
        "valid": trial.valid,
        "invalid_reason": trial.invalid_reason,
        "intended_packets_per_direction": trial.intended_packets,
        "rx_packets": list(trial.rx_packets),
        "loss_ratios": list(trial.loss_ratios),
        **(
            {"per_size": [None if p is None else _per_size_json(p) for p in trial.per_size]}
            if any(p is not None for p in trial.per_size)
            else {}
        ),
        "relevant_to": [],
    }


def latency_trial_to_json(level: LatencyLevel, frame_size_bytes: FrameSizeItem, flows: int) -> dict[str, Any]:
    """Return one latency trial as a JSON-ready dict (its histograms are in ``ovsperf-latency.json``)."""
    summary = level.all
    return {
        "search": "mlr",
        "kind": "latency",
        **item_json(frame_size_bytes),
        "flows": flows,
        "percent_of_pdr": level.percent_of_pdr,
        "load_pps_per_direction": level.load_pps,
        "duration_s": level.duration_s,
        "valid": level.valid,
        "invalid_reason": level.invalid_reason,
        "loss_ratio": level.loss_ratio,
        "latency": None if summary is None else {k: v for k, v in summary.to_json().items() if k != "hdrh"},
    }


@dataclass(frozen=True)
class ResultPart:
    """One test's run as VSperf result ``index``: its CSV, ``.md`` and ``.rst`` and what they show."""

    index: int
    """VSperf result index [1] (``result_<index>_<test>_<deployment>.csv``)."""
    test: VsperfTest
    """The test."""
    env: Environment
    """The DUT environment written with the rows."""
    guest: GuestLoopback | None
    """The PVP guest's loopback (the CSV's ``guest`` column), ``None`` without a guest."""
    started: datetime
    """When the test started (the CSV's ``start_time``)."""
    searches: int
    """Searches the test runs (frame sizes × flow counts) [1]; the part is complete when each
    ended with a row."""


class ResultsSink(Protocol):
    """Receive a run's results as they come: trials as they end, a row per search, the metadata last."""

    def trials(self, part: ResultPart, records: Sequence[dict[str, Any]]) -> None:
        """Keep the current search's trial records so far (replacing those of the call before).

        :param records: ``ovsperf-trials.json`` objects (docs/results-format.md), in order.
        :raises LabError: when they cannot be written.
        """

    def telemetry(self, part: ResultPart, trial: dict[str, Any]) -> None:
        """Keep one final / validation trial's DUT telemetry (``ovsperf-telemetry.json`` object)."""

    def row(self, part: ResultPart, row: FrameSizeResult | None) -> Path | None:
        """End the current search with its row (``None``: it failed); rewrite what shows it.

        :returns: the part's CSV when it was written, else ``None``.
        :raises LabError: when a file cannot be written.
        """

    def finish(
        self,
        *,
        scenario: str,
        complete: bool,
        reason: str | None,
        hosts: dict[str, Any],
        extra: dict[str, Any],
    ) -> Path:
        """Write what is still unwritten and ``ovsperf-metadata.json``, the run's last file.

        :raises LabError: when a file cannot be written.
        """


@dataclass
class _PartRows:
    """What the writer holds of one :class:`ResultPart`: its rows so far and how its searches ended."""

    rows: list[FrameSizeResult]
    """Rows in search order [1]."""
    ended: int = 0
    """Searches ended so far [1]."""
    failed: bool = False
    """Some search ended without a row."""


class ResultsWriter(ResultsSink):
    """Create one ``results_<timestamp>`` directory and keep it consistent while the run goes on."""

    def __init__(self, output_root: Path, started: datetime) -> None:
        """Create ``output_root/results_<started>``.

        :raises LabError: when it exists already (VSperf would append to it: never mix
            runs) or cannot be created.
        """
        self.started = started
        self.timestamp = started.strftime("%Y-%m-%d_%H-%M-%S")
        self.path = Path(output_root) / f"results_{self.timestamp}"
        try:
            Path(output_root).mkdir(parents=True, exist_ok=True)
            self.path.mkdir()
        except FileExistsError as err:
            raise LabError(f"Results directory '{self.path}' exists already; not overwriting it.") from err
        except OSError as err:
            raise LabError(f"Cannot create results directory '{self.path}': {err}.") from err
        self._trials: list[dict[str, Any]] = []
        self._search_start = 0
        self._parts: dict[int, _PartRows] = {}
        self.latency: list[dict[str, Any]] = []
        self._telemetry: list[dict[str, Any]] = []
        self._telemetry_written = 0
        self.tests: dict[str, dict[str, Any]] = {}
        log.info("Creating result directory: %s", self.path)

    @staticmethod
    def _keyed(part: ResultPart, record: dict[str, Any]) -> dict[str, Any]:
        """Return ``record`` after the keys naming its test: ``result_index``, ``test``, ``deployment``."""
        return {
            "result_index": part.index,
            "test": part.test.value,
            "deployment": part.test.topology.value,
            **record,
        }

    def trials(self, part: ResultPart, records: Sequence[dict[str, Any]]) -> None:
        """Replace the current search's trials by ``records`` and rewrite ``ovsperf-trials.json``.

        :raises LabError: when the file cannot be written.
        """
        self._trials[self._search_start :] = [self._keyed(part, r) for r in records]
        self._write(
            TRIALS_FILE, json.dumps({"schema": TRIALS_SCHEMA, "trials": self._trials}, indent=1) + "\n"
        )

    def telemetry(self, part: ResultPart, trial: dict[str, Any]) -> None:
        """Keep one trial's DUT telemetry (written with the search's row, or by :meth:`finish`)."""
        csv_name = result_csv_name(part.test.value, part.test.topology.value, part.index)
        self._telemetry.append({**self._keyed(part, {}), "csv": csv_name, **trial})

    def row(self, part: ResultPart, row: FrameSizeResult | None) -> Path | None:
        """End the current search; rewrite the latency, telemetry and the part's CSV/.md/.rst.

        The CSV is rewritten after every row (partial results survive a crash) and once more
        when the part's last search failed; it is complete when every search gave a row.

        :returns: the CSV path when it was written.
        :raises LabError: when a file cannot be written.
        """
        held = self._parts.setdefault(part.index, _PartRows([]))
        held.ended += 1
        self._search_start = len(self._trials)
        if row is None:
            held.failed = True
        else:
            held.rows.append(row)
            self.write_latency(part, row)
        self.write_telemetry()
        last = held.ended >= part.searches
        if not held.rows or (row is None and not last):
            return None
        return self.write_test(
            part.index,
            part.test,
            held.rows,
            env=part.env,
            start=part.started,
            stop=datetime.now(),
            guest=part.guest,
            complete=last and not held.failed,
        )

    def write_telemetry(self) -> None:
        """Rewrite ``ovsperf-telemetry.json`` with every trial kept so far (docs/results-format.md).

        Nothing is written while no trial has telemetry (the file is absent: "not collected").

        :raises LabError: when the file cannot be written.
        """
        if len(self._telemetry) == self._telemetry_written:
            return
        document = {"schema": TELEMETRY_SCHEMA, "trials": self._telemetry}
        self._write(TELEMETRY_FILE, json.dumps(document, indent=1) + "\n")
        self._telemetry_written = len(self._telemetry)

    def write_latency(self, part: ResultPart, row: FrameSizeResult) -> None:
        """Add (or replace) ``row``'s latency levels and rewrite ``ovsperf-latency.json``.

        The levels are shares of the PDR load: the relevant lower bound of the row's highest goal.
        A row without latency levels (binary search, none asked for, no PDR load) writes nothing.

        :raises LabError: when the file cannot be written.
        """
        pdr = row.goals[-1]
        if not row.latency_levels or not pdr.lower_bound_pps:
            return
        csv_name = result_csv_name(part.test.value, part.test.topology.value, part.index)
        key = (csv_name, item_name(row.frame_size_bytes), row.flows)
        self.latency = [e for e in self.latency if (e["csv"], e["packet_size"], e["flows"]) != key]
        self.latency.append(
            {
                **self._keyed(part, {}),
                "csv": csv_name,
                **item_json(row.frame_size_bytes),
                "flows": row.flows,
                "pdr_loss_goal_percent": goal_percent(pdr.loss_ratio_limit),
                "pdr_fps_per_direction": pdr.lower_bound_pps,
                "levels": [level.to_json() for level in row.latency_levels],
            }
        )
        document = {"schema": LATENCY_SCHEMA, "histogram_encoding": HDRH_ENCODING, "results": self.latency}
        self._write(LATENCY_FILE, json.dumps(document, indent=1) + "\n")

    def write_test(
        self,
        index: int,
        test: VsperfTest,
        rows: Sequence[FrameSizeResult],
        *,
        env: Environment,
        start: datetime,
        stop: datetime,
        guest: GuestLoopback | None,
        complete: bool,
    ) -> Path:
        """Write (or rewrite) the CSV, ``.md`` and ``.rst`` of test ``index`` with ``rows``.

        :returns: the CSV path.
        :raises LabError: when a file cannot be written.
        """
        stem = result_csv_name(test.value, test.topology.value, index).removesuffix(".csv")
        dict_rows = [
            csv_row(r, test=test, vswitch=env.vswitch, start=start, stop=stop, guest=guest) for r in rows
        ]
        buf = io.StringIO()
        columns = [*CSV_COLUMNS, *GOAL_COLUMNS, *([GUEST_COLUMN] if guest is not None else [])]
        writer = csv.DictWriter(buf, fieldnames=columns)
        writer.writeheader()
        writer.writerows(dict_rows)
        self._write(f"{stem}.csv", buf.getvalue())
        self._write(f"{stem}.md", render_md(test, env, dict_rows, complete))
        self._write(f"{stem}.rst", render_rst(test, env, dict_rows, complete))
        self.tests[stem] = {
            "index": index,
            "test": test.value,
            "deployment": test.topology.value,
            "packet_sizes": list(dict.fromkeys(item_name(r.frame_size_bytes) for r in rows)),
            "complete": complete,
            "start_time": start.strftime(_TIME_FMT),
            "stop_time": stop.strftime(_TIME_FMT),
        }
        return self.path / f"{stem}.csv"

    def copy_log(self, source: Path, name: str) -> None:
        """Copy ``source`` into the results as ``name`` (missing sources are skipped)."""
        if source.is_file():
            shutil.copyfile(source, self.path / name)

    def finish(
        self,
        *,
        scenario: str,
        complete: bool,
        reason: str | None,
        hosts: dict[str, Any],
        extra: dict[str, Any],
    ) -> Path:
        """Write the telemetry not yet written, then ``ovsperf-metadata.json``, the run's last file.

        The metadata's format: :mod:`ovsperf_common.metadata`.

        :param extra: the lab's own keys (options, versions, per-test throughput).
        :raises LabError: when a file cannot be written.
        """
        self.write_telemetry()  # what was collected after the last row survives a failure
        metadata = RunMetadata(
            scenario=scenario,
            producer="ovsperf-lab",
            complete=complete,
            incomplete_reason=reason,
            results_dir=str(self.path),
            started_at=self.started.astimezone().isoformat(),
            finished_at=datetime.now().astimezone().isoformat(),
            tests=list(self.tests.values()),
            hosts=hosts,
            extra={"trial_count": len(self._trials), **extra},
        )
        try:
            return write_metadata(self.path, metadata)
        except OSError as err:
            raise LabError(f"Cannot write '{self.path / METADATA_FILE}': {err}.") from err

    def _write(self, name: str, text: str) -> None:
        try:
            atomic_write_text(self.path / name, text)
        except OSError as err:
            raise LabError(f"Cannot write '{self.path / name}': {err}.") from err
