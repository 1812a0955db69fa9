"""Render a :class:`~reporting.model.Comparison` into a report directory it is given.

Writes ``index.html`` (Jinja2, autoescaped, ``StrictUndefined``), one PNG graph per test
(matplotlib Agg: throughput against frame size with the theoretical line rate, the output
format of RFC 2544 §4.1.2 / §26.1), ``report.json`` (built by ``document.py``: every number the
page shows) and safe plain-text copies of VSperf's own report and logs under ``sources/``.
Text formatting of numbers happens only here and in the page template. The caller makes the
directory appear atomically.
"""

from __future__ import annotations

import functools
import json
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

# mypy cannot follow setuptools' package-dir mapping of templates/ in an editable install.
from ovsperf_templates import environment  # type: ignore[import-not-found, unused-ignore]

from ovsperf_common.framemix import TrafficKey
from ovsperf_common.goals import goal_label
from ovsperf_common.secrets import redact_bytes
from reporting.document import (
    PathDisplay,
    SourceLink,
    findings,
    flows_graph_name,
    graph_name,
    latency_graph_name,
    report_data,
    safe_name,
)
from reporting.latency import decode, within
from reporting.model import BuildNote, Comparison, TestComparison, TesterVerdict, Verdict
from reporting.resultmodel import LatencyPoint, ResultSet

log = logging.getLogger(__name__)

MARKER_NAME = ".ovsperf-report"
"""File that marks a directory as a generated report (so it may be replaced); it lists, one per
line after its first, the top-level entries the report wrote."""

JUNIT_NAME = "junit.xml"
"""The report's JUnit XML (reporting.junit), written with every report."""

REPORT_ENTRIES = frozenset({"index.html", "report.json", JUNIT_NAME, "graphs", "sources", MARKER_NAME})
"""Top-level entries a report may hold (reports written before the marker listed them)."""

MAX_COPY_BYTES = 50 * 1024 * 1024
"""VSperf files larger than this are linked by path only, not copied [B]."""


REDACTED = "<redacted>"
"""What stands in for a secret in the report's copies of VSperf files (``ovsperf_common.secrets``)."""


def copy_sources(rs: ResultSet, out: Path, prefix: str, warnings: list[str]) -> list[SourceLink]:
    """Copy VSperf's final report and logs of ``rs`` into ``out/sources/<prefix>/`` as ``.txt``.

    Only regular files (no symlinks) up to :data:`MAX_COPY_BYTES` are copied; names are
    sanitised and suffixed ``.txt`` so a browser shows them as text, never runs them. Secrets
    (every pattern of :mod:`ovsperf_common.secrets`: ``key = value`` and list settings, JSON,
    ``Authorization`` and ``Cookie`` headers, private-key blocks, URL credentials and signed-URL
    signatures, ``--password X``, ``curl -u``, ``sshpass -p``, cloud keys and tokens) are replaced
    by ``<redacted>``: a report may be published. A source too large or unreadable is left out;
    each of those and each redaction adds a warning naming the file to ``warnings``.

    :raises OSError: when writing fails (e.g. a full disk).
    """
    links: list[SourceLink] = []
    files = ([rs.vsperf_report] if rs.vsperf_report else []) + list(rs.logs)
    target = out / "sources" / prefix
    for src in files:
        if src.is_symlink() or not src.is_file():
            continue
        try:
            if src.stat().st_size > MAX_COPY_BYTES:
                warnings.append(f"'{src}': larger than {MAX_COPY_BYTES} B; not copied into the report.")
                continue
            data = src.read_bytes()
        except OSError as err:
            warnings.append(f"'{src}': cannot be read ({err.strerror}); not copied into the report.")
            continue
        data, hidden = redact_bytes(data, REDACTED)
        if hidden:
            warnings.append(
                f"'{src}': {hidden} secret value(s) replaced by '<redacted>' in the report's copy."
            )
        target.mkdir(parents=True, exist_ok=True)
        name = safe_name(src.name) + ".txt"
        (target / name).write_bytes(data)
        links.append(SourceLink(label=src.name, href=f"sources/{prefix}/{name}"))
    return links


