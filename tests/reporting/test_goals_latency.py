"""NDR and PDR compared goal by goal, and latency at shares of the PDR load (docs/results-format.md)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram

from reporting.api import generate_report
from reporting.compare import compare
from reporting.load import load_results_dir
from reporting.model import Thresholds, Verdict

VSPERF = ["throughput_rx_fps", "throughput_rx_percent", "tx_rate_fps", "min_latency_ns", "max_latency_ns",
          "avg_latency_ns", "frame_loss_percent", "type", "packet_size", "id", "deployment"]  # fmt: skip
GOALS = ["loss_goal_percent", "search_method", "pdr_loss_goal_percent", "pdr_throughput_rx_fps",
         "pdr_throughput_rx_percent", "pdr_tx_rate_fps"]  # fmt: skip


def write_dir(root: Path, name: str, rows: list[dict[str, str]], *, goals: bool = True) -> Path:
    path = root / f"results_{name}"
    path.mkdir(parents=True)
    columns = VSPERF + (GOALS if goals else [])
    with (path / "result_0_phy2phy_tput_p2p.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, restval="", extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({"type": "rfc2544_throughput", "id": "phy2phy_tput", "deployment": "p2p", **row})
    return path


def row(size: int, ndr: float, pdr: float | None = None, goal: str = "0") -> dict[str, str]:
    values = {"packet_size": str(size), "throughput_rx_fps": str(ndr), "loss_goal_percent": goal}
    if pdr is not None:
        values |= {"search_method": "mlr", "pdr_loss_goal_percent": "0.5", "pdr_throughput_rx_fps": str(pdr)}
    return values


def histogram(values: dict[int, int]) -> HdrHistogram:
    h = HdrHistogram(1, 60_000_000_000, 3)
    for value, count in values.items():
        h.record_value(value, count)
    return h


def level(percent: float, values: dict[int, int]) -> dict[str, object]:
    h = histogram(values)
    merged = {
        "rx_packets": h.get_total_count(),
        "min_ns": float(min(values)),
        "avg_ns": float(h.get_mean_value()),
        "p50_ns": float(h.get_value_at_percentile(50)),
        "p90_ns": float(h.get_value_at_percentile(90)),
        "p99_ns": float(h.get_value_at_percentile(99)),
        "p999_ns": float(h.get_value_at_percentile(99.9)),
        "max_ns": float(max(values)),
        "hdrh": h.encode().decode("ascii"),
    }
    return {"percent_of_pdr": percent, "load_fps_per_direction": 1e5 * (percent or 0.09), "duration_s": 10.0,
            "valid": True, "invalid_reason": None, "all": merged, "directions": []}  # fmt: skip


def write_latency(path: Path, levels: list[dict[str, object]], size: int = 64) -> None:
    entry = {
        "csv": "result_0_phy2phy_tput_p2p.csv",
        "frame_size_bytes": size,
        "pdr_loss_goal_percent": 0.5,
        "pdr_fps_per_direction": 1e6,
        "levels": levels,
    }
    (path / "ovsperf-latency.json").write_text(json.dumps({"schema": 1, "results": [entry]}))


def cells(baseline: Path, current: Path) -> dict[tuple[int, float], object]:
    comparison = compare([load_results_dir(baseline)], [load_results_dir(current)], Thresholds())
    [test] = comparison.tests
    return {(c.frame_size_bytes, c.loss_goal_percent): c for c in test.cells}


def test_ndr_compares_with_ndr_and_pdr_with_pdr(tmp_path: Path) -> None:
    base = write_dir(tmp_path, "2026-01-01_00-00-00", [row(64, 1.0e6, 2.0e6), row(1518, 1.5e6, 1.6e6)])
    cur = write_dir(tmp_path, "2026-01-02_00-00-00", [row(64, 0.9e6, 2.0e6), row(1518, 1.5e6, 1.7e6)])
    loaded = load_results_dir(cur)
    assert [(r.frame_size_bytes, r.loss_goal_percent, r.rx_pps) for r in loaded.runs[0].rows] == [
        (64, 0.0, 0.9e6), (64, 0.5, 2.0e6), (1518, 0.0, 1.5e6), (1518, 0.5, 1.7e6),
    ]  # fmt: skip
    assert loaded.runs[0].rows[1].search_method == "mlr"
    found = cells(base, cur)
    assert list(found) == [(64, 0.0), (64, 0.5), (1518, 0.0), (1518, 0.5)]
    assert found[(64, 0.0)].verdict is Verdict.REGRESSION  # type: ignore[attr-defined]
    assert found[(64, 0.0)].rel_change_percent == pytest.approx(-10.0)  # type: ignore[attr-defined]
    pdr64 = found[(64, 0.5)]
    assert pdr64.verdict is Verdict.PASS and pdr64.rel_change_percent == 0.0  # type: ignore[attr-defined]
    assert found[(1518, 0.5)].verdict is Verdict.IMPROVEMENT  # type: ignore[attr-defined]
    report = generate_report([base], [cur], tmp_path / "report")
    data = json.loads(report.report_json.read_text())
    assert data["overall"] == "REGRESSION"
    assert [(r["frame_size_bytes"], r["metric"], r["verdict"]) for r in data["tests"][0]["rows"]] == [
        (64, "NDR", "REGRESSION"),
        (64, "PDR 0.5 %", "PASS"),
        (1518, "NDR", "PASS"),
        (1518, "PDR 0.5 %", "IMPROVEMENT"),
    ]
    html = report.index_html.read_text()
    assert '<td class="metric">PDR 0.5 %</td>' in html and "64 B NDR -10.000 %" in html


def test_an_older_ndr_only_baseline_leaves_the_pdr_without_baseline(tmp_path: Path) -> None:
    base = write_dir(tmp_path, "2026-01-01_00-00-00", [row(64, 1.0e6)], goals=False)  # VSperf's own columns
    cur = write_dir(tmp_path, "2026-01-02_00-00-00", [row(64, 1.01e6, 2.0e6)])
    found = cells(base, cur)
    assert found[(64, 0.0)].verdict is Verdict.PASS  # type: ignore[attr-defined]
    pdr = found[(64, 0.5)]
    assert pdr.verdict is Verdict.NO_BASELINE  # type: ignore[attr-defined]
    assert "No PDR 0.5 % at 64 B on the baseline side" in pdr.reason  # type: ignore[attr-defined]
    report = generate_report([base], [cur], tmp_path / "report")
    assert report.overall == "PASS"


def test_a_throughput_at_another_goal_is_never_compared_with_the_ndr(tmp_path: Path) -> None:
    base = write_dir(tmp_path, "2026-01-01_00-00-00", [row(64, 1.0e6)])
    # A binary search at 0.5 % loss writes its PDR into VSperf's columns with its goal.
    cur = write_dir(tmp_path, "2026-01-02_00-00-00", [row(64, 3.0e6, goal="0.5")])
    found = cells(base, cur)
    assert list(found) == [(64, 0.0), (64, 0.5)]
    assert found[(64, 0.0)].verdict is Verdict.INVALID  # type: ignore[attr-defined]
    assert "No NDR at 64 B on the current side" in found[(64, 0.0)].reason  # type: ignore[attr-defined]
    assert found[(64, 0.5)].verdict is Verdict.NO_BASELINE  # type: ignore[attr-defined]


def test_bad_goal_columns_are_warned_and_skipped(tmp_path: Path) -> None:
    path = write_dir(
        tmp_path,
        "2026-01-01_00-00-00",
        [row(64, 1e6, goal="100"), row(128, 1e6, goal="x"), row(256, 1e6, 2e6)],
    )
    with (path / "result_0_phy2phy_tput_p2p.csv").open("a", newline="") as handle:
        # A PDR column that repeats the NDR's goal: the PDR is ignored with a warning.
        cells = ["1e6", "", "", "", "", "", "", "rfc2544_throughput", "512", "phy2phy_tput", "p2p"]
        csv.writer(handle).writerow([*cells, "0", "mlr", "0", "2e6", "", ""])
    loaded = load_results_dir(path)
    messages = [w.message for w in loaded.warnings]
    assert "Column 'loss_goal_percent' holds '100', not a loss goal in [0, 100) %; row skipped." in messages
    assert "Column 'loss_goal_percent' holds 'x', not a loss goal in [0, 100) %; row skipped." in messages
    assert any("repeats the goal of 'loss_goal_percent'" in m for m in messages)
    assert [(r.frame_size_bytes, r.loss_goal_percent) for r in loaded.runs[0].rows] == [
        (256, 0.0), (256, 0.5), (512, 0.0),
    ]  # fmt: skip
    assert loaded.runs[0].rows_skipped == 2


def test_latency_percentiles_compared_and_shown(tmp_path: Path) -> None:
    base = write_dir(tmp_path, "2026-01-01_00-00-00", [row(64, 1e6, 2e6)])
    cur = write_dir(tmp_path, "2026-01-02_00-00-00", [row(64, 1e6, 2e6)])
    write_latency(base, [level(0, {2000: 990, 4000: 10}), level(90, {3000: 900, 9000: 99, 50000: 1})])
    write_latency(cur, [level(0, {2000: 990, 4000: 10}), level(90, {3000: 900, 18000: 99, 90000: 1})])
    loaded = load_results_dir(cur)
    points = loaded.runs[0].latency
    assert [(p.frame_size_bytes, p.percent_of_pdr) for p in points] == [(64, 0.0), (64, 90.0)]
    assert points[1].p99_ns == pytest.approx(18000, rel=1e-3) and points[1].max_ns == 90000.0
    report = generate_report([base], [cur], tmp_path / "report")
    assert report.overall == "PASS"  # latency is shown, never judged
    data = json.loads(report.report_json.read_text())
    latency = data["tests"][0]["latency"]
    assert [(c["frame_size_bytes"], c["percent_of_pdr"]) for c in latency] == [(64, 0.0), (64, 90.0)]
    top = latency[1]
    assert top["baseline"]["p99_ns"] == pytest.approx(9000, rel=1e-3)
    assert top["current"]["p99_ns"] == pytest.approx(18000, rel=1e-3)
    assert top["rel_change_percent"]["p99_ns"] == pytest.approx(100.0, rel=1e-2)
    assert top["rel_change_percent"]["p50_ns"] == pytest.approx(0.0, abs=1e-9)
    assert latency[0]["rel_change_percent"]["max_ns"] == 0.0
    graph = report.index_html.parent / data["tests"][0]["latency_graph"]
    assert graph.is_file() and graph.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = report.index_html.read_text()
    assert 'id="test-1-latency-90"' in html and 'id="test-1-latency-0"' in html
    assert "<caption>90 % of PDR</caption>" in html


def test_repeats_merge_their_histograms(tmp_path: Path) -> None:
    base = write_dir(tmp_path, "2026-01-01_00-00-00", [row(64, 1e6, 2e6)])
    runs = []
    for number, tail in enumerate((10_000, 100_000)):
        cur = write_dir(tmp_path, f"2026-01-0{number + 2}_00-00-00", [row(64, 1e6, 2e6)])
        write_latency(cur, [level(50, {1000: 998, tail: 2})])
        runs.append(load_results_dir(cur))
    comparison = compare([load_results_dir(base)], runs, Thresholds())
    [cell] = comparison.tests[0].latency
    assert cell.baseline is None and cell.rel_change_percent("p99_ns") is None
    merged = histogram({1000: 1996, 10_000: 2, 100_000: 2})
    assert cell.current is not None and cell.current.rx_packets == 2000
    assert cell.current.p999_ns == pytest.approx(merged.get_value_at_percentile(99.9))
    assert cell.current.max_ns == 100_000.0


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("not json", "Cannot read the latency file"),
        (json.dumps({"schema": 2, "results": []}), "Not an ovsperf-latency.json of schema 1"),
        (json.dumps({"schema": 1, "results": [{"csv": "../x", "frame_size_bytes": 64, "levels": []}]}),
         "Field results[0].csv is '../x', not a result CSV name"),
        (json.dumps({"schema": 1, "results": [{"csv": "result_0_phy2phy_tput_p2p.csv",
          "frame_size_bytes": 64, "levels": [{"percent_of_pdr": 50, "load_fps_per_direction": 1,
                                              "all": {"min_ns": 5, "p50_ns": 1}}]}]}),
         "Field results[0].levels[0].all.p90_ns is None, not a finite number >= 0"),
    ],
)  # fmt: skip
def test_a_bad_latency_file_is_a_warning(tmp_path: Path, document: str, message: str) -> None:
    path = write_dir(tmp_path, "2026-01-01_00-00-00", [row(64, 1e6, 2e6)])
    (path / "ovsperf-latency.json").write_text(document)
    loaded = load_results_dir(path)
    assert loaded.runs[0].latency == ()
    assert any(message in w.message for w in loaded.warnings), [w.message for w in loaded.warnings]
    report = generate_report([path], [path], tmp_path / "report")
    assert report.overall == "PASS"
