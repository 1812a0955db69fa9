"""One nightly pass as Jenkins runs it: a regressed build, an aborted Beaker job and a normal build.

Checked as a tester and Jenkins see them: the pass's JUnit (a failure only for the regression, an
error for the aborted job and for a delivery that cannot be compared), the mail through a real
SMTP server (aiosmtpd; the aborted job is an infrastructure failure, never a regression), the
trend pages the pass rewrites (build names, not result directory names), the report's links into
them and the overview's link, all resolving to files that exist.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from email.message import Message
from pathlib import Path
from typing import Any

import pytest

from ciflow.cli import main as process_main
from ciflow.config import load_config
from ciflow.errors import ConfigError
from resultstore.cli import main as results_main
from resultstore.trendlinks import POINTER_NAME, series_page_name
from tests.ciflow.helpers import (
    BASELINE,
    CANDIDATE,
    MARKER,
    SCENARIO,
    deliver,
    fill_disk,
    tmpfs,
    write_config,
)
from tests.ciflow.test_trend_mail import Inbox, mail_config, smtp  # noqa: F401  (the SMTP server fixture)

NVR = "openvswitch3.1-3.1.0-65.el9fdp"
"""The Koji build of the regressed night (the collector's build record)."""
PASS_BUILD = "openvswitch3.1-3.1.0-64.el9fdp.x86_64, DPDK 17.11.0"
"""The normal night's build: the OVS package its DUT had (rpm -qa), DPDK as VSperf found it."""


def aborted_job(ci_in: Path, name: str, **fields: Any) -> Path:
    """Write what ovsperf-beaker collect leaves for an aborted job: the metadata only, no results."""
    delivery = ci_in / name
    delivery.mkdir()
    data = {
        "schema": 2,
        "producer": "ovsperf-beaker",
        "scenario": SCENARIO,
        "complete": False,
        "incomplete_reason": "the external watchdog killed recipe R:88 after 12 h",
        "infrastructure_failure": True,
        "beaker_job_id": "J:1234",
        "beaker_status": "Aborted",
        "build": {"nvrs": ["openvswitch3.1-3.1.0-66.el9fdp"], "tag": "fdp-el9-candidate"},
        **fields,
    }
    (delivery / MARKER).write_text(json.dumps(data), encoding="utf-8")
    return delivery


def mail_server(request: pytest.FixtureRequest) -> tuple[Inbox, int]:
    """Start the SMTP server (test_trend_mail's ``smtp`` fixture); return its inbox and port."""
    inbox, port = request.getfixturevalue("smtp")
    assert isinstance(inbox, Inbox) and isinstance(port, int)
    return inbox, port


def script_json(text: str) -> str:
    """Return ``text`` as the trend pages write it inside their ``<script>`` (angle brackets escaped)."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def body_of(message: Message) -> str:
    payload = message.get_payload(decode=True)
    assert isinstance(payload, bytes)
    return payload.decode("utf-8").replace("\r\n", "\n")


def hrefs(page: Path, css_class: str | None = None, element_id: str | None = None) -> list[str]:
    """Return the href of every <a> of ``css_class`` (or with ``element_id``) on ``page``."""
    text = page.read_text(encoding="utf-8")
    if css_class is not None:
        return re.findall(rf'<a class="{css_class}" href="([^"]+)"', text)
    return re.findall(rf'<p id="{element_id}"><a href="([^"]+)"', text)


def test_regression_aborted_job_and_normal_build_in_one_pass(
    tmp_path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    inbox, port = mail_server(request)
    config = write_config(tmp_path, mail=mail_config(port), trend_pages="reports/_trends")
    ci_in = tmp_path / "ci_in"
    deliver(
        ci_in,
        "night-2",
        CANDIDATE,
        metadata={
            "packages": {"openvswitch3.1": "3.1.0-65.el9fdp.x86_64"},
            "build": {
                "nvrs": [NVR],
                "tag": "fdp-el9-candidate",
                "jenkins_build_url": "https://jenkins.example.com/job/ovsperf-nightly/65/",
            },
        },
    )
    deliver(ci_in, "night-1", BASELINE, metadata={"packages": {"openvswitch3.1": "3.1.0-64.el9fdp.x86_64"}})
    aborted_job(ci_in, "J1234-aborted")
    deliver(ci_in, "unknown-scenario", CANDIDATE, scenario="OVS_DPDK4q")
    junit = tmp_path / "jenkins" / "ovsperf-junit.xml"
    junit.parent.mkdir()

    code = process_main(["--config", str(config), "--junit", str(junit)])
    out, err = capsys.readouterr()

    # Exit 2: an infrastructure failure (and a rejected delivery) are errors, not regressions.
    assert code == 2
    lines = [line.split("\t") for line in out.splitlines()]
    assert [line[:2] for line in lines] == [
        ["failed", "J1234-aborted"],
        ["processed", "night-1"],
        ["processed", "night-2"],
        ["failed", "unknown-scenario"],
    ]
    assert [lines[1][2], lines[2][2]] == ["PASS", "REGRESSION"]
    failed = json.loads((tmp_path / "ci_failed" / "J1234-aborted.FAILED.json").read_text())
    assert failed["infrastructure_failure"] is True
    assert (failed["beaker_job_id"], failed["beaker_status"]) == ("J:1234", "Aborted")
    assert failed["reason"] == (
        "infrastructure failure: Beaker job J:1234 ended Aborted: the external watchdog killed recipe "
        "R:88 after 12 h; nothing was measured, the build is not judged."
    )
    assert failed["build"] == "openvswitch3.1-3.1.0-66.el9fdp"
    assert sorted(p.name for p in (tmp_path / "ci_failed" / "J1234-aborted").iterdir()) == [MARKER]

    # JUnit: one failure (the regression), two errors (the aborted job, the rejected delivery).
    root = ET.parse(junit).getroot()
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert list(suites) == [
        f"{SCENARIO}.J1234-aborted",
        f"{SCENARIO}.night-1",
        f"{SCENARIO}.night-2",
        "OVS_DPDK4q.unknown-scenario",
    ]
    cases = list(root.iter("testcase"))
    failures = [c for c in cases if c.find("failure") is not None]
    errors = [c for c in cases if c.find("error") is not None]
    assert len(cases) == 14 + 14 + 1 + 1
    assert [(c.get("classname"), c.get("name")) for c in failures] == [("pvp_tput.pvp", "64B NDR")]
    assert [(c.get("classname"), c.get("name")) for c in errors] == [
        (f"{SCENARIO}.J1234-aborted", "delivery"),
        ("OVS_DPDK4q.unknown-scenario", "delivery"),
    ]
    aborted, rejected = (c.find("error") for c in errors)
    assert aborted is not None and rejected is not None
    assert aborted.get("type") == "INFRASTRUCTURE"
    assert (aborted.get("message") or "").startswith(
        "infrastructure failure: Beaker job J:1234 ended Aborted: the external watchdog killed"
    )
    assert rejected.get("type") == "REJECTED"
    assert "scenario 'OVS_DPDK4q' has no baseline" in (rejected.get("message") or "")
    assert suites[f"{SCENARIO}.J1234-aborted"].find(".//failure") is None
    assert [(s.get("tests"), s.get("failures"), s.get("errors")) for s in suites.values()] == [
        ("1", "0", "1"),
        ("14", "0", "0"),
        ("14", "1", "0"),
        ("1", "0", "1"),
    ]

    # One mail: the regression with its build, the aborted job as an infrastructure failure.
    assert len(inbox.messages) == 1
    message = inbox.messages[0][2]
    assert message["Subject"] == "[ovsperf] 1 regression(s) in night-2; 1 infrastructure failure(s)"
    body = body_of(message)
    assert f"night-2: REGRESSION (scenario {SCENARIO}, build {NVR})" in body
    assert "report: https://perf.example.com/reports/night-2/index.html" in body
    infra = body[body.index("ended in an infrastructure failure") :].split("\n\n")[1]
    assert infra.splitlines()[0] == (
        f"J1234-aborted: INFRASTRUCTURE FAILURE (scenario {SCENARIO}, build openvswitch3.1-3.1.0-66.el9fdp)"
    )
    assert "Beaker job J:1234 ended Aborted" in infra
    assert "regression" not in infra.replace(str(tmp_path), "<tmp>").lower()
    assert "unknown-scenario" not in body  # not an infrastructure failure: JUnit and exit code say it
    assert "Trends over builds: https://perf.example.com/reports/_trends/index.html" in body

    # The trend pages: written by the pass, naming builds by what they tested.
    pages = tmp_path / "reports" / "_trends"
    index = (pages / "index.html").read_text(encoding="utf-8")
    series = pages / "series" / series_page_name(SCENARIO, "pvp_tput", "pvp", 64, "")
    assert series.is_file()
    assert f'<a href="series/{series.name}">{SCENARIO}</a>' in index
    assert f"{NVR}<br>" in index and "result night-2" in index
    assert ">-<" not in index  # every series has its scenario
    graph = series.read_text(encoding="utf-8")  # hovering a build names it, then its result
    tag = "<b>{}</b><br>result {}, ".format
    assert script_json(tag(NVR, "night-2")) in graph
    assert script_json(tag(PASS_BUILD, "night-1")) in graph
    assert "results_2018" not in index + graph

    # The report names the build and links each throughput cell's series page, which exists.
    report_dir = tmp_path / "reports" / "night-2"
    page = (report_dir / "index.html").read_text(encoding="utf-8")
    assert f"<h1>{SCENARIO}: {NVR} (night-2) vs baseline_ovs-2.9.0_dpdk-17.11</h1>" in page
    assert (
        f'<p class="note" id="build">Build under test: <b>{NVR}</b>, Koji tag <b>fdp-el9-candidate</b>, '
        '<a href="https://jenkins.example.com/job/ovsperf-nightly/65/">Jenkins build</a></p>'
    ) in page
    assert json.loads((report_dir / "report.json").read_text())["build"] == {
        "name": NVR,
        "tag": "fdp-el9-candidate",
        "url": "https://jenkins.example.com/job/ovsperf-nightly/65/",
    }
    normal = (tmp_path / "reports" / "night-1" / "index.html").read_text(encoding="utf-8")
    assert f'id="build">Build under test: <b>{PASS_BUILD}</b></p>' in normal
    links = hrefs(report_dir / "index.html", css_class="trend-link")
    assert len(links) == 14
    assert all((report_dir / link).resolve().is_file() for link in links)
    assert f"../_trends/series/{series.name}" in links

    # The overview links the trend pages.
    overview = tmp_path / "reports" / "index.html"
    assert hrefs(overview, element_id="trend-link") == ["_trends/index.html"]
    assert json.loads((tmp_path / "reports" / POINTER_NAME).read_text()) == {"pages": str(pages)}
    assert "Trend pages written" in err

    # A tester's verdict re-renders the report and the overview: the links stay.
    db = str(tmp_path / "results.sqlite")
    assert results_main(["--db", db, "verdict", "night-2", "--fail", "--bug", "FDP-1234"]) == 0
    capsys.readouterr()
    assert hrefs(report_dir / "index.html", css_class="trend-link") == links
    assert f'id="build">Build under test: <b>{NVR}</b>' in (report_dir / "index.html").read_text()
    assert hrefs(overview, element_id="trend-link") == ["_trends/index.html"]


def test_only_an_infrastructure_failure_mails_and_exits_2(
    tmp_path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    inbox, port = mail_server(request)
    config = write_config(tmp_path, mail=mail_config(port), trend_pages="reports/_trends")
    aborted_job(
        tmp_path / "ci_in",
        "J77-cancelled",
        beaker_job_id="J:77",
        beaker_status="Cancelled",
        incomplete_reason="no results tarball",
    )
    junit = tmp_path / "junit.xml"
    assert process_main(["--config", str(config), "--junit", str(junit)]) == 2
    assert capsys.readouterr().out.startswith("failed\tJ77-cancelled\t")
    errors = [e for e in ET.parse(junit).getroot().iter("error")]
    assert [e.get("type") for e in errors] == ["INFRASTRUCTURE"]
    assert not list(ET.parse(junit).getroot().iter("failure"))
    message = inbox.messages[0][2]
    assert message["Subject"] == "[ovsperf] 1 infrastructure failure(s)"
    body = body_of(message)
    assert "Beaker job J:77 ended Cancelled: no results tarball" in body
    assert "regression" not in body.replace(str(tmp_path), "<tmp>").lower()
    assert not (tmp_path / "reports" / "_trends").exists()  # nothing processed: no pages to rewrite


def test_dry_run_names_an_infrastructure_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path)
    aborted_job(tmp_path / "ci_in", "J1234-aborted")
    assert process_main(["--config", str(config), "--dry-run"]) == 0
    state, name, reason = capsys.readouterr().out.rstrip("\n").split("\t")
    assert (state, name) == ("rejected", "J1234-aborted")
    assert reason.startswith("infrastructure failure: Beaker job J:1234 ended Aborted")
    assert (tmp_path / "ci_in" / "J1234-aborted" / MARKER).is_file()


@pytest.mark.parametrize(
    ("fields", "text"),
    [
        ({"infrastructure_failure": "yes"}, "field 'infrastructure_failure': expected true or false"),
        ({"build": {"nvrs": []}}, "field 'build.nvrs': expected a non-empty list of NVR strings"),
        ({"build": {"nvrs": ["x"], "tag": 3}}, "field 'build.tag': expected a string"),
        ({"beaker_status": 5}, "field 'beaker_status': expected a string"),
    ],
)
def test_malformed_collector_fields_reject_the_delivery_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fields: dict[str, Any], text: str
) -> None:
    config = write_config(tmp_path)
    deliver(tmp_path / "ci_in", "night-1", CANDIDATE, metadata=fields)
    assert process_main(["--config", str(config)]) == 2
    assert capsys.readouterr().out.startswith("failed\tnight-1\t")
    reason = json.loads((tmp_path / "ci_failed" / "night-1.FAILED.json").read_text())["reason"]
    assert text in reason


@pytest.mark.parametrize(
    ("pages", "text"),
    [
        ("reports/trends", "start the name with '_'"),
        ("reports", "lies inside or equals"),
        ("ci_in/_trends", "lies inside or equals ci_in"),
        ("ci_processed", "lies inside or equals ci_processed"),
    ],
)
def test_trend_pages_where_a_pass_would_take_them_are_refused(tmp_path: Path, pages: str, text: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(write_config(tmp_path, trend_pages=pages))
    assert "trend_pages" in str(err.value) or "reports" in str(err.value)
    assert text in str(err.value)


def test_trend_pages_outside_reports_are_linked_by_relative_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, trend_pages="trends")
    deliver(tmp_path / "ci_in", "night-1", CANDIDATE)
    assert process_main(["--config", str(config)]) == 1
    capsys.readouterr()
    report_dir = tmp_path / "reports" / "night-1"
    links = hrefs(report_dir / "index.html", css_class="trend-link")
    assert links and all(link.startswith("../../trends/series/") for link in links)
    assert all((report_dir / link).resolve().is_file() for link in links)
    assert hrefs(tmp_path / "reports" / "index.html", element_id="trend-link") == ["../trends/index.html"]


def test_a_result_left_in_ci_in_is_a_junit_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path)
    junit = tmp_path / "junit.xml"
    with tmpfs(tmp_path / "reports", "4m") as reports:
        fill_disk(reports)
        deliver(tmp_path / "ci_in", "night-1", CANDIDATE)
        assert process_main(["--config", str(config), "--junit", str(junit)]) == 2
    assert capsys.readouterr().out.startswith("error\tnight-1\treport could not be written")
    root = ET.parse(junit).getroot()
    [suite] = root.findall("testsuite")
    assert suite.get("name") == f"{SCENARIO}.night-1"
    [error] = root.iter("error")
    assert error.get("type") == "NOT_PROCESSED"
    assert (error.get("message") or "").startswith(
        "left in ci_in for the next pass: report could not be written"
    )
    assert not list(root.iter("failure"))


def test_trend_pages_that_cannot_be_written_make_the_pass_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, trend_pages="trends")
    (tmp_path / "trends").mkdir()
    (tmp_path / "trends" / "notes.txt").write_text("a user's file\n")
    deliver(tmp_path / "ci_in", "night-1", CANDIDATE)
    junit = tmp_path / "junit.xml"
    assert process_main(["--config", str(config), "--junit", str(junit)]) == 2
    out, err = capsys.readouterr()
    assert out.startswith("processed\tnight-1\tREGRESSION\t")
    assert "Cannot write the trend pages" in err and "not written by 'ovsperf-results trend'" in err
    assert sorted(p.name for p in (tmp_path / "trends").iterdir()) == ["notes.txt"]  # untouched
    assert not (tmp_path / "reports" / POINTER_NAME).exists()
    assert hrefs(tmp_path / "reports" / "index.html", element_id="trend-link") == []
    errors = [e for e in ET.parse(junit).getroot().iter("error") if e.get("type") == "PASS"]
    assert len(errors) == 1 and "Cannot write the trend pages" in (errors[0].get("message") or "")
