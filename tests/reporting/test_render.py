"""Check what the page shows: colours, n/a, latency/loss columns, method text, tester verdict, graphs."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lxml import html as lxml_html

from reporting import api
from reporting.api import generate_report
from tests.reporting.conftest import BASELINE, CANDIDATE, REPEATS

TS = "results_2018-03-05_21-14-07"


def _table_rows(page: str, index: int) -> list[list[str]]:
    doc = lxml_html.fromstring(page)
    table = doc.xpath("//table[contains(@class, 'results')]")[index]
    return [
        [c.text_content().strip() for c in tr.xpath("./td")]
        for tr in table.xpath(".//tr")
        if tr.xpath("./td")
    ]


def test_single_run_page(tmp_path: Path) -> None:
    outcome = generate_report([BASELINE], [CANDIDATE], tmp_path / "out")
    page = outcome.index_html.read_text()
    assert "summed over both directions" in page and "<b>L1</b> rate" in page
    assert "no noise estimate is possible" in page
    assert "Latency: n/a (not measured; MoonGen reports 0 ns" in page
    assert "avg latency" not in page and "frame loss [%]" not in page
    p2p = _table_rows(page, 0)
    assert p2p[0][:6] == ["64", "14.203716", "9544.9", "13.777605", "9258.6", "46.293"]
    assert p2p[0][6] == "-3.000" and p2p[0][9] == "PASS"
    pvp = _table_rows(page, 1)
    assert pvp[0][6] == "-6.000" and pvp[0][9] == "REGRESSION"
    doc = lxml_html.fromstring(page)
    rel_cells = doc.xpath("//table[contains(@class,'results')]//tr/td[7]")
    classes = {c.text_content().strip(): c.get("class") for c in rel_cells}
    assert (
        classes["-3.000"] == "rel-warn" and classes["-6.000"] == "rel-regression" and classes["+0.500"] == ""
    )
    # Overview: versions, times and links to VSperf's own report and logs.
    overview = doc.xpath("//table[@id='overview-table']")[0].text_content()
    assert "2.9.0" in overview and "17.11.2" in overview and "2018-04-10 22:01:55" in overview
    hrefs = doc.xpath("//table[@id='overview-table']//a/@href")
    assert "sources/baseline-0/OvsDpdkVhost_test_report.rst.txt" in hrefs
    assert all((tmp_path / "out" / h).is_file() for h in hrefs)
    # Environment: differing versions are highlighted, equal fields are not.
    diff_cells = [
        c.text_content() for c in doc.xpath("//table[@id='environment-table']//td[contains(@class,'diff')]")
    ]
    assert (
        "OvsDpdkVhost, Version: 2.9.1, GIT tag: None" in diff_cells and "17.11.2, GIT tag: None" in diff_cells
    )
    assert not any("Red Hat" in c for c in diff_cells)
    assert "Tester verdict" not in page


def test_graph_per_test(tmp_path: Path) -> None:
    outcome = generate_report([BASELINE], [CANDIDATE], tmp_path / "out")
    report = json.loads(outcome.report_json.read_text())
    for test in report["tests"]:
        png = tmp_path / "out" / test["graph"]
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
        assert f'src="{test["graph"]}"' in outcome.index_html.read_text()
    assert report["link_bps"] == 20e9 and "throughput_rx_percent" in report["link_source"]
    row = report["tests"][0]["rows"][0]
    assert row["line_rate_fps"] == 20e9 / ((64 + 20) * 8)


def test_tester_verdict_block(tmp_path: Path) -> None:
    verdict = api.TesterVerdict(
        "FAIL",
        "BZ1234567",
        "pvp 64 B drop confirmed",
        "qe@example.com",
        datetime(2026, 11, 22, 3, 0, tzinfo=UTC),
    )
    outcome = generate_report([BASELINE], [CANDIDATE], tmp_path / "out", tester_verdict=verdict)
    doc = lxml_html.fromstring(outcome.index_html.read_text())
    block = doc.xpath("//div[@id='tester-verdict']")[0].text_content()
    assert "FAIL" in block and "BZ1234567" in block and "pvp 64 B drop confirmed" in block
    assert "2026-11-22T03:00:00+00:00" in block
    report = json.loads(outcome.report_json.read_text())
    assert report["tester_verdict"] == {
        "verdict": "FAIL",
        "bug_id": "BZ1234567",
        "comment": "pvp 64 B drop confirmed",
        "tester": "qe@example.com",
        "recorded_at": "2026-11-22T03:00:00+00:00",
    }


def _trex_like(copy_results: Any, name: str, latency: str, loss: str) -> Path:
    """A results copy whose p2p CSV has real latency and a frame_loss_percent column (TRex style)."""
    src = copy_results(BASELINE, name)
    csv = src / TS / "result_0_phy2phy_tput_p2p.csv"
    lines = csv.read_bytes().decode().split("\r\n")
    lines[0] = lines[0].replace("avg_latency_ns,", "avg_latency_ns,frame_loss_percent,")
    out = [lines[0]]
    for line in lines[1:]:
        if line:
            fields = line.split(",")
            fields[6:9] = ["1000.000", latency, latency]
            fields.insert(9, loss)
            line = ",".join(fields)
        out.append(line)
    csv.write_bytes("\r\n".join(out).encode())
    return src


def test_latency_and_loss_columns_when_present(tmp_path: Path, copy_results: Any) -> None:
    base = _trex_like(copy_results, "trex_base", "12000.000", "0.0")
    cur = _trex_like(copy_results, "trex_cur", "Unknown", "0.001")
    outcome = generate_report([base], [cur], tmp_path / "out")
    page = outcome.index_html.read_text()
    assert "avg latency [ns]" in page and "frame loss [%]" in page
    row = _table_rows(page, 0)[0]
    # frame, 2 baseline, 3 current, rel, CI, n, verdict, latency base/cur, loss base/cur, reason
    assert row[10:14] == ["12000", "n/a", "0.0000", "0.0010"]
    pvp = _table_rows(page, 1)[0]
    assert len(pvp) == 11  # no latency/loss columns for the MoonGen pvp test
    report = json.loads(outcome.report_json.read_text())
    p2p_row = report["tests"][0]["rows"][0]
    assert p2p_row["baseline_latency_avg_ns"] == 12000.0 and p2p_row["current_latency_avg_ns"] is None


def test_statistics_page_states_method(tmp_path: Path) -> None:
    outcome = generate_report([BASELINE, CANDIDATE], [REPEATS], tmp_path / "out")
    page = outcome.index_html.read_text()
    assert "Welch's t-test" in page and "95 % confidence interval" in page
    row = _table_rows(page, 0)[0]
    assert re.fullmatch(r"\[[+-]\d+\.\d{3}, [+-]\d+\.\d{3}\]", row[7])
    assert row[8] == "2 / 2"
    assert " ± " in row[1] and " ± " in row[3]


def test_findings_summary_under_the_overall_verdict(tmp_path: Path) -> None:
    """The cells to look at are listed at the top, most urgent first, linked to their tables."""
    outcome = generate_report([BASELINE], [CANDIDATE], tmp_path / "out")
    doc = lxml_html.fromstring(outcome.index_html.read_text())
    (item,) = doc.xpath("//ul[@id='findings']/li")
    text = " ".join(item.text_content().split())
    assert text == "REGRESSION pvp_tput / pvp: 64 B -6.000 % (5.102 → 4.796 Mpps)"
    assert item.xpath(".//a/@href") == ["#test-2"] and doc.xpath("//h2[@id='test-2']")


def test_findings_group_new_tests_and_name_warnings(tmp_path: Path) -> None:
    outcome = generate_report([REPEATS], [BASELINE], tmp_path / "out")
    doc = lxml_html.fromstring(outcome.index_html.read_text())
    items = [" ".join(li.text_content().split()) for li in doc.xpath("//ul[@id='findings']/li")]
    assert items[0].startswith("UNSTABLE phy2phy_tput / p2p: 64 B +3.059 % (13.782 → 14.204 Mpps)")
    assert items[1].startswith(
        "NEW / no baseline pvp_tput / pvp: 64 B; 128 B; 256 B; 512 B; 1024 B; 1280 B; 1518 B. "
        "Test not present on the baseline side"
    )
    assert len(items) == 2
    assert "1 warning(s)" in doc.xpath("//p[a[@href='#warnings']]")[0].text_content()


def test_findings_when_everything_passes(tmp_path: Path) -> None:
    outcome = generate_report([BASELINE], [BASELINE], tmp_path / "out")
    doc = lxml_html.fromstring(outcome.index_html.read_text())
    assert doc.xpath("//p[@id='findings']")[0].text_content() == "Every cell is within the thresholds."


def test_graph_has_a_change_panel_sized_as_the_page_says(tmp_path: Path) -> None:
    import struct

    from reporting.render import GRAPH_SIZE_PX

    outcome = generate_report([BASELINE], [CANDIDATE], tmp_path / "out")
    doc = lxml_html.fromstring(outcome.index_html.read_text())
    for img in doc.xpath("//img[@class='graph']"):
        data = (tmp_path / "out" / img.get("src")).read_bytes()
        assert struct.unpack(">II", data[16:24]) == GRAPH_SIZE_PX  # PNG IHDR width, height
        assert (int(img.get("width")), int(img.get("height"))) == GRAPH_SIZE_PX
    assert GRAPH_SIZE_PX[1] > 500  # room for the "rel to base [%]" panel under the Mpps panel


def test_regression_bar_is_drawn_red_below_the_threshold(tmp_path: Path) -> None:
    from matplotlib.image import imread

    outcome = generate_report([BASELINE], [CANDIDATE], tmp_path / "out")
    report = json.loads(outcome.report_json.read_text())

    def red_pixels(graph: str) -> int:
        rgb = (imread(str(tmp_path / "out" / graph))[:, :, :3] * 255).round()
        return int(
            (
                (abs(rgb[:, :, 0] - 0xC0) < 3)
                & (abs(rgb[:, :, 1] - 0x39) < 3)
                & (abs(rgb[:, :, 2] - 0x2B) < 3)
            ).sum()
        )

    p2p, pvp = (t["graph"] for t in report["tests"])
    # Both draw the dashed −5 % line in that red; only pvp (64 B: −6 %) adds a whole bar of it.
    assert red_pixels(pvp) > red_pixels(p2p) + 1500


def test_changes_that_round_to_zero_are_not_shown_negative(tmp_path: Path) -> None:
    outcome = generate_report([BASELINE, CANDIDATE], [REPEATS, CANDIDATE], tmp_path / "out")
    report = json.loads(outcome.report_json.read_text())
    tiny = [
        pr["rel_change_percent"]
        for r in report["tests"][0]["rows"]
        for pr in r["per_result"]
        if pr["rel_change_percent"] is not None and -0.005 < pr["rel_change_percent"] < 0
    ]
    assert tiny, "the fixture should hold a small negative change"
    doc = lxml_html.fromstring(outcome.index_html.read_text())
    cells = " ".join(doc.xpath("//table[contains(@class, 'per-result')]")[0].text_content().split())
    assert "-0.00" not in cells and "+0.00" in cells
