"""Check generate_report() end to end on the VSperf fixtures (numbers from their README)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ovsperf_common.exitcodes import ExitCode
from reporting.api import ReportOutcome, Thresholds, generate_report
from tests.reporting.conftest import BASELINE, CANDIDATE, REPEATS


def _rows(report: dict, test: str) -> dict[int, dict]:
    (entry,) = [t for t in report["tests"] if t["test"] == test]
    return {r["frame_size_bytes"]: r for r in entry["rows"]}


def test_baseline_vs_candidate_numbers(tmp_path: Path) -> None:
    out = tmp_path / "report"
    outcome = generate_report([BASELINE], [CANDIDATE], out)
    assert isinstance(outcome, ReportOutcome)
    assert outcome.index_html == out / "index.html" and outcome.index_html.is_file()
    report = json.loads(outcome.report_json.read_text())
    assert report["schema"] == 1
    p2p = _rows(report, "phy2phy_tput")
    assert p2p[64]["baseline_fps"] == pytest.approx(14203716.0)
    assert p2p[64]["current_fps"] == pytest.approx(13777605.0)
    assert p2p[64]["baseline_mpps"] == pytest.approx(14.203716)
    assert p2p[64]["rel_change_percent"] == pytest.approx(-3.000, abs=5e-4)
    assert p2p[64]["current_line_rate_percent"] == pytest.approx(46.293, abs=5e-4)
    # L1 Mbit/s = fps × (64 + 20) × 8 / 1e6, as VSperf's throughput_rx_mbps 9544.897.
    assert p2p[64]["baseline_l1_mbps"] == pytest.approx(9544.897, abs=1e-3)
    assert p2p[64]["verdict"] == "PASS" and p2p[64]["warn"] is True
    assert p2p[128]["rel_change_percent"] == pytest.approx(0.5, abs=5e-4)
    pvp = _rows(report, "pvp_tput")
    assert pvp[64]["rel_change_percent"] == pytest.approx(-6.000, abs=5e-4)
    assert pvp[64]["verdict"] == "REGRESSION"
    assert pvp[1518]["current_line_rate_percent"] == pytest.approx(89.945, abs=5e-4)
    assert outcome.counts["REGRESSION"] == 1 and outcome.counts["PASS"] == 13
    assert outcome.overall == "REGRESSION" and outcome.exit_code is ExitCode.REGRESSION
    assert report["baseline"][0]["ovs_version"] == "2.9.0"
    assert report["baseline"][0]["dpdk_version"] == "17.11.0"
    assert report["current"][0]["ovs_version"] == "2.9.1"
    assert report["current"][0]["dpdk_version"] == "17.11.2"
    assert report["baseline"][0]["start_time"] == "2018-03-05 21:14:07"
    assert report["tester_verdict"] is None
    assert report["warnings"] == [] and outcome.warnings == ()


def test_threshold_moves_the_verdict(tmp_path: Path) -> None:
    outcome = generate_report(
        [BASELINE], [CANDIDATE], tmp_path / "r", Thresholds(regression_percent=2.5, warning_percent=1.0)
    )
    report = json.loads(outcome.report_json.read_text())
    assert _rows(report, "phy2phy_tput")[64]["verdict"] == "REGRESSION"
    assert outcome.counts["REGRESSION"] == 2


def test_no_regression_exit_ok(tmp_path: Path) -> None:
    outcome = generate_report([BASELINE], [BASELINE.parent / BASELINE.name], tmp_path / "r")
    # The same directory on both sides: every change is 0 %.
    assert outcome.exit_code is ExitCode.OK and outcome.overall == "PASS"
    assert outcome.counts["PASS"] == 14


def test_repeats_use_statistics(tmp_path: Path) -> None:
    outcome = generate_report([BASELINE], [REPEATS], tmp_path / "r")
    report = json.loads(outcome.report_json.read_text())
    p2p = _rows(report, "phy2phy_tput")
    assert p2p[64]["current_n"] == 2 and p2p[64]["baseline_n"] == 1
    assert p2p[64]["method"] == "one-sample-t"
    mean = (13.813702 + 13.750463) / 2
    assert p2p[64]["current_mpps"] == pytest.approx(mean, abs=1e-6)
    assert p2p[64]["rel_change_percent"] == pytest.approx((mean / 14.203716 - 1) * 100, abs=1e-4)
    assert p2p[64]["ci_low_percent"] < p2p[64]["rel_change_percent"] < p2p[64]["ci_high_percent"]
    assert p2p[64]["verdict"] == "UNSTABLE"  # two repeats, interval crosses −5 %
    assert p2p[256]["verdict"] == "PASS"
    # pvp_tput was not run in the repeats directory: INVALID, never a -100 % regression.
    pvp = _rows(report, "pvp_tput")
    assert all(r["verdict"] == "INVALID" and r["rel_change_percent"] is None for r in pvp.values())
    assert outcome.exit_code is ExitCode.ERROR and outcome.overall == "INVALID"


def test_repeat_samples_against_candidate(tmp_path: Path) -> None:
    """README table (c): each repeat against (b) is +0.262 % / -0.197 % at 64 B."""
    outcome = generate_report([CANDIDATE], [REPEATS], tmp_path / "r")
    row = _rows(json.loads(outcome.report_json.read_text()), "phy2phy_tput")[64]
    assert row["current_samples_fps"] == [13813702.0, 13750463.0]
    rel = [(s / row["baseline_fps"] - 1) * 100 for s in row["current_samples_fps"]]
    assert rel == [pytest.approx(0.262, abs=5e-4), pytest.approx(-0.197, abs=5e-4)]
    assert row["verdict"] == "PASS"  # interval well inside ±5 %


def test_warning_threshold_colours(tmp_path: Path) -> None:
    outcome = generate_report([BASELINE], [CANDIDATE], tmp_path / "r", Thresholds(warning_percent=4.0))
    report = json.loads(outcome.report_json.read_text())
    assert _rows(report, "phy2phy_tput")[64]["warn"] is False
    assert _rows(report, "pvp_tput")[64]["warn"] is True
    assert report["thresholds"]["warning_percent"] == 4.0
