"""The tasks copied to a host over SFTP and one of them run there, against a real sshd."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from remote.errors import RemoteError
from remote.executor import REPO_ROOT, UPLOADED, run_task, upload
from remote.plan import RemoteStep
from remote.ssh import Session, Target

from .conftest import Lab


def local_files() -> set[str]:
    return {
        str(p.relative_to(REPO_ROOT))
        for top in UPLOADED
        for p in (REPO_ROOT / top).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc" and not p.is_symlink()
    }


def test_upload_copies_the_tasks_with_their_modes_into_a_new_run_directory(lab: Lab, tmp_path: Path) -> None:
    lab.trust()
    run_dir = tmp_path / "runs" / "run-1"  # the hosts share this machine's file system
    with Session(Target(lab.dut.address, "root"), lab.settings()) as session:
        count = upload(session, str(run_dir))
        copied = {str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file()}
        assert copied == local_files() | {"bin/rstrnt-reboot"} and count == len(copied) - 1
        shim = run_dir / "bin" / "rstrnt-reboot"
        assert shim.stat().st_mode & 0o777 == 0o755
        assert f": > {run_dir}/reboot-requested" in shim.read_text()
        script = run_dir / "beaker_tasks" / "vsperf_test" / "runtest.sh"
        assert script.read_bytes() == (REPO_ROOT / "beaker_tasks" / "vsperf_test" / "runtest.sh").read_bytes()
        assert script.stat().st_mode & 0o111 == 0o111
        assert [p.name for p in (tmp_path / "runs").iterdir()] == ["run-1"]  # no temporary left
        with pytest.raises(RemoteError, match="exists already; a run directory is never replaced"):
            upload(session, str(run_dir))
        with pytest.raises(RemoteError, match="is not an absolute path"):
            upload(session, "runs/run-2")


def test_a_task_runs_as_under_beaker_with_its_output_shown_and_logged(lab: Lab, tmp_path: Path) -> None:
    lab.trust()
    run_dir = tmp_path / "run"
    console = io.StringIO()
    with Session(Target(lab.dut.address, "root"), lab.settings()) as session:
        upload(session, str(run_dir))
        step = RemoteStep("sleeper", (("SLEEP_HOURS", "0.0003"), ("SLEEPER_TICK_S", "1")))
        outcome = run_task(
            session, str(run_dir), step, tmp_path / "logs" / "dut.log", timeout_s=60,
            extra={"TASK_STATE_DIR": str(tmp_path / "state")}, console=console,
        )  # fmt: skip
        assert outcome.exit_status == 0
        shown = console.getvalue().splitlines()
        assert shown and all(line.startswith(f"[root@{lab.dut.address} sleeper] ") for line in shown)
        assert any("Task sleeper: reboot count 0" in line for line in shown)
        logged = (tmp_path / "logs" / "dut.log").read_text()
        assert logged.startswith(
            f"# env SLEEP_HOURS=0.0003 SLEEPER_TICK_S=1 PATH={run_dir}/bin:/usr/local/sbin:"
        )
        script = f"{run_dir}/beaker_tasks/sleeper/runtest.sh"
        assert f" TASK_STATE_DIR={tmp_path / 'state'} bash {script}" in logged
        assert "Task sleeper: reboot count 0" in logged
        # A hostile value stays one word of the task's environment: never run by a shell.
        marker = tmp_path / "pwned"
        bad = RemoteStep("sleeper", (("SLEEP_HOURS", f"1; touch {marker}"),))
        failed = run_task(
            session, str(run_dir), bad, tmp_path / "logs" / "dut.log", timeout_s=60,
            extra={"TASK_STATE_DIR": str(tmp_path / "state")}, console=io.StringIO(),
        )  # fmt: skip
        assert failed.exit_status != 0 and not marker.exists()
        assert (
            f"SLEEP_HOURS '1; touch {marker}' is not a number of hours."
            in (tmp_path / "logs" / "dut.log").read_text()
        )
        with pytest.raises(RemoteError, match="Task parameter 'lower' of sleeper is not NAME"):
            run_task(
                session,
                str(run_dir),
                RemoteStep("sleeper", (("lower", "x"),)),
                tmp_path / "l.log",
                timeout_s=5,
            )
