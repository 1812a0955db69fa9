"""Build the ``report.json`` document of a comparison (schema 1) and the page's summary of findings.

Every number the page shows is in this document, rounded for display precision here (Mpps to
1e-6, L1 Mbit/s to 1e-3, percentages to 1e-6); ``render.py`` formats them into HTML. Keys are a
contract with ``ciflow``/``resultstore`` (docs/reporting.md): add keys, never rename them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ovsperf_common.framemix import TrafficKey
from ovsperf_common.goals import goal_label
from ovsperf_common.secrets import url_credentials
from ovsperf_common.units import l1_bps
from reporting.model import (
    TREND_MIN_HISTORY,
    BuildNote,
    Cell,
    Comparison,
    LatencyCell,
    TelemetryCell,
    TestComparison,
    TesterVerdict,
    Verdict,
)
from reporting.resultmodel import LatencyPoint, ResultSet, TelemetryPoint, TestRun

SCHEMA_VERSION = 1
"""Version of ``report.json``'s layout; bump on incompatible changes."""

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_HTTP_URL = re.compile(r"\Ahttps?://[^\s\"'<>]+\Z")
"""A URL the page may link: http(s), no spaces, quotes or angle brackets."""


@dataclass(frozen=True)
class PathDisplay:
    """Show paths where they will be, not where they were read (e.g. after a move by the caller).

    ``mapping`` holds (directory as read, directory to show) pairs; a path inside a directory
    as read is shown inside the directory to show. Empty: every path is shown as read.
    """

    mapping: tuple[tuple[Path, Path], ...] = ()

    @classmethod
    def of(cls, mapping: Mapping[Path, Path] | None) -> PathDisplay:
        """Build from a mapping (None: paths shown as read); longest directory first."""
        pairs = ((Path(old), Path(new)) for old, new in (mapping or {}).items())
        return cls(tuple(sorted(pairs, key=lambda pair: len(pair[0].parts), reverse=True)))

    def path(self, path: Path) -> Path:
        """Return where ``path`` is shown."""
        for old, new in self.mapping:
            if path.is_relative_to(old):
                return new / path.relative_to(old)
        return path

    def text(self, message: str) -> str:
        """Return ``message`` (a warning) with every mapped directory replaced by its display path."""
        for old, new in self.mapping:
            shown = str(new).replace("\\", "\\\\")  # a literal replacement, not a template
            message = re.sub(re.escape(str(old)) + r"(?=[/'\"\s]|$)", shown, message)
        return message


@dataclass(frozen=True)
class SourceLink:
    """A copied VSperf file, linked from the page."""

    label: str
    href: str
    """Relative URL inside the report directory."""


def safe_name(name: str) -> str:
    """Return ``name`` reduced to ``[A-Za-z0-9._-]`` (never empty, no leading or trailing dot)."""
    cleaned = _SAFE_NAME.sub("_", name).strip("._")
    return cleaned or "file"


def _mpps(pps: float | None) -> float | None:
    return None if pps is None else pps / 1e6


def _mbps(pps: float | None, traffic: TrafficKey) -> float | None:
    """Return the L1 rate of ``pps`` frames of ``traffic`` [Mbit/s]; None for a mix of unknown sizes."""
    average = traffic.average_frame_bytes
    return None if pps is None or average is None else l1_bps(pps, average) / 1e6


def _round(value: float | None, digits: int) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(value, digits)


def _side_json(rs: ResultSet, links: Sequence[SourceLink], display: PathDisplay) -> dict[str, Any]:
    return {
        "path": str(display.path(rs.path)),
        "read_from": str(rs.path),
        "name": rs.path.name,
        "ovs_version": rs.ovs_version,
        "dpdk_version": rs.dpdk_version,
        "qemu_version": rs.qemu_version,
        "start_time": rs.start_time,
        "tests": [
            {
                "test": r.test,
                "deployment": r.deployment,
                "index": r.index,
                "csv": r.csv_path.name,
                "start_time": r.start_time,
                "stop_time": r.stop_time,
                "execution_time": r.execution_time,
                "vswitch": r.vswitch,
            }
            for r in rs.runs
        ],
        "failed_tests": list(rs.failed_tests),
        "environment": dict(rs.environment),
        "sources": [{"label": s.label, "href": s.href} for s in links],
    }


