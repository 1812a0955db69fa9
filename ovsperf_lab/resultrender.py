"""Render one test's rows as VSperf renders them: the result CSV, its ``.md`` and its ``.rst``.

* :func:`csv_row`: one :class:`~ovsperf_lab.resultrow.FrameSizeResult` as a CSV row, values
  formatted as VSperf's MoonGen driver formats them, plus the goal columns
  (docs/results-format.md);
* :func:`render_csv`: the CSV text, VSperf's columns in VSperf's order (``ovsperf_common.labfiles``);
* :func:`render_md`, :func:`render_rst`: the environment block in VSperf's
  ``* vSwitch: X, Version: Y, GIT tag: Z`` style and a metrics table per frame size (VSperf
  ``tools/report/report.jinja`` and ``report_rst.jinja``).

Pure: text in, text out; :mod:`ovsperf_lab.results` writes it.
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Sequence
from datetime import datetime

from ovsperf_catalog.model import GuestLoopback, TunnelType, VsperfTest
from ovsperf_common.framemix import item_entries, item_name
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
    TUNNEL_COLUMN,
)
from ovsperf_common.units import mix_rates
from ovsperf_lab.resultrow import Environment, FrameSizeResult, goal_percent

TIME_FMT = "%Y-%m-%d %H:%M:%S"
"""VSperf's ``start_time``/``stop_time`` format (local time), also that of the metadata's tests."""


def _fmt(value: float | None, digits: int) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def csv_row(
    row: FrameSizeResult,
    *,
    test: VsperfTest,
    vswitch: str,
    start: datetime,
    stop: datetime,
    guest: GuestLoopback | None,
    tunnel_type: TunnelType | None = None,
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
        COL_START: start.strftime(TIME_FMT),
        COL_STOP: stop.strftime(TIME_FMT),
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
    if tunnel_type is not None:
        values[TUNNEL_COLUMN] = tunnel_type.value
    return values


def render_csv(rows: Sequence[dict[str, str]], guest: GuestLoopback | None, *, tunnel: bool = False) -> str:
    """Return the CSV text of one test: a header and ``rows`` (:func:`csv_row`), in VSperf's column order.

    The ``guest_loopback_app`` column comes last, and only with a ``guest``; an overlay test's
    ``tunnel_type`` (``tunnel``) after it.
    """
    buf = io.StringIO()
    columns = [
        *CSV_COLUMNS,
        *GOAL_COLUMNS,
        *([GUEST_COLUMN] if guest is not None else []),
        *([TUNNEL_COLUMN] if tunnel else []),
    ]
    writer = csv.DictWriter(buf, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


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
