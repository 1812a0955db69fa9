"""The metric registry as the store and the trend pages use it: tables that list it, a metric of a
family stored by ``ovsperf-results import`` and drawn on a trend page in its own unit."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import resultstore.samples
from reporting.metrics import METRICS
from resultstore.cli import main
from resultstore.connect import database_url
from resultstore.store import ResultStore
from resultstore.trendpages import write_store_pages
from tests.reporting.test_goals_latency import level, row, write_dir, write_latency

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_samples_table_lists_exactly_the_registry() -> None:
    doc = resultstore.samples.__doc__ or ""
    rows = re.findall(r"^``([a-zA-Z0-9_<>]+)``\s+(\S+)\s", doc, flags=re.MULTILINE)
    assert rows == [(m.name, m.unit.value) for m in METRICS.values()]


def test_the_trending_docs_table_lists_exactly_the_registry() -> None:
    text = (DOCS / "trending.md").read_text(encoding="utf-8")
    table = text[text.index("| metric | unit | source |") : text.index("With each result the store")]
    rows = re.findall(r"^\| `([a-zA-Z0-9_<>]+)` \| (\S+) \|", table, flags=re.MULTILINE)
    assert rows == [(m.name, m.unit.value) for m in METRICS.values()]


def _result(root: Path, name: str, slow_ns: int) -> Path:
    """Write a lab result with latency at 50 and 90 % of the PDR load; p99.9 at 90 % is ``slow_ns``."""
    path = write_dir(root, name, [row(64, 1.0e6, 2.0e6)])
    # 1000 frames at 90 %: 998 at 5 µs and 2 at slow_ns (so p99 is 5 µs, p99.9 the slow ones).
    write_latency(path, [level(50, {4_000: 1000}), level(90, {5_000: 998, slow_ns: 2})])
    return path


def test_p999_latency_is_stored_and_drawn_on_the_trend_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    _result(results, "2026-01-01_00-00-00", 40_000)
    _result(results, "2026-01-02_00-00-00", 80_000)
    db = database_url(str(tmp_path / "results.sqlite"))
    assert main(["--db", db, "import", "--scenario", "LAB", str(results)]) == 0
    assert sorted(capsys.readouterr().out.splitlines()) == [
        "recorded results_2026-01-01_00-00-00",
        "recorded results_2026-01-02_00-00-00",
    ]
    with ResultStore.open(db) as store:
        stored = {
            s.key.metric: [p.values for p in s.points]
            for s in store.series(scenario="LAB")
            if s.key.metric.startswith("latency_p")
        }
        assert stored.keys() == {
            f"latency_{p}_ns_{level}pct" for p in ("p50", "p99", "p999") for level in (50, 90)
        }
        assert [v[0] for v in stored["latency_p99_ns_90pct"]] == [pytest.approx(5_000, rel=1e-3)] * 2
        # HdrHistogram's buckets: 3 significant digits.
        assert [v[0] for v in stored["latency_p999_ns_90pct"]] == [
            pytest.approx(40_000, rel=1e-3),
            pytest.approx(80_000, rel=1e-3),
        ]
        written = write_store_pages(store, tmp_path / "trend", metrics=["latency_p999_ns_90pct"])
    assert written is not None and written[0].pages == 1 and written[0].series == 1
    page = (tmp_path / "trend" / "series" / "LAB__phy2phy_tput__p2p__64.html").read_text(encoding="utf-8")
    assert "Latency over builds (one-way, ns; frame size incl. FCS)." in page
    found = re.search(r"var figure = (\{.*?\});\n", page, flags=re.DOTALL)
    assert found is not None
    figure = json.loads(found.group(1))
    points = figure["data"][0]
    assert points["name"] == "p99.9 at 90 % of PDR per build"
    assert points["y"] == [pytest.approx(40_000, rel=1e-3), pytest.approx(80_000, rel=1e-3)]
    assert "p99.9 at 90 % of PDR 400" in points["hovertext"][0] and " ns" in points["hovertext"][0]
    assert figure["layout"]["yaxis"]["title"]["text"] == "latency, one-way [ns]"
    index = (tmp_path / "trend" / "index.html").read_text(encoding="utf-8")
    assert "<th>ns</th>" in index and "<th>Mpps</th>" not in index
    assert '<td class="l">p99.9 at 90 % of PDR</td>' in index
