"""Check the VSperf loader: layouts, environment, pidstat and the MoonGen raw-log cross-check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from reporting.api import generate_report
from reporting.errors import ReportingError
from reporting.load import find_results_dirs, load_results_dir
from tests.reporting.conftest import BASELINE, CANDIDATE, LEGACY, MOONGEN, REPEATS

TS = "results_2018-03-05_21-14-07"


def test_find_results_dirs_parent_and_self(tmp_path: Path) -> None:
    (found,), warnings = find_results_dirs(BASELINE)
    assert found == BASELINE / TS and warnings == ()
    assert find_results_dirs(BASELINE / TS)[0] == (BASELINE / TS,)
    (tmp_path / "results_2020-01-01_00-00-00").symlink_to(BASELINE / TS)
    found2, warnings2 = find_results_dirs(tmp_path)
    assert found2 == () and "symbolic link" in str(warnings2[0])
    with pytest.raises(ReportingError, match="No such results directory"):
        find_results_dirs(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ReportingError, match="Not a directory"):
        find_results_dirs(tmp_path / "file")


def test_current_layout_fields() -> None:
    rs = load_results_dir(BASELINE / TS)
    p2p, pvp = rs.runs
    assert (p2p.test, p2p.deployment, p2p.index, p2p.vswitch) == ("phy2phy_tput", "p2p", 0, "OvsDpdkVhost")
    assert (pvp.test, pvp.deployment, pvp.index) == ("pvp_tput", "pvp", 1)
    assert [t.frame_size_bytes for t in p2p.rows] == [64, 128, 256, 512, 1024, 1280, 1518]
    first = p2p.rows[0]
    assert first.rx_pps == 14203716.0 and first.tx_pps == 14203923.0
    assert first.rx_line_rate_percent == 47.724 and first.line == 2
    # MoonGen writes 0.000 latency: "not measured", never 0 ns.
    assert first.latency_avg_ns is None and first.latency_min_ns is None and first.frame_loss_percent is None
    assert (p2p.start_time, p2p.stop_time, p2p.execution_time) == (
        "2018-03-05 21:14:07",
        "2018-03-05 21:43:02",
        "00:28:55",
    )
    assert pvp.execution_time == "00:43:00"
    env = rs.env
    assert env["Kernel Version"] == "3.10.0-514.el7.x86_64"
    assert env["CPU"] == "Intel(R) Xeon(R) CPU E5-2620 v3 @ 2.40GHz"
    assert env["NIC(s)"].count("82599ES") == 2
    assert rs.qemu_version == "2.6.0" and rs.vsperf_report is not None
    assert rs.vsperf_report.name == "OvsDpdkVhost_test_report.rst"
    assert {p.name for p in rs.logs} == {
        "vsperf-overall_2018-03-05_21-14-07.log",
        "host-cmds_2018-03-05_21-14-07.log",
        "traffic-gen_2018-03-05_21-14-07.log",
    }
    assert rs.warnings == ()


def test_pidstat_averages() -> None:
    rs = load_results_dir(BASELINE / TS)
    procs = {p.process: p for p in rs.runs[1].processes}
    assert procs["ovs-vswitchd"].cpu_percent == 199.92
    assert procs["ovs-vswitchd"].rss_kib == 143591 and procs["ovs-vswitchd"].mem_percent == 0.22
    assert procs["ovsdb-server"].cpu_percent == 0.0 and procs["ovsdb-server"].rss_kib == 5716
    legacy = load_results_dir(LEGACY / "results_2017-03-01_10-00-00")
    lprocs = {p.process: p for p in legacy.runs[1].processes}
    assert lprocs["ovs-vswitchd"].cpu_percent == 200.11 and lprocs["ovs-vswitchd"].rss_kib == 142728


def test_pidstat_shown_on_page(tmp_path: Path) -> None:
    outcome = generate_report([BASELINE], [CANDIDATE], tmp_path / "out")
    report = json.loads(outcome.report_json.read_text())
    pvp = next(t for t in report["tests"] if t["test"] == "pvp_tput")
    vswitchd = [p for p in pvp["processes"]["baseline"] if p["process"] == "ovs-vswitchd"]
    assert vswitchd[0]["cpu_percent"] == 199.92
    html = outcome.index_html.read_text()
    assert "ovs-vswitchd / ovsdb-server (pidstat averages)" in html and "199.92" in html


def test_repeats_share_one_directory() -> None:
    rs = load_results_dir(REPEATS / "results_2018-04-11_03-30-12")
    assert [(r.test, r.index) for r in rs.runs] == [("phy2phy_tput", 0), ("phy2phy_tput", 1)]
    assert rs.runs[1].rows[0].rx_pps == 13750463.0


def _with_moongen_log(copy_results: Any, log: Path, rx_mpps: str | None = None) -> Path:
    src = copy_results(BASELINE, "with_moongen")
    dest = src / TS / "moongen" / "phy2phy_tput" / "64"
    dest.mkdir(parents=True)
    text = log.read_text()
    if rx_mpps is not None:
        text = text.replace("Rx Mpps: 14.203716", f"Rx Mpps: {rx_mpps}")
    (dest / "moongen-run.log").write_text(text)
    return src


def test_moongen_log_agrees(tmp_path: Path, copy_results: Any) -> None:
    src = _with_moongen_log(copy_results, MOONGEN / "bidir_64B" / "moongen-run.log")
    rs = load_results_dir(src / TS)
    (check,) = rs.runs[0].moongen_checks
    assert check.ok and check.tx_frames == 426117640 and check.rx_frames == 426111445
    assert check.loss_frames == 6195 and check.log_rx_pps == pytest.approx(14203716.0)
    assert rs.runs[1].moongen_checks == ()  # the log sits under phy2phy_tput/
    outcome = generate_report([src], [CANDIDATE], tmp_path / "out")
    assert "MoonGen raw log cross-check" in outcome.index_html.read_text()
    assert not any("MoonGen" in w for w in outcome.warnings)


def test_moongen_log_mismatch_is_flagged(tmp_path: Path, copy_results: Any) -> None:
    src = _with_moongen_log(copy_results, MOONGEN / "bidir_64B" / "moongen-run.log", rx_mpps="14.103716")
    outcome = generate_report([src], [CANDIDATE], tmp_path / "out")
    warning = next(w for w in outcome.warnings if "MoonGen raw log disagrees" in w)
    assert "result_0_phy2phy_tput_p2p.csv' line 2" in warning and "Rx rate" in warning
    report = json.loads(outcome.report_json.read_text())
    (check,) = next(t for t in report["tests"] if t["test"] == "phy2phy_tput")["moongen_checks"]
    assert check["ok"] is False and check["side"] == "baseline"
    assert "MISMATCH" in outcome.index_html.read_text()


def test_moongen_old_format_explains_zero_row(tmp_path: Path, copy_results: Any) -> None:
    src = copy_results(BASELINE.parent / "broken" / "zero_throughput", "zero_with_log")
    dest = src / TS / "moongen" / "phy2phy_tput" / "64"
    dest.mkdir(parents=True)
    shutil.copy(MOONGEN / "old_format_no_tx_mpps" / "moongen-run.log", dest / "moongen-run.log")
    rs = load_results_dir(src / TS)
    (check,) = rs.runs[0].moongen_checks
    assert not check.ok and check.log_tx_pps is None
    assert check.log_rx_pps == pytest.approx(14.20e6) and check.csv_rx_pps == 0.0
    texts = [str(w) for w in rs.warnings]
    assert any("no 'Tx Mpps:'" in t for t in texts)
    assert any("disagrees" in t and "Rx rate" in t for t in texts)


def test_environment_from_md_without_rst(copy_results: Any) -> None:
    src = copy_results(CANDIDATE, "md_only")
    run_dir = next(src.glob("results_*"))
    for rst in run_dir.glob("*.rst"):
        rst.unlink()
    rs = load_results_dir(run_dir)
    assert rs.ovs_version == "2.9.1" and rs.dpdk_version == "17.11.2"
    assert rs.env["Board"] == "Dell Inc. 02C2CP [2 sockets]" and rs.vsperf_report is None


def test_trafficgen_mode_and_matrix_files_are_ignored(copy_results: Any) -> None:
    src = copy_results(BASELINE, "extra_files")
    (src / TS / "result.csv").write_text("throughput_rx_fps,packet_size\r\n1,64\r\n")
    (src / TS / "result_performance_matrix.rst").write_text("matrix\n")
    rs = load_results_dir(src / TS)
    assert [r.csv_path.name for r in rs.runs] == [
        "result_0_phy2phy_tput_p2p.csv",
        "result_1_pvp_tput_pvp.csv",
    ]
    assert rs.warnings == ()
