"""The first page a pass writes already names the result where it ends up (``ci_processed``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ciflow.cli import main
from reporting.document import PathDisplay
from tests.ciflow.helpers import BROKEN, deliver, write_config


def test_first_page_shows_final_paths_and_links_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path)
    deliver(tmp_path / "ci_in", "J1-truncated", BROKEN / "truncated_csv")
    assert main(["--config", str(config), "-q"]) == 2  # INVALID rows
    capsys.readouterr()
    report_dir = tmp_path / "reports" / "J1-truncated"
    data = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    final = tmp_path / "ci_processed" / "J1-truncated" / "results_2018-03-05_21-14-07"
    assert data["current"][0]["path"] == str(final)
    assert data["current"][0]["read_from"] == str(tmp_path / "ci_in" / "J1-truncated" / final.name)
    assert final.is_dir()
    assert data["overview_href"] == "../index.html"
    assert any(str(final / "result_0_phy2phy_tput_p2p.csv") in w for w in data["warnings"])
    html = (report_dir / "index.html").read_text(encoding="utf-8")
    assert str(tmp_path / "ci_in") not in html
    assert str(tmp_path / "ci_in") not in json.dumps(data["warnings"])
    assert str(final) in html
    assert '<a href="../index.html">' in html
    assert (report_dir / "../index.html").resolve().is_file()
    # Every VSperf report/log link is a copy inside the report: it works after the move.
    hrefs = re.findall(r'<a href="(sources/[^"]+)"', html)
    assert len(hrefs) >= 4
    assert all((report_dir / h).is_file() for h in hrefs)


def test_path_display_maps_longest_prefix_and_whole_components() -> None:
    display = PathDisplay.of({Path("/in/a"): Path("/done/a"), Path("/in/a/b"): Path("/x")})
    assert display.path(Path("/in/a/b/c.csv")) == Path("/x/c.csv")
    assert display.path(Path("/in/a/r")) == Path("/done/a/r")
    assert display.path(Path("/in/ab")) == Path("/in/ab")
    assert display.text("'/in/a/r/x.csv' line 2; '/in/ab' kept") == "'/done/a/r/x.csv' line 2; '/in/ab' kept"
    assert PathDisplay.of(None).text("'/in/a'") == "'/in/a'"
