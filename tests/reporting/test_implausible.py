"""Physically impossible numbers are flagged INVALID with a warning naming file and line, never celebrated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ovsperf_common.exitcodes import ExitCode
from reporting.api import generate_report
from tests.reporting.conftest import BASELINE, edited_baseline

TS = "results_2018-03-05_21-14-07"
P2P_CSV = "result_0_phy2phy_tput_p2p.csv"


def _edited(tmp_path: Path, size: int, **changes: str) -> Path:
    """Copy the baseline and change columns of the P2P row at ``size`` B."""
    return edited_baseline(tmp_path, size, **changes)


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"throughput_rx_fps": "1e308"}, "above line rate"),
        ({"throughput_rx_percent": "180.0"}, "180 % of line rate"),
        ({"frame_loss_percent": "-3"}, "frame loss -3 %"),
        ({"frame_loss_percent": "250"}, "frame loss 250 %"),
        ({"avg_latency_ns": "-5000"}, "average latency -5000 ns is negative"),
    ],
    ids=["1e308-fps", "above-100-percent", "negative-loss", "loss-over-100", "negative-latency"],
)
def test_impossible_numbers_are_invalid_not_improvements(
    tmp_path: Path, changes: dict[str, str], why: str
) -> None:
    current = _edited(tmp_path, 64, **changes)
    outcome = generate_report([BASELINE], [current], tmp_path / "out")
    report = json.loads(outcome.report_json.read_text())
    (p2p,) = [t for t in report["tests"] if t["test"] == "phy2phy_tput"]
    row = {r["frame_size_bytes"]: r for r in p2p["rows"]}[64]
    assert row["verdict"] == "INVALID" and row["rel_change_percent"] is None
    assert why in row["reason"] and f"'{P2P_CSV}' line 2" in row["reason"]
    assert any(P2P_CSV in w and "line 2" in w and "Physically impossible" in w for w in outcome.warnings)
    assert outcome.counts["IMPROVEMENT"] == 0 and outcome.exit_code is ExitCode.ERROR


@pytest.mark.parametrize("size", ["32", "9019", "-64"])
def test_frame_sizes_outside_64_to_9018_lose_their_row(tmp_path: Path, size: str) -> None:
    current = _edited(tmp_path, 128, packet_size=size)
    outcome = generate_report([BASELINE], [current], tmp_path / "out")
    assert any(f"Frame size {int(size)} B is outside 64..9018 B" in w for w in outcome.warnings)
    report = json.loads(outcome.report_json.read_text())
    (p2p,) = [t for t in report["tests"] if t["test"] == "phy2phy_tput"]
    assert {r["frame_size_bytes"]: r["verdict"] for r in p2p["rows"]}[128] == "INVALID"


def test_an_over_long_field_loses_only_its_own_row(tmp_path: Path) -> None:
    current = _edited(tmp_path, 256, throughput_rx_fps="9" * 200_000)
    outcome = generate_report([BASELINE], [current], tmp_path / "out")
    assert any("line 4" in w and "too long" in w for w in outcome.warnings)
    report = json.loads(outcome.report_json.read_text())
    (p2p,) = [t for t in report["tests"] if t["test"] == "phy2phy_tput"]
    verdicts = {r["frame_size_bytes"]: r["verdict"] for r in p2p["rows"]}
    assert verdicts[256] == "INVALID"
    assert all(v != "INVALID" for size, v in verdicts.items() if size != 256)


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        ("/".join(f"{64 + n % 1000}:1" for n in range(16_000)), "'64:1/65:1/66:1"),
        ("64:" + "9" * 5000, "'64:99999"),
        ("9" * 5000, "'99999"),
    ],
    ids=["mix-of-16000-sizes", "weight-of-5000-digits", "size-of-5000-digits"],
)
def test_hostile_packet_sizes_lose_only_their_row(tmp_path: Path, size: str, shown: str) -> None:
    # Issue 25 items 15/16: a 16,000-size mix took ~5 s per row; 5000 digits must not crash.
    current = _edited(tmp_path, 128, packet_size=size)
    outcome = generate_report([BASELINE], [current], tmp_path / "out")
    (warning,) = [w for w in outcome.warnings if "line 3" in w and "packet_size" in w]
    assert shown in warning and "row skipped" in warning and len(warning) < 600
    report = json.loads(outcome.report_json.read_text())
    (p2p,) = [t for t in report["tests"] if t["test"] == "phy2phy_tput"]
    verdicts = {r["frame_size_bytes"]: r["verdict"] for r in p2p["rows"]}
    assert verdicts[128] == "INVALID" and [v for s, v in verdicts.items() if s != 128] == ["PASS"] * 6