def _cell_json(cell: Cell, with_flows: bool) -> dict[str, Any]:
    size = cell.traffic
    base = cell.baseline
    cur = cell.current
    b_fps = base.mean_pps if base else None
    c_fps = cur.mean_pps if cur else None
    line = cell.line_rate_pps
    return {
        **_traffic_json(cell.traffic),
        "label": cell.traffic.text(with_flows=with_flows),
        "loss_goal_percent": cell.loss_goal_percent,
        "metric": goal_label(cell.loss_goal_percent),
        "baseline_fps": b_fps,
        "current_fps": c_fps,
        "baseline_mpps": _round(_mpps(b_fps), 6),
        "current_mpps": _round(_mpps(c_fps), 6),
        "baseline_l1_mbps": _round(_mbps(b_fps, size), 3),
        "current_l1_mbps": _round(_mbps(c_fps, size), 3),
        "baseline_line_rate_percent": _round(100.0 * b_fps / line, 3) if b_fps and line else None,
        "current_line_rate_percent": _round(100.0 * c_fps / line, 3) if c_fps and line else None,
        "line_rate_fps": line,
        "rel_change_percent": _round(cell.rel_change_percent, 6),
        "ci_low_percent": _round(cell.ci_low_percent, 6),
        "ci_high_percent": _round(cell.ci_high_percent, 6),
        "p_value": _round(cell.p_value, 9),
        "method": cell.method.value,
        "verdict": cell.verdict.value,
        "decision": cell.decision.value,
        "reason": cell.reason,
        "trend": _trend_json(cell),
        "warn": cell.warn,
        "baseline_n": base.n if base else 0,
        "current_n": cur.n if cur else 0,
        "baseline_stdev_fps": base.stdev_pps if base else None,
        "current_stdev_fps": cur.stdev_pps if cur else None,
        "baseline_samples_fps": list(base.samples_pps) if base else [],
        "current_samples_fps": list(cur.samples_pps) if cur else [],
        "baseline_latency_avg_ns": cell.baseline_latency_avg_ns,
        "current_latency_avg_ns": cell.current_latency_avg_ns,
        "baseline_latency_max_ns": cell.baseline_latency_max_ns,
        "current_latency_max_ns": cell.current_latency_max_ns,
        "baseline_frame_loss_percent": cell.baseline_frame_loss_percent,
        "current_frame_loss_percent": cell.current_frame_loss_percent,
        "per_result": [
            {
                "result": r.label,
                "fps": r.rx_pps,
                "mpps": _round(_mpps(r.rx_pps), 6),
                "l1_mbps": _round(_mbps(r.rx_pps, size), 3),
                "line_rate_percent": _round(100.0 * r.rx_pps / line, 3) if r.rx_pps and line else None,
                "rel_change_percent": _round(r.rel_change_percent, 6),
            }
            for r in cell.per_result
        ],
    }


def _traffic_json(traffic: TrafficKey) -> dict[str, Any]:
    """Return a row's traffic keys for ``report.json``.

    ``frame_size_bytes`` (0 for a mix), ``packet_size`` (size or the mix's name: the frame column),
    ``mix`` and ``flows``.
    """
    return {
        "frame_size_bytes": traffic.frame_size_bytes,
        "packet_size": traffic.frame_label,
        "mix": traffic.mix or None,
        "flows": traffic.flows,
    }


def _build_json(build: BuildNote) -> dict[str, Any]:
    """Return the ``build`` object; an unsafe URL is left out.

    Left out (never a link, never on the page or in ``report.json``): a URL that is not plain
    http(s), or one that carries credentials (a user, password or token).
    """
    url = build.url
    if not url or not _HTTP_URL.match(url) or url_credentials(url) is not None:
        url = None
    return {"name": build.name, "tag": build.tag, "url": url}


def _trend_json(cell: Cell) -> dict[str, Any] | None:
    trend = cell.trend
    if trend is None:
        return None
    return {
        "verdict": trend.verdict.value,
        "decides": trend.decides,
        "history": trend.history,
        "step_percent": _round(trend.step_percent, 3),
        "confidence": _round(trend.confidence, 4),
        "since": trend.since,
        "since_build": trend.since_build,
        "reason": trend.reason,
        "trend_page": trend.trend_page,
    }


LATENCY_KEYS = ("min_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns")
"""Latency values of a report row, in column order."""


def _latency_side(point: LatencyPoint | None) -> dict[str, Any] | None:
    if point is None:
        return None
    return {
        "load_fps_per_direction": point.load_pps,
        "rx_packets": point.rx_packets,
        "valid": point.valid,
        **{key: getattr(point, key) for key in LATENCY_KEYS},
    }


