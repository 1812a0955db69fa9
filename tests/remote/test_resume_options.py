"""Issue 26: ``ovsperf-remote run --resume`` merges frozen requests, never the argparse namespace.

The options are layered by ``dataclasses.replace``: defaults, then what ``state.json`` recorded, then
what the command line gives. The hosts are loopback ports nothing listens on: each run fails at
once at connecting, after ``state.json`` is written (no sshd needed; the sshd tests are test_run.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from ovsperf_catalog.catalog import load_catalog
from ovsperf_common.exitcodes import ExitCode
from remote.cli import main
from remote.errors import RemoteError
from remote.executor import UPLOADED_INVENTORY
from remote.plan import HostPlan, remote_plan
from remote.runargs import RunRequest, ScenarioChoice, run_command_line
from remote.ssh import Settings
from vsperf_configs.inventory import Inventory

REPO = Path(__file__).resolve().parents[2]
TG, DUT = "root@127.0.0.1:9", "root@127.0.0.2:9"


def _options(log_dir: Path) -> dict[str, object]:
    return dict(json.loads((log_dir / "state.json").read_text())["options"])


def test_resume_takes_the_recorded_options_and_the_given_ones_win(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs, known = tmp_path / "logs", ["--known-hosts", str(tmp_path / "known_hosts")]
    first = [
        *("run", "--config", "OVS_DPDK1q", "--tg", TG, "--dut", DUT, "--env", "A=1", "--tg-env", "T=1"),
        *("--reboot-timeout", "600", "--log-dir", str(logs), "--remote-dir", str(tmp_path / "remote")),
    ]
    assert main([*first, *known]) == ExitCode.ERROR
    assert "Resume with: ovsperf-remote run --resume" in capsys.readouterr().err
    recorded = _options(logs)
    assert recorded == {
        "engine": None,
        "generator": None,
        "tg": TG,
        "dut": DUT,
        "catalog": None,
        "inventory": None,
        "collector": None,
        "env": ["A=1"],
        "tg_env": ["T=1"],
        "dut_env": [],
        "timeout": 12.0,
        "reboot_command": "systemctl reboot",
        "boot_id_command": "cat /proc/sys/kernel/random/boot_id",
        "reboot_timeout": 600.0,
    }
    run_id = json.loads((logs / "state.json").read_text())["run_id"]
    resume = ["run", "--resume", str(logs), "--timeout", "2", "--dut-env", "B=2", *known]
    assert main(resume) == ExitCode.ERROR
    assert f"Run {run_id} of OVS_DPDK1q" in capsys.readouterr().err
    assert _options(logs) == {**recorded, "timeout": 2.0, "dut_env": ["B=2"]}
    # The next resume starts from those: an option given once stays (nothing is given now).
    assert main(["run", "--resume", str(logs), *known]) == ExitCode.ERROR
    assert _options(logs) == {**recorded, "timeout": 2.0, "dut_env": ["B=2"]}


def test_resume_with_another_config_or_bad_recorded_options_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = tmp_path / "logs"
    argv = ["run", "--config", "OVS_DPDK1q", "--tg", TG, "--dut", DUT, "--log-dir", str(logs)]
    assert main([*argv, "--known-hosts", str(tmp_path / "kh")]) == ExitCode.ERROR
    capsys.readouterr()
    state = json.loads((logs / "state.json").read_text())
    other = "OVS_DPDK2q"
    assert main(["run", "--resume", str(logs), "--config", other]) == ExitCode.ERROR
    assert f"the run to resume ran OVS_DPDK1q, not {other}." in capsys.readouterr().err
    state["options"]["timeout"] = "soon"
    (logs / "state.json").write_text(json.dumps(state))
    assert main(["run", "--resume", str(logs)]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert f"Cannot resume from '{logs / 'state.json'}': its options:" in err and "'soon'" in err
    state["options"]["timeout"], state["options"]["dut"] = 12.0, None
    (logs / "state.json").write_text(json.dumps(state))
    assert main(["run", "--resume", str(logs)]) == ExitCode.ERROR
    assert f"'{logs / 'state.json'}' records no --dut; give it." in capsys.readouterr().err


def test_the_namespace_is_read_never_changed(tmp_path: Path) -> None:
    """A local inventory reaches the plan as the uploaded copy's name through a new request; the
    parsed command line keeps what the user typed, and ``state.json`` records the local file."""
    inventory = tmp_path / "inventory.yaml"
    shutil.copy(REPO / "vsperf_configs" / "inventory.example.yaml", inventory)
    args = argparse.Namespace(
        config="OVS_DPDK1q",
        tg=TG,
        dut=DUT,
        catalog=None,
        inventory=str(inventory),
        collector=None,
        env=[],
        tg_env=[],
        dut_env=["B=2"],
        timeout=None,
        reboot_command=None,
        boot_id_command=None,
        reboot_timeout=None,
        log_dir=tmp_path / "logs",
        remote_dir=str(tmp_path / "remote"),
        resume=None,
    )
    typed = dict(vars(args))
    chosen: list[ScenarioChoice] = []

    def plans(
        choice: ScenarioChoice, tg: str, dut: str, collector: str | None, local: Inventory | None
    ) -> tuple[HostPlan, HostPlan]:
        assert local is not None and local.path == inventory
        chosen.append(choice)
        scenario = load_catalog(choice.catalog).get(choice.config)
        return remote_plan(scenario, tg, dut, inventory=choice.inventory, collector=collector)

    with pytest.raises(RemoteError, match="Cannot reach"):
        run_command_line(args, Settings(known_hosts=tmp_path / "kh", ssh_config=None), plans)
    assert vars(args) == typed
    (request,) = chosen
    assert isinstance(request, RunRequest)
    assert (request.inventory, request.dut_env, request.timeout) == (UPLOADED_INVENTORY, ("B=2",), 12.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.timeout = 1.0  # type: ignore[misc]
    assert _options(tmp_path / "logs")["inventory"] == str(inventory)


def test_a_request_is_built_in_layers() -> None:
    recorded = RunRequest(config="OVS_DPDK1q").given(
        {"tg": "h1", "env": ["A=1"], "catalog": "/c.yaml", "timeout": 3, "unknown": "ignored"}
    )
    assert (recorded.tg, recorded.env, recorded.catalog, recorded.timeout) == (
        "h1",
        ("A=1",),
        Path("/c.yaml"),
        3.0,
    )
    assert recorded.reboot_timeout == 1200.0  # the default stays
    given = recorded.given({"tg": "h2", "env": [], "timeout": None, "config": ""})
    assert (given.tg, given.env, given.timeout, given.config) == ("h2", ("A=1",), 3.0, "OVS_DPDK1q")
    with pytest.raises(TypeError, match="'env' is not a list"):
        RunRequest().given({"env": "A=1"})
