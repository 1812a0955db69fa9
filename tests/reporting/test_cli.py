"""Check generate-report's command line in-process: exit codes, stdout, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from resultstore.report_cli import main
from tests.reporting.conftest import BASELINE, BROKEN, CANDIDATE, REPEATS


def _args(out: Path, *extra: str) -> list[str]:
    return ["--baseline", str(BASELINE), "--output-dir", str(out), *extra]


@pytest.mark.parametrize(
    ("current", "extra", "code"),
    [
        pytest.param(BASELINE, [], 0, id="no-regression-0"),
        pytest.param(CANDIDATE, [], 1, id="regression-1"),
        pytest.param(CANDIDATE, ["--threshold-regression", "7"], 0, id="threshold-7-0"),
        pytest.param(BROKEN / "zero_throughput", [], 2, id="zero-pps-invalid-2"),
        pytest.param(REPEATS, [], 2, id="test-missing-invalid-2"),
    ],
)
def test_exit_codes_with_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], current: Path, extra: list[str], code: int
) -> None:
    out = tmp_path / "out"
    assert main([*_args(out, *extra), str(current)]) == code
    assert capsys.readouterr().out.splitlines() == [str(out / "index.html")]
    assert json.loads((out / "report.json").read_text())["schema"] == 1


def test_new_test_without_baseline_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """pvp_tput only in the current results: NO_BASELINE cells, exit decided by phy2phy_tput."""
    out = tmp_path / "out"
    argv = ["--baseline", str(REPEATS), "--output-dir", str(out), str(BASELINE)]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines() == [str(out / "index.html")]
    counts = json.loads((out / "report.json").read_text())["counts"]
    assert counts["NO_BASELINE"] == 7 and counts["INVALID"] == 0


def test_help_documents_verdicts_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    for needle in ("NO_BASELINE", "INVALID", "UNSTABLE", "0  report written", "3  no results", "L1"):
        assert needle in text


def test_no_results_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "nothing_here"
    empty.mkdir()
    assert main([*_args(tmp_path / "out"), str(empty)]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = [x for x in captured.err.splitlines() if x.startswith("generate-report:")]
    assert "No VSperf result CSV" in line and "current" in line and str(empty) in line


@pytest.mark.parametrize(
    ("argv_tail", "needle"),
    [
        pytest.param(["/nonexistent/results"], "No such results directory", id="missing-dir"),
        pytest.param(
            ["--threshold-regression", "-1", str(CANDIDATE)], "regression_percent", id="bad-threshold"
        ),
        pytest.param(["--alpha", "0.9", str(CANDIDATE)], "alpha", id="bad-alpha"),
    ],
)
def test_bad_input_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv_tail: list[str], needle: str
) -> None:
    assert main([*_args(tmp_path / "out"), *argv_tail]) == 2
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if x.startswith("generate-report:")]
    assert needle in line
    assert not (tmp_path / "out").exists()


def test_usage_error_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--output-dir", "x"]) == 2
    assert "--baseline" in capsys.readouterr().err


def test_help_documents_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    for line in (
        "0  report written, no regression",
        "1  report written, at least one REGRESSION",
        "3  no results",
    ):
        assert line in text
    assert "--threshold-warning" in text and "--title" in text


def test_several_baselines_and_title(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    argv = ["--baseline", str(BASELINE), "--baseline", str(CANDIDATE), "--output-dir", str(out)]
    assert main([*argv, "--title", "nightly <b>x</b>", str(REPEATS)]) == 2
    report = json.loads((out / "report.json").read_text())
    assert len(report["baseline"]) == 2 and report["title"] == "nightly <b>x</b>"
    assert "<title>nightly &lt;b&gt;x&lt;/b&gt;</title>" in (out / "index.html").read_text()


def test_shipped_examples_main_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's main job compares the shipped examples (copies of the fixtures)."""
    examples = Path(__file__).resolve().parents[2] / "examples" / "results"
    out = tmp_path / "report"
    argv = ["--baseline", str(examples / "baseline_ovs-2.9.0_dpdk-17.11"), "--output-dir", str(out)]
    assert main([*argv, str(examples / "candidate_ovs-2.9.1_dpdk-17.11.2")]) == 1
    report = json.loads((out / "report.json").read_text())
    pvp = next(t for t in report["tests"] if t["test"] == "pvp_tput")
    assert pvp["rows"][0]["rel_change_percent"] == pytest.approx(-6.0, abs=5e-4)
    assert report["counts"]["REGRESSION"] == 1
