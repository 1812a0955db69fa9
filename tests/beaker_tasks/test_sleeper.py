from __future__ import annotations

import subprocess
import time

from .shims import TASKS, Lab


def test_sleeps_the_given_time_and_extends_the_watchdog(lab: Lab) -> None:
    started = time.monotonic()
    # 2.52 s → 2 whole seconds; the end is counted in whole seconds of `date +%s`, so a second
    # boundary between reading the start and the first "now" takes up to 1 s off: at least 1 s.
    run = lab.run("sleeper", SLEEP_HOURS="0.0007", SLEEPER_TICK_S="1")
    elapsed = time.monotonic() - started
    assert run.returncode == 0, run.stdout + run.stderr
    assert 1.0 <= elapsed < 10
    assert run.reported() == [("sleeper/reserve", "PASS")]
    (watchdog,) = run.called("rstrnt-adjust-watchdog")
    assert 3600 <= int(watchdog[0]) <= 3602


def test_release_file_ends_the_reservation_early(lab: Lab) -> None:
    env = lab.env(SLEEP_HOURS="1", SLEEPER_TICK_S="1", RSTRNT_REBOOTCOUNT="0")
    started = time.monotonic()
    with subprocess.Popen(
        [str(TASKS / "sleeper" / "runtest.sh")], env=env, stdout=subprocess.PIPE, text=True
    ) as proc:
        deadline = time.monotonic() + 10
        while not (lab.state / "end_epoch").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        (lab.state / "release").touch()
        try:
            out, _ = proc.communicate(timeout=10)
        finally:
            proc.kill()
    assert proc.returncode == 0
    assert time.monotonic() - started < 10
    assert "Released early" in out


def test_resumes_with_the_time_left_after_a_reboot(lab: Lab) -> None:
    (lab.state / "end_epoch").write_text(f"{int(time.time()) + 1}\n")
    started = time.monotonic()
    run = lab.run("sleeper", reboot=1, SLEEP_HOURS="10", SLEEPER_TICK_S="1")
    assert run.returncode == 0, run.stdout + run.stderr
    assert time.monotonic() - started < 8
    assert "Resuming the reservation after a reboot" in run.stdout


def test_bad_hours_warn_and_abort(lab: Lab) -> None:
    for hours, message in (
        ("two", "is not a number of hours"),
        ("721", "is not in (0, 720] hours"),
        ("0", "(0, 720]"),
    ):
        run = lab.run("sleeper", SLEEP_HOURS=hours)
        assert run.returncode == 2
        assert message in run.stderr
        assert run.reported() == [("sleeper/abort", "WARN")]
