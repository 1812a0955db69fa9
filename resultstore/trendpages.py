"""Static trend pages: one interactive graph per (scenario, test, frame size) and an index of every series.

Graphs are Plotly (the ``plotly`` Python package builds the figure and ships ``plotly.min.js``,
written once beside the pages), so the pages open from ``file://`` and from any plain web server
without internet access. Each graph shows the metrics asked for (throughput unless told; each in
the unit and axis its :mod:`reporting.metrics` entry gives) of one cell over builds: a marker
per build (mean of its repeats), the groups' averages between change points as steps,
regressions / progressions / outliers marked; hovering shows the build, its date, OVS / DPDK /
QEMU versions, the value and verdicts; a click opens that build's report (relative link). A
regression linked to its culprit build (``ovsperf-results culprit``) gets a ★ at its result,
whose hover names the culprit and the bisection's steps and whose click opens the bisection's page;
the page lists the links beneath the graph.

The output directory is replaced as a whole (:func:`ovsperf_common.atomicio.atomic_directory`):
a failed render leaves the previous pages.
"""

from __future__ import annotations

import html
import json
import logging
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import plotly.offline
from ovsperf_templates import environment  # type: ignore[import-not-found, unused-ignore]

from ovsperf_common.atomicio import atomic_directory
from ovsperf_common.framemix import TrafficKey
from reporting.changepoints import ChangePointVerdict
from reporting.metrics import THROUGHPUT_METRICS, Metric, metric
from reporting.model import TrendVerdict
from resultstore.bisectlink import CulpritRecord
from resultstore.store import ResultStore
from resultstore.trend import SeriesTrend, analyse_store_series
from resultstore.trendlinks import INDEX_NAME, SERIES_DIR, relative_href, series_page_name

log = logging.getLogger(__name__)

MARKER = ".ovsperf-trend-pages"
"""File that marks a directory as written by :func:`write_trend_pages` (only such is replaced)."""

PLOTLY_JS = "plotly.min.js"
"""Plotly's JavaScript, written once into the output directory."""

VERDICT_ORDER = (
    TrendVerdict.REGRESSION,
    TrendVerdict.OUTLIER,
    TrendVerdict.PROGRESSION,
    TrendVerdict.EXPECTED,
    TrendVerdict.NORMAL,
    TrendVerdict.NO_HISTORY,
)
"""Index order: open regressions first."""

_MARKERS = {
    ChangePointVerdict.REGRESSION: ("triangle-down", "#c00000", "regression"),
    ChangePointVerdict.PROGRESSION: ("triangle-up", "#008a00", "progression"),
    ChangePointVerdict.OUTLIER: ("x", "#e08a00", "outlier"),
}


CULPRIT_MARKER = ("star", "#f2c200", "culprit build (bisection)")
"""Symbol, colour and legend name of a regression linked to its culprit build."""

CulpritIndex = Mapping[tuple[str, str, str, int, str, str], CulpritRecord]
"""(result name, test, deployment, frame size, traffic, metric) → its culprit link (ResultStore.culprits)."""


def _culprit_of(culprits: CulpritIndex, result_name: str, trend: SeriesTrend) -> CulpritRecord | None:
    key = trend.series.key
    return culprits.get((result_name, key.test, key.deployment, key.frame_size, key.traffic, key.metric))


def _culprit_hover(link: CulpritRecord) -> str:
    """Return the ★'s hover text: the culprit, the bisection's conclusion and each step (HTML-escaped)."""
    found = link.bisection
    lines = [
        f"culprit build: {found.culprit}",
        f"result {link.result_name}; last good build: {found.last_good or 'n/a'}",
        f"ovsperf-lab bisect: {found.measured_steps} comparisons, {found.metric.upper()} at "
        f"{found.frame_size_bytes} B"
        + (f", regression sought {found.sought_percent:.2f} %" if found.sought_percent is not None else ""),
        *(s.text() for s in found.steps),
        f"click: the bisection's page {found.page}",
    ]
    escaped = [html.escape(line, quote=False) for line in lines]
    return "<br>".join([f"<b>{escaped[0]}</b>", *escaped[1:]])


@dataclass(frozen=True)
class PagesOutcome:
    """What :func:`write_trend_pages` wrote."""

    index_html: Path
    pages: int
    """Graph pages written."""
    series: int
    """Series on the index."""