def _telemetry_point_json(point: TelemetryPoint) -> dict[str, Any]:
    return {
        "frame_sizes_bytes": list(point.frame_sizes_bytes),
        "load_pps": point.load_pps,
        "loss_ratio": point.loss_ratio,
        "cycles_per_packet": _round(point.cycles_per_packet, 2),
        "pmd_busy_percent": _round(point.pmd_busy_percent, 2),
        "hits_percent": {name: _round(value, 3) for name, value in point.hits_percent},
        "threads": [
            {"process": process, "thread": name, "cpu_percent": _round(cpu, 1)}
            for process, name, cpu in point.threads
        ],
        "rxq": [
            {"pmd": pmd, "port": port, "queue": queue, "usage_percent": usage}
            for pmd, port, queue, usage in point.rxq
        ],
        "notes": list(point.notes),
    }


def _telemetry_json(cell: TelemetryCell) -> dict[str, Any]:
    return {
        "frame_size_bytes": cell.frame_size_bytes,
        "packet_size": cell.label,
        "mix": cell.mix or None,
        "flows": cell.flows,
        "baseline_cycles_per_packet": _round(cell.baseline_cycles_per_packet, 2),
        "current_cycles_per_packet": _round(cell.current_cycles_per_packet, 2),
        "cycles_change_percent": _round(cell.cycles_change_percent, 3),
        "marked": cell.marked,
        "baseline_busy_percent": _round(cell.baseline_busy_percent, 2),
        "current_busy_percent": _round(cell.current_busy_percent, 2),
        "baseline": [_telemetry_point_json(p) for p in cell.baseline],
        "current": [_telemetry_point_json(p) for p in cell.current],
    }


def _latency_json(cell: LatencyCell) -> dict[str, Any]:
    return {
        **_traffic_json(cell.traffic),
        "percent_of_pdr": cell.percent_of_pdr,
        "baseline": _latency_side(cell.baseline),
        "current": _latency_side(cell.current),
        "rel_change_percent": {key: _round(cell.rel_change_percent(key), 6) for key in LATENCY_KEYS},
    }


def report_data(
    comparison: Comparison,
    baseline: Sequence[ResultSet],
    current: Sequence[ResultSet],
    links: Mapping[str, Sequence[SourceLink]],
    warnings: Sequence[str],
    tester_verdict: TesterVerdict | None,
    title: str,
    display: PathDisplay = PathDisplay(),
    overview_href: str | None = None,
    build: BuildNote | None = None,
) -> dict[str, Any]:
    """Return the ``report.json`` document (schema 1; keys are stable, see docs/reporting.md).

    Paths (``path`` of each side, MoonGen ``log``) are shown through ``display``; ``read_from``
    keeps where a side was read. ``overview_href`` is the relative URL of the page listing all
    reports, or None. ``build`` (``{"name", "tag", "url"}`` or None) names what the current side
    tested; ``url`` only when it is an http(s) URL.
    """
    th = comparison.thresholds
    return {
        "schema": SCHEMA_VERSION,
        "title": title,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "overall": comparison.overall,
        "counts": comparison.counts,
        "thresholds": {
            "regression_percent": th.regression_percent,
            "improvement_percent": th.improvement_percent,
            "warning_percent": th.warning_percent,
            "alpha": th.alpha,
        },
        "throughput_definition": "Rx frames/s summed over both directions (as VSperf reports it); "
        "Mbit/s are L1: fps × (frame + 20 B) × 8",
        "link_bps": comparison.link_bps,
        "has_trend": any(c.trend is not None for t in comparison.tests for c in t.cells),
        "trend_min_history": TREND_MIN_HISTORY,
        "link_source": comparison.link_source,
        "overview_href": overview_href,
        "build": None if build is None else _build_json(build),
        "baseline": [
            _side_json(rs, links.get(f"baseline-{i}", ()), display) for i, rs in enumerate(baseline)
        ],
        "current": [_side_json(rs, links.get(f"current-{i}", ()), display) for i, rs in enumerate(current)],
        "tests": [
            {
                "test": t.test,
                "deployment": t.deployment,
                "graph": f"graphs/{graph_name(t)}",
                "has_flows": t.has_flow_counts,
                "flows_graph": f"graphs/{flows_graph_name(t)}" if t.has_flow_counts else None,
                "rows": [_cell_json(c, t.has_flow_counts) for c in t.cells],
                "latency": [_latency_json(c) for c in t.latency],
                "telemetry": [_telemetry_json(c) for c in t.telemetry],
                "latency_graph": f"graphs/{latency_graph_name(t)}" if t.latency else None,
                "processes": {
                    "baseline": _processes_json(t.baseline_runs),
                    "current": _processes_json(t.current_runs),
                },
                "moongen_checks": [
                    {
                        "side": side,
                        "log": str(display.path(m.log_path)),
                        "frame_size_bytes": m.frame_size_bytes,
                        "tx_frames": m.tx_frames,
                        "rx_frames": m.rx_frames,
                        "loss_frames": m.loss_frames,
                        "log_rx_fps": m.log_rx_pps,
                        "log_tx_fps": m.log_tx_pps,
                        "csv_rx_fps": m.csv_rx_pps,
                        "csv_tx_fps": m.csv_tx_pps,
                        "ok": m.ok,
                        "mismatches": list(m.mismatches),
                    }
                    for side, runs in (("baseline", t.baseline_runs), ("current", t.current_runs))
                    for r in runs
                    for m in r.moongen_checks
                ],
            }
            for t in comparison.tests
        ],
        "warnings": list(warnings),
        "tester_verdict": None
        if tester_verdict is None
        else {
            "verdict": tester_verdict.verdict,
            "bug_id": tester_verdict.bug_id,
            "comment": tester_verdict.comment,
            "tester": tester_verdict.tester,
            "recorded_at": tester_verdict.recorded_at.isoformat(),
        },
    }


