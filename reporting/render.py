"""Render a :class:`~reporting.model.Comparison` into a report directory it is given.

Writes ``index.html`` (Jinja2, autoescaped, ``StrictUndefined``), one PNG graph per test
(matplotlib Agg: throughput against frame size with the theoretical line rate, the output
format of RFC 2544 §4.1.2 / §26.1), ``report.json`` (every number the page shows) and safe
plain-text copies of VSperf's own report and logs under ``sources/``. Number formatting happens
only here. The caller makes the directory appear atomically.
"""

from __future__ import annotations

import json
import logging
import math
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

# mypy cannot follow setuptools' package-dir mapping of templates/ in an editable install.
from ovsperf_templates import environment  # type: ignore[import-not-found, unused-ignore]

from ovsperf_common.units import l1_bps
from reporting.model import Cell, Comparison, ResultSet, TestComparison, TesterVerdict, TestRun, Verdict

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
"""Version of ``report.json``'s layout; bump on incompatible changes."""

MARKER_NAME = ".ovsperf-report"
"""File that marks a directory as a generated report (so it may be replaced)."""

MAX_COPY_BYTES = 50 * 1024 * 1024
"""VSperf files larger than this are linked by path only, not copied [B]."""

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class SourceLink:
    """A copied VSperf file, linked from the page."""

    label: str
    href: str
    """Relative URL inside the report directory."""


def _safe(name: str) -> str:
    cleaned = _SAFE_NAME.sub("_", name).strip("._")
    return cleaned or "file"


def _mpps(pps: float | None) -> float | None:
    return None if pps is None else pps / 1e6


def _mbps(pps: float | None, size: int) -> float | None:
    return None if pps is None else l1_bps(pps, size) / 1e6


def _round(value: float | None, digits: int) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(value, digits)


def copy_sources(rs: ResultSet, out: Path, prefix: str) -> list[SourceLink]:
    """Copy VSperf's final report and logs of ``rs`` into ``out/sources/<prefix>/`` as ``.txt``.

    Only regular files (no symlinks) up to :data:`MAX_COPY_BYTES` are copied; names are
    sanitised and suffixed ``.txt`` so a browser shows them as text, never runs them.

    :raises OSError: when writing fails (e.g. a full disk).
    """
    links: list[SourceLink] = []
    files = ([rs.vsperf_report] if rs.vsperf_report else []) + list(rs.logs)
    target = out / "sources" / prefix
    for src in files:
        if src.is_symlink() or not src.is_file():
            continue
        if src.stat().st_size > MAX_COPY_BYTES:
            log.warning("'%s' is larger than %d B; not copied into the report.", src, MAX_COPY_BYTES)
            continue
        target.mkdir(parents=True, exist_ok=True)
        name = _safe(src.name) + ".txt"
        shutil.copyfile(src, target / name)
        links.append(SourceLink(label=src.name, href=f"sources/{prefix}/{name}"))
    return links


def plot_test(test: TestComparison, comparison: Comparison, path: Path) -> None:
    """Draw throughput [Mpps] against frame size [B] for baseline, current and line rate.

    Means with ±1 standard deviation error bars where a side has repeats; each current result
    as a faint dot when several were given.

    :raises OSError: when the PNG cannot be written.
    """
    sizes = [c.frame_size_bytes for c in test.cells]
    # Frame sizes sit at evenly spaced positions (1024/1280/1518 would overlap on a size axis).
    pos = {size: float(i) for i, size in enumerate(sizes)}
    fig = Figure(figsize=(8.0, 4.2), dpi=96)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    line = [c.line_rate_pps / 1e6 if c.line_rate_pps else math.nan for c in test.cells]
    line_label = f"theoretical line rate ({comparison.link_bps / 1e9:g} Gbit/s)"
    ax.plot(list(pos.values()), line, linestyle="--", color="#777777", label=line_label)
    for side, colour, marker in (("baseline", "#1f5fa8", "o"), ("current", "#d2691e", "s")):
        xs: list[float] = []
        ys: list[float] = []
        errs: list[float] = []
        for cell in test.cells:
            stats = cell.baseline if side == "baseline" else cell.current
            if stats is None:
                continue
            xs.append(pos[cell.frame_size_bytes])
            ys.append(stats.mean_pps / 1e6)
            errs.append((stats.stdev_pps or 0.0) / 1e6)
        if xs:
            ax.errorbar(xs, ys, yerr=errs, marker=marker, color=colour, capsize=3, label=side)
    if any(len(c.per_result) > 1 for c in test.cells):
        px = [pos[c.frame_size_bytes] for c in test.cells for r in c.per_result if r.rx_pps is not None]
        py = [r.rx_pps / 1e6 for c in test.cells for r in c.per_result if r.rx_pps is not None]
        ax.scatter(px, py, s=8, color="#d2691e", alpha=0.35, label="each current result")
    invalid = [pos[c.frame_size_bytes] for c in test.cells if c.verdict is Verdict.INVALID]
    if invalid:
        ax.scatter(invalid, [0.0] * len(invalid), marker="x", color="#b00020", label="INVALID")
    title = f"{test.test} ({test.deployment})".replace("$", r"\$")
    ax.set_title(f"{title}: throughput, both directions summed")
    ax.set_xlabel("frame size [B] (incl. FCS)")
    ax.set_ylabel("throughput [Mpps]")
    ax.set_xticks(list(pos.values()), [str(s) for s in sizes])
    ax.tick_params(axis="x", labelrotation=45 if len(sizes) > 8 else 0)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, format="png")


