"""``ovsperf-remote run --engine ovsperf``: the Beaker plan of the engine ovsperf on two sshd hosts.

The same real components as ``test_run.py`` (sshd in namespaces, perfsync between them, reboots by
boot id); the system commands are the task tests' recording shims, ``make``/``pkg-config`` stand in
for the generator's build and a stand-in ``ovsperf-lab`` for the lab (it records its argv and writes
a VSperf-format results directory), so what is checked is the plan, the uploads, the tasks' order and
the delivery into the collector.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.metadata import METADATA_FILE
from remote.cli import main
from tests.beaker_tasks.shims import Lab as FakeMachine
from tests.beaker_tasks.test_build_trafficgen import MAKE, PKG_CONFIG
from tests.beaker_tasks.test_ovsperf_test import EXPECTED_LAB_OPTIONS, RESULTS, STAND_IN

from .conftest import Lab
from .sshd_hosts import link_hosts
from .test_run import Reboots, _env_args, _run_argv, perfsync_cleanup

pytestmark = pytest.mark.dpdk  # root: namespaces, sshd


def _tool(directory: Path, name: str, text: str) -> None:
    (directory / name).unlink(missing_ok=True)
    (directory / name).write_text(text)
    (directory / name).chmod(0o755)


def test_a_whole_run_of_the_ovsperf_engine_builds_binds_syncs_measures_and_delivers(
    lab: Lab, tmp_path: Path
) -> None:
    lab.trust()
    link_hosts(lab.tg, lab.dut)
    tg_machine = FakeMachine(tmp_path / "tg-machine", nics=("0000:81:00.0", "0000:81:00.1"))
    dut_machine = FakeMachine(tmp_path / "dut-machine")
    (tg_machine.etc / "ssh").mkdir()
    (tg_machine.etc / "ssh" / "ssh_host_ed25519_key.pub").write_text(lab.tg.host_key_line + "\n")
    for name, text in (("make", MAKE), ("pkg-config", PKG_CONFIG), ("cc", "#!/bin/sh\n")):
        _tool(tg_machine.bin, name, text)
    _tool(dut_machine.root, "ovsperf-lab", STAND_IN)
    prefix = tmp_path / "tg-machine" / "usr-local"
    tg_env = {
        **tg_machine.env(),
        "PERFSYNC_STATE_DIR": str(tmp_path / "tg-machine" / "perfsync"),
        "SETUP_DPDK_HOST": "moongen01.example.com",
        "TRAFFICGEN_PREFIX": str(prefix),
        "SYNC_HOST_NAMES": "192.0.2.10",
    }
    dut_env = {
        **dut_machine.env(),
        "PERFSYNC_STATE_DIR": str(tmp_path / "dut-machine" / "perfsync"),
        "DUT_HOSTNAME": "dut01.example.com",
        "SETUP_DPDK_HOST": "dut01.example.com",
        "OVSPERF_VENV": str(tmp_path / "dut-machine" / "venv"),
        "OVSPERF_LAB_PYTHON": "vsperf-base-python",
        "SHIM_PYTHON_VERSION": "3.11",
        "OVSPERF_LAB": str(dut_machine.root / "ovsperf-lab"),
        "FAKE_LAB_ARGV": str(tmp_path / "dut-machine" / "lab-argv.jsonl"),
    }
    collector = tmp_path / "ci_in"
    log_dir = tmp_path / "run-logs"
    with Reboots(tmp_path, [lab.tg, lab.dut]) as reboots, perfsync_cleanup(str(tmp_path)):
        started = time.monotonic()
        code = main(
            [
                *_run_argv(lab),
                "--engine",
                "ovsperf",
                "--inventory",
                "vsperf_configs/inventory.example.yaml",
                "--collector",
                str(collector),
                "--log-dir",
                str(log_dir),
                "--remote-dir",
                str(tmp_path / "remote"),
                "--reboot-command",
                reboots.command(),
                "--boot-id-command",
                reboots.boot_id_command(),
                "--reboot-timeout",
                "60",
                "--timeout",
                "0.2",
                *_env_args("--env", {"TASK_NET_TIMEOUT_S": "60"}),
                *_env_args("--tg-env", tg_env),
                *_env_args("--dut-env", dut_env),
                *lab.ssh_args(),
            ]
        )
        elapsed = time.monotonic() - started
    logs = {p.name: p.read_text() for p in log_dir.glob("*.log")}
    assert code == ExitCode.OK, logs
    # setup_dpdk rebooted each host once (on the DUT too: the engine binds the DUT's NICs itself).
    assert reboots.count == {lab.tg.address: 1, lab.dut.address: 1}
    state = json.loads((log_dir / "state.json").read_text())
    assert state["options"]["engine"] == "ovsperf"
    sync = "perf_synchronization"
    assert [s[0] for s in state["plan"]["TRAFFICGEN"]] == ["build_trafficgen", "setup_dpdk", sync, sync, sync]
    assert [s[0] for s in state["plan"]["DUT"]] == [
        "ovsperf_test", "setup_dpdk", "perf_synchronization", "perf_synchronization", "ovsperf_test",
        "perf_synchronization",
    ]  # fmt: skip
    assert {role: h["next_step"] for role, h in state["hosts"].items()} == {"TRAFFICGEN": 5, "DUT": 6}
    assert (prefix / "bin" / "ovsperf-trafficgen").is_file()
    assert (
        dut_machine.driver("0000:03:00.0") == "vfio-pci" and tg_machine.driver("0000:81:00.0") == "vfio-pci"
    )
    # Each host got what its tasks need: the generator's source on the TG, the lab on the DUT.
    run_dirs = tmp_path / "remote" / state["run_id"]
    assert (run_dirs / "trafficgen" / "trafficgen" / "Makefile").is_file()
    assert not (run_dirs / "trafficgen" / "trafficgen" / "build").exists()
    assert not (run_dirs / "trafficgen" / "ovsperf_lab").exists()
    assert (run_dirs / "dut" / "ovsperf_lab" / "cli.py").is_file()
    assert (run_dirs / "dut" / "pyproject.toml").is_file()
    assert (run_dirs / "dut" / "packaging" / "constraints.txt").is_file()
    assert not (run_dirs / "dut" / "trafficgen").exists()
    # The DUT's key reached the generator through perf_synchronization; the lab got the inventory's options.
    assert (tmp_path / "tg-machine" / "home" / ".ssh" / "authorized_keys").read_text().strip()
    argv = [
        json.loads(line) for line in (tmp_path / "dut-machine" / "lab-argv.jsonl").read_text().splitlines()
    ]
    [measured] = [a for a in argv if a[:1] == ["run"]]
    assert measured[:3] == ["run", "--config", "OVS_DPDK1q"] and measured[3:-2] == EXPECTED_LAB_OPTIONS
    [delivered] = list(collector.iterdir())
    assert delivered.name == RESULTS and (delivered / METADATA_FILE).is_file()
    assert (delivered / "result_0_phy2phy_tput_p2p.csv").is_file()
    assert state["results"] == str(delivered)
    assert elapsed < 120
