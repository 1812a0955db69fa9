"""The report names the build under test: its name, Koji tag and Jenkins build (http(s) links only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reporting.api import BuildNote, generate_report
from tests.ciflow.helpers import BASELINE, CANDIDATE


@pytest.mark.parametrize(
    ("url", "linked"),
    [
        ("https://jenkins.example.com/job/n/7/", True),
        ("javascript:alert(1)", False),
        ('https://x.example.com/" onclick="alert(1)', False),
        ("https://bot:hunter2@jenkins.example.com/job/n/7/", False),
        ("https://jenkins.example.com/job/n/7/?token=hunter2", False),
    ],
)
def test_build_under_test_is_shown_and_only_http_links(tmp_path: Path, url: str, linked: bool) -> None:
    build = BuildNote("openvswitch3.1-3.1.0-65.el9fdp", "fdp-el9", url)
    outcome = generate_report([BASELINE], [CANDIDATE], tmp_path / "r", build=build)
    page = outcome.index_html.read_text(encoding="utf-8")
    data = json.loads(outcome.report_json.read_text(encoding="utf-8"))
    assert data["build"] == {
        "name": "openvswitch3.1-3.1.0-65.el9fdp",
        "tag": "fdp-el9",
        "url": url if linked else None,
    }
    assert "Build under test: <b>openvswitch3.1-3.1.0-65.el9fdp</b>, Koji tag <b>fdp-el9</b>" in page
    assert ('">Jenkins build</a>' in page) is linked
    assert "javascript:" not in page and "onclick" not in page
    assert "hunter2" not in page and "hunter2" not in outcome.report_json.read_text(encoding="utf-8")


def test_no_build_no_line(tmp_path: Path) -> None:
    outcome = generate_report([BASELINE], [CANDIDATE], tmp_path / "r")
    assert 'id="build"' not in outcome.index_html.read_text(encoding="utf-8")
    assert json.loads(outcome.report_json.read_text(encoding="utf-8"))["build"] is None
