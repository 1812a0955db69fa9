"""The Beaker plan on the VMs: its inventory is one vsperf-config and the tasks accept, its command lines
are the ones ``ovsperf-remote`` parses, and bad input is refused before anything starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from remote.cli import main as remote_main
from vlab.beakerplan import (
    REMOTE_INVENTORY,
    PlanOptions,
    ciflow_config,
    remote_run_argv,
    ssh_config_text,
    vm_inventory,
)
from vlab.cli import main as vlab_main
from vlab.config import LabConfig, LabPaths, VlabError
from vsperf_configs.inventory import load_inventory

ROOT = Path(__file__).resolve().parents[2]


def _inventory_file(tmp_path: Path) -> Path:
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(vm_inventory(), sort_keys=False), encoding="utf-8")
    return path


def test_the_vm_inventory_loads_and_names_the_tg_as_the_dut_s_generator(tmp_path: Path) -> None:
    inventory = load_inventory(_inventory_file(tmp_path))
    dut, tg = inventory.get("dut"), inventory.get("tg")
    assert dut.nics == tg.nics == ("0000:00:04.0", "0000:00:05.0")
    assert (dut.ovs_lcore_cpus, dut.pmd_cpus, dut.socket_mem_mb) == ((0,), (1,), 256)
    assert tg.generator_cpus == (1,)
    assert dut.moongen is not None and (dut.moongen.host, dut.moongen.address) == ("tg", "tg")


def test_labargs_gives_the_dut_s_lab_options_from_the_vm_inventory(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "vsperf_configs.labargs", "--inventory", str(_inventory_file(tmp_path)),
         "--host", "dut"],
        capture_output=True, text=True, timeout=60, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    words = done.stdout.splitlines()
    pairs = list(zip(words[::2], words[1::2], strict=True))
    assert pairs == [
        ("--dut-port", "0000:00:04.0"), ("--dut-port", "0000:00:05.0"),
        ("--tg-port", "0000:00:04.0"), ("--tg-port", "0000:00:05.0"),
        ("--tg-ssh", "root@tg"), ("--tg-cpus", "1"),
        ("--pmd-cpus", "1"), ("--lcore-cpu", "0"), ("--socket-mem-mb", "256"),
    ]  # fmt: skip


def test_the_remote_run_command_is_one_ovsperf_remote_accepts_with_the_ovsperf_engine_s_tasks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = LabPaths(tmp_path / "state")
    options = PlanOptions(lab_args=("--frame-sizes", "64,1518", "--latency-time", "1"))
    argv = remote_run_argv(options, paths, tmp_path / "run", tmp_path / "run" / "ci_in")
    assert argv[:2] == ["ovsperf-remote", "run"]
    assert argv[argv.index("--dut-env") + 1] == "OVSPERF_LAB_ARGS=--frame-sizes 64,1518 --latency-time 1"
    # 'plan' takes the same plan options and prints the tasks 'run' would run on each host.
    keep = {"--config", "--engine", "--tg", "--dut", "--inventory"}
    plan_argv = ["plan"] + [w for i, w in enumerate(argv) if w in keep or (i and argv[i - 1] in keep)]
    assert remote_main(plan_argv) == 0
    out = capsys.readouterr().out
    tasks = [line.split()[1] for line in out.splitlines() if line.strip()[:2].rstrip(".").isdigit()]
    assert "build_trafficgen" in tasks and "ovsperf_test" in tasks
    assert "build_moongen" not in tasks and "vsperf_test" not in tasks
    assert f"INVENTORY={REMOTE_INVENTORY}" in out


def test_the_ssh_config_names_each_vm_at_its_forwarded_port(tmp_path: Path) -> None:
    config = LabConfig(tmp_path, ssh_port=3300)
    text = ssh_config_text(config, LabPaths(tmp_path))
    blocks = [b.split("\n") for b in text.strip().split("\n\n")]
    assert [b[0] for b in blocks] == ["Host tg", "Host dut"]
    assert [b[2].strip() for b in blocks] == ["Port 3300", "Port 3301"]
    assert all(
        "    HostName 127.0.0.1" in b and f"    IdentityFile {tmp_path}/id_ed25519" in b for b in blocks
    )


def test_the_report_configuration_points_everything_inside_the_run(tmp_path: Path) -> None:
    config = ciflow_config(tmp_path, tmp_path.parent / "baseline", "OVS_DPDK1q")
    for key in ("ci_in", "ci_processed", "ci_failed", "reports"):
        assert Path(str(config[key])).parent == tmp_path
    assert config["scenarios"] == {"OVS_DPDK1q": {"baseline": str(tmp_path.parent / "baseline")}}


@pytest.mark.parametrize("name", ["", "OVS DPDK", "a;b", "../x", "x" * 101])
def test_a_scenario_name_that_cannot_be_one_is_refused(name: str) -> None:
    with pytest.raises(VlabError, match="'--config'"):
        PlanOptions(config=name)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--timeout-h", "0"], "'--timeout-h' must be within 0 and 48 hours, got 0."),
        (["--lab-args", "'x"], "'--lab-args' is not a shell-quoted option list: No closing quotation."),
    ],
)
def test_bad_plan_options_exit_2_before_anything_starts(
    tmp_path: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert vlab_main(["plan", "--state-dir", str(tmp_path), *args]) == 2
    assert capsys.readouterr().err.strip() == f"ovsperf-vlab: error: {message}"
    assert list(tmp_path.iterdir()) == []  # nothing made


@pytest.mark.parametrize(
    ("remote", "report", "passed"), [(0, 0, True), (0, 1, True), (0, 2, False), (1, 0, False), (1, 1, False)]
)
def test_a_regression_verdict_on_the_vms_is_a_finding_not_a_failed_plan(
    tmp_path: Path, remote: int, report: int, passed: bool
) -> None:
    from vlab.beakerplan import PlanReport

    assert PlanReport(tmp_path, remote_status=remote, report_status=report).passed is passed
