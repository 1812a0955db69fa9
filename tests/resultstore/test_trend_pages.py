"""The trend pages as a tester sees them: headless Chromium, offline, from file:// and from a plain
web server; no JavaScript error or missing asset, hover text with the build's versions and
verdicts, and a click on a build opening its report."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from resultstore.cli import main
from resultstore.connect import database_url
from resultstore.store import ResultStore
from tests.reporting.cdp import Browser, chromium
from tests.resultstore.history import add_builds


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Trend pages of 30 builds (a 9 % regression at build 25, one outlier), each with a report."""
    root = tmp_path_factory.mktemp("trend")
    db = database_url(str(root / "results.sqlite"))
    with ResultStore.open(db) as store:
        levels = [7e6] * 25 + [6.37e6] * 5
        levels[10] = 3e6
        names = add_builds(store, levels)
        for name in names:
            report_dir = root / "reports" / name
            report_dir.mkdir(parents=True)
            (report_dir / "index.html").write_text(f"<html><body><h1 id='r'>report {name}</h1></body></html>")
            store.record_comparison(
                result_name=name,
                baseline_result_name=None,
                baseline_dirs=[],
                current_dirs=[],
                report_dir=report_dir,
                title=name,
                overall="PASS",
                counts={},
                warnings=[],
                thresholds={},
            )
    assert main(["--db", db, "-q", "trend", "--output-dir", str(root / "www" / "trend")]) == 0
    return root / "www" / "trend"


def _clean(report: object) -> None:
    assert report.exceptions == [] and report.dialogs == [] and report.log_errors == []  # type: ignore[attr-defined]
    assert [c for c in report.console if c.startswith(("error", "warning"))] == []  # type: ignore[attr-defined]


def test_series_page_renders_offline_with_hover_and_report_links(browser: Browser, pages: Path) -> None:
    page = pages / "series" / "OVS_DPDK1q__phy2phy_tput__p2p__64.html"
    report = browser.open(page.as_uri(), settle_s=2.0)
    _clean(report)
    assert browser.evaluate("document.body.getAttribute('data-ready')") == "1"
    assert browser.evaluate(
        "Array.from(document.scripts).map(s => s.getAttribute('src')).filter(Boolean)"
    ) == ["../plotly.min.js"]
    assert browser.evaluate("document.querySelectorAll('#graph .scatterlayer .point').length") >= 30
    hover = browser.evaluate("document.getElementById('graph').data[0].hovertext")
    assert len(hover) == 30
    assert "3.1.0-27.el9" in hover[27] and "DPDK 22.11.1-1.el9" in hover[27]
    assert "trend: NORMAL" in hover[27] and "Mpps" in hover[27]
    assert "trend: OUTLIER" in hover[10]
    names = [trace["name"] for trace in browser.evaluate("document.getElementById('graph').data")]
    assert "NDR regression" in names and "NDR outlier" in names and "NDR group average" in names
    # Hovering a build shows its label (Plotly draws it into the page).
    browser.evaluate("Plotly.Fx.hover('graph', [{curveNumber: 0, pointNumber: 27}])")
    assert "3.1.0-27.el9" in browser.evaluate("document.querySelector('.hoverlayer').textContent")
    links = browser.evaluate("document.getElementById('graph').data[0].customdata")
    assert links[27] == "../../../reports/openvswitch3.1-3.1.0-27.el9/index.html"
    assert (page.parent / links[27]).resolve().is_file()
    # A click on a build opens its report.
    browser.evaluate(
        f"document.getElementById('graph').emit('plotly_click', {{points: [{{customdata: {links[27]!r}}}]}})"
    )
    browser.wait_event("Page.loadEventFired")
    assert (
        browser.evaluate("document.getElementById('r').textContent") == "report openvswitch3.1-3.1.0-27.el9"
    )


def test_index_lists_open_regressions_first_and_links_each_graph(browser: Browser, pages: Path) -> None:
    report = browser.open((pages / "index.html").as_uri())
    _clean(report)
    rows = browser.evaluate(
        "Array.from(document.querySelectorAll('#series tr')).slice(1).map(r => "
        "[r.className, r.querySelector('a').getAttribute('href')])"
    )
    assert [cls for cls, _ in rows] == ["row-regression", "row-regression"]
    for _, href in rows:
        assert (pages / href).is_file()


def test_pages_work_from_a_plain_web_server(browser: Browser, pages: Path) -> None:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(pages.parent))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/trend"
        _clean(browser.open(f"{base}/index.html"))
        report = browser.open(f"{base}/series/OVS_DPDK1q__phy2phy_tput__p2p__1518.html", settle_s=2.0)
        _clean(report)
        assert browser.evaluate("document.body.getAttribute('data-ready')") == "1"
        assert browser.evaluate("typeof Plotly") == "object"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
