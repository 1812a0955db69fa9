"""Write an A/B comparison: ``rounds.csv``, ``report.json``, ``index.html``, graph, VSperf results.

Each side's rounds also go to VSperf results (``A/results_<ts>/``, ``B/results_<ts>/``).

Rewritten after every round (each file atomically), so an interrupted run keeps what it measured.
The page states the verdict, the change with its interval and the minimum detectable change, and
shows every round in run order, so drift is visible.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

# mypy cannot follow setuptools' package-dir mapping of templates/ in an editable install.
from ovsperf_templates import environment  # type: ignore[import-not-found, unused-ignore]

from ovsperf_common.atomicio import atomic_write_text
from ovsperf_common.labfiles import (
    COL_DEPLOYMENT,
    COL_ID,
    COL_LOSS_GOAL,
    COL_PACKET_SIZE,
    COL_RX_FPS,
    COL_RX_MBPS,
    COL_SEARCH,
    COL_START,
    COL_TRAFFIC_TYPE,
    COL_TX_FPS,
    COL_TYPE,
    COL_VSWITCH,
    CSV_COLUMNS,
    GOAL_COLUMNS,
)
from ovsperf_common.resultdir import result_csv_name
from ovsperf_common.units import l1_bps
from ovsperf_lab.compare.abtest import CompareOutcome


def report_data(outcome: CompareOutcome) -> dict[str, Any]:
    """Return ``report.json`` (schema 1): sides, configuration, rounds in run order, estimate."""
    by_round: dict[int, dict[str, Any]] = {}
    for value in outcome.values:
        entry = by_round.setdefault(value.round, {"round": value.round, "order": ""})
        entry[f"{value.side.lower()}_mpps"] = value.mrr_pps / 1e6
        entry["order"] += value.side
    rounds = []
    for number in sorted(by_round):
        entry = {"a_mpps": None, "b_mpps": None, **by_round[number]}
        a, b = entry["a_mpps"], entry["b_mpps"]
        entry["change_percent"] = (b / a - 1.0) * 100.0 if a and b else None
        rounds.append(entry)
    e = outcome.estimate
    config = outcome.config
    return {
        "schema": 1,
        "metric": "MRR: received frames/s, both directions, at full offered load"
        if config.metric == "mrr"
        else "PDR 0.5 %: MLRsearch conditional throughput, both directions",
        "complete": outcome.complete,
        "reason": outcome.reason,
        "config": {
            "frame_size_bytes": config.frame_size_bytes,
            "trial_s": config.trial_s,
            "warmup_s": config.warmup_s,
            "min_rounds": config.min_rounds,
            "max_rounds": config.max_rounds,
            "target_mdc_percent": config.target_mdc_percent,
            "threshold_percent": config.threshold_percent,
            "b_cpu_steal_percent": config.b_cpu_steal_percent,
            "seed": config.seed,
            "metric": config.metric,
        },
        "sides": {
            side.label: {
                "version": side.version_banner,
                "description": side.describe(),
                "ovs_version": outcome.versions.get(side.label, (None, None))[0],
                "dpdk_version": outcome.versions.get(side.label, (None, None))[1],
            }
            for side in outcome.sides
        },
        "values": [
            {
                "round": v.round,
                "side": v.side,
                "position": v.position,
                "mrr_pps": v.mrr_pps,
                "tx_pps": v.tx_pps,
                "started_at": v.started_at,
            }
            for v in outcome.values
        ],
        "rounds": rounds,
        "estimate": None
        if e is None
        else {
            "rounds": e.rounds,
            "change_percent": e.change_percent,
            "ci_low_percent": e.ci_low_percent,
            "ci_high_percent": e.ci_high_percent,
            "p_value": e.p_value,
            "mdc_percent": e.mdc_percent,
            "verdict": e.verdict.value,
            "alpha": e.alpha,
            "power": e.power,
        },
    }


def _plot(data: dict[str, Any], path: Path) -> None:
    """Draw MRR per round (A, B) in run order and, below, B / A − 1 per round [%]."""
    fig = Figure(figsize=(900 / 96, 560 / 96), dpi=96)
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    rounds = data["rounds"]
    xs = [r["round"] for r in rounds]
    for key, label, colour in (("a_mpps", "A", "#1f5fa8"), ("b_mpps", "B", "#d2691e")):
        top.plot(
            xs,
            [r[key] if r[key] is not None else float("nan") for r in rounds],
            marker="o",
            color=colour,
            label=label,
        )
    top.set_ylabel("MRR [Mpps]")
    top.grid(True, alpha=0.3)
    top.legend(fontsize="small")
    top.set_title("Every round, in run order (drift moves both sides alike)")
    changes = [r["change_percent"] if r["change_percent"] is not None else float("nan") for r in rounds]
    bottom.bar(xs, changes, color="#777777")
    e = data["estimate"]
    if e is not None and e["ci_low_percent"] is not None:
        bottom.axhspan(
            e["ci_low_percent"], e["ci_high_percent"], color="#d2691e", alpha=0.2, label="confidence interval"
        )
        bottom.axhline(e["change_percent"], color="#d2691e", label="estimated change")
        bottom.legend(fontsize="x-small")
    bottom.axhline(0.0, color="#444444", linewidth=0.8)
    bottom.set_ylabel("B / A − 1 [%]")
    bottom.set_xlabel("round")
    bottom.set_xticks(xs)
    bottom.grid(True, alpha=0.3)
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, format="png")
    os.replace(tmp, path)


VSPERF_TESTS = {
    "mrr": ("phy2phy_cont", "rfc2544_continuous", ""),
    "pdr": ("phy2phy_tput", "rfc2544_throughput", "0.5"),
}
"""Metric → (VSperf test id, VSperf ``type``, ``loss_goal_percent``): an MRR is VSperf's continuous
test (throughput at full offered load), a PDR its throughput test at the 0.5 % goal, so
``generate-report`` never compares an MRR with an NDR."""


def write_vsperf_sides(outcome: CompareOutcome, out: Path, stamp: str) -> list[Path]:
    """Write each side's rounds as VSperf results: ``out/<side>/results_<stamp>/``.

    One result CSV per round (VSperf index = round − 1), so ``generate-report --baseline out/A/…
    --current out/B/…`` pools the rounds as repeats.

    :returns: the two results directories.
    :raises OSError: when a file cannot be written.
    """
    test, kind, goal = VSPERF_TESTS[outcome.config.metric]
    size = outcome.config.frame_size_bytes
    dirs = []
    for side in ("A", "B"):
        results = out / side / f"results_{stamp}"
        results.mkdir(parents=True, exist_ok=True)
        for value in (v for v in outcome.values if v.side == side):
            row = dict.fromkeys([*CSV_COLUMNS, *GOAL_COLUMNS], "")
            row |= {
                COL_RX_FPS: f"{value.mrr_pps:.6f}",
                COL_RX_MBPS: f"{l1_bps(value.mrr_pps, size) / 1e6:.3f}",
                COL_TX_FPS: f"{value.tx_pps:.6f}",
                COL_TYPE: kind,
                COL_PACKET_SIZE: str(size),
                COL_ID: test,
                COL_DEPLOYMENT: "p2p",
                COL_VSWITCH: "OvsDpdkVhost",
                COL_TRAFFIC_TYPE: "udp",
                COL_START: value.started_at[:19].replace("T", " "),
                COL_LOSS_GOAL: goal,
                COL_SEARCH: outcome.config.metric,
            }
            buf = io.StringIO()
            writer = csv.DictWriter(buf, fieldnames=list(row))
            writer.writeheader()
            writer.writerow(row)
            atomic_write_text(results / result_csv_name(test, "p2p", value.round - 1), buf.getvalue())
        dirs.append(results)
    return dirs


def write_outcome(outcome: CompareOutcome, out: Path) -> Path:
    """Write (or rewrite) the comparison into directory ``out``; return the page's path.

    :raises OSError: when a file cannot be written.
    """
    (out / "graphs").mkdir(parents=True, exist_ok=True)
    data = report_data(outcome)
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["round", "side", "position", "mrr_pps", "tx_pps", "started_at"])
    for v in outcome.values:
        writer.writerow([v.round, v.side, v.position, f"{v.mrr_pps:.3f}", f"{v.tx_pps:.3f}", v.started_at])
    atomic_write_text(out / "rounds.csv", buf.getvalue())
    atomic_write_text(out / "report.json", json.dumps(data, indent=1, allow_nan=False) + "\n")
    _plot(data, out / "graphs" / "rounds.png")
    write_vsperf_sides(outcome, out, out.name.removeprefix("compare_"))
    page = environment("compare", autoescape=True).get_template("index.html.j2").render(report=data)
    atomic_write_text(out / "index.html", page)
    return out / "index.html"