def _href(target: Path | None, page_dir: Path) -> str | None:
    """Return a relative link from ``page_dir`` to ``target`` (works from file:// and a web server)."""
    return None if target is None else relative_href(target, page_dir)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _metrics(trends: Sequence[SeriesTrend]) -> list[Metric]:
    """Return the metrics of ``trends``' series, each once, in order (:func:`reporting.metrics.metric`)."""
    found: dict[str, Metric] = {}
    for trend in trends:
        name = trend.series.key.metric
        if name not in found:
            found[name] = metric(name)
    return list(found.values())


def _drawn(metrics: Sequence[Metric]) -> str:
    """Return what a graph of ``metrics`` shows, for its page's note.

    ``Throughput over builds (both directions, Mpps; frame size incl. FCS)``.
    """
    parts = list(
        dict.fromkeys(
            (m.quantity, f"{m.qualifier}, {m.shown_unit}" if m.qualifier else m.shown_unit) for m in metrics
        )
    )
    if len(parts) == 1:
        (quantity, detail) = parts[0]
        return f"{quantity.capitalize()} over builds ({detail}; frame size incl. FCS)"
    listed = "; ".join(f"{quantity} ({detail})" for quantity, detail in parts)
    return f"{listed[:1].upper()}{listed[1:]} over builds (frame size incl. FCS)"


def _figure(trends: Sequence[SeriesTrend], page_dir: Path, culprits: CulpritIndex) -> dict[str, Any]:
    """Return the Plotly figure (as a JSON-ready dict) of one cell's series, each in its shown unit.

    :param culprits: the culprit links of the store; a linked result of a series gets a ★.
    """
    fig = go.Figure()
    for trend in trends:
        key = trend.series.key
        shown = metric(key.metric)
        label = shown.label
        colour = shown.colour
        points = trend.series.points
        x = [p.built_at.isoformat() for p in points]
        y = [shown.shown(_mean(p.values)) for p in points]
        hover = []
        links = []
        for i, p in enumerate(points):
            verdict = trend.analysis.verdicts[i].value
            mark = trend.marks[i]
            lines = [
                p.build,
                f"result {p.result_name}, " + p.built_at.strftime("%Y-%m-%d %H:%M UTC"),
                f"OVS {p.ovs_version or 'n/a'}, DPDK {p.dpdk_version or 'n/a'}"
                + (f", QEMU {p.qemu_version}" if p.qemu_version else ""),
                f"{label} {shown.text(_mean(p.values))}"
                + (f" (mean of {len(p.values)})" if len(p.values) > 1 else ""),
                f"trend: {verdict}" + (" (marked expected)" if mark else ""),
                f"tester: {p.tester_decision or '-'}" + (f" {p.tester_bug}" if p.tester_bug else ""),
            ]
            link = _culprit_of(culprits, p.result_name, trend)
            if link is not None:
                lines.append(f"culprit build: {link.bisection.culprit} (bisection)")
            escaped = [html.escape(line, quote=False) for line in lines]  # Plotly labels are HTML-like
            hover.append("<br>".join([f"<b>{escaped[0]}</b>", *escaped[1:]]))
            links.append(_href(p.report, page_dir) or "")
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="markers",
                name=f"{label} per build",
                marker={"color": colour, "size": 7},
                hovertext=hover,
                hoverinfo="text",
                customdata=links,
            )
        )
        steps_x: list[str | None] = []
        steps_y: list[float | None] = []
        for group in trend.analysis.groups:
            steps_x.extend([x[group.start], x[group.end - 1], None])
            steps_y.extend([shown.shown(group.average), shown.shown(group.average), None])
        fig.add_trace(
            go.Scatter(
                x=steps_x,
                y=steps_y,
                mode="lines",
                name=f"{label} group average",
                line={"color": colour, "width": 3},
                hoverinfo="skip",
            )
        )
        for verdict, (symbol, mcolour, text) in _MARKERS.items():
            idx = [i for i, v in enumerate(trend.analysis.verdicts) if v is verdict]
            if not idx:
                continue
            fig.add_trace(
                go.Scatter(
                    x=[x[i] for i in idx],
                    y=[y[i] for i in idx],
                    mode="markers",
                    name=f"{label} {text}",
                    marker={
                        "symbol": symbol,
                        "size": 15,
                        "color": mcolour,
                        "line": {"width": 1, "color": "#000"},
                    },
                    hovertext=[hover[i] for i in idx],
                    hoverinfo="text",
                    customdata=[links[i] for i in idx],
                )
            )
        linked = [(i, c) for i, p in enumerate(points) if (c := _culprit_of(culprits, p.result_name, trend))]
        if linked:
            symbol, mcolour, text = CULPRIT_MARKER
            fig.add_trace(
                go.Scatter(
                    x=[x[i] for i, _ in linked],
                    y=[y[i] for i, _ in linked],
                    mode="markers",
                    name=f"{label} {text}",
                    marker={
                        "symbol": symbol,
                        "size": 19,
                        "color": mcolour,
                        "line": {"width": 1, "color": "#000"},
                    },
                    hovertext=[_culprit_hover(c) for _, c in linked],
                    hoverinfo="text",
                    customdata=[_href(c.bisection.page, page_dir) for _, c in linked],
                )
            )
    fig.update_layout(
        xaxis_title="build (measurement start, UTC)",
        yaxis_title="; ".join(dict.fromkeys(m.axis_title for m in _metrics(trends))),
        hovermode="closest",
        margin={"l": 60, "r": 20, "t": 70, "b": 50},
        legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
        height=480,
    )
    return json.loads(fig.to_json())  # type: ignore[no-any-return]


