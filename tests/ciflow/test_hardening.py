"""One bad delivery never stops the nightly flow; the flow never replaces what is not its own."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

import ciflow.process
from ciflow.cli import main
from ciflow.config import load_config
from ciflow.errors import ConfigError
from tests.ciflow.helpers import BASELINE, SCENARIO, deliver, write_config


def run(config: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, list[str]]:
    code = main(["--config", str(config), *extra])
    return code, capsys.readouterr().out.splitlines()


def test_an_unexpected_error_in_one_result_fails_only_that_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_config(tmp_path)
    ci_in = tmp_path / "ci_in"
    deliver(ci_in, "night-1")
    deliver(ci_in, "night-2")
    real = ciflow.process._compare_record_move

    def flaky(config: Any, store: Any, entry: Any, metadata: Any) -> Any:
        if entry.name == "night-1":
            raise RecursionError("maximum recursion depth exceeded in a parser")
        return real(config, store, entry, metadata)

    monkeypatch.setattr(ciflow.process, "_compare_record_move", flaky)
    code, lines = run(config, capsys)
    assert code == 2  # a failed result; never 1, which means "regression"
    assert lines[0].split("\t")[:2] == ["failed", "night-1"]
    assert lines[1].split("\t")[:3] == ["processed", "night-2", "PASS"] or lines[1].startswith(
        "processed\tnight-2"
    )
    reason = (tmp_path / "ci_failed" / "night-1.FAILED.txt").read_text()
    assert "unexpected error while processing it (RecursionError: maximum recursion depth" in reason
    assert not (ci_in / "night-1").exists() and (tmp_path / "ci_processed" / "night-2").is_dir()


def test_names_with_control_characters_cannot_forge_output_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path)
    odd = "bad\nprocessed\tforged"
    deliver(tmp_path / "ci_in", odd)
    code, lines = run(config, capsys)
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith("failed\tbad\\nprocessed\\tforged\t")


def test_dry_run_predicts_what_the_pass_rejects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path)
    ci_in = tmp_path / "ci_in"
    deliver(ci_in, "good")
    deliver(ci_in, "unknown-scenario", scenario="OVS_DPDK8q")
    (deliver(ci_in, "no-metadata-scenario") / "ovsperf-metadata.json").write_text('{"schema": 1}')
    code, lines = run(config, capsys, "--dry-run")
    assert code == 0
    by_name = {line.split("\t")[1]: line.split("\t") for line in lines}
    assert by_name["good"][0] == "ready"
    assert (
        by_name["unknown-scenario"][0] == "rejected" and "has no baseline" in by_name["unknown-scenario"][2]
    )
    assert (
        by_name["no-metadata-scenario"][0] == "rejected"
        and "'scenario'" in by_name["no-metadata-scenario"][2]
    )
    code, lines = run(config, capsys)
    outcome = {line.split("\t")[1]: line.split("\t")[0] for line in lines}
    assert outcome == {"good": "processed", "unknown-scenario": "failed", "no-metadata-scenario": "failed"}


@pytest.mark.parametrize(
    ("top", "message"),
    [
        ({"database": "ci_in/results.sqlite"}, "field 'database': '"),
        ({"database": "ci_failed/x/results.sqlite"}, "lies inside or equals ci_failed"),
        ({"reports": str(BASELINE)}, "lies inside or equals reports"),
    ],
)
def test_store_and_reports_never_lie_in_flow_or_baseline_directories(
    tmp_path: Path, top: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(write_config(tmp_path, **top))


def test_a_killed_report_writes_temporaries_are_swept_when_old(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path)
    reports = tmp_path / "reports"
    old = reports / ".night-0.abc123.tmp"
    fresh = reports / ".night-0.def456.old"
    old.mkdir(parents=True)
    (old / "index.html").write_text("half")
    fresh.mkdir()
    two_hours_ago = time.time() - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))
    deliver(tmp_path / "ci_in", "night-1")
    code, _ = run(config, capsys)
    assert code in (0, 1)  # the fixture candidate regresses against the baseline: exit 1 is right
    assert not old.exists() and fresh.is_dir()
    assert load_config(config).scenarios[SCENARIO].baseline_dirs == (BASELINE,)