GRAPH_SIZE_PX = (768, 576)
"""Width and height of each test's PNG [px] (the page's ``<img>`` reserves this space)."""

_VERDICT_COLOURS = {
    Verdict.PASS: "#5a9e5a",
    Verdict.REGRESSION: "#c0392b",
    Verdict.IMPROVEMENT: "#2f6fb5",
    Verdict.UNSTABLE: "#d99a00",
}


def _goals(test: TestComparison) -> list[float]:
    """Return the loss goals of ``test``'s cells, ascending (NDR first)."""
    return sorted({c.loss_goal_percent for c in test.cells})


def plot_test(test: TestComparison, comparison: Comparison, path: Path) -> None:
    """Draw one test's graph: throughput [Mpps] and, below it, the change to baseline [%].

    Top: baseline, current and the theoretical line rate against frame size [B] (RFC 2544 §26.1
    output format), one line per loss goal (NDR solid, PDR dashed); means with ±1 standard
    deviation error bars where a side has repeats, each current result as a faint dot when
    several were given. Bottom: "rel to base" [%] per frame size and goal as bars coloured by
    verdict, with the confidence interval where there are repeats and the regression/improvement
    thresholds as dashed lines (the Mpps scale hides a 5 % change at large frames). Cells without a
    change are marked "INVALID" or "new" at 0.

    :raises OSError: when the PNG cannot be written.
    """
    sizes = sorted({c.traffic for c in test.cells}, key=TrafficKey.sort_key)
    # Frame sizes sit at evenly spaced positions (1024/1280/1518 would overlap on a size axis);
    # mixes after the sizes, and with a flow sweep one position per (size, flows).
    pos = {traffic: float(i) for i, traffic in enumerate(sizes)}
    dpi = 96
    fig = Figure(figsize=(GRAPH_SIZE_PX[0] / dpi, GRAPH_SIZE_PX[1] / dpi), dpi=dpi)
    FigureCanvasAgg(fig)
    ax, rel_ax = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    _plot_throughput(ax, test, comparison, pos)
    _plot_change(rel_ax, test, comparison, pos)
    title = f"{test.test} ({test.deployment})".replace("$", r"\$")
    ax.set_title(f"{title}: throughput, both directions summed")
    flows = test.has_flow_counts
    rel_ax.set_xlabel("frame size [B] (incl. FCS) or mix" + (", flows" if flows else ""))
    rel_ax.set_xticks(
        list(pos.values()), [s.frame_label + (f"\n{s.flows} fl" if flows else "") for s in sizes]
    )
    rel_ax.tick_params(axis="x", labelrotation=45 if len(sizes) > 8 else 0)
    fig.tight_layout()
    fig.savefig(path, format="png")


def _plot_throughput(
    ax: Any, test: TestComparison, comparison: Comparison, pos: dict[TrafficKey, float]
) -> None:
    line_by_size = {c.traffic: c.line_rate_pps for c in test.cells}
    line = [(line_by_size[s] or math.nan) / 1e6 for s in pos]
    line_label = f"theoretical line rate ({comparison.link_bps / 1e9:g} Gbit/s)"
    ax.plot(list(pos.values()), line, linestyle="--", color="#777777", label=line_label)
    goals = _goals(test)
    for goal in goals:
        cells = [c for c in test.cells if c.loss_goal_percent == goal]
        style = "-" if goal == 0 else "--"
        suffix = f" {goal_label(goal)}" if len(goals) > 1 or goal != 0 else ""
        for side, colour, marker in (("baseline", "#1f5fa8", "o"), ("current", "#d2691e", "s")):
            xs: list[float] = []
            ys: list[float] = []
            errs: list[float] = []
            for cell in cells:
                stats = cell.baseline if side == "baseline" else cell.current
                if stats is None:
                    continue
                xs.append(pos[cell.traffic])
                ys.append(stats.mean_pps / 1e6)
                errs.append((stats.stdev_pps or 0.0) / 1e6)
            if xs:
                ax.errorbar(
                    xs,
                    ys,
                    yerr=errs,
                    marker=marker,
                    color=colour,
                    linestyle=style,
                    capsize=3,
                    label=side + suffix,
                )
    if any(len(c.per_result) > 1 for c in test.cells):
        px = [pos[c.traffic] for c in test.cells for r in c.per_result if r.rx_pps is not None]
        py = [r.rx_pps / 1e6 for c in test.cells for r in c.per_result if r.rx_pps is not None]
        ax.scatter(px, py, s=8, color="#d2691e", alpha=0.35, label="each current result")
    invalid = [pos[c.traffic] for c in test.cells if c.verdict is Verdict.INVALID]
    if invalid:
        ax.scatter(invalid, [0.0] * len(invalid), marker="x", color="#b00020", label="INVALID")
    ax.set_ylabel("throughput [Mpps]")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")


