"""Define the records of loaded VSperf results: one results directory, its test runs and rows.

``load.py`` and ``load_text.py`` build these from VSperf's files; ``compare.py`` reads them. The
comparison records are in ``model.py``. Nothing here knows VSperf column names.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ovsperf_common.framemix import TrafficKey


class HasTraffic:
    """Mixin for records of one frame size or mix at one flow count (:attr:`traffic`)."""

    frame_size_bytes: int
    mix: str
    flows: int | None

    @property
    def traffic(self) -> TrafficKey:
        """Return the record's frame size or mix and flows: records compare only with equal keys."""
        return TrafficKey(self.frame_size_bytes, self.mix, self.flows)


@dataclass(frozen=True)
class LoadWarning:
    """A degraded input: the report is still written for what is valid.

    ``path`` is the file, ``line`` its 1-based line (CSV: the physical line, header = 1).
    """

    path: Path
    line: int | None
    message: str
    row_skipped: bool = False
    """True when a CSV row was dropped (malformed, cut short, no frame size): the test then
    lacks that row's frame size, which must not read as "frame sizes differ"."""

    def __str__(self) -> str:
        where = f"'{self.path}'" + (f" line {self.line}" if self.line is not None else "")
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class ThroughputRow(HasTraffic):
    """The RFC 2544 throughput result of one test at one frame size, as VSperf wrote it in one CSV row.

    Not a trial: a trial is one transmission at one offered load; this row is the outcome of a
    whole search of many trials.
    """

    frame_size_bytes: int
    """Ethernet frame size including FCS [B]; 0 for a frame-size mix (:attr:`mix`)."""
    rx_pps: float | None
    """Forwarded rate, aggregate over both directions [pps]; None when missing/unparsable."""
    tx_pps: float | None
    """Offered rate at the final trial, aggregate [pps]; None when not reported."""
    rx_line_rate_percent: float | None
    """VSperf's ``rx / theoretical max`` for the streams used [%]; None when not reported."""
    latency_min_ns: float | None
    """Minimum latency [ns]; None when not measured (MoonGen writes 0)."""
    latency_max_ns: float | None
    """Maximum latency [ns]; None when not measured."""
    latency_avg_ns: float | None
    """Average latency [ns]; None when not measured."""
    frame_loss_percent: float | None
    """Frame loss reported by the generator [%]; None when the column is absent."""
    path: Path
    """CSV file the row came from."""
    line: int
    """1-based physical line of the row in ``path``."""
    implausible: str | None = None
    """Why the row's numbers cannot be physical (above line rate, loss outside [0, 100] %,
    negative latency); ``None`` when they can. An implausible row is INVALID, never compared."""
    loss_goal_percent: float = 0.0
    """The loss-ratio goal this throughput was searched for [%]: 0 is the NDR (VSperf's own
    results), 0.5 CSIT's PDR (docs/results-format.md). Rows compare only with equal goals."""
    search_method: str | None = None
    """``'mlr'`` or ``'binary'`` for lab results; ``None`` when the CSV does not say (VSperf)."""
    mix: str = ""
    """The frame-size mix's name when :attr:`frame_size_bytes` is 0 (``ovsperf_common.framemix``)."""
    flows: int | None = None
    """Flows per direction (VSperf ``stream_count``) [1]; ``None`` when the result does not say."""

    @property
    def valid(self) -> bool:
        """Return whether the row can be compared.

        It can when the throughput is a positive finite number (VSperf writes 0 on parse failure)
        and nothing in the row is physically impossible.
        """
        return (
            self.implausible is None
            and self.rx_pps is not None
            and math.isfinite(self.rx_pps)
            and self.rx_pps > 0
        )


@dataclass(frozen=True)
class ProcessStats:
    """Average CPU and memory use of one process during a test, from VSperf's pidstat log."""

    process: str
    """Command name, e.g. ``ovs-vswitchd``."""
    cpu_percent: float | None
    """Average CPU (100 = one core) [%]."""
    rss_kib: float | None
    """Resident set size [KiB]."""
    vsz_kib: float | None
    """Virtual size [KiB]."""
    mem_percent: float | None
    """Share of the host's memory [%]."""