def _side_json(rs: ResultSet, links: Sequence[SourceLink]) -> dict[str, Any]:
    return {
        "path": str(rs.path),
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


def _cell_json(cell: Cell) -> dict[str, Any]:
    size = cell.frame_size_bytes
    base = cell.baseline
    cur = cell.current
    b_fps = base.mean_pps if base else None
    c_fps = cur.mean_pps if cur else None
    line = cell.line_rate_pps
    return {
        "frame_size_bytes": size,
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
        "reason": cell.reason,
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


def report_data(
    comparison: Comparison,
    baseline: Sequence[ResultSet],
    current: Sequence[ResultSet],
    links: Mapping[str, Sequence[SourceLink]],
    warnings: Sequence[str],
    tester_verdict: TesterVerdict | None,
    title: str,
) -> dict[str, Any]:
    """Return the ``report.json`` document (schema 1; keys are stable, see docs/reporting.md)."""
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
        "link_source": comparison.link_source,
        "baseline": [_side_json(rs, links.get(f"baseline-{i}", ())) for i, rs in enumerate(baseline)],
        "current": [_side_json(rs, links.get(f"current-{i}", ())) for i, rs in enumerate(current)],
        "tests": [
            {
                "test": t.test,
                "deployment": t.deployment,
                "graph": f"graphs/{_graph_name(t)}",
                "rows": [_cell_json(c) for c in t.cells],
                "processes": {
                    "baseline": _processes_json(t.baseline_runs),
                    "current": _processes_json(t.current_runs),
                },
                "moongen_checks": [
                    {
                        "side": side,
                        "log": str(m.log_path),
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


def _graph_name(test: TestComparison) -> str:
    return f"{_safe(test.test)}_{_safe(test.deployment)}.png"


def write_report(
    out: Path,
    comparison: Comparison,
    baseline: Sequence[ResultSet],
    current: Sequence[ResultSet],
    warnings: Sequence[str],
    tester_verdict: TesterVerdict | None,
    title: str,
) -> None:
    """Fill the (empty, temporary) directory ``out`` with the complete report.

    :raises OSError: when any file cannot be written (the caller keeps the previous report).
    """
    links: dict[str, list[SourceLink]] = {}
    for side, sets in (("baseline", baseline), ("current", current)):
        for i, rs in enumerate(sets):
            links[f"{side}-{i}"] = copy_sources(rs, out, f"{side}-{i}")
    graphs = out / "graphs"
    graphs.mkdir()
    for test in comparison.tests:
        plot_test(test, comparison, graphs / _graph_name(test))
    data = report_data(comparison, baseline, current, links, warnings, tester_verdict, title)
    (out / "report.json").write_text(json.dumps(data, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    env = environment("report", autoescape=True)
    html = env.get_template("index.html.j2").render(
        report=data,
        title=title,
        comparison=comparison,
        env_rows=_environment_rows(baseline, current),
        verdicts=[v.value for v in Verdict],
    )
    (out / "index.html").write_text(html, encoding="utf-8")
    (out / MARKER_NAME).write_text("generated by ovsperf generate-report\n", encoding="utf-8")


def _environment_rows(baseline: Sequence[ResultSet], current: Sequence[ResultSet]) -> list[dict[str, Any]]:
    """Rows field → values per result (baseline first), each flagged when it differs from baseline 0."""
    sets = [*baseline, *current]
    keys: list[str] = []
    for rs in sets:
        for key, _ in rs.environment:
            if key not in keys:
                keys.append(key)
    rows = []
    for key in keys:
        values = [rs.env.get(key) for rs in sets]
        ref = values[0] if values else None
        rows.append(
            {
                "field": key,
                "cells": [{"value": v, "differs": i > 0 and v != ref} for i, v in enumerate(values)],
            }
        )
    return rows
