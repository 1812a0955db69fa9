"""beaker_tasks/lib/task.sh on its own: result mapping per phase kind, argument checks, misuse."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .shims import TASKS, Lab

LIB = TASKS / "lib" / "task.sh"


def _script(lab: Lab, body: str, **env: str) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    lab.log.unlink(missing_ok=True)
    script = f'set -o nounset -o pipefail\n. "{LIB}"\ntask_init demo\n{body}\n'
    proc = subprocess.run(
        ["bash", "-c", script], env=lab.env(**env), capture_output=True, text=True, timeout=30, check=False
    )
    return proc, lab.calls()


def _results(calls: list[list[str]]) -> list[tuple[str, ...]]:
    out = []
    for call in calls:
        if call[0] == "rstrnt-report-result":
            args = call[1:]
            if args[:1] == ["-o"]:
                assert Path(args[1]).is_file()
                args = args[2:]
            out.append(tuple(args))
    return out


def test_failing_command_is_fail_in_test_phase_and_warn_in_setup(lab: Lab) -> None:
    body = """
task_phase_start Setup prepare
task_run "a setup step that fails" false
task_run "a setup step that works" true
task_phase_end
task_phase_start Test measure
task_run "a measurement that fails" false
task_phase_end
task_phase_start Cleanup tidy
task_run "works" true
task_phase_end
task_finish
"""
    proc, calls = _script(lab, body)
    assert proc.returncode == 1
    assert _results(calls) == [("demo/prepare", "WARN"), ("demo/measure", "FAIL"), ("demo/tidy", "PASS")]
    assert "FAILED (exit 1): a measurement that fails" in proc.stdout
    assert "Task demo finished: FAIL" in proc.stdout


def test_warn_only_exits_0(lab: Lab) -> None:
    proc, calls = _script(lab, "task_phase_start Setup s\ntask_warn degraded\ntask_phase_end\ntask_finish")
    assert proc.returncode == 0
    assert _results(calls) == [("demo/s", "WARN")]


def test_metric_is_an_integer_of_at_most_10_digits(lab: Lab) -> None:
    proc, calls = _script(lab, "task_report demo/rate PASS 14880952")
    assert proc.returncode == 0 and _results(calls) == [("demo/rate", "PASS", "14880952")]
    proc, calls = _script(lab, "task_report demo/rate PASS 14880952.38")
    assert proc.returncode == 2 and "not an integer of at most 10 digits" in proc.stderr
    proc, _ = _script(lab, "task_report demo/rate PASS 12345678901")
    assert proc.returncode == 2
    proc, _ = _script(lab, "task_report demo/rate MAYBE")
    assert proc.returncode == 2 and "is not PASS, WARN, FAIL or SKIP" in proc.stderr


def test_reboot_inside_a_phase_is_refused(lab: Lab) -> None:
    proc, calls = _script(lab, "task_phase_start Setup s\ntask_reboot")
    assert proc.returncode == 2
    assert "task_reboot inside the open phase 's'" in proc.stderr
    assert not [c for c in calls if c[0] == "rstrnt-reboot"]


def test_abort_outside_a_phase_reports_and_aborts(lab: Lab) -> None:
    proc, calls = _script(lab, 'task_abort "NIC 0000:03:00.0 missing"; echo unreachable')
    assert proc.returncode == 2
    assert "unreachable" not in proc.stdout
    assert _results(calls) == [("demo/abort", "WARN")]
    assert ["rstrnt-abort", "-t", "recipe"] in calls
    uploaded = [c for c in calls if c[0] == "rstrnt-report-log"]
    assert Path(uploaded[0][-1]).read_text() == "ABORT: NIC 0000:03:00.0 missing\n"


def test_abort_message_is_one_line_without_control_characters(lab: Lab) -> None:
    """A parameter echoed into an abort (newline, terminal escape, 5000 bytes) reaches the console,
    the log and Beaker as one clean line of at most 2000 bytes."""
    proc, calls = _script(
        lab, "task_abort \"GUEST_NAME '$(printf 'a\\nb\\033[31mc')' is bad$(printf 'x%.0s' {1..5000})\""
    )
    assert proc.returncode == 2
    uploaded = [c for c in calls if c[0] == "rstrnt-report-log"]
    text = Path(uploaded[0][-1]).read_text()
    assert text.startswith("ABORT: GUEST_NAME 'a?b?[31mc' is badxxx") and text.endswith("x\n")
    assert len(text) == len("ABORT: ") + 2000 + 1
    assert "\033" not in proc.stderr and proc.stderr.count("\n") == 1


def test_abort_message_drops_c1_controls_and_a_cut_character(lab: Lab) -> None:
    """UTF-8's C1 CSI (C2 9B) is a terminal escape too; 2000 bytes may end inside a character."""
    proc, calls = _script(
        lab, "task_abort \"$(printf 'x\\302\\23331m')$(printf '\\303\\251%.0s' {1..1500})\""
    )
    assert proc.returncode == 2
    uploaded = [c for c in calls if c[0] == "rstrnt-report-log"]
    text = Path(uploaded[0][-1]).read_bytes().decode("utf-8")  # valid UTF-8, or this raises
    assert text.startswith("ABORT: x?31m\u00e9\u00e9")
    assert "\x9b" not in text and len(text.encode()) <= len("ABORT: ") + 2000 + 1


def test_reboot_count_comes_from_restraint_then_rhts(lab: Lab) -> None:
    proc, _ = _script(lab, 'echo "count=${TASK_REBOOTCOUNT}"', RSTRNT_REBOOTCOUNT="2", REBOOTCOUNT="5")
    assert "count=2" in proc.stdout
    proc, _ = _script(lab, 'echo "count=${TASK_REBOOTCOUNT}"', REBOOTCOUNT="5")
    assert "count=5" in proc.stdout
    proc, _ = _script(lab, 'echo "count=${TASK_REBOOTCOUNT}"')
    assert "count=0" in proc.stdout
    proc, _ = _script(lab, "true", REBOOTCOUNT="x")
    assert proc.returncode == 2 and "reboot count 'x' is not a number" in proc.stderr


def test_state_marks_survive_between_runs(lab: Lab) -> None:
    proc, _ = _script(lab, "task_done persistent && echo yes || echo no; task_mark persistent")
    assert proc.stdout.strip().endswith("no")
    proc, _ = _script(lab, "task_done persistent && echo yes || echo no", RSTRNT_REBOOTCOUNT="1")
    assert proc.stdout.strip().endswith("yes")


def test_vsperf_config_runs_from_the_repository_without_the_package(lab: Lab) -> None:
    # A lab machine has the fetched repository but not our package: no vsperf-config on PATH.
    env = {"PATH": f"{lab.bin}:/usr/sbin:/usr/bin:/sbin:/bin", "OVSPERF_PYTHON": "/usr/bin/python3"}
    body = (
        "INVENTORY=vsperf_configs/inventory.example.yaml\n"
        'task_load_inventory dut01.example.com && echo "pmd=${INV_PMD_CPUS} nics=${INV_TEST_NICS}"'
    )
    proc, _ = _script(lab, body, **env)
    assert proc.returncode == 0, proc.stderr
    assert "pmd=2,4,6,8 nics=0000:03:00.0 0000:03:00.1" in proc.stdout