@dataclass(frozen=True)
class MoongenCheck:
    """Cross-check of an archived MoonGen raw log against the CSV row for the same frame size.

    The raw log's ``[REPORT]      total:`` line carries Tx/Rx frames, loss and Tx/Rx Mpps
    (lua-trafficgen ``trafficgen.lua``; regex as in VSperf ``moongen.py``).
    """

    log_path: Path
    frame_size_bytes: int
    tx_frames: int
    rx_frames: int
    loss_frames: int
    log_loss_percent: float
    """Loss the log prints [%]."""
    log_rx_pps: float
    """Rx Mpps × 1e6 from the log [pps]."""
    log_tx_pps: float | None
    """Tx Mpps × 1e6 from the log [pps]; None for the old format without ``Tx Mpps:``."""
    csv_rx_pps: float | None
    """The CSV's ``throughput_rx_fps`` for that size [pps]."""
    csv_tx_pps: float | None
    """The CSV's ``tx_rate_fps`` for that size [pps]."""
    mismatches: tuple[str, ...]
    """Human-readable differences; empty when the log and CSV agree."""

    @property
    def ok(self) -> bool:
        """True when the log agrees with the CSV."""
        return not self.mismatches


@dataclass(frozen=True)
class LatencyPoint(HasTraffic):
    """Latency of one frame size at one share of the PDR load, all directions merged.

    From ``ovsperf-latency.json`` (docs/results-format.md): percentiles from an HdrHistogram,
    min/max/avg exact from the generator.
    """

    frame_size_bytes: int
    """Ethernet frame size including FCS [B]."""
    percent_of_pdr: float
    """Load as a share of the PDR load [%]; 0 is the fixed minimum load."""
    load_pps: float
    """Offered load per direction [pps]."""
    rx_packets: int
    """Frames measured [1]."""
    min_ns: float
    """Minimum [ns]."""
    p50_ns: float
    """Median [ns]."""
    p90_ns: float
    """90th percentile [ns]."""
    p99_ns: float
    """99th percentile [ns]."""
    p999_ns: float
    """99.9th percentile [ns]."""
    max_ns: float
    """Maximum [ns]."""
    hdrh: str | None
    """The merged HdrHistogram (V2 compressed, base64), ``None`` when absent."""
    valid: bool = True
    """Whether the generator sent what was asked in that trial."""
    mix: str = ""
    """The frame-size mix's name when :attr:`frame_size_bytes` is 0 (``ovsperf_common.framemix``)."""
    flows: int | None = None
    """Flows per direction (VSperf ``stream_count``) [1]; ``None`` when the result does not say."""


@dataclass(frozen=True)
class TelemetryPoint:
    """The DUT's own view of one frame size: the telemetry of its representative trial.

    From ``ovsperf-telemetry.json`` (docs/results-format.md): of the trials with telemetry at this
    frame size, the valid one at the highest load without loss (the NDR's), else the valid one at
    the highest load. Every figure is from OVS's counters (``ovsperf_common.ovsstats``); None: OVS
    did not report it.
    """

    frame_size_bytes: int | None
    """Ethernet frame size including FCS [B]; None for a VSperf test's whole-test window (every
    frame size of the test, ``ovsperf_common.vsperf_telemetry``)."""
    load_pps: float | None
    """Offered load of that trial, per direction [pps]; None for a whole-test window."""
    loss_ratio: float | None
    """Its loss ratio [1]."""
    cycles_per_packet: float | None
    """PMD processing cycles / packets received [cycles]."""
    pmd_busy_percent: float | None
    """Processing cycles / (idle + processing) of the PMDs [%]."""
    hits_percent: tuple[tuple[str, float | None], ...]
    """(counter, share of datapath passes [%]) in lookup order: simple match, EMC, SMC, megaflow, upcalls."""
    threads: tuple[tuple[str, str, float | None], ...]
    """(process, thread name, CPU [% of one CPU]) of the busiest threads."""
    rxq: tuple[tuple[str, str, int, float | None], ...]
    """(PMD, port, queue, usage [%]) rx queue placement."""
    notes: tuple[str, ...]
    """What was not collected, and why."""
    frame_sizes_bytes: tuple[int, ...] = ()
    """The frame sizes a whole-test window covers [B] (empty for a lab trial)."""
    mix: str = ""
    """The frame-size mix's name when :attr:`frame_size_bytes` is 0 (``ovsperf_common.framemix``)."""
    flows: int | None = None
    """Flows per direction (VSperf ``stream_count``) [1]; ``None`` when the result does not say."""

    @property
    def key(self) -> tuple[int | None, str, int | None]:
        """Return (frame size or None for a whole-test window, mix, flows): points compare only when equal."""
        return (self.frame_size_bytes, self.mix, self.flows)


