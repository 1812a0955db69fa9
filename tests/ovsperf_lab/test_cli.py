"""ovsperf-lab's command line, in-process: exit codes, stdout, refusals, cleanup of orphaned runs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ovsperf_common.exitcodes import ExitCode
from ovsperf_lab.cli import main
from ovsperf_lab.generators.dpdk import readiness
from ovsperf_lab.state import DPDK_RUNTIME_DIR, HUGEPAGE_DIR, LabRunState, TrackedProcess


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == ExitCode.OK
    out = capsys.readouterr().out.splitlines()
    line = next(x for x in out if x.startswith("OVS_DPDK1q "))
    assert "phy2phy_tput" in line and "[runs here]" in line
    vanilla = next(x for x in out if x.startswith("OVS_VANILLA_GUEST_linuxbridge"))
    assert "refused here" in vanilla


def test_doctor_reports_this_machine(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor"])
    out = capsys.readouterr().out
    assert "[ok  ] root: running as root" in out
    assert "[ok  ] hugetlbfs: /dev/hugepages mounted" in out
    assert "OVS with DPDK: /usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk (OVS 3.1" in out
    assert "  OVS_DPDK1q: runs here" in out
    assert "OVS_DPDK1q_GUEST_linuxbridge: refused: PVP with a 'linux_bridge' guest needs a guest image" in out
    built = readiness().ready
    assert code == (ExitCode.OK if built else ExitCode.ERROR)
    assert ("[ok  ] traffic generator 'trafficgen'" in out) == built


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--latency-loads", "10,x"], "'10,x' is not a comma-separated list of percentages"),
        (["--search", "fast"], "invalid choice: 'fast'"),
        (["--goal", "x"], "invalid float value: 'x'"),
    ],
)
def test_unparsable_options_are_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["run", "--config", "OVS_DPDK1q", *argv, "--output", str(tmp_path)]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "ovsperf-lab run: error:" in err and message in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "argv,code,message",
    [
        (
            ["run", "--config", "NOPE"],
            ExitCode.ERROR,
            "Unknown scenario 'NOPE'; valid scenarios are: OVS_DPDK1q_GUEST",
        ),
        (
            ["run", "--config", "OVS_DPDK1q", "--frame-sizes", "63"],
            ExitCode.ERROR,
            "Option '--frame-sizes': Frame size 63 B is outside 64..1518 B",
        ),
        (
            ["run", "--config", "OVS_DPDK1q", "--frame-sizes", "64,64:0/1518:1"],
            ExitCode.ERROR,
            "Option '--frame-sizes': mix '64:0/1518:1': weight 0 of 64 B is not a whole number",
        ),
        (
            ["run", "--config", "OVS_DPDK1q", "--frame-sizes", "64:7/1518:1/64:3"],
            ExitCode.ERROR,
            "names 64 B more than once",
        ),
        (
            ["run", "--config", "OVS_DPDK1q", "--frame-sizes", "imix,9000"],
            ExitCode.ERROR,
            "Frame size 9000 B is outside 64..1518 B",
        ),
        (
            ["run", "--config", "OVS_DPDK1q", "--frame-sizes", "64:4000/1518:97"],
            ExitCode.ERROR,
            "Option '--frame-sizes': mix '64:4000/1518:97': its weights sum to 4097 frames after dividing "
            "by their greatest common divisor; the generator sends at most 4096",
        ),
        (
            ["run", "--config", "OVS_DPDK1q", "--flows", "1,2000000"],
            ExitCode.ERROR,
            "Option '--flows' must be in [1, 1048576] (the most flows per direction the generator can "
            "hold), got 2000000.",
        ),
        (["run", "--config", "OVS_DPDK1q", "--flows", "1,10,1"], ExitCode.ERROR, "names a flow count twice"),
        (
            ["run", "--config", "OVS_DPDK1q", "--flows", "1,,10"],
            ExitCode.ERROR,
            "Option '--flows': '1,,10' is not a whole number",
        ),
        (["run", "--config", "OVS_DPDK1q", "--loss", "150"], ExitCode.ERROR, "Option '--loss'"),
        (
            ["run", "--config", "OVS_DPDK1q", "--search", "binary", "--loss", "150"],
            ExitCode.ERROR,
            "Option '--loss' must be a percentage in [0, 100), got 150.0.",
        ),
        (
            ["run", "--config", "OVS_DPDK1q", "--goal", "0", "--goal", "100"],
            ExitCode.ERROR,
            "Option '--goal' must be loss percentages in [0, 100), got [0.0, 100.0].",
        ),
        (
            ["run", "--config", "OVS_DPDK1q", "--goal-width", "-1"],
            ExitCode.ERROR,
            "Option '--goal-width' must be in (0, 100) %, got -1.0.",
        ),
        (["run", "--config", "OVS_DPDK1q", "--exceed-ratio", "1"], ExitCode.ERROR, "Option '--exceed-ratio'"),
        (
            ["run", "--config", "OVS_DPDK1q", "--final-trial-duration", "1e9"],
            ExitCode.ERROR,
            "Option '--final-trial-duration' must be in (0, 3600] s",
        ),
        (
            ["run", "--config", "OVS_DPDK1q", "--pmd-cores", "8"],
            ExitCode.ERROR,
            "8 OVS PMD threads need 9 CPUs",
        ),
        (["run", "--config", "OVS_DPDK1q", "--test", "pvp_tput"], ExitCode.ERROR, "has no test pvp_tput"),
        (
            ["run", "--config", "OVS_DPDK1q", "--ring-size", "1000"],
            ExitCode.ERROR,
            "Option '--ring-size' must be a power of two in [256, 32768], got 1000.",
        ),
    ],
)
def test_bad_input_exit_codes(
    argv: list[str],
    code: int,
    message: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    state_root: Path,
) -> None:
    assert main(["--state-dir", str(state_root), *argv, "--output", str(tmp_path)]) == code
    err = capsys.readouterr().err
    assert message in err
    assert len([line for line in err.splitlines() if line.startswith("ovsperf-lab:")]) == 1
    assert list(tmp_path.iterdir()) == [] and list(state_root.iterdir()) == []


def test_refused_scenario_starts_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, state_root: Path
) -> None:
    before = set(os.listdir(HUGEPAGE_DIR))
    code = main(
        [
            "--state-dir",
            str(state_root),
            "run",
            "--config",
            "OVS_DPDK1q_GUEST_linuxbridge",
            "--output",
            str(tmp_path),
        ]
    )
    assert code == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "Scenario 'OVS_DPDK1q_GUEST_linuxbridge' cannot run on this machine" in err
    assert "--guest-image" in err
    assert list(tmp_path.iterdir()) == [] and list(state_root.iterdir()) == []
    assert set(os.listdir(HUGEPAGE_DIR)) == before


def test_cleanup_removes_only_orphaned_runs(capsys: pytest.CaptureFixture[str], state_root: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    orphan = LabRunState.create(state_root, "ovsperf-lab-orphan")
    orphan.owner = TrackedProcess("ovsperf-lab", dead.pid, 1)
    child = subprocess.Popen(["sleep", "600"], start_new_session=True)
    orphan.track_process("ovs-vswitchd", child.pid)
    prefix = orphan.new_file_prefix("tg")
    hugefile = HUGEPAGE_DIR / f"{prefix}map_0"
    hugefile.touch()
    runtime = DPDK_RUNTIME_DIR / prefix
    runtime.mkdir(parents=True)
    (orphan.run_dir / "tg0.sock").touch()
    orphan.save()
    live = LabRunState.create(state_root, "ovsperf-lab-live")  # owned by this (running) process
    try:
        assert main(["--state-dir", str(state_root), "cleanup"]) == ExitCode.OK
        out, err = capsys.readouterr()
        assert f"stopped ovs-vswitchd (PID {child.pid})" in out
        assert f"removed {hugefile}" in out and f"removed {runtime}" in out
        assert child.wait(timeout=5) != 0
        assert not hugefile.exists() and not runtime.exists() and not orphan.run_dir.exists()
        assert live.run_dir.exists()
        assert "run 'ovsperf-lab-live' is still running" in err
    finally:
        if child.poll() is None:
            child.kill()
        hugefile.unlink(missing_ok=True)
        if runtime.exists():
            runtime.rmdir()


def test_cleanup_with_nothing_to_do(capsys: pytest.CaptureFixture[str], state_root: Path) -> None:
    assert main(["--state-dir", str(state_root / "none"), "cleanup"]) == ExitCode.OK
    assert "nothing to clean up" in capsys.readouterr().err


def test_missing_generator_is_refused_before_start(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, state_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OVSPERF_TRAFFICGEN", str(tmp_path / "no-such-generator"))
    code = main(
        ["--state-dir", str(state_root), "run", "--config", "OVS_DPDK1q", "--output", str(tmp_path / "out")]
    )
    assert code == ExitCode.ERROR
    assert "not built; fix: make -C trafficgen" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and list(state_root.iterdir()) == []
