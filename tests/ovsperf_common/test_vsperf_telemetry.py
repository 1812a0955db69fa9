"""ovsperf_common.vsperf_telemetry: the VSperf collector's raw captures → ovsperf-telemetry.json."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ovsperf_common import vsperf_telemetry
from ovsperf_common.vsperf_telemetry import RAW_DIR, convert_capture

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "ovsperf_lab" / "fixtures" / "telemetry"
STAT = "{tid} (pmd-c01/id:8) R 1 1 1 0 -1 4194368 0 0 0 0 {utime} {stime} 0 0 20 0 1 0 1 0 0\n"


def ports(rx: int) -> str:
    return json.dumps(
        {
            "headings": ["name", "statistics"],
            "data": [["dpdk0", ["map", [["rx_packets", rx], ["ierrors", 3]]]]],
        }
    )


def capture(**over: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "schema": 1,
        "test": "phy2phy_tput",
        "index": 0,
        "frame_sizes_bytes": [1518, 64],
        "clock_ticks_per_s": 100,
        "wall_s": 10.0,
        "notes": [],
        "before": {
            "ports": ports(100),
            "threads": {"ovs-vswitchd": {"pid": 7, "stat": {"8": STAT.format(tid=8, utime=100, stime=0)}}},
        },
        "after": {
            "pmd_stats_show": (FIXTURES / "pmd-stats-show-3.1.txt").read_text(),
            "pmd_perf_show": "Time: 01:00:00.000\n",
            "pmd_rxq_show": (FIXTURES / "pmd-rxq-show-3.1.txt").read_text(),
            "ports": ports(1100),
            "threads": {"ovs-vswitchd": {"pid": 7, "stat": {"8": STAT.format(tid=8, utime=1050, stime=40)}}},
        },
    }
    raw.update(over)
    return raw


def test_a_capture_becomes_one_whole_test_window() -> None:
    entry = convert_capture(capture(), "result_0_phy2phy_tput_p2p.csv")
    assert entry["window"] == "test" and entry["source"] == "vsperf"
    assert entry["frame_size_bytes"] is None and entry["frame_sizes_bytes"] == [64, 1518]
    assert entry["load_pps"] is None and entry["valid"] is True
    assert entry["totals"]["cycles_per_packet"] == pytest.approx(2624851744 / 7831812)
    assert entry["ports"] == {"dpdk0": {"rx_packets": 1000.0}}  # only the counters we keep
    # 990 ticks at 100 per second over a 10 s window: 99 % of one CPU.
    assert entry["threads"]["ovs-vswitchd"] == [
        {"tid": 8, "name": "pmd-c01/id:8", "cpu_percent": pytest.approx(99.0)}
    ]
    assert entry["notes"] == []


def test_without_pmd_stats_show_the_counters_come_from_pmd_perf_show() -> None:
    # OVS 4.0 dropped pmd-stats-show (commit 4060c1c2e; only an alias is left): whichever of the
    # two commands gave PMD threads is read. Input: lib/dpif-netdev-unixctl.man's example.
    from tests.ovsperf_common.test_ovsstats import MAN_PAGE

    raw = capture()
    raw["after"]["pmd_stats_show"] = None  # not collected: the command failed
    raw["after"]["pmd_perf_show"] = MAN_PAGE
    entry = convert_capture(raw, "result_0_phy2phy_tput_p2p.csv")
    assert entry["totals"]["packets"] == 2399607
    assert entry["totals"]["cycles_per_packet"] == pytest.approx(848)
    assert entry["totals"]["pmd_busy_percent"] == pytest.approx(84.1, abs=0.05)
    assert entry["pmds"]["pmd-c01"]["packets_received"] == 2399607
    assert entry["pmd_perf_show"] == MAN_PAGE


def test_a_counter_going_backwards_is_none_with_a_note() -> None:
    raw = capture()
    raw["after"]["ports"] = ports(50)  # OVS restarted its port, or the counter wrapped
    entry = convert_capture(raw, "result_0_phy2phy_tput_p2p.csv")
    assert entry["ports"] == {"dpdk0": {"rx_packets": None}}
    assert entry["notes"] == ["port dpdk0: a counter went backwards or appeared during the test"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"schema": 2}, "schema is 2"),
        ({"frame_sizes_bytes": [63]}, "capture.frame_sizes_bytes"),
        ({"after": None}, "capture.after"),
        ({"wall_s": "10"}, "capture.wall_s"),
    ],
)
def test_a_bad_capture_names_its_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(vsperf_telemetry.RawError, match=field.replace(".", r"\.")):
        convert_capture(capture(**change), "result_0_phy2phy_tput_p2p.csv")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ovsperf_common.vsperf_telemetry", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_cli_writes_the_file_and_names_what_it_left_out(tmp_path: Path) -> None:
    (tmp_path / RAW_DIR).mkdir()
    (tmp_path / RAW_DIR / "test-0.json").write_text(json.dumps(capture()))
    (tmp_path / RAW_DIR / "test-1.json").write_text(json.dumps(capture(test="pvp_tput", after={})))
    done = _cli(
        str(tmp_path), "--test", "0:phy2phy_tput:p2p", "--test", "1:pvp_tput:pvp", "--test", "2:x:p2p"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "result_0_phy2phy_tput_p2p.csv: cycles/packet 335.2, PMD busy 60.3 %\n"
    assert f"{tmp_path / RAW_DIR / 'test-1.json'}: " in done.stderr and "capture.after" in done.stderr
    assert "no capture for test x (not collected)" in done.stderr
    document = json.loads((tmp_path / "ovsperf-telemetry.json").read_text())
    assert [t["csv"] for t in document["trials"]] == ["result_0_phy2phy_tput_p2p.csv"]


def test_cli_without_captures_writes_nothing(tmp_path: Path) -> None:
    done = _cli(str(tmp_path), "--test", "0:phy2phy_tput:p2p")
    assert done.returncode == 0 and "not collected" in done.stdout
    assert list(tmp_path.iterdir()) == []
    bad = _cli(str(tmp_path), "--test", "phy2phy_tput")
    assert bad.returncode == 2 and "INDEX:NAME:DEPLOYMENT" in bad.stderr


def test_the_collector_writes_where_the_converter_reads() -> None:
    plugin = (REPO / "beaker_tasks" / "vsperf_test" / "collectors" / "ovsperf_telemetry.py").read_text()
    assert f'RAW_DIR = "{RAW_DIR}"' in plugin