def _script_json(data: Any) -> str:
    """Return JSON safe inside a ``<script>`` element (no ``</script>``, no HTML comment openers)."""
    return (
        json.dumps(data, separators=(",", ":"))
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _culprit_rows(
    trends: Sequence[SeriesTrend], page_dir: Path, culprits: CulpritIndex
) -> list[dict[str, Any]]:
    """Return the series page's list of culprit links: metric, result, build, culprit, page link, evidence."""
    rows = []
    for trend in trends:
        for p in trend.series.points:
            link = _culprit_of(culprits, p.result_name, trend)
            if link is None:
                continue
            rows.append(
                {
                    "metric": metric(trend.series.key.metric).label,
                    "result": p.result_name,
                    "build": p.build,
                    "culprit": link.bisection.culprit,
                    "last_good": link.bisection.last_good,
                    "message": link.bisection.message,
                    "steps": [s.text() for s in link.bisection.steps],
                    "href": _href(link.bisection.page, page_dir),
                }
            )
    return rows


def _row(trend: SeriesTrend, page: str) -> dict[str, Any]:
    key = trend.series.key
    last = trend.series.points[-1]
    shown = metric(key.metric)
    return {
        "scenario": key.scenario,
        "test": key.test,
        "deployment": key.deployment,
        "frame_size": key.frame_size,
        "traffic": key.traffic,
        "frame": key.traffic_key.text(),
        "metric": shown.label,
        "builds": len(trend.series.points),
        "last_build": last.build,
        "last_result": last.result_name,
        "last_date": last.built_at.strftime("%Y-%m-%d"),
        "last_value": shown.number(_mean(last.values)),
        "last_unit": shown.shown_unit,
        "verdict": trend.last.verdict.value,
        "step_percent": trend.last.step_percent,
        "since": trend.last.since_build or trend.last.since,
        "since_result": trend.last.since,
        "reason": trend.last.reason,
        "page": f"{SERIES_DIR}/{page}",
        "changes": len(trend.analysis.changes),
    }


def write_trend_pages(
    trends: Sequence[SeriesTrend],
    output_dir: Path,
    *,
    title: str = "OVS/DPDK performance trends",
    generated: datetime,
    filters: str = "",
    culprits: CulpritIndex | None = None,
) -> PagesOutcome:
    """Write the index and one graph page per (scenario, test, deployment, frame size, traffic).

    :param trends: analysed series (:func:`resultstore.trend.analyse_series`) of known metrics.
    :param culprits: regressions linked to their culprit builds (:meth:`ResultStore.culprits`), marked ★.
    :param generated: when the pages are made (shown).
    :param filters: the filters used, shown under the title.
    :raises OSError: when the directory cannot be written (the previous pages stay).
    """
    output_dir = Path(output_dir)
    if output_dir.is_symlink() or (output_dir.exists() and not output_dir.is_dir()):
        raise FileExistsError(f"'{output_dir}' exists and is not a directory; choose another --output-dir")
    if output_dir.is_dir() and any(output_dir.iterdir()) and not (output_dir / MARKER).is_file():
        raise FileExistsError(
            f"'{output_dir}' is a non-empty directory not written by 'ovsperf-results trend'; "
            "it is not replaced, choose another --output-dir"
        )
    cells: dict[tuple[str, str, str, int, str], list[SeriesTrend]] = defaultdict(list)
    for trend in trends:
        key = trend.series.key
        cells[(key.scenario, key.test, key.deployment, key.frame_size, key.traffic)].append(trend)
    env = environment("trend", autoescape=True)
    rows: list[dict[str, Any]] = []
    with atomic_directory(output_dir) as tmp:
        (tmp / MARKER).write_text(
            "written by ovsperf-results trend; replaced on the next run\n", encoding="utf-8"
        )
        (tmp / PLOTLY_JS).write_text(plotly.offline.get_plotlyjs(), encoding="utf-8")
        (tmp / SERIES_DIR).mkdir()
        page_dir = output_dir / SERIES_DIR
        for cell, cell_trends in sorted(cells.items()):
            cell_trends.sort(key=lambda t: t.series.key.metric)
            page = series_page_name(*cell)
            figure = _figure(cell_trends, page_dir, culprits or {})
            html = env.get_template("series.html.j2").render(
                title=title,
                cell={
                    "scenario": cell[0],
                    "test": cell[1],
                    "deployment": cell[2],
                    "frame": TrafficKey.from_store(cell[3], cell[4]).text(),
                },
                rows=[_row(t, page) for t in cell_trends],
                culprits=_culprit_rows(cell_trends, page_dir, culprits or {}),
                drawn=_drawn(_metrics(cell_trends)),
                figure_json=_script_json(figure),
                plotly_js=f"../{PLOTLY_JS}",
                generated=generated.strftime("%Y-%m-%d %H:%M UTC"),
            )
            (tmp / SERIES_DIR / page).write_text(html, encoding="utf-8")
            rows.extend(_row(t, page) for t in cell_trends)
        order = {v.value: i for i, v in enumerate(VERDICT_ORDER)}
        rows.sort(
            key=lambda r: (
                order[r["verdict"]],
                r["scenario"],
                r["test"],
                TrafficKey.from_store(r["frame_size"], r["traffic"]).sort_key(),
                r["metric"],
            )
        )
        counts = {v.value: len([r for r in rows if r["verdict"] == v.value]) for v in VERDICT_ORDER}
        units = {r["last_unit"] for r in rows}
        html = env.get_template(INDEX_NAME + ".j2").render(
            title=title,
            rows=rows,
            value_header=units.pop() if len(units) == 1 else "value",
            counts=counts,
            filters=filters,
            generated=generated.strftime("%Y-%m-%d %H:%M UTC"),
        )
        (tmp / INDEX_NAME).write_text(html, encoding="utf-8")
    log.info(
        "Trend pages written: '%s' (%d graphs, %d series).", output_dir / INDEX_NAME, len(cells), len(rows)
    )
    return PagesOutcome(output_dir / INDEX_NAME, len(cells), len(rows))


def write_store_pages(
    store: ResultStore,
    output_dir: Path,
    *,
    scenario: str | None = None,
    since: datetime | None = None,
    metrics: Sequence[str] = THROUGHPUT_METRICS,
    title: str = "OVS/DPDK performance trends",
    filters: str = "",
    progress: Callable[[int, int], None] | None = None,
) -> tuple[PagesOutcome, list[SeriesTrend]] | None:
    """Analyse the store's series (cached analyses reused) and write their pages; None when there is none.

    What ``ovsperf-results trend`` and ``process-ci-results`` (``trend_pages:``) both run. Series
    whose builds did not change since the last analysis come from the store's cache, so only
    the scenarios that gained builds are analysed again.

    :param scenario: only this scenario's series; ``since``: only builds measured from then on.
    :raises StoreDatabaseError: when the database fails.
    :raises OSError: when the directory cannot be written (the previous pages stay).
    """
    series = store.series(scenario=scenario, since=since, metrics=metrics)
    if not series:
        return None
    if max(len(s.points) for s in series) < 2:
        log.warning("Every series has one build only: no trend possible yet (pages show the values).")
    trends = analyse_store_series(store, series, progress=progress)
    outcome = write_trend_pages(
        trends,
        output_dir,
        title=title,
        generated=datetime.now(UTC),
        filters=filters,
        culprits=store.culprits(),
    )
    return outcome, trends
