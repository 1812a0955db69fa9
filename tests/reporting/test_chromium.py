"""Check the report the way a tester sees it: headless Chromium, screenshot, no script, images, tables.

Runs Debian's real ``chromium`` (installed by scripts/setup-debian.sh) over the DevTools protocol.
A control page proves the harness notices an executed script.
"""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reporting.api import generate_report
from tests.reporting.cdp import Browser, chromium
from tests.reporting.conftest import BASELINE, BROKEN, CANDIDATE, REPEATS
from tests.reporting.test_goals_latency import level, row, write_dir, write_latency

SCREENSHOT_COPY = Path("/tmp/ovsperf-reporting-screenshot.png")
"""A copy of the last screenshot for a human to look at (not read by any test)."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as b:
        yield b


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_control_page_with_script_is_detected(browser: Browser, tmp_path: Path) -> None:
    page = tmp_path / "control.html"
    page.write_text("<html><body><script>console.log('ran'); alert(1); undefinedFn();</script></body></html>")
    report = browser.open(page.as_uri())
    assert report.dialogs == ["1"]
    assert any("ran" in c for c in report.console)
    assert any("undefinedFn" in e for e in report.exceptions)


def test_report_renders_inert_with_images_and_tables(browser: Browser, tmp_path: Path) -> None:
    out = tmp_path / "out"
    # The html_injection baseline ((a)'s numbers) carries '<script>alert(1)</script>' in its vswitch column.
    generate_report([BROKEN / "html_injection"], [CANDIDATE], out)
    report = browser.open((out / "index.html").as_uri())
    assert report.dialogs == [] and report.exceptions == [] and report.console == []
    assert report.log_errors == []
    assert browser.evaluate("document.scripts.length") == 0
    assert "<script>alert(1)</script>" in browser.evaluate("document.body.innerText")
    images = browser.evaluate(
        "Array.from(document.images).map(i => "
        "[i.getAttribute('src'), i.complete, i.naturalWidth, i.naturalHeight])"
    )
    assert [src for src, *_ in images] == ["graphs/phy2phy_tput_p2p.png", "graphs/pvp_tput_pvp.png"]
    assert all(complete and width >= 700 and height >= 350 for _, complete, width, height in images)
    tables = browser.evaluate(
        "Array.from(document.querySelectorAll('table.results')).map(t => ["
        "t.rows.length, t.getBoundingClientRect().width, t.rows[2].cells[0].innerText.trim(),"
        "t.rows[2].cells[1].innerText.trim(), t.rows[2].cells[6].innerText.trim(),"
        "t.rows[2].cells[9].innerText.trim()])"
    )
    assert [t[0] for t in tables] == [9, 9]  # two header rows + 7 frame sizes
    assert all(t[1] > 600 for t in tables)
    p2p, pvp = tables
    assert p2p[2:] == ["64", "14.203716", "-3.000", "PASS"]
    assert pvp[2:] == ["64", "5.102387", "-6.000", "REGRESSION"]
    # Visible text size: tables must not be squeezed to unreadable widths.
    font_px = browser.evaluate(
        "parseFloat(getComputedStyle(document.querySelector('table.results td')).fontSize)"
    )
    assert font_px >= 12
    shot = tmp_path / "report.png"
    browser.screenshot(shot)
    width, height = _png_size(shot)
    assert width >= 1000 and height > 1500
    shutil.copyfile(shot, SCREENSHOT_COPY)


def test_statistics_page_renders(browser: Browser, tmp_path: Path) -> None:
    out = tmp_path / "out"
    generate_report([BASELINE], [REPEATS, CANDIDATE], out)
    report = browser.open((out / "index.html").as_uri())
    assert report.dialogs == [] and report.exceptions == [] and report.log_errors == []
    assert browser.evaluate("document.querySelectorAll('table.per-result').length") == 2
    assert browser.evaluate("Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)")
    shot = tmp_path / "stats.png"
    browser.screenshot(shot)
    assert _png_size(shot)[1] > 1500
    shutil.copyfile(shot, SCREENSHOT_COPY.with_name("ovsperf-reporting-screenshot-stats.png"))


def test_linked_sources_open_as_text(browser: Browser, tmp_path: Path) -> None:
    out = tmp_path / "out"
    generate_report([BASELINE], [CANDIDATE], out)
    hrefs = browser.open((out / "index.html").as_uri()) and browser.evaluate(
        "Array.from(document.querySelectorAll('#overview-table a')).map(a => a.href)"
    )
    assert len(hrefs) == 8 and all(h.endswith(".txt") for h in hrefs)
    report = browser.open(hrefs[0])
    assert report.log_errors == []
    assert (
        "Open vSwitch" in browser.evaluate("document.body.innerText")
        or browser.evaluate("document.contentType") == "text/plain"
    )


def test_verdict_and_findings_visible_above_the_fold(browser: Browser, tmp_path: Path) -> None:
    """A tester sees the overall verdict and what to look at without scrolling (top 900 px)."""
    out = tmp_path / "out"
    generate_report([REPEATS], [BASELINE], out)  # pvp_tput is new: NO_BASELINE, overall PASS
    report = browser.open((out / "index.html").as_uri())
    assert report.exceptions == [] and report.log_errors == []
    boxes = browser.evaluate(
        "['.overall .verdict', '#findings'].map(s => {"
        "const r = document.querySelector(s).getBoundingClientRect(); return [r.top, r.bottom];})"
    )
    assert all(0 <= top < bottom <= 900 for top, bottom in boxes)
    assert browser.evaluate("document.querySelector('.overall .verdict').innerText.trim()") == "PASS"
    findings = browser.evaluate("document.querySelector('#findings').innerText")
    assert "NEW / no baseline" in findings and "pvp_tput / pvp" in findings and "UNSTABLE" in findings
    # The new test's cells carry the distinct badge, not INVALID.
    badges = browser.evaluate(
        "Array.from(document.querySelectorAll('table.results')[1].querySelectorAll('.verdict'))"
        ".map(b => b.innerText.trim())"
    )
    assert badges == ["NEW / no baseline"] * 7


def test_latency_table_fits_a_1400_px_page(browser: Browser, tmp_path: Path) -> None:
    """Issue 25 item 13: at 1400 px the latency table was wider than the page (p99.9 and max cut off)."""
    sizes = (64, 128, 256, 512, 1024, 1280, 1518)
    base = write_dir(tmp_path, "2026-01-01_00-00-00", [row(s, 1e6, 2e6) for s in sizes])
    cur = write_dir(tmp_path, "2026-01-02_00-00-00", [row(s, 1e6, 2e6) for s in sizes])
    for path, slow in ((base, 237_849_500), (cur, 2_378_495_000)):
        document: dict[str, Any] = {"schema": 1, "results": []}
        for size in sizes:
            write_latency(path, [level(90, {123_456_789: 990, slow: 10})], size)
            document["results"] += json.loads((path / "ovsperf-latency.json").read_text())["results"]
        (path / "ovsperf-latency.json").write_text(json.dumps(document))
    out = tmp_path / "out"
    generate_report([base], [cur], out)
    browser.call("Emulation.setDeviceMetricsOverride",
                 {"width": 1400, "height": 900, "deviceScaleFactor": 1, "mobile": False})  # fmt: skip
    try:
        report = browser.open((out / "index.html").as_uri())
        assert report.exceptions == [] and report.log_errors == []
        tables = browser.evaluate(
            "Array.from(document.querySelectorAll('table.latency')).map(t => [t.scrollWidth,"
            " t.getBoundingClientRect().right, t.parentElement.scrollWidth - t.parentElement.clientWidth,"
            " t.rows.length, t.innerText])"
        )
        viewport = browser.evaluate("document.documentElement.clientWidth")
    finally:
        browser.call("Emulation.clearDeviceMetricsOverride")
    assert viewport <= 1400 and len(tables) == 1
    [(scroll_width, right, overflow, rows, text)] = tables
    assert scroll_width <= viewport and right <= viewport and overflow == 0, (scroll_width, right, viewport)
    assert rows >= 1 + len(sizes) * 2
    assert "p99.9" in text and "max" in text and "2378495000" in text.replace(",", "").replace(" ", "")