def _plot_change(ax: Any, test: TestComparison, comparison: Comparison, pos: dict[TrafficKey, float]) -> None:
    th = comparison.thresholds
    goals = _goals(test)
    width = 0.6 / len(goals)

    def x(cell: Any) -> float:
        """Bars of one frame size side by side, NDR left."""
        return pos[cell.traffic] + (goals.index(cell.loss_goal_percent) - (len(goals) - 1) / 2) * width

    compared = [c for c in test.cells if c.rel_change_percent is not None]
    xs = [x(c) for c in compared]
    ys = [c.rel_change_percent or 0.0 for c in compared]
    colours = [_VERDICT_COLOURS.get(c.verdict, "#888888") for c in compared]
    hatches = ["" if c.loss_goal_percent == 0 else "//" for c in compared]
    bars = ax.bar(xs, ys, width=width * 0.9, color=colours)
    for bar, hatch in zip(bars, hatches, strict=True):
        bar.set_hatch(hatch)
    with_ci = [c for c in compared if c.ci_low_percent is not None and c.ci_high_percent is not None]
    if with_ci:
        ci_x = [x(c) for c in with_ci]
        ci_y = [c.rel_change_percent or 0.0 for c in with_ci]
        # max(0, …): a zero-width interval may come out a rounding error below the mean.
        low = [max(0.0, y - (c.ci_low_percent or 0.0)) for y, c in zip(ci_y, with_ci, strict=True)]
        high = [max(0.0, (c.ci_high_percent or 0.0) - y) for y, c in zip(ci_y, with_ci, strict=True)]
        ax.errorbar(ci_x, ci_y, yerr=[low, high], fmt="none", ecolor="#222222", capsize=3)
    right = len(pos) - 0.5
    ax.set_xlim(-0.5, right)
    ax.axhline(-th.regression_percent, linestyle="--", color="#c0392b", linewidth=1)
    ax.axhline(th.improvement_percent, linestyle="--", color="#2f6fb5", linewidth=1)
    for value, label, colour, va in (
        (-th.regression_percent, f"regression −{th.regression_percent:g} %", "#c0392b", "top"),
        (th.improvement_percent, f"improvement +{th.improvement_percent:g} %", "#2f6fb5", "bottom"),
    ):
        ax.text(right, value, label + " ", ha="right", va=va, fontsize="x-small", color=colour)
    ax.axhline(0.0, color="#444444", linewidth=0.8)
    for cell in test.cells:
        if cell.rel_change_percent is None:
            label = "new" if cell.verdict is Verdict.NO_BASELINE else "INVALID"
            ax.text(x(cell), 0.0, label, ha="center", va="bottom", fontsize="small")
    extent = max([th.regression_percent, th.improvement_percent, *(abs(y) for y in ys)]) * 1.25
    ax.set_ylim(-extent, extent)
    ylabel = "rel to base [%]" if len(goals) == 1 else "rel to base [%] (PDR hatched)"
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)


LATENCY_CURVE_PERCENTILES = (
    0.0,
    25.0,
    50.0,
    75.0,
    90.0,
    95.0,
    99.0,
    99.5,
    99.9,
    99.95,
    99.99,
    99.995,
    99.999,
)
"""Percentiles drawn from each histogram [%]: HdrHistogram's percentile-distribution points."""

