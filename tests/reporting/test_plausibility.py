"""A row whose rate columns contradict each other, or its run's link, is INVALID (issue 25 item 7).

Real rows: the VSperf fixtures (tests/fixtures/vsperf, written by VSperf opnfv-9.0.0's MoonGen
driver: ``throughput_rx_mbps = RxMpps · (size + 20) · 8``, ``throughput_rx_percent`` of 2 × 10 GbE)
must all pass; doctored copies of one row must be INVALID with the reason, never compared.
Line rate of 64 B on 2 × 10 GbE: 2 · 10e9 / ((64 + 20) · 8) = 29,761,904.76 fps, so 300 % is
89,285,714.285714 fps, L1 60,000.000 Mbit/s.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.units import l1_bps, line_rate_pps
from reporting.api import generate_report
from reporting.load import load_results_dir
from reporting.plausibility import derive_link_bps
from tests.reporting.conftest import BASELINE, BROKEN, CANDIDATE, LEGACY, REPEATS, edited_baseline

TS = "results_2018-03-05_21-14-07"
CANDIDATE_TS = "results_2018-04-10_22-01-55"
P2P_CSV = "result_0_phy2phy_tput_p2p.csv"

FPS_300 = 3 * line_rate_pps(64, 2 * 10e9)
MBPS_300 = l1_bps(FPS_300, 64) / 1e6
AGREEING_300 = {
    "throughput_rx_fps": f"{FPS_300:.6f}",
    "throughput_rx_mbps": f"{MBPS_300:.3f}",
    "tx_rate_fps": f"{FPS_300:.6f}",
}
"""A 64 B row at 300 % whose fps, Mbit/s and Tx fps agree: only the link can tell it impossible."""


def _p2p_64(tmp_path: Path, current: Path) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    outcome = generate_report([BASELINE], [current], tmp_path / "out")
    report = json.loads(outcome.report_json.read_text())
    (p2p,) = [t for t in report["tests"] if t["test"] == "phy2phy_tput"]
    rows = {r["frame_size_bytes"]: r for r in p2p["rows"]}
    return outcome, report, rows


@pytest.mark.parametrize(
    "results",
    [
        BASELINE / TS,
        CANDIDATE / CANDIDATE_TS,
        REPEATS / "results_2018-04-11_03-30-12",
        LEGACY / "results_2017-03-01_10-00-00",
        BROKEN / "unknown_values" / TS,
        BROKEN / "zero_throughput" / TS,
    ],
    ids=["baseline", "candidate", "repeats", "legacy-danube", "unknown-tx", "zero-row"],
)
def test_real_vsperf_rows_agree_with_their_link(results: Path) -> None:
    loaded = load_results_dir(results)
    assert not [w for w in loaded.warnings if "impossible" in w.message or "disagree" in w.message]
    assert all(row.implausible is None for run in loaded.runs for row in run.rows)
    for run in loaded.runs:  # VSperf's MoonGen driver: percentages of 2 streams × 10 GbE
        assert derive_link_bps(run.rows) == pytest.approx(20e9, rel=1e-4)


def test_fps_at_300_percent_contradicting_mbps_and_percent_is_invalid(tmp_path: Path) -> None:
    # The row: only throughput_rx_fps says 300 %; its Mbit/s and % still say 47.7 %.
    current = edited_baseline(tmp_path, 64, throughput_rx_fps=f"{FPS_300:.6f}")
    outcome, _, rows = _p2p_64(tmp_path, current)
    row = rows[64]
    assert row["verdict"] == "INVALID" and row["rel_change_percent"] is None
    assert row["current_line_rate_percent"] is None and row["current_fps"] is None
    assert "the rate columns disagree" in row["reason"] and f"'{P2P_CSV}' line 2" in row["reason"]
    assert "60000.000 Mbit/s (L1)" in row["reason"] and "9544.9 Mbit/s" in row["reason"]
    assert outcome.counts["IMPROVEMENT"] == 0 and outcome.exit_code is ExitCode.ERROR
    assert [r["verdict"] for s, r in rows.items() if s != 64] == ["PASS"] * 6


def test_fps_and_mbps_at_300_percent_contradicting_percent_is_invalid(tmp_path: Path) -> None:
    # fps and Mbit/s agree with each other; the row's own 47.724 % and the 6 other rows say 20 Gbit/s.
    current = edited_baseline(
        tmp_path,
        64,
        **AGREEING_300,
    )
    outcome, _, rows = _p2p_64(tmp_path, current)
    assert rows[64]["verdict"] == "INVALID" and rows[64]["current_fps"] is None
    assert "says 47.724 %" in rows[64]["reason"] and "89285714 fps is 300.00" in rows[64]["reason"]
    assert "20 Gbit/s link that this test's rows imply" in rows[64]["reason"]
    assert any(P2P_CSV in w and "line 2" in w and "rate columns disagree" in w for w in outcome.warnings)
    assert outcome.counts["IMPROVEMENT"] == 0 and report_link(outcome) == 20e9


def report_link(outcome: Any) -> float:
    """Return the link speed the report derived [bit/s]."""
    return float(json.loads(outcome.report_json.read_text())["link_bps"])


def test_row_without_percent_above_the_runs_line_rate_is_invalid(tmp_path: Path) -> None:
    current = edited_baseline(
        tmp_path,
        64,
        **AGREEING_300,
        throughput_rx_percent="",
    )
    outcome, _, rows = _p2p_64(tmp_path, current)
    assert rows[64]["verdict"] == "INVALID"
    assert "% of line rate on the 20 Gbit/s link" in rows[64]["reason"]
    assert "(tolerance 1 %)" in rows[64]["reason"] and outcome.counts["IMPROVEMENT"] == 0


def test_run_without_percentages_is_checked_against_the_comparisons_link(tmp_path: Path) -> None:
    # As VSperf's TRex driver writes: 'Unknown' percentages, so the run implies no link itself;
    # the baseline's percentages give the comparison 20 Gbit/s.
    current = edited_baseline(
        tmp_path,
        64,
        every={"throughput_rx_percent": "Unknown"},
        **AGREEING_300,
    )
    outcome, _, rows = _p2p_64(tmp_path, current)
    assert rows[64]["verdict"] == "INVALID"
    assert "link that the compared results' percentages imply" in rows[64]["reason"]
    assert [r["verdict"] for s, r in rows.items() if s != 64] == ["PASS"] * 6
    assert any("line 2" in w and "Physically impossible at 64 B (NDR)" in w for w in outcome.warnings)


@pytest.mark.parametrize(
    ("mbps_per_fps", "unit"),
    [(84 * 8 / 1e6, "L1"), (64 * 8 / 1e6, "L2 (Spirent)"), (60 * 8 / 1e6, "L2 without FCS (TRex)")],
)
def test_each_generators_mbps_unit_agrees(tmp_path: Path, mbps_per_fps: float, unit: str) -> None:
    fps = 14203716.0
    current = edited_baseline(tmp_path, 64, throughput_rx_mbps=f"{fps * mbps_per_fps:.3f}")
    _, _, rows = _p2p_64(tmp_path, current)
    assert rows[64]["verdict"] == "PASS", unit
    assert rows[64]["current_fps"] == fps


def test_oversized_result_csv_is_not_read(tmp_path: Path) -> None:
    # Issue 25 item 15: result CSVs had no size cap (3 GiB read whole, twice: by the loader and
    # by the fingerprint). A sparse 64 MiB file: over the cap, without the disk use.
    current = edited_baseline(tmp_path, 64)
    path = current / TS / P2P_CSV
    with path.open("ab") as handle:
        handle.truncate(64 * 1024 * 1024)
    loaded = load_results_dir(current / TS)
    assert [r.test for r in loaded.runs] == ["pvp_tput"]
    assert any(w.path == path and "larger than 4194304 B" in w.message for w in loaded.warnings)
    tracemalloc.start()
    try:
        outcome = generate_report([BASELINE], [current], tmp_path / "out")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert outcome.exit_code is ExitCode.ERROR and peak < 32 * 1024 * 1024
    assert any(P2P_CSV in w and "not read, test skipped" in w for w in outcome.warnings)


def test_more_frames_received_than_sent_is_invalid(tmp_path: Path) -> None:
    # 1.5 × the 14,203,923 fps sent; Mbit/s and % edited to agree, so only Tx contradicts it.
    fps = 1.5 * 14203923.0
    current = edited_baseline(
        tmp_path,
        64,
        throughput_rx_fps=f"{fps:.6f}",
        throughput_rx_mbps=f"{l1_bps(fps, 64) / 1e6:.3f}",
        throughput_rx_percent=f"{100 * fps / line_rate_pps(64, 20e9):.3f}",
    )
    outcome, _, rows = _p2p_64(tmp_path, current)
    assert rows[64]["verdict"] == "INVALID" and outcome.counts["IMPROVEMENT"] == 0
    assert "21305884 fps received is more than the 14203923 fps sent (tolerance 1 %)" in rows[64]["reason"]
