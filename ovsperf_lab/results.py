"""Write a lab run as a VSperf results directory, so ``reporting`` reads it like Beaker results.

Layout (VSperf ``vsperf`` main and ``testcases/testcase.py``; reference vsperf.md §1):

* ``results_<YYYY-mm-dd_HH-MM-SS>/`` (local time, like VSperf), created empty and never reused;
* ``result_<i>_<test>_<deployment>.csv``: one row per frame size, VSperf's MoonGen columns in
  VSperf's order, plus ``frame_loss_percent`` after the latency columns (where VSperf's Dummy and
  Trex drivers put it); latency is measured (``''``, i.e. "not measured", when none);
* ``result_<i>_<test>_<deployment>.md`` and ``.rst``: the environment block in VSperf's
  ``* vSwitch: X, Version: Y, GIT tag: Z`` style and a metrics table per frame size;
* ``ovsperf-trials.json``: every trial of every search (rewritten after each trial);
* ``vswitchd_<ts>.log`` and the forwarder/generator logs (copied at the end);
* ``ovsperf-metadata.json``: written LAST; ``"complete": false`` with the reason when the run
  crashed or was interrupted (the CSV then holds the frame sizes finished so far).

Every file is written atomically (a reader never sees half a row).
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
from typing import Any

from jobcreator.model import GuestLoopback, VsperfTest
from ovsperf_common.atomicio import atomic_write_text
from ovsperf_common.metadata import METADATA_FILE, RunMetadata
from ovsperf_common.metadata import write as write_metadata
from ovsperf_common.resultdir import result_csv_name
from ovsperf_common.units import l1_bps, line_rate_pps
from ovsperf_lab.errors import LabError
from ovsperf_lab.model import TrialResult
from ovsperf_lab.search import SearchResult, TrialRecord

log = logging.getLogger(__name__)

CSV_COLUMNS = (
    "throughput_rx_fps",
    "throughput_rx_mbps",
    "throughput_rx_percent",
    "tx_rate_fps",
    "tx_rate_mbps",
    "tx_rate_percent",
    "min_latency_ns",
    "max_latency_ns",
    "avg_latency_ns",
    "frame_loss_percent",
    "type",
    "packet_size",
    "id",
    "deployment",
    "vswitch",
    "traffic_type",
    "test_execution_time",
    "start_time",
    "stop_time",
    "stream_count",
    "match_type",
    "pre-installed_flows",
)
"""VSperf's MoonGen RFC 2544 throughput header (vsperf.md §1.6) with ``frame_loss_percent``."""

GUEST_COLUMN = "guest_loopback_app"
"""Appended for deployments with a VNF (VSperf ``TestCase._append_results``)."""

TRIALS_FILE = "ovsperf-trials.json"
"""The trial log of every search."""

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


@dataclass(frozen=True)
class FrameSizeResult:
    """One row: the search result of one frame size and the line rate it is measured against."""

    search: SearchResult
    """The search (its validation trial gives the numbers)."""
    link_speed_mbps: int | None
    """Generator port speed [Mbit/s]; ``None`` when the port reports none (no % of line rate)."""


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

    ``throughput_rx_fps``/``tx_rate_fps`` are aggregates over both directions of the passing
    validation trial [fps]; ``*_mbps`` are L1 rates ``fps * (size + 20) * 8 / 1e6``; ``*_percent``
    is relative to ``directions × line rate`` (VSperf-341), empty without a link speed.
    """
    validation = row.search.validation
    size = row.search.config.frame_size_bytes
    rx_fps = validation.rx_pps
    tx_fps = validation.tx_pps
    if row.link_speed_mbps:
        line = line_rate_pps(size, row.link_speed_mbps * 1e6) * len(validation.directions)
        rx_pct: float | None = 100.0 * rx_fps / line
        tx_pct: float | None = 100.0 * tx_fps / line
    else:
        rx_pct = tx_pct = None
    lat_min, lat_avg, lat_max = aggregate_latency(validation)
    values = {
        "throughput_rx_fps": _fmt(rx_fps, 6),
        "throughput_rx_mbps": _fmt(l1_bps(rx_fps, size) / 1e6, 3),
        "throughput_rx_percent": _fmt(rx_pct, 3),
        "tx_rate_fps": _fmt(tx_fps, 6),
        "tx_rate_mbps": _fmt(l1_bps(tx_fps, size) / 1e6, 3),
        "tx_rate_percent": _fmt(tx_pct, 3),
        "min_latency_ns": _fmt(lat_min, 3),
        "max_latency_ns": _fmt(lat_max, 3),
        "avg_latency_ns": _fmt(lat_avg, 3),
        "frame_loss_percent": _fmt(validation.loss_ratio * 100.0, 6),
        "type": "rfc2544_throughput",
        "packet_size": str(size),
        "id": test.value,
        "deployment": test.topology.value,
        "vswitch": vswitch,
        "traffic_type": "udp",
        "test_execution_time": time.strftime("%H:%M:%S", time.gmtime((stop - start).total_seconds())),
        "start_time": start.strftime(_TIME_FMT),
        "stop_time": stop.strftime(_TIME_FMT),
        "stream_count": str(row.search.config.flows),
        "match_type": "L4",
        "pre-installed_flows": "No",
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
        "Produced by ovsperf-lab (RFC 2544 throughput search with lua-trafficgen semantics).",
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
        out += [f"| {k:<30} | {v or 'n/a':>30} |" for k, v in row.items() if k not in ("id", "deployment")]
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
        head = f"Test results for packet size: {row['packet_size']}"
        out += [head, "-" * len(head), "", "=" * 30 + " " + "=" * 30]
        out += [f"{k:<30} {v or 'n/a':>30}" for k, v in row.items() if k not in ("id", "deployment")]
        out += ["=" * 30 + " " + "=" * 30, ""]
    return "\n".join(out) + "\n"


def trial_to_json(record: TrialRecord, crosscheck: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return one trial as a JSON-ready dict (units in the key names)."""
    result = record.result
    return {
        "index": record.index,
        "kind": record.kind.value,
        "outcome": record.outcome.value,
        "frame_size_bytes": result.spec.frame_size_bytes,
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
            }
            for d in result.directions
        ],
        "crosscheck": crosscheck,
    }


class ResultsWriter:
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
        self.trials: list[dict[str, Any]] = []
        self.tests: dict[str, dict[str, Any]] = {}
        log.info("Creating result directory: %s", self.path)

    def add_trial(
        self, index: int, test: VsperfTest, record: TrialRecord, crosscheck: dict[str, Any] | None
    ) -> None:
        """Append one trial of VSperf result ``index`` to ``ovsperf-trials.json`` (rewritten atomically)."""
        self.trials.append(
            {
                "result_index": index,
                "test": test.value,
                "deployment": test.topology.value,
                **trial_to_json(record, crosscheck),
            }
        )
        self._write(TRIALS_FILE, json.dumps({"schema": 1, "trials": self.trials}, indent=1) + "\n")

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
        columns = [*CSV_COLUMNS, GUEST_COLUMN] if guest is not None else list(CSV_COLUMNS)
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
            "frame_sizes_bytes": [r.search.config.frame_size_bytes for r in rows],
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
        """Write ``ovsperf-metadata.json`` (the last file of a run; :mod:`ovsperf_common.metadata`).

        :param extra: the lab's own keys (options, versions, per-test throughput).
        :raises LabError: when the file cannot be written.
        """
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
            extra={"trial_count": len(self.trials), **extra},
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
