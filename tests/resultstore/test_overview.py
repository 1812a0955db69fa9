"""The overview page testers open every morning: reports/index.html, rewritten by passes and verdicts."""

from __future__ import annotations

from pathlib import Path

import lxml.html
import pytest

from ciflow.cli import main as process_main
from resultstore.cli import main
from tests.ciflow.helpers import BASELINE, CANDIDATE, deliver, write_config


def rows(page: Path) -> list[list[str]]:
    tree = lxml.html.parse(str(page))
    return [
        [cell.text_content().strip() for cell in tr.findall("td")]
        for tr in tree.getroot().get_element_by_id("comparisons").findall("tr")[1:]
    ]


def summary(page: Path) -> str:
    text: str = lxml.html.parse(str(page)).getroot().get_element_by_id("summary").text_content()
    return " ".join(text.split())


def test_pass_and_verdict_keep_the_overview_current(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path)
    deliver(tmp_path / "ci_in", "night-1", CANDIDATE)
    deliver(tmp_path / "ci_in", "night-2", BASELINE)
    assert process_main(["--config", str(config)]) == 1
    page = tmp_path / "reports" / "index.html"

    got = rows(page)
    assert [(r[0], r[1], r[3], r[7]) for r in got] == [
        ("2", "night-2", "PASS", "awaiting"),
        ("1", "night-1", "REGRESSION", "awaiting"),
    ]
    assert "2 comparison(s); 2 awaiting a tester verdict, of which 1 show a regression" in summary(page)
    links = lxml.html.parse(str(page)).getroot().xpath("//table[@id='comparisons']//a/@href")
    assert links == ["night-2/index.html", "night-1/index.html"]
    assert all((page.parent / link).is_file() for link in links)

    db = str(tmp_path / "results.sqlite")
    assert (
        main(["--db", db, "verdict", "night-1", "--fail", "--bug", "RHBZ#77", "--comment", "<i>x</i>"]) == 0
    )
    capsys.readouterr()
    night1 = rows(page)[1]
    assert (night1[7], night1[8], night1[10]) == ("FAIL", "RHBZ#77", "<i>x</i>")  # comment shown as text
    assert "<i>x</i>" not in page.read_text(encoding="utf-8")
    assert "1 awaiting a tester verdict, of which 0 show a regression" in summary(page)


def test_overview_that_cannot_be_written_makes_the_pass_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path)
    (tmp_path / "reports" / "index.html").mkdir(parents=True)  # something in the way
    deliver(tmp_path / "ci_in", "night-1", BASELINE)
    assert process_main(["--config", str(config)]) == 2
    captured = capsys.readouterr()
    assert captured.out.startswith("processed\tnight-1\tPASS")  # the result itself went through
    assert "Cannot write the overview" in captured.err
    assert (tmp_path / "ci_processed" / "night-1").is_dir()
