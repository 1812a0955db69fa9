"""Issue 25, "Paths and shells": ``ovsperf-remote run`` writes only into a new log directory, and a
remote ``--collector`` follows the one rsync-destination rule. All refused before any connection
(were one tried, the hosts below are loopback ports nothing listens on: refused at once)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ovsperf_common.exitcodes import ExitCode
from remote.cli import main

RUN = ["run", "--config", "OVS_DPDK1q", "--tg", "root@127.0.0.1:9", "--dut", "root@127.0.0.2:9"]


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith("ovsperf-remote: error: ")
    return line


def test_log_dir_of_another_run_is_refused_unless_resumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    earlier = tmp_path / "ovsperf-remote-earlier"
    earlier.mkdir()
    state = json.dumps({"run_id": "20260101-000000-abcdef", "config": "OVS_DPDK1q"})
    (earlier / "state.json").write_text(state)
    (earlier / "DUT.log").write_text("the earlier run's log\n")
    code = main([*RUN, "--log-dir", str(earlier), "--remote-dir", str(tmp_path / "remote")])
    assert code == ExitCode.ERROR
    line = _error_line(capsys)
    assert f"field '--log-dir': '{earlier}' holds the state.json of another run" in line
    assert f"'--resume {earlier}'" in line
    assert (earlier / "state.json").read_text() == state  # not overwritten
    assert sorted(p.name for p in earlier.iterdir()) == ["DUT.log", "state.json"]
    assert not (tmp_path / "remote").exists()


@pytest.mark.parametrize("kind", ["empty", "full", "symlink"])
def test_an_existing_log_dir_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    target = tmp_path / "etc"
    target.mkdir()
    if kind == "full":
        (target / "passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    log_dir = target
    if kind == "symlink":
        log_dir = tmp_path / "link"
        log_dir.symlink_to(target)
    before = sorted(p.name for p in target.iterdir())
    assert main([*RUN, "--log-dir", str(log_dir)]) == ExitCode.ERROR
    line = _error_line(capsys)
    assert f"field '--log-dir': '{log_dir}' exists; give a directory that does not exist yet" in line
    assert sorted(p.name for p in target.iterdir()) == before


def test_a_hostile_remote_collector_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log_dir = tmp_path / "logs"
    argv = [*RUN, "--collector", "root@h:/ci_in;touch${IFS}/tmp/x;", "--log-dir", str(log_dir)]
    assert main(argv) == ExitCode.ERROR
    line = _error_line(capsys)
    assert "field '--collector': 'root@h:/ci_in;touch${IFS}/tmp/x;' is not an rsync destination" in line
    assert not log_dir.exists()
    # 'plan' shows what would run: the same rule, not a silent fallback to "no collector".
    assert main(["plan", *RUN[1:], "--collector", "root@h:/srv/../etc"]) == ExitCode.ERROR
    assert "without '.' or '..'" in _error_line(capsys)
    assert main(["plan", *RUN[1:], "--collector", "ci@collector.example.com:/srv/ci_in"]) == ExitCode.OK
    assert "COLLECTOR=ci@collector.example.com:/srv/ci_in" in capsys.readouterr().out
