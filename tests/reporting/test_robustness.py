"""Check that corrupt or partial VSperf results give a report for what is valid plus warnings.

One test per case of issue 3 "Robustness"; each asserts the numbers that stay valid, the
INVALID cells, and a warning naming the file and row.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from ovsperf_common.exitcodes import ExitCode
from reporting.api import ReportOutcome, generate_report
from reporting.errors import NoResultsError
from tests.reporting.conftest import BASELINE, BROKEN, CANDIDATE, LEGACY, REPEATS

TS = "results_2018-03-05_21-14-07"
P2P_CSV = "result_0_phy2phy_tput_p2p.csv"


def _run(
    tmp_path: Path, baseline: list[Path], current: list[Path]
) -> tuple[ReportOutcome, dict[str, Any], str]:
    outcome = generate_report(baseline, current, tmp_path / "out")
    report = json.loads(outcome.report_json.read_text(encoding="utf-8"))
    html = outcome.index_html.read_text(encoding="utf-8")
    assert report["warnings"] == list(outcome.warnings)
    return outcome, report, html


def _rows(report: dict[str, Any], test: str) -> dict[int, dict[str, Any]]:
    (entry,) = [t for t in report["tests"] if t["test"] == test]
    return {r["frame_size_bytes"]: r for r in entry["rows"]}


def _warning(outcome: ReportOutcome, *needles: str) -> str:
    hits = [w for w in outcome.warnings if all(n in w for n in needles)]
    assert hits, f"no warning with {needles!r} in {outcome.warnings!r}"
    return hits[0]


def test_truncated_csv(tmp_path: Path) -> None:
    outcome, report, _ = _run(tmp_path, [BASELINE], [BROKEN / "truncated_csv"])
    p2p = _rows(report, "phy2phy_tput")
    assert [s for s, r in p2p.items() if r["verdict"] != "INVALID"] == [64, 128, 256]
    assert p2p[64]["current_fps"] == pytest.approx(14203716.0)
    assert p2p[512]["verdict"] == "INVALID" and p2p[512]["rel_change_percent"] is None
    assert "No 512 B row on the current side" in p2p[512]["reason"]
    _warning(outcome, P2P_CSV, "line 5", "cut short")
    assert outcome.counts["INVALID"] == 4 and outcome.exit_code is ExitCode.ERROR
    assert all(r["verdict"] == "PASS" for r in _rows(report, "pvp_tput").values())


def test_missing_csv_for_test_named_in_log(tmp_path: Path) -> None:
    outcome, report, html = _run(tmp_path, [BASELINE], [BROKEN / "missing_csv"])
    warning = _warning(outcome, "vsperf-overall_2018-03-05_21-14-07.log", "line 354", "pvp_tput")
    assert "Failed to run test" in warning
    pvp = _rows(report, "pvp_tput")
    assert len(pvp) == 7 and all(r["verdict"] == "INVALID" for r in pvp.values())
    assert all(r["baseline_fps"] is not None and r["current_fps"] is None for r in pvp.values())
    assert report["current"][0]["failed_tests"] == ["pvp_tput"]
    assert "pvp_tput: no result (failed)" in html
    assert all(r["verdict"] == "PASS" for r in _rows(report, "phy2phy_tput").values())


def test_unknown_and_empty_values(tmp_path: Path, copy_results: Any) -> None:
    outcome, report, _ = _run(tmp_path, [BASELINE], [BROKEN / "unknown_values"])
    _warning(outcome, P2P_CSV, "line 2", "'tx_rate_fps'", "2-8")
    p2p = _rows(report, "phy2phy_tput")
    assert all(r["verdict"] == "PASS" and r["rel_change_percent"] == 0 for r in p2p.values())
    # An empty throughput field (DictWriter restval '') is "missing": INVALID, not 0.
    src = copy_results(BASELINE, "empty_rx")
    csv = src / TS / P2P_CSV
    lines = csv.read_bytes().split(b"\r\n")
    lines[3] = b"," + lines[3].split(b",", 1)[1]  # 256 B row, throughput_rx_fps = ''
    csv.write_bytes(b"\r\n".join(lines))
    outcome2 = generate_report([BASELINE], [src], tmp_path / "out2")
    report2 = json.loads(outcome2.report_json.read_text())
    assert _rows(report2, "phy2phy_tput")[256]["verdict"] == "INVALID"
    assert "missing or unparsable" in _rows(report2, "phy2phy_tput")[256]["reason"]
    _warning(outcome2, P2P_CSV, "'throughput_rx_fps'", "line(s) 4")


def test_zero_throughput_is_invalid_not_minus_100(tmp_path: Path) -> None:
    outcome, report, html = _run(tmp_path, [BASELINE], [BROKEN / "zero_throughput"])
    row = _rows(report, "phy2phy_tput")[64]
    assert row["verdict"] == "INVALID" and row["rel_change_percent"] is None
    assert row["current_fps"] is None and row["current_n"] == 0
    assert f"'{P2P_CSV}' line 2" in row["reason"]
    _warning(outcome, P2P_CSV, "line 2", "Throughput is 0")
    assert outcome.counts == {
        "PASS": 13,
        "REGRESSION": 0,
        "IMPROVEMENT": 0,
        "UNSTABLE": 0,
        "INVALID": 1,
        "NO_BASELINE": 0,  # added with the NO_BASELINE verdict: every verdict is counted
    }
    assert outcome.exit_code is ExitCode.ERROR and outcome.overall == "INVALID"
    assert "-100" not in html
    # Zero in the baseline is just as INVALID.
    outcome_b = generate_report([BROKEN / "zero_throughput"], [CANDIDATE], tmp_path / "out_b")
    assert outcome_b.counts["INVALID"] == 1


def test_non_utf8_bytes(tmp_path: Path) -> None:
    outcome, report, html = _run(tmp_path, [BASELINE], [BROKEN / "non_utf8"])
    _warning(outcome, "result_0_phy2phy_tput_p2p.rst", "line 15", "not UTF-8")
    assert report["current"][0]["environment"]["Board"] == "Dell Inc.\ufffd 02C2CP [2 sockets]"
    assert outcome.counts["PASS"] == 14
    # The differing Board is highlighted in the environment table.
    assert '<td class="l diff">Dell Inc.\ufffd 02C2CP [2 sockets]</td>' in html


def test_html_injection_is_inert(tmp_path: Path) -> None:
    outcome, report, html = _run(tmp_path, [BASELINE], [BROKEN / "html_injection"])
    assert report["current"][0]["tests"][0]["vswitch"] == "<script>alert(1)</script>"
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script" not in html.lower()
    assert outcome.counts["PASS"] == 14


def test_injection_in_every_field(tmp_path: Path, copy_results: Any) -> None:
    evil = '<img src=x onerror="alert(2)"><script>alert(1)</script>'
    src = copy_results(BASELINE, "evil")
    run_dir = src / TS
    csv = run_dir / P2P_CSV
    text = csv.read_bytes().decode()
    text = text.replace(",phy2phy_tput,p2p,", ',"../' + evil.replace('"', '""') + '",p2p,')
    csv.write_bytes(text.encode())
    rst = run_dir / "result_0_phy2phy_tput_p2p.rst"
    rst.write_bytes(rst.read_bytes().replace(b"* OS: Red Hat", ("* OS: " + evil).encode()))
    from datetime import UTC, datetime

    from reporting.api import TesterVerdict

    verdict = TesterVerdict("FAIL", evil, evil, evil, datetime(2026, 1, 2, 3, 4, tzinfo=UTC))
    outcome = generate_report([BASELINE], [src], tmp_path / "out", tester_verdict=verdict, title=evil)
    html = outcome.index_html.read_text()
    assert "<script" not in html.lower() and "<img src=x" not in html
    assert html.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 5
    graphs = sorted(p.name for p in (tmp_path / "out" / "graphs").iterdir())
    assert all("/" not in g and "<" not in g and not g.startswith(".") for g in graphs)
    assert all(
        p.resolve().is_relative_to((tmp_path / "out").resolve()) for p in (tmp_path / "out").rglob("*")
    )


def test_mismatched_frame_sizes(tmp_path: Path, copy_results: Any) -> None:
    src = copy_results(CANDIDATE, "fewer_sizes")
    csv = next((src).glob("results_*/result_1_pvp_tput_pvp.csv"))
    lines = csv.read_bytes().split(b"\r\n")
    csv.write_bytes(b"\r\n".join(line for line in lines if b",1518,pvp_tput" not in line))
    outcome, report, _ = _run(tmp_path, [BASELINE], [src])
    pvp = _rows(report, "pvp_tput")
    assert pvp[1518]["verdict"] == "INVALID" and "No 1518 B row on the current side" in pvp[1518]["reason"]
    assert pvp[64]["verdict"] == "REGRESSION"
    _warning(outcome, "pvp_tput", "1518 B", "frame sizes differ")
    assert outcome.exit_code is ExitCode.REGRESSION  # a regression outranks INVALID cells


def test_test_on_one_side_only(tmp_path: Path) -> None:
    # A test only the current side has is new: NO_BASELINE (was INVALID before review1).
    outcome, report, html = _run(tmp_path, [REPEATS], [BASELINE])
    pvp = _rows(report, "pvp_tput")
    assert all(r["verdict"] == "NO_BASELINE" and r["baseline_fps"] is None for r in pvp.values())
    assert all("Test not present on the baseline side" in r["reason"] for r in pvp.values())
    assert pvp[64]["current_fps"] == pytest.approx(5102387.0) and pvp[64]["rel_change_percent"] is None
    assert pvp[64]["current_line_rate_percent"] == pytest.approx(17.144, abs=5e-4)
    _warning(outcome, "'pvp_tput'", "no result on the baseline side", "NO_BASELINE")
    assert outcome.counts["NO_BASELINE"] == 7 and report["counts"]["NO_BASELINE"] == 7
    assert outcome.counts["INVALID"] == 0 and outcome.counts["UNSTABLE"] == 1  # p2p 64 B, n = 2 vs 1
    assert outcome.exit_code is ExitCode.OK and outcome.overall == report["overall"] == "PASS"
    assert "NEW / no baseline" in html
    # The other way round a test measured before and missing now is suspicious: INVALID, exit 2.
    outcome2, report2, _ = _run(tmp_path / "reverse", [BASELINE], [REPEATS])
    pvp2 = _rows(report2, "pvp_tput")
    assert all(r["verdict"] == "INVALID" for r in pvp2.values())
    assert all("Test not present on the current side" in r["reason"] for r in pvp2.values())
    assert outcome2.exit_code is ExitCode.ERROR and outcome2.counts["NO_BASELINE"] == 0


def test_test_the_baseline_failed_is_invalid(tmp_path: Path) -> None:
    outcome, report, _ = _run(tmp_path, [BROKEN / "missing_csv"], [CANDIDATE])
    pvp = _rows(report, "pvp_tput")
    assert all(r["verdict"] == "INVALID" and r["current_fps"] is not None for r in pvp.values())
    _warning(outcome, "'pvp_tput'", "no result on the baseline side", "failed in", "INVALID")
    assert outcome.exit_code is ExitCode.ERROR
    assert outcome.counts["NO_BASELINE"] == 0 and outcome.counts["INVALID"] == 7


def test_new_test_with_a_zero_row(tmp_path: Path, copy_results: Any) -> None:
    src = copy_results(BASELINE, "new_pvp_zero")
    csv = src / TS / "result_1_pvp_tput_pvp.csv"
    lines = csv.read_bytes().split(b"\r\n")
    lines[1] = b"0.000000," + lines[1].split(b",", 1)[1]  # 64 B row, throughput_rx_fps = 0
    csv.write_bytes(b"\r\n".join(lines))
    outcome, report, _ = _run(tmp_path, [REPEATS], [src])
    pvp = _rows(report, "pvp_tput")
    assert pvp[64]["verdict"] == "INVALID" and "Throughput 0 on the current side" in pvp[64]["reason"]
    assert [r["verdict"] for s, r in pvp.items() if s != 64] == ["NO_BASELINE"] * 6
    assert outcome.exit_code is ExitCode.ERROR


def test_duplicate_result_directories(tmp_path: Path, copy_results: Any) -> None:
    copy = copy_results(CANDIDATE, "copy_of_candidate")
    outcome, report, _ = _run(tmp_path, [BASELINE], [CANDIDATE, CANDIDATE, copy])
    assert len(report["current"]) == 1
    _warning(outcome, "given twice")
    _warning(outcome, "copy_of_candidate", "duplicate results directory")
    p2p = _rows(report, "phy2phy_tput")
    assert p2p[64]["current_n"] == 1 and p2p[64]["method"] == "single"
    assert p2p[64]["rel_change_percent"] == pytest.approx(-3.0, abs=5e-4)


def test_legacy_danube_layout(tmp_path: Path) -> None:
    outcome, report, _ = _run(tmp_path, [LEGACY], [CANDIDATE])
    base = report["baseline"][0]
    assert base["ovs_version"] == "2.6.1" and base["dpdk_version"] == "16.11.0"
    assert [t["index"] for t in base["tests"]] == [None, None]
    assert [t["csv"] for t in base["tests"]] == ["result_phy2phy_tput_p2p.csv", "result_pvp_tput_pvp.csv"]
    assert {s["label"] for s in base["sources"]} >= {"overall.log", "OvsDpdkVhost_test_report.rst"}
    # (d) used exactly the (a) inputs, so the deltas equal (a) vs (b).
    assert _rows(report, "phy2phy_tput")[64]["rel_change_percent"] == pytest.approx(-3.0, abs=5e-4)
    assert _rows(report, "pvp_tput")[64]["verdict"] == "REGRESSION"
    assert outcome.counts["INVALID"] == 0
    assert (tmp_path / "out" / "sources" / "baseline-0" / "overall.log.txt").is_file()


def test_repeats_in_one_directory_and_several_directories(tmp_path: Path) -> None:
    outcome, report, html = _run(tmp_path, [BASELINE, LEGACY], [REPEATS, CANDIDATE])
    row = _rows(report, "phy2phy_tput")[64]
    assert row["baseline_n"] == 2 and row["current_n"] == 3 and row["method"] == "welch-t"
    assert row["baseline_stdev_fps"] == 0.0  # (a) and (d) hold identical numbers
    assert 0 <= row["p_value"] < 0.05
    assert len(row["per_result"]) == 2
    repeats, candidate = row["per_result"]
    assert repeats["mpps"] == pytest.approx((13.813702 + 13.750463) / 2, abs=1e-6)
    assert candidate["fps"] == 13777605.0 and candidate["l1_mbps"] == pytest.approx(9258.551, abs=1e-3)
    assert candidate["line_rate_percent"] == pytest.approx(46.293, abs=5e-4)
    assert candidate["rel_change_percent"] == pytest.approx(-3.0, abs=5e-4)
    assert "Each current result" in html
    _warning(outcome, "baseline side pools results of different versions")


def test_empty_results_directory_is_no_results(tmp_path: Path) -> None:
    empty = tmp_path / "results_2020-01-01_00-00-00"
    empty.mkdir()
    with pytest.raises(NoResultsError) as info:
        generate_report([BASELINE], [empty], tmp_path / "out")
    assert info.value.side == "current"
    assert not (tmp_path / "out").exists()


def test_header_only_csv_is_skipped_with_warning(tmp_path: Path, copy_results: Any) -> None:
    src = copy_results(CANDIDATE, "header_only")
    csv = next(src.glob("results_*/result_1_pvp_tput_pvp.csv"))
    csv.write_bytes(csv.read_bytes().split(b"\r\n")[0] + b"\r\n")
    outcome, report, _ = _run(tmp_path, [BASELINE], [src])
    _warning(outcome, "result_1_pvp_tput_pvp.csv", "No usable data row")
    assert all(r["verdict"] == "INVALID" for r in _rows(report, "pvp_tput").values())


def test_unreadable_csv_does_not_crash(tmp_path: Path, copy_results: Any) -> None:
    src = copy_results(CANDIDATE, "garbage")
    csv = next(src.glob("results_*/result_0_phy2phy_tput_p2p.csv"))
    csv.write_bytes(b'\x00\xff\xfe garbage "unterminated\n,,,\n')
    outcome, report, _ = _run(tmp_path, [BASELINE], [src])
    _warning(outcome, "result_0_phy2phy_tput_p2p.csv")
    assert all(r["verdict"] == "INVALID" for r in _rows(report, "phy2phy_tput").values())
    assert all(r["verdict"] != "INVALID" for r in _rows(report, "pvp_tput").values())
    shutil.rmtree(src)


def test_truncated_csv_is_not_called_a_frame_size_mismatch(tmp_path: Path) -> None:
    """The rows a truncated CSV lost are blamed on the file, not on differing frame sizes."""
    outcome, report, html = _run(tmp_path, [BASELINE], [BROKEN / "truncated_csv"])
    p2p = _rows(report, "phy2phy_tput")
    for size in (512, 1024, 1280, 1518):
        assert f"'{P2P_CSV}' lost rows (see Warnings)" in p2p[size]["reason"]
        assert "frame sizes differ" not in p2p[size]["reason"]
    assert "frame sizes differ" not in " ".join(outcome.warnings)
    from lxml import html as lxml_html

    (finding,) = lxml_html.fromstring(html).xpath("//ul[@id='findings']/li")
    assert " ".join(finding.text_content().split()).startswith(
        "INVALID phy2phy_tput / p2p: 512 B; 1024 B; 1280 B; 1518 B. No 512 B row on the current side"
    )


def test_byte_order_mark_and_negative_or_nan_throughput(tmp_path: Path, copy_results: Any) -> None:
    """A CSV re-saved with a UTF-8 BOM still loads; negative or NaN throughput is INVALID."""
    src = copy_results(CANDIDATE, "bom")
    csv = next(src.glob(f"results_*/{P2P_CSV}"))
    lines = csv.read_bytes().split(b"\r\n")
    lines[0] = b"\xef\xbb\xbf" + lines[0]
    lines[2] = b"-5.0," + lines[2].split(b",", 1)[1]  # 128 B
    lines[3] = b"nan," + lines[3].split(b",", 1)[1]  # 256 B
    csv.write_bytes(b"\r\n".join(lines))
    outcome, report, _ = _run(tmp_path, [BASELINE], [src])
    p2p = _rows(report, "phy2phy_tput")
    assert p2p[64]["current_fps"] == pytest.approx(13777605.0) and p2p[64]["verdict"] == "PASS"
    assert p2p[128]["verdict"] == "INVALID" and p2p[256]["verdict"] == "INVALID"
    assert [s for s, r in p2p.items() if r["verdict"] == "INVALID"] == [128, 256]
    assert not any("missing from the header" in w for w in outcome.warnings)
    assert "Throughput negative (-5 fps) on the current side" in p2p[128]["reason"]
    _warning(outcome, P2P_CSV, "line 3", "Throughput is negative (-5) at 128 B")
    _warning(outcome, P2P_CSV, "line 4", "'nan', not a finite number")
