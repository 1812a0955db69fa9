"""End-to-end passes of process-ci-results on real VSperf fixtures (in-process main())."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from ciflow.cli import main
from ciflow.inbox import pass_lock
from ciflow.model import LOCK_NAME
from resultstore.connect import database_url
from resultstore.model import ResultStatus, ReviewDecision
from resultstore.store import ResultStore
from tests.ciflow.helpers import (
    BASELINE,
    BROKEN,
    CANDIDATE,
    MARKER,
    REPEATS,
    SCENARIO,
    deliver,
    snapshot,
    write_config,
)


def run(config: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[list[str]]]:
    code = main(["--config", str(config)])
    out = capsys.readouterr().out
    return code, [line.split("\t") for line in out.splitlines()]


def store_of(root: Path) -> ResultStore:
    return ResultStore.open(database_url(str(root / "results.sqlite")))


def test_pass_reports_records_and_moves(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path)
    ci_in = tmp_path / "ci_in"
    deliver(ci_in, "run-002-candidate", CANDIDATE)
    deliver(ci_in, "run-001-same", BASELINE)
    before = {name: snapshot(ci_in / name) for name in ("run-001-same", "run-002-candidate")}

    code, lines = run(config, capsys)

    assert code == 1  # the candidate regresses pvp_tput 64 B by 6.0 %
    assert [line[:3] for line in lines] == [
        ["processed", "run-001-same", "PASS"],
        ["processed", "run-002-candidate", "REGRESSION"],
    ]
    assert sorted(p.name for p in ci_in.iterdir()) == [LOCK_NAME]
    for name, files in before.items():
        assert snapshot(tmp_path / "ci_processed" / name) == files  # nothing lost or changed
        index = tmp_path / "reports" / name / "index.html"
        assert Path(lines[0 if name.endswith("same") else 1][3]) == index
        assert index.is_file()
        report = json.loads((index.parent / "report.json").read_text(encoding="utf-8"))
        assert report["overall"] == ("PASS" if name.endswith("same") else "REGRESSION")
    assert not list((tmp_path / "ci_failed").iterdir())

    with store_of(tmp_path) as store:
        comparisons = store.comparisons()
        assert [(c.result_name, c.overall) for c in comparisons] == [
            ("run-002-candidate", "REGRESSION"),
            ("run-001-same", "PASS"),
        ]
        regression = comparisons[0]
        assert regression.scenario == SCENARIO
        assert regression.report_dir == tmp_path / "reports" / "run-002-candidate"
        assert regression.current_dirs == (
            tmp_path / "ci_processed" / "run-002-candidate" / "results_2018-04-10_22-01-55",
        )
        assert all(p.is_dir() for p in regression.current_dirs + regression.baseline_dirs)
        assert regression.baseline_dirs == (BASELINE / "results_2018-03-05_21-14-07",)
        assert regression.counts.get("REGRESSION", 0) >= 1
        assert regression.thresholds["regression_percent"] == 5.0
        result = store.result("run-002-candidate")
        assert result is not None
        assert result.status is ResultStatus.PROCESSED
        assert result.location == tmp_path / "ci_processed" / "run-002-candidate"
        assert result.metadata["job_id"] == "J:4242"
        assert result.metadata["hosts"] == {"dut": "dut.example.com", "tg": "tg.example.com"}


def test_empty_ci_in_is_nothing_to_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path)
    code, lines = run(config, capsys)
    assert (code, lines) == (3, [])
    assert not (tmp_path / "results.sqlite").exists()  # the store is not even opened


def test_invalid_rows_are_processed_but_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path)
    deliver(tmp_path / "ci_in", "zero", BROKEN / "zero_throughput")
    code, lines = run(config, capsys)
    assert code == 2
    assert lines[0][:3] == ["processed", "zero", "INVALID"]
    assert (tmp_path / "ci_processed" / "zero").is_dir()


def test_repeats_in_one_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    baseline = tmp_path / "baseline-p2p"
    shutil.copytree(BASELINE, baseline)
    for pvp in baseline.rglob("*pvp*"):
        pvp.unlink()  # the repeats fixture ran phy2phy_tput only
    config = write_config(tmp_path, scenarios={SCENARIO: str(baseline)})
    deliver(tmp_path / "ci_in", "repeats", REPEATS)
    code, lines = run(config, capsys)
    assert lines[0][:2] == ["processed", "repeats"]
    assert (code, lines[0][2]) in ((0, "PASS"), (1, "REGRESSION"))
    with store_of(tmp_path) as store:
        assert store.comparison("repeats").current_dirs == (
            tmp_path / "ci_processed" / "repeats" / "results_2018-04-11_03-30-12",
        )


@pytest.mark.parametrize(
    ("case", "reason_part"),
    [
        ("unknown-scenario", "scenario 'NOT_CONFIGURED' has no baseline"),
        ("no-csv", "no VSperf result CSV"),
        ("bad-marker", "is not readable UTF-8 JSON"),
        ("no-scenario-field", "has no 'scenario' field"),
        ("unsafe-scenario", "is not a safe name"),
    ],
)
def test_result_that_cannot_be_compared_goes_to_ci_failed_with_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, reason_part: str
) -> None:
    config = write_config(tmp_path)
    ci_in = tmp_path / "ci_in"
    if case == "unknown-scenario":
        deliver(ci_in, case, scenario="NOT_CONFIGURED")
    elif case == "no-csv":
        deliver(ci_in, case)
        for csv in (ci_in / case).rglob("*.csv"):
            csv.unlink()
    else:
        deliver(ci_in, case)
        marker = ci_in / case / MARKER
        content = {
            "bad-marker": b'{"scenario": "OVS_DPDK1q"',
            "no-scenario-field": b'{"job_id": "J:1"}',
            "unsafe-scenario": b'{"scenario": "../../etc"}',
        }[case]
        marker.write_bytes(content)
    files = snapshot(ci_in / case)

    code, lines = run(config, capsys)

    failed = tmp_path / "ci_failed" / case
    assert code == 2
    assert lines == [["failed", case, str(tmp_path / "ci_failed" / f"{case}.FAILED.txt")]]
    assert snapshot(failed) == files
    text = (tmp_path / "ci_failed" / f"{case}.FAILED.txt").read_text(encoding="utf-8")
    assert reason_part in text
    details = json.loads((tmp_path / "ci_failed" / f"{case}.FAILED.json").read_text(encoding="utf-8"))
    assert reason_part in details["reason"]
    assert details["moved_to"] == str(failed)
    assert not (tmp_path / "reports" / case).exists()
    with store_of(tmp_path) as store:
        record = store.result(case)
        assert record is not None
        assert record.status is ResultStatus.FAILED
        assert record.location == failed
        assert reason_part in (record.failure_reason or "")


def test_symlink_in_ci_in_is_rejected_and_never_followed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path)
    outside = tmp_path / "outside"
    deliver(outside.parent, outside.name)  # a complete, valid result ...
    before = snapshot(outside)
    (tmp_path / "ci_in" / "linked").symlink_to(outside)  # ... reachable only through a symlink

    code, lines = run(config, capsys)

    assert code == 2
    assert lines[0][:2] == ["failed", "linked"]
    moved = tmp_path / "ci_failed" / "linked"
    assert moved.is_symlink() and os.readlink(moved) == str(outside)
    assert snapshot(outside) == before  # the target was neither moved nor changed
    assert not (tmp_path / "reports" / "linked").exists()
    assert "symbolic link" in (tmp_path / "ci_failed" / "linked.FAILED.txt").read_text(encoding="utf-8")


def test_symlink_inside_result_leading_outside_is_rejected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path)
    result = deliver(tmp_path / "ci_in", "sneaky")
    (result / "results_2018-04-10_22-01-55" / "passwd").symlink_to("../../../../../../etc/passwd")
    code, lines = run(config, capsys)
    assert code == 2
    assert lines[0][:2] == ["failed", "sneaky"]
    reason = (tmp_path / "ci_failed" / "sneaky.FAILED.txt").read_text(encoding="utf-8")
    assert "outside the result" in reason and "passwd" in reason


@pytest.mark.parametrize("name", ["a..b", "-rf", "bad\nname", "semi;colon", "white space"])
def test_unsafe_names_are_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    config = write_config(tmp_path)
    files = snapshot(deliver(tmp_path / "ci_in", name))
    code = main(["--config", str(config)])
    capsys.readouterr()
    assert code == 2
    assert snapshot(tmp_path / "ci_failed" / name) == files
    assert "not a safe name" in (tmp_path / "ci_failed" / f"{name}.FAILED.txt").read_text(encoding="utf-8")
    assert not list((tmp_path / "reports").iterdir())
    with store_of(tmp_path) as store:
        assert store.comparisons() == []


def test_hidden_entries_and_reason_files_are_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path)
    ci_in = tmp_path / "ci_in"
    deliver(ci_in, ".incoming-run-003")  # a copy in progress under a hidden name
    (ci_in / "old.FAILED.txt").write_text("moved back by a tester", encoding="utf-8")
    code, lines = run(config, capsys)
    assert (code, lines) == (3, [])
    assert (ci_in / ".incoming-run-003" / MARKER).is_file()
    assert (ci_in / "old.FAILED.txt").is_file()


def test_plain_file_in_ci_in_is_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path)
    (tmp_path / "ci_in" / "results.tar.gz").write_bytes(b"\x1f\x8b not really")
    code, lines = run(config, capsys)
    assert code == 2
    assert lines[0][:2] == ["failed", "results.tar.gz"]
    assert (tmp_path / "ci_failed" / "results.tar.gz").read_bytes() == b"\x1f\x8b not really"


@pytest.mark.parametrize("case", ["no-marker", "rsync-temp", "delay-updates", "quiet-period"])
def test_result_still_arriving_is_left_for_next_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    config = write_config(tmp_path, quiet_period_s=3600 if case == "quiet-period" else 0)
    result = deliver(tmp_path / "ci_in", "arriving", marker=case != "no-marker")
    inner = result / "results_2018-04-10_22-01-55"
    if case == "rsync-temp":
        (inner / ".result_1_pvp_tput_pvp.csv.Xy12Ab").write_bytes(b"partial")
    elif case == "delay-updates":
        (inner / ".~tmp~").mkdir()
    files = snapshot(result)

    code, lines = run(config, capsys)

    assert (code, lines) == (3, [])
    assert snapshot(result) == files
    assert not list((tmp_path / "ci_processed").iterdir())
    assert not list((tmp_path / "ci_failed").iterdir())

    # The copy finishes; the next pass (no quiet period) takes it.
    for temp in (inner / ".result_1_pvp_tput_pvp.csv.Xy12Ab", inner / ".~tmp~"):
        if temp.is_dir():
            temp.rmdir()
        elif temp.exists():
            temp.unlink()
    if case == "no-marker":
        (result / MARKER).write_text(json.dumps({"scenario": SCENARIO}), encoding="utf-8")
    config = write_config(tmp_path)
    code, lines = run(config, capsys)
    assert lines[0][:2] == ["processed", "arriving"]
    assert code == 1


def test_duplicate_delivery_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path)
    ci_in = tmp_path / "ci_in"
    deliver(ci_in, "run-007", CANDIDATE)
    assert run(config, capsys)[0] == 1
    first_report = (tmp_path / "reports" / "run-007" / "report.json").read_bytes()
    processed = snapshot(tmp_path / "ci_processed" / "run-007")

    deliver(ci_in, "run-007", BASELINE)  # same name delivered again
    duplicate = snapshot(ci_in / "run-007")
    code, lines = run(config, capsys)

    assert code == 2
    assert lines[0][:2] == ["failed", "run-007"]
    assert "duplicate delivery" in (tmp_path / "ci_failed" / "run-007.FAILED.txt").read_text(encoding="utf-8")
    assert snapshot(tmp_path / "ci_failed" / "run-007") == duplicate
    assert snapshot(tmp_path / "ci_processed" / "run-007") == processed
    assert (tmp_path / "reports" / "run-007" / "report.json").read_bytes() == first_report
    with store_of(tmp_path) as store:
        record = store.result("run-007")
        assert record is not None and record.status is ResultStatus.PROCESSED

    deliver(ci_in, "run-007", BASELINE)  # and a third time: numbered, never replaced
    assert run(config, capsys)[0] == 2
    assert (tmp_path / "ci_failed" / "run-007.1").is_dir()
    assert (tmp_path / "ci_failed" / "run-007.1.FAILED.json").is_file()


def test_second_pass_while_first_holds_lock_does_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path)
    result = deliver(tmp_path / "ci_in", "run-001")
    with pass_lock(tmp_path / "ci_in" / LOCK_NAME) as locked:
        assert locked
        code, lines = run(config, capsys)
    assert (code, lines) == (3, [])
    assert result.is_dir()
    assert run(config, capsys)[0] == 1  # lock released: processed now


def test_latest_pass_baseline_comes_from_tester_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(
        tmp_path, scenarios={SCENARIO: {"baseline": "latest-pass", "fallback": str(BASELINE)}}
    )
    ci_in = tmp_path / "ci_in"
    deliver(ci_in, "night-1", CANDIDATE)
    assert run(config, capsys)[0] == 1  # against the fallback: regression
    with store_of(tmp_path) as store:
        first = store.comparison("night-1")
        assert first.baseline_result_name is None
        store.add_verdict(first.id, decision=ReviewDecision.PASS, tester="qe")

    deliver(ci_in, "night-2", CANDIDATE)
    code, lines = run(config, capsys)
    assert (code, lines[0][:3]) == (0, ["processed", "night-2", "PASS"])  # same numbers as night-1
    with store_of(tmp_path) as store:
        second = store.comparison("night-2")
        assert second.baseline_result_name == "night-1"
        assert second.baseline_dirs == (
            tmp_path / "ci_processed" / "night-1" / "results_2018-04-10_22-01-55",
        )


def test_latest_pass_without_any_passed_result_or_fallback_fails_clearly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, scenarios={SCENARIO: "latest-pass"})
    deliver(tmp_path / "ci_in", "night-1")
    code, lines = run(config, capsys)
    assert code == 2
    assert lines[0][:2] == ["failed", "night-1"]
    reason = (tmp_path / "ci_failed" / "night-1.FAILED.txt").read_text(encoding="utf-8")
    assert "ovsperf-results verdict" in reason and "fallback" in reason


def test_scenario_thresholds_change_the_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(
        tmp_path,
        scenarios={SCENARIO: {"baseline": str(BASELINE), "thresholds": {"regression_percent": 10.0}}},
    )
    deliver(tmp_path / "ci_in", "run-001", CANDIDATE)  # worst drop 6.0 % < 10 %
    code, lines = run(config, capsys)
    assert (code, lines[0][2]) == (0, "PASS")
    with store_of(tmp_path) as store:
        assert store.comparison("run-001").thresholds["regression_percent"] == 10.0


@pytest.mark.parametrize("with_verdict", [True, False])
def test_redelivery_of_an_archived_result_is_a_duplicate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], with_verdict: bool
) -> None:
    config = write_config(tmp_path)
    deliver(tmp_path / "ci_in", "night-1", CANDIDATE)
    assert run(config, capsys)[0] == 1
    if with_verdict:
        with store_of(tmp_path) as store:
            store.add_verdict(store.comparison("night-1").id, decision=ReviewDecision.FAIL, bug_id="RHBZ#5")
    shutil.rmtree(tmp_path / "ci_processed" / "night-1")  # archived away by the lab admin
    page = (tmp_path / "reports" / "night-1" / "report.json").read_bytes()

    deliver(tmp_path / "ci_in", "night-1", BASELINE)
    code, lines = run(config, capsys)

    assert (code, lines[0][:2]) == (2, ["failed", "night-1"])
    reason = (tmp_path / "ci_failed" / "night-1.FAILED.txt").read_text(encoding="utf-8")
    assert "a different result named 'night-1' was already processed" in reason
    assert (tmp_path / "reports" / "night-1" / "report.json").read_bytes() == page
    with store_of(tmp_path) as store:
        comparison = store.comparison("night-1")
        assert comparison.overall == "REGRESSION"  # still the first delivery's comparison
        if with_verdict:
            assert comparison.verdict is not None and comparison.verdict.bug_id == "RHBZ#5"


def test_beaker_task_layout_marker_inside_the_vsperf_results_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """The vsperf_test task rsyncs VSperf's results_<ts> directory itself, marker inside, last."""
    config = write_config(tmp_path)
    source = next(CANDIDATE.glob("results_*"))
    delivered = tmp_path / "ci_in" / source.name
    shutil.copytree(source, delivered)
    marker = {
        "schema": 1,
        "scenario": SCENARIO,
        "status": "FAIL",
        "missing_tests": ["pvp_tput"],
        "beaker_job_id": "J:77",
        "hosts": {"dut": "dut1", "trafficgen": "tg1", "trafficgen_address": "10.0.0.2"},
        "packages": {"openvswitch3.1": "3.1.0-10.el9.x86_64"},
    }
    (delivered / MARKER).write_text(json.dumps(marker), encoding="utf-8")

    code, lines = run(config, capsys)

    assert (code, lines[0][:3]) == (1, ["processed", source.name, "REGRESSION"])
    assert "is incomplete: the producer reported status FAIL (tests without results: pvp_tput)" in caplog.text
    with store_of(tmp_path) as store:
        comparison = store.comparison(source.name)
        assert comparison.current_dirs == (tmp_path / "ci_processed" / source.name,)
        result = store.result(source.name)
        assert result is not None and result.metadata["beaker_job_id"] == "J:77"


def test_dry_run_lists_states_and_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path)
    ci_in = tmp_path / "ci_in"
    deliver(ci_in, "ready-1")
    deliver(ci_in, "arriving", marker=False)
    (ci_in / "bad..name").mkdir()
    before = snapshot(ci_in)

    code, lines = run_dry(config, capsys)

    assert code == 0
    assert [line[:2] for line in lines] == [
        ["busy", "arriving"],
        ["rejected", "bad..name"],
        ["ready", "ready-1"],
    ]
    assert lines[0][2] == "no 'ovsperf-metadata.json' yet"
    assert lines[2] == ["ready", "ready-1"]
    assert snapshot(ci_in) == before
    assert not (tmp_path / "ci_processed").exists() and not (tmp_path / "results.sqlite").exists()

    shutil.rmtree(ci_in / "ready-1")
    (ci_in / "bad..name").rmdir()
    assert run_dry(config, capsys)[0] == 3  # only a busy entry: a pass would do nothing


def run_dry(config: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[list[str]]]:
    code = main(["--config", str(config), "--dry-run"])
    return code, [line.split("\t") for line in capsys.readouterr().out.splitlines()]