_LEVEL_COLOURS = ("#1b9e77", "#7570b3", "#d95f02", "#e7298a", "#66a61e", "#a6761d")


def plot_flows(test: TestComparison, path: Path) -> None:
    """Draw one test's throughput [Mpps] against flows per direction (log scale), for a flow sweep.

    One line per frame size or mix and loss goal (the colour), current solid, baseline dashed;
    the datapath's caches (EMC, SMC, megaflow) show as steps where the flows outgrow them.

    :raises OSError: when the PNG cannot be written.
    """
    dpi = 96
    fig = Figure(figsize=(GRAPH_SIZE_PX[0] / dpi, GRAPH_SIZE_PX[1] / dpi), dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.subplots(1, 1)
    series = sorted(
        {(c.frame_size_bytes, c.mix, c.loss_goal_percent) for c in test.cells if c.flows is not None},
        key=lambda k: (TrafficKey(k[0], k[1]).sort_key(), k[2]),
    )
    for number, (size, mix, goal) in enumerate(series):
        colour = _LEVEL_COLOURS[number % len(_LEVEL_COLOURS)]
        cells = sorted(
            (
                c
                for c in test.cells
                if (c.frame_size_bytes, c.mix, c.loss_goal_percent) == (size, mix, goal) and c.flows
            ),
            key=lambda c: c.flows or 0,
        )
        label = f"{TrafficKey(size, mix).frame_text} {goal_label(goal)}"
        for side, style in (("current", "-"), ("baseline", "--")):
            points = [
                (float(c.flows or 0), stats.mean_pps / 1e6)
                for c in cells
                for stats in [c.current if side == "current" else c.baseline]
                if stats is not None
            ]
            if points:
                ax.plot(
                    *zip(*points, strict=True),
                    linestyle=style,
                    marker="o",
                    color=colour,
                    label=f"{label}, {side}",
                )
    ax.set_xscale("log")
    ax.set_xlabel("flows per direction (log scale)")
    ax.set_ylabel("throughput [Mpps], both directions")
    ax.set_ylim(bottom=0)
    _finish(fig, ax, test, "throughput against flows (baseline dashed)", path)


def plot_latency(test: TestComparison, path: Path) -> None:
    """Draw one test's latency percentile distribution at every share of the PDR load.

    The x axis is HdrHistogram's: 1 / (1 − percentile) on a log scale, labelled 50 … 99.999 %, so
    the tail is as wide as the median; y is latency [µs] on a log scale. One colour per load level
    (and frame size, when there are several), current solid, baseline dashed; the curves come from
    the merged histograms, or from the recorded percentiles when a side has no histogram.

    :raises OSError: when the PNG cannot be written.
    """
    dpi = 96
    fig = Figure(figsize=(GRAPH_SIZE_PX[0] / dpi, GRAPH_SIZE_PX[1] / dpi), dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.subplots(1, 1)
    for number, cell in enumerate(test.latency):
        colour = _LEVEL_COLOURS[number % len(_LEVEL_COLOURS)]
        label = f"{cell.traffic.text()} at {cell.percent_of_pdr:g} % PDR"
        for side, point, style in (("current", cell.current, "-"), ("baseline", cell.baseline, "--")):
            if point is None:
                continue
            xs, ys = _latency_curve(point)
            ax.plot(
                xs,
                ys,
                linestyle=style,
                color=colour,
                marker="." if len(xs) < 8 else None,
                label=f"{label}, {side}",
            )
    ticks = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks([1 / (1 - p / 100) for p in ticks], [f"{p:g} %" for p in ticks])
    ax.set_xlim(1.0, 1 / (1 - 99.999 / 100) * 1.5)
    ax.set_xlabel("percentile (HdrHistogram scale: 1 / (1 − p))")
    ax.set_ylabel("one-way latency [µs]")
    _finish(fig, ax, test, "latency percentiles at shares of the PDR load (baseline dashed)", path)


def _finish(fig: Figure, ax: Any, test: TestComparison, subject: str, path: Path) -> None:
    """Title ``test: subject``, log-scale grid, legend; write the PNG to ``path``."""
    title = f"{test.test} ({test.deployment})".replace("$", r"\$")
    ax.set_title(f"{title}: {subject}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="x-small", ncol=2)
    fig.tight_layout()
    fig.savefig(path, format="png")


def _latency_curve(point: LatencyPoint) -> tuple[list[float], list[float]]:
    """Return (1 / (1 − p), latency [µs]) points of ``point``'s distribution."""
    histogram = decode(point.hdrh)
    if histogram is not None and histogram.get_total_count():
        pairs = [
            (p, within(float(histogram.get_value_at_percentile(p)), point.min_ns, point.max_ns))
            for p in LATENCY_CURVE_PERCENTILES
        ]
        pairs[0] = (0.0, point.min_ns)
    else:
        pairs = [
            (0.0, point.min_ns),
            (50.0, point.p50_ns),
            (90.0, point.p90_ns),
            (99.0, point.p99_ns),
            (99.9, point.p999_ns),
        ]
    xs = [1 / (1 - p / 100) for p, _ in pairs]
    ys = [max(value, 1.0) / 1e3 for _, value in pairs]
    return xs, ys


def write_report(
    out: Path,
    comparison: Comparison,
    baseline: Sequence[ResultSet],
    current: Sequence[ResultSet],
    warnings: Sequence[str],
    tester_verdict: TesterVerdict | None,
    title: str,
    *,
    display: PathDisplay = PathDisplay(),  # noqa: B008 - frozen dataclass, safe default
    overview_href: str | None = None,
    build: BuildNote | None = None,
) -> tuple[str, ...]:
    """Fill the (empty, temporary) directory ``out`` with the complete report.

    Paths on the page and in ``report.json`` (and in ``warnings``) are shown through ``display``;
    ``overview_href`` adds a link to the page listing all reports; ``build`` names what the current
    side tested under the title.

    :returns: warnings found while copying VSperf's files (left out, secrets redacted); the
        page and ``report.json`` list them after ``warnings``.
    :raises OSError: when any file cannot be written (the caller keeps the previous report).
    """
    links: dict[str, list[SourceLink]] = {}
    copy_warnings: list[str] = []
    for side, sets in (("baseline", baseline), ("current", current)):
        for i, rs in enumerate(sets):
            links[f"{side}-{i}"] = copy_sources(rs, out, f"{side}-{i}", copy_warnings)
    copy_warnings = [display.text(w) for w in copy_warnings]
    warnings = [*warnings, *copy_warnings]
    graphs = out / "graphs"
    graphs.mkdir()
    for test in comparison.tests:
        plot_test(test, comparison, graphs / graph_name(test))
        if test.has_flow_counts:
            plot_flows(test, graphs / flows_graph_name(test))
        if test.latency:
            plot_latency(test, graphs / latency_graph_name(test))
    data = report_data(
        comparison, baseline, current, links, warnings, tester_verdict, title, display, overview_href, build
    )
    (out / "report.json").write_text(json.dumps(data, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    html = page_template().render(
        report=data,
        title=title,
        comparison=comparison,
        env_rows=_environment_rows(baseline, current),
        verdicts=[v.value for v in Verdict],
        findings=findings(data["tests"]),
        graph_size_px=GRAPH_SIZE_PX,
    )
    (out / "index.html").write_text(html, encoding="utf-8")
    written = sorted({p.name for p in out.iterdir()} | {MARKER_NAME})
    (out / MARKER_NAME).write_text(
        "generated by ovsperf generate-report\n" + "".join(f"{name}\n" for name in written), encoding="utf-8"
    )
    return tuple(copy_warnings)


@functools.cache
def page_template() -> jinja2.Template:
    """Return the compiled page template, built once per process.

    Building the Jinja2 environment and compiling ``index.html.j2`` takes about 0.1 s; a
    ``process-ci-results`` pass renders one page per result. The template is immutable once
    compiled, so sharing it between calls (and threads) is safe.
    """
    env = environment("report", autoescape=True)
    template: jinja2.Template = env.get_template("index.html.j2")
    return template


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
