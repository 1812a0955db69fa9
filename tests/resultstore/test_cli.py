"""ovsperf-results in-process: list, show, verdict (re-rendering the page), render; on both backends."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ciflow.cli import main as process_main
from resultstore.cli import main
from resultstore.model import ResultStatus, ReviewDecision
from resultstore.store import ResultStore
from tests.ciflow.helpers import BASELINE, CANDIDATE, deliver, write_config


@pytest.fixture
def processed(tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]) -> str:
    """Run a real pass (store on this backend) over one result that regresses: comparison 1."""
    config = write_config(tmp_path, database=store_url)
    deliver(tmp_path / "ci_in", "night-1", CANDIDATE)
    assert process_main(["--config", str(config)]) == 1
    capsys.readouterr()
    return store_url


@pytest.fixture
def recorded(store_url: str) -> str:
    """A store holding comparison 1 of result night-1, recorded directly (no report generated)."""
    return record_night_1(store_url)


def record_night_1(store_url: str, metadata: dict[str, object] | None = None) -> str:
    """Record comparison 1 of result night-1 (with ``metadata``) directly; return ``store_url``."""
    with ResultStore.open(store_url) as store:
        store.record_result(
            name="night-1",
            scenario="OVS_DPDK2q",
            location=Path("/srv/ci_processed/night-1"),
            vsperf_dirs=[Path("/srv/ci_processed/night-1/results_x")],
            status=ResultStatus.PROCESSED,
            metadata=metadata,
        )
        store.record_comparison(
            result_name="night-1",
            baseline_result_name=None,
            baseline_dirs=[BASELINE],
            current_dirs=[Path("/srv/ci_processed/night-1/results_x")],
            report_dir=Path("/srv/reports/night-1"),
            title=None,
            overall="REGRESSION",
            counts={"PASS": 13, "REGRESSION": 1},
            warnings=[],
            thresholds={"regression_percent": 5.0},
        )
    return store_url


def out_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().out.splitlines()


def test_list_table_and_json(processed: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deliver(tmp_path / "ci_in", "night-2", BASELINE)
    assert process_main(["--config", str(tmp_path / "ciflow.yaml")]) == 0
    capsys.readouterr()
    assert main(["--db", processed, "list"]) == 0
    lines = out_lines(capsys)
    assert lines[0].split() == [
        "ID",
        "RESULT",
        "SCENARIO",
        "PROCESSED_UTC",
        "OVERALL",
        "VERDICT",
        "BUG",
        "REPORT",
    ]
    table = [line.split() for line in lines[1:]]
    assert [row[:3] + row[4:7] for row in table] == [
        ["2", "night-2", "OVS_DPDK1q_GUEST_DPDK1q", "PASS", "-", "-"],
        ["1", "night-1", "OVS_DPDK1q_GUEST_DPDK1q", "REGRESSION", "-", "-"],
    ]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\dZ", row[3]) for row in table)
    assert table[1][7] == str(tmp_path / "reports" / "night-1" / "index.html")

    assert main(["--db", processed, "list", "--json", "--undecided", "--limit", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(d["id"], d["result"], d["tester_verdict"]) for d in data] == [(2, "night-2", None)]


def test_list_of_empty_store_is_exit_3(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", store_url, "list"]) == 3
    assert out_lines(capsys) == []


def test_a_db_path_in_a_missing_directory_is_an_error_not_an_empty_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "typo" / "results.sqlite"
    assert main(["--db", str(missing), "list"]) == 2
    assert f"directory '{missing.parent}' does not exist" in capsys.readouterr().err
    assert not missing.parent.exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--bug", "see the mail"], "is not PREFIX#NUMBER or PREFIX-NUMBER"),
        (["--bug", "RHBZ#1\n2"], "control characters"),
        (["--comment", "fine\x1b[2Jgone"], "control characters other than newlines and tabs"),
    ],
)
def test_bad_bug_ids_and_comments_are_refused(
    processed: str, capsys: pytest.CaptureFixture[str], options: list[str], message: str
) -> None:
    assert main(["--db", processed, "verdict", "1", "--fail", *options]) == 2
    assert message in capsys.readouterr().err
    good = ["--bug", "FDP-123", "--comment", "a\nb\tc"]
    assert main(["--db", processed, "verdict", "1", "--fail", *good]) == 0


def test_verdict_is_stored_and_shown_on_the_page(
    processed: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "reports" / "night-1"
    code = main(
        [
            "--db",
            processed,
            "verdict",
            "1",
            "--fail",
            "--bug",
            "RHBZ#2001234",
            "--comment",
            "<b>real</b> drop",
        ]
    )
    assert code == 0
    assert out_lines(capsys) == [str(report / "index.html")]
    page = json.loads((report / "report.json").read_text(encoding="utf-8"))
    assert page["tester_verdict"]["verdict"] == "FAIL"
    assert page["tester_verdict"]["bug_id"] == "RHBZ#2001234"
    html = (report / "index.html").read_text(encoding="utf-8")
    assert "RHBZ#2001234" in html
    assert "<b>real</b>" not in html  # comments render inert

    assert main(["--db", processed, "verdict", "night-1", "--pass", "--tester", "ana"]) == 0
    capsys.readouterr()
    with ResultStore.open(processed) as store:
        record = store.comparison(1)
        assert record.verdict is not None
        assert (record.verdict.decision, record.verdict.tester) == (ReviewDecision.PASS, "ana")
        assert len(store.verdict_history(1)) == 2
    page = json.loads((report / "report.json").read_text(encoding="utf-8"))
    assert page["tester_verdict"]["verdict"] == "PASS"
    assert page["tester_verdict"]["bug_id"] is None

    assert main(["--db", processed, "show", "1"]) == 0
    shown = out_lines(capsys)
    assert "result:      night-1" in shown
    assert "overall:     REGRESSION" in shown
    assert [line.split()[1] for line in shown if line.startswith("verdict:")] == ["FAIL", "PASS"]
    assert any("bug RHBZ#2001234 (<b>real</b> drop)" in line for line in shown)
    assert 'job_id:      "J:4242"' in shown
    assert 'hosts:       {"dut": "dut.example.com", "tg": "tg.example.com"}' in shown

    assert main(["--db", processed, "show", "night-1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["tester_verdict"]["tester"] == "ana"
    assert data["result_metadata"]["job_id"] == "J:4242"
    assert [v["verdict"] for v in data["verdict_history"]] == ["FAIL", "PASS"]
    assert data["current_dirs"] == [
        str(tmp_path / "ci_processed" / "night-1" / "results_2018-04-10_22-01-55")
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["verdict", "99", "--pass"], "No comparison '99'"),
        (["show", "night-9"], "No comparison 'night-9'"),
        (["verdict", "1", "--fail", "--bug", "A\nB"], "control characters"),
    ],
)
def test_errors_are_one_line_and_exit_2(
    recorded: str, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["--db", recorded, *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err
    with ResultStore.open(recorded) as store:
        assert store.verdict_history(1) == []


def test_verdict_needs_exactly_one_decision(recorded: str, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["verdict", "1"], ["verdict", "1", "--pass", "--fail"]):
        assert main(["--db", recorded, *argv]) == 2
        assert "usage: ovsperf-results" in capsys.readouterr().err


def test_re_render_when_inputs_are_gone_keeps_page_and_verdict(
    processed: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    report = tmp_path / "reports" / "night-1" / "report.json"
    before = report.read_bytes()
    shutil.move(tmp_path / "ci_processed" / "night-1", tmp_path / "archived-night-1")
    assert main(["--db", processed, "verdict", "1", "--fail", "--bug", "RHBZ#9"]) == 2
    err = capsys.readouterr().err
    assert "could not be re-rendered" in err and "previous page is unchanged" in err
    assert report.read_bytes() == before
    with ResultStore.open(processed) as store:
        assert [v.bug_id for v in store.verdict_history(1)] == ["RHBZ#9"]


def test_show_masks_the_secrets_of_the_result_metadata(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 25 item 19: a delivery's metadata is shown masked, in text and JSON alike."""
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    metadata = {
        "job_id": "J:4242",
        "hosts": {"dut": "dut.example.com", "bmc_password": "hunter2"},
        "build": "https://qe:pa55word@koji.example.com/build/1",
        "kickrepos": ["https://repo.example.com/x?access_token=t0k3n"],
        "api_token": "s3cr3t",
    }
    record_night_1(url, metadata)
    assert main(["--db", url, "show", "night-1", "--json"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out)["result_metadata"] == {
        "job_id": "J:4242",
        "hosts": {"dut": "dut.example.com", "bmc_password": "***"},
        "build": "https://qe:***@koji.example.com/build/1",
        "kickrepos": ["https://repo.example.com/x?access_token=***"],
        "api_token": "***",
    }
    assert main(["--db", url, "show", "night-1"]) == 0
    out += capsys.readouterr().out
    assert 'hosts:       {"bmc_password": "***", "dut": "dut.example.com"}' in out
    assert 'build:       "https://qe:***@koji.example.com/build/1"' in out
    for secret in ("hunter2", "pa55word", "t0k3n", "s3cr3t"):
        assert secret not in out
