"""JUnit XML of a report and the rule deciding each cell: the trend with enough history, else the
baseline comparison; through the library and through generate-report --db --junit."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from reporting.api import generate_report
from reporting.model import TREND_MIN_HISTORY, TrendCell, TrendVerdict
from resultstore.connect import database_url
from resultstore.report_cli import main as report_main
from resultstore.store import ResultStore
from tests.ciflow.helpers import BASELINE, CANDIDATE
from tests.resultstore.history import add_history_of


def cases(path: Path) -> dict[str, ET.Element]:
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    return {f"{c.get('classname')} {c.get('name')}": c for c in root.iter("testcase")}


def test_every_report_has_junit_with_one_case_per_cell(tmp_path: Path) -> None:
    outcome = generate_report([BASELINE], [CANDIDATE], tmp_path / "r", junit=tmp_path / "jenkins.xml")
    assert (tmp_path / "jenkins.xml").read_bytes() == (tmp_path / "r" / "junit.xml").read_bytes()
    found = cases(tmp_path / "jenkins.xml")
    assert len(found) == 14
    suite = ET.parse(tmp_path / "jenkins.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "14" and suite.get("failures") == "1"
    failure = found["pvp_tput.pvp 64B NDR"].find("failure")
    assert failure is not None and failure.get("type") == "REGRESSION"
    assert failure.get("message", "").startswith("REGRESSION vs baseline:")
    assert all(c.find("failure") is None for k, c in found.items() if k != "pvp_tput.pvp 64B NDR")
    out = found["phy2phy_tput.p2p 64B NDR"].findtext("system-out") or ""
    assert "baseline verdict: PASS" in out and "report: " in out
    assert outcome.regressions == ("pvp_tput/pvp 64 B NDR: -6.00 % vs baseline",)


def test_junit_is_valid_when_a_path_holds_a_non_utf8_byte(tmp_path: Path) -> None:
    """Issue 25 item 20: a report directory named with byte 0xE9 (Latin-1 'é'; Python decodes it to
    the lone surrogate U+DCE9) made the JUnit unwritable; the byte is written as ``\\xe9``."""
    output = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9"))
    generate_report([BASELINE], [CANDIDATE], output, junit=tmp_path / "jenkins.xml")
    found = cases(tmp_path / "jenkins.xml")  # UTF-8 XML a parser accepts
    assert len(found) == 14
    out = found["phy2phy_tput.p2p 64B NDR"].findtext("system-out") or ""
    assert f"report: {tmp_path}/caf\\xe9/index.html" in out
    (tmp_path / "jenkins.xml").read_bytes().decode("utf-8")


def trend(verdict: TrendVerdict, history: int) -> TrendCell:
    return TrendCell(verdict, history, f"{verdict.value} by construction", step_percent=-4.0, confidence=0.99)


def test_trend_decides_with_enough_history(tmp_path: Path) -> None:
    enough = TREND_MIN_HISTORY
    given = {
        # The baseline says REGRESSION, a long history says NORMAL: the cell passes.
        ("pvp_tput", "pvp", 64, "", 0.0): trend(TrendVerdict.NORMAL, enough),
        # The baseline says PASS, the history REGRESSION: the cell fails.
        ("phy2phy_tput", "p2p", 128, "", 0.0): trend(TrendVerdict.REGRESSION, enough),
        # Too short a history: shown, the baseline decides (PASS).
        ("phy2phy_tput", "p2p", 256, "", 0.0): trend(TrendVerdict.REGRESSION, enough - 1),
        # A marked regression never fails.
        ("phy2phy_tput", "p2p", 512, "", 0.0): trend(TrendVerdict.EXPECTED, enough),
    }
    outcome = generate_report([BASELINE], [CANDIDATE], tmp_path / "r", trend=given)
    assert outcome.counts["REGRESSION"] == 1 and outcome.counts["PASS"] == 13
    assert outcome.regressions == (
        "phy2phy_tput/p2p 128 B NDR: trend REGRESSION by construction (+0.50 % vs baseline)",
    )
    found = cases(tmp_path / "r" / "junit.xml")
    assert found["pvp_tput.pvp 64B NDR"].find("failure") is None
    failure = found["phy2phy_tput.p2p 128B NDR"].find("failure")
    assert failure is not None and failure.get("message") == "trend REGRESSION: REGRESSION by construction"
    assert found["phy2phy_tput.p2p 256B NDR"].find("failure") is None
    assert "trend verdict: REGRESSION (shown only; 9 earlier builds)" in (
        found["phy2phy_tput.p2p 256B NDR"].findtext("system-out") or ""
    )
    data = json.loads((tmp_path / "r" / "report.json").read_text(encoding="utf-8"))
    rows = {(t["test"], r["frame_size_bytes"]): r for t in data["tests"] for r in t["rows"]}
    assert rows[("pvp_tput", 64)]["verdict"] == "REGRESSION" and rows[("pvp_tput", 64)]["decision"] == "PASS"
    assert rows[("phy2phy_tput", 128)]["trend"]["decides"] is True
    assert rows[("phy2phy_tput", 256)]["trend"]["decides"] is False
    assert rows[("phy2phy_tput", 1024)]["trend"] is None
    page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    assert "(trend decides)" in page and "Which verdict decides:" in page
    findings = page[page.index('id="findings"') : page.index("</ul>")]
    assert "128 B trend: REGRESSION by construction" in findings and "pvp_tput" not in findings


def test_generate_report_db_judges_against_the_stores_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = database_url(str(tmp_path / "results.sqlite"))
    with ResultStore.open(db) as store:
        # History as high as the candidate, except pvp 64 B: 8 % above it (the candidate regresses).
        add_history_of(
            store,
            [CANDIDATE],
            scenario="OVS_DPDK2q",
            builds=TREND_MIN_HISTORY + 2,
            factors={("pvp_tput", 64): 1.08},
        )
    argv = [
        "--baseline", str(BASELINE), "--output-dir", str(tmp_path / "r"), "--junit", str(tmp_path / "j.xml"),
        "--db", db, "--scenario", "OVS_DPDK2q", str(CANDIDATE),
    ]  # fmt: skip
    assert report_main(argv) == 1
    out, _ = capsys.readouterr()
    assert out.strip() == str(tmp_path / "r" / "index.html")
    found = cases(tmp_path / "j.xml")
    failed = [k for k, c in found.items() if c.find("failure") is not None]
    assert failed == ["pvp_tput.pvp 64B NDR"]
    message = found["pvp_tput.pvp 64B NDR"].find("failure").get("message", "")  # type: ignore[union-attr]
    assert message.startswith("trend REGRESSION: a worse group starts here: -7.")
    out_text = found["phy2phy_tput.p2p 64B NDR"].findtext("system-out") or ""
    assert "trend verdict: NORMAL (decides; 12 earlier builds)" in out_text
