"""ovsperf-results culprit: a trend regression linked to the bisection that found its first bad build.

The bisections are real ``ovsperf-lab bisect`` runs (its session, search and report code) over the
deterministic fake comparison of the bisect tests; the store is a real SQLite file; the trend page
is the real Plotly page, read back as HTML and as its figure's JSON.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ovsperf_lab.bisect.options import BisectRequest, local_builds
from ovsperf_lab.bisect.session import Bisection, start
from ovsperf_lab.bisect.state import BisectState
from ovsperf_lab.compare.config import CompareConfig
from resultstore.cli import main
from resultstore.connect import database_url
from resultstore.store import ResultStore
from tests.ovsperf_lab.bisectfakes import FakeComparison, out_dir, slower_from
from tests.resultstore.history import add_builds

SERIES = "OVS_DPDK1q / phy2phy_tput / 64 B / ndr_fps"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def bisect(tmp_path: Path, changes: dict[int, float], builds: int = 8) -> Path:
    """Run a real bisection of ``builds`` local builds over the fake comparison; return its directory."""
    request = BisectRequest(
        "OVS_DPDK1q", CompareConfig(), builds=local_builds(["system"] * builds, None, None)
    )
    state = BisectState(request, request.builds)
    bisection = Bisection(start(state, out_dir(tmp_path)), state, FakeComparison(changes))
    bisection.run()
    assert (bisection.directory / "bisect.json").is_file()
    return bisection.directory


@pytest.fixture
def store_with_regression(tmp_path: Path) -> tuple[str, list[str]]:
    """An SQLite store: 15 builds, NDR down 10 % from build 12 on; a comparison of build 12."""
    db = str(tmp_path / "results.sqlite")
    with ResultStore.open(database_url(db)) as store:
        names = add_builds(store, [7e6] * 12 + [6.3e6] * 3)
        store.record_comparison(
            result_name=names[12],
            baseline_result_name=names[11],
            baseline_dirs=[],
            current_dirs=[],
            report_dir=tmp_path / "reports" / names[12],
            title=None,
            overall="REGRESSION",
            counts={"REGRESSION": 1},
            warnings=[],
            thresholds={"regression_percent": 5.0},
        )
    return db, names


def _figure(page: str) -> dict[str, Any]:
    start = page.index("var figure = ") + len("var figure = ")
    figure: dict[str, Any] = json.loads(page[start : page.index(";\n", start)])
    return figure


def test_culprit_is_stored_shown_and_starred_on_the_trend_page(
    tmp_path: Path, store_with_regression: tuple[str, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, names = store_with_regression
    directory = bisect(tmp_path, slower_from(4, 8, -10.0))
    page = directory / "index.html"
    argv = ["--db", db, "culprit", names[12], "--test", "phy2phy_tput", "--frame-size", "64"]
    code, out, err = run([*argv, "--bisect", str(directory), "--tester", "qe"], capsys)
    assert code == 0, err
    assert out == [f"culprit #5 system: {SERIES} at {names[12]}", str(page)]

    code, out, err = run(["--db", db, "show", names[12]], capsys)
    assert code == 0
    culprit_lines = [line for line in out if line.startswith("culprit:")]
    assert culprit_lines == [
        "culprit:     '#5 system' (bisection: 4 comparisons, MRR at 64 B, last good '#4 system') "
        f"for {SERIES}; bisection {page}"
    ]
    code, out, err = run(["--db", db, "show", names[12], "--json"], capsys)
    [link] = json.loads("\n".join(out))["culprits"]
    assert (link["culprit"], link["last_good"], link["page"]) == ("#5 system", "#4 system", str(page))
    assert link["bisect_json"] == str(directory / "bisect.json") and link["tester"] == "qe"
    assert [(s["number"], s["build"], s["outcome"], s["change_percent"]) for s in link["steps"]] == [
        (1, "#8 system", "bad", -10.0),
        (2, "#4 system", "good", 0.0),
        (3, "#6 system", "bad", -10.0),
        (4, "#5 system", "bad", -10.0),
    ]
    assert link["steps"][0]["mdc_percent"] == 2.0 and link["sought_percent"] == pytest.approx(10.0)

    pages = tmp_path / "trend"
    code, out, err = run(["--db", db, "trend", "--output-dir", str(pages)], capsys)
    assert code == 0
    html64 = (pages / "series" / "OVS_DPDK1q__phy2phy_tput__p2p__64.html").read_text(encoding="utf-8")
    href = os.path.relpath(page, pages / "series")
    assert href.startswith("../") and href.endswith("/index.html")
    assert 'id="culprits"' in html64 and '<td class="l culprit">#5 system</td>' in html64
    assert f'<a class="bisection" href="{href}">The first bad build is &#39;#5 system&#39;' in html64
    assert f"result {names[12]}" in html64 and "★ culprit build" in html64
    figure = _figure(html64)
    [star] = [t for t in figure["data"] if t["name"] == "NDR culprit build (bisection)"]
    assert star["marker"]["symbol"] == "star" and star["customdata"] == [href]
    [per_build] = [t for t in figure["data"] if t["name"] == "NDR per build"]
    assert star["x"] == [per_build["x"][12]] and star["y"] == [per_build["y"][12]]
    [hover] = star["hovertext"]
    assert hover.startswith("<b>culprit build: #5 system</b>") and f"result {names[12]}" in hover
    assert "step 1, #8 system: bad, REGRESSION -10.00 % [-11.40, -8.60], MDC 2.00 %, 20 rounds" in hover
    assert "culprit build: #5 system (bisection)" in per_build["hovertext"][12]
    assert "culprit" not in per_build["hovertext"][11]
    # The other frame size's page has no culprit: the link belongs to one series.
    html1518 = (pages / "series" / "OVS_DPDK1q__phy2phy_tput__p2p__1518.html").read_text(encoding="utf-8")
    assert 'id="culprits"' not in html1518 and "culprit build (bisection)" not in html1518


def _edit(field: str, value: object) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        target = data
        *parents, last = field.split(".")
        for part in parents:
            target = target[part] if not part.isdigit() else target[int(part)]  # type: ignore[index]
        target[last] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "where", "why"),
    [
        (_edit("conclusion", "UNDECIDABLE"), "field 'conclusion'", "names no culprit"),
        (_edit("complete", False), "field 'complete'", "did not finish"),
        (_edit("first_bad_label", "#3 system"), "field 'first_bad_label'", "not build 4's label"),
        (_edit("first_bad", 9), "field 'first_bad'", "build index 1 to 7, got 9"),
        (_edit("schema", 2), "field 'schema'", "expected 1"),
        (_edit("steps.1.change_percent", "fast"), "field 'steps[1].change_percent'", "finite number"),
        (_edit("steps", []), "field 'steps'", "non-empty list"),
        (_edit("config.frame_size_bytes", 128), "field 'config.frame_size_bytes'", "measured 128 B"),
        (_edit("config.flows", 1000), "field 'config.flows'", "measured 64 B, 1000 flows"),
    ],
)
def test_a_report_that_names_no_culprit_is_refused_naming_file_and_field(
    tmp_path: Path,
    store_with_regression: tuple[str, list[str]],
    capsys: pytest.CaptureFixture[str],
    edit: Callable[[dict[str, Any]], None],
    where: str,
    why: str,
) -> None:
    db, names = store_with_regression
    report = bisect(tmp_path, slower_from(4, 8, -10.0)) / "bisect.json"
    data = json.loads(report.read_text())
    edit(data)
    report.write_text(json.dumps(data))
    argv = ["--db", db, "culprit", names[12], "--test", "phy2phy_tput", "--frame-size", "64"]
    code, out, err = run([*argv, "--bisect", str(report)], capsys)
    assert (code, out) == (2, [])
    assert f"'{report}', {where}" in err and why in err
    with ResultStore.open(database_url(db)) as store:
        assert store.culprits() == {}


def test_real_reports_without_a_culprit_and_missing_files_are_refused(
    tmp_path: Path, store_with_regression: tuple[str, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, names = store_with_regression
    argv = ["--db", db, "culprit", names[12], "--test", "phy2phy_tput", "--frame-size", "64", "--bisect"]
    a_a = bisect(tmp_path / "aa", {})  # an A/A row: "No regression found in the range"
    code, out, err = run([*argv, str(a_a)], capsys)
    assert (code, out) == (2, [])
    assert f"'{a_a / 'bisect.json'}', field 'conclusion'" in err and "'NO_REGRESSION'" in err
    assert "No regression found in the range" in err

    found = bisect(tmp_path / "found", slower_from(4, 8, -10.0))
    (found / "index.html").unlink()
    code, out, err = run([*argv, str(found)], capsys)
    assert (code, out) == (2, []) and f"'{found / 'index.html'}' is missing" in err
    (found / "bisect.json").write_text("{not json")
    code, out, err = run([*argv, str(found)], capsys)
    assert (code, out) == (2, []) and f"'{found / 'bisect.json'}' is not JSON" in err
    code, out, err = run([*argv, str(tmp_path / "nowhere")], capsys)
    assert (code, out) == (2, []) and "does not exist" in err and "nowhere" in err
    # A good report, but the result has no sample of that series: refused, nothing written.
    good = bisect(tmp_path / "good", slower_from(4, 8, -10.0))
    code, out, err = run([*argv, str(good), "--metric", "pdr"], capsys)
    assert (code, out) == (2, []) and "no PDR sample of test 'phy2phy_tput' at 64 B" in err
    with ResultStore.open(database_url(db)) as store:
        assert store.culprits() == {}