@dataclass(frozen=True)
class TestRun:
    """One VSperf test execution: one ``result_[<idx>_]<test>_<deployment>.csv``."""

    __test__ = False  # not a pytest class

    test: str
    """VSperf test name, from the ``id`` column (e.g. ``phy2phy_tput``)."""
    deployment: str
    """VSperf deployment, from the ``deployment`` column (``p2p``, ``pvp``, …)."""
    index: int | None
    """Test index in the file name; None for pre-Fraser names."""
    csv_path: Path
    rows: tuple[ThroughputRow, ...]
    """One per frame size, in file order."""
    vswitch: str | None
    traffic_kind: str | None
    """VSperf ``type``, e.g. ``rfc2544_throughput``."""
    start_time: str | None
    """DUT local time, no zone, as VSperf wrote it."""
    stop_time: str | None
    execution_time: str | None
    """``HH:MM:SS``."""
    processes: tuple[ProcessStats, ...] = ()
    moongen_checks: tuple[MoongenCheck, ...] = ()
    rows_skipped: int = 0
    """CSV rows dropped with a warning (malformed, cut short, no frame size) [1]."""
    latency: tuple[LatencyPoint, ...] = ()
    """Latency at shares of the PDR load, by frame size then load; empty when not measured."""
    telemetry: tuple[TelemetryPoint, ...] = ()
    """DUT telemetry per frame size (ascending); empty when not collected."""


@dataclass(frozen=True)
class ResultSet:
    """One VSperf ``results_<timestamp>`` directory."""

    path: Path
    runs: tuple[TestRun, ...]
    environment: tuple[tuple[str, str], ...]
    """(field, value) from VSperf's ``.rst``/``.md`` environment block, in file order."""
    vsperf_report: Path | None
    """``<vswitch>_test_report.rst`` when present."""
    logs: tuple[Path, ...]
    """VSperf log files of the run (inside the directory, or beside it for pre-Hunter layouts)."""
    failed_tests: tuple[str, ...]
    """Tests the log names as run but that have no result CSV."""
    warnings: tuple[LoadWarning, ...]

    @property
    def env(self) -> Mapping[str, str]:
        """Environment as a dict (field → value)."""
        return dict(self.environment)

    def _versioned(self, key: str) -> str | None:
        value = self.env.get(key)
        if value is None:
            return None
        for part in value.split(","):
            part = part.strip()
            if part.startswith("Version:"):
                version = part.removeprefix("Version:").strip()
                return None if version in ("", "None") else version
        first = value.split(",")[0].strip()
        return first or None

    @property
    def ovs_version(self) -> str | None:
        """OVS version from ``* vSwitch: <name>, Version: <v>, GIT tag: …``."""
        return self._versioned("vSwitch")

    @property
    def dpdk_version(self) -> str | None:
        """DPDK version from ``* DPDK Version: <v>, GIT tag: …``."""
        return self._versioned("DPDK Version")

    @property
    def qemu_version(self) -> str | None:
        """QEMU version from ``* VNF: <name>, Version: <v>, …`` (pvp/pvvp only)."""
        return self._versioned("VNF")

    @property
    def start_time(self) -> str | None:
        """Earliest test start time (DUT local time), else the directory timestamp."""
        starts = sorted(r.start_time for r in self.runs if r.start_time)
        if starts:
            return starts[0]
        stamp = self.path.name.removeprefix("results_")
        if len(stamp) == 19:
            return f"{stamp[:10]} {stamp[11:].replace('-', ':')}"
        return None