def _processes_json(runs: Sequence[TestRun]) -> list[dict[str, Any]]:
    """Pidstat rows of ``runs``, once per results directory (repeats share ``pidstat_<test>.log``)."""
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    for run in runs:
        for p in run.processes:
            key = (str(run.csv_path.parent), run.test, p.process)
            if key in seen:
                continue
            seen.add(key)
            rows.append(
                {
                    "result": run.csv_path.parent.name,
                    "source": f"pidstat_{run.test}.log",
                    "process": p.process,
                    "cpu_percent": p.cpu_percent,
                    "rss_kib": p.rss_kib,
                    "vsz_kib": p.vsz_kib,
                    "mem_percent": p.mem_percent,
                }
            )
    return rows


def flows_graph_name(test: TestComparison) -> str:
    """Return the PNG file name of ``test``'s throughput-against-flows graph (as :func:`graph_name`)."""
    return f"{safe_name(test.test)}_{safe_name(test.deployment)}_flows.png"


def latency_graph_name(test: TestComparison) -> str:
    """Return the PNG file name of ``test``'s latency percentile graph (sanitised as :func:`graph_name`)."""
    return f"{safe_name(test.test)}_{safe_name(test.deployment)}_latency.png"


def graph_name(test: TestComparison) -> str:
    """Return the PNG file name of ``test``'s graph (sanitised: no path separators, no leading dot)."""
    return f"{safe_name(test.test)}_{safe_name(test.deployment)}.png"


FINDING_ORDER = (
    Verdict.REGRESSION,
    Verdict.INVALID,
    Verdict.UNSTABLE,
    Verdict.NO_BASELINE,
    Verdict.IMPROVEMENT,
)
"""Verdicts listed at the top of the page, most urgent first (PASS cells are not listed)."""


def findings(tests: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Group the cells a tester must look at, for the summary under the overall verdict.

    :param tests: ``report.json``'s ``tests`` list (page order; test ``i`` has anchor
        ``test-<i + 1>``).
    :returns: one dict per (verdict, test) with a non-PASS cell, in :data:`FINDING_ORDER` then
        page order: ``verdict``, ``test``, ``deployment``, ``anchor``, ``rows`` (the row dicts,
        ascending frame size, NDR before PDR), ``reason`` (the rows' common reason, else None)
        and ``has_goals`` (the test has PDR rows, so each row names its metric).
    """
    groups: list[dict[str, Any]] = []
    for verdict in FINDING_ORDER:
        for number, test in enumerate(tests, start=1):
            rows = [r for r in test["rows"] if r["decision"] == verdict.value]
            if not rows:
                continue
            reasons = {r["reason"] for r in rows}
            groups.append(
                {
                    "has_goals": any(r["loss_goal_percent"] != 0 for r in test["rows"]),
                    "verdict": verdict.value,
                    "test": test["test"],
                    "deployment": test["deployment"],
                    "anchor": f"test-{number}",
                    "rows": rows,
                    "reason": reasons.pop() if len(reasons) == 1 else None,
                }
            )
    return groups
