"""``ovsperf-remote run`` against two real sshd hosts in network namespaces, end to end and at fault.

The hosts run the real Beaker tasks from the uploaded copy, with the task tests' recording shims
for the system commands (``tests/beaker_tasks/shims.py``: fake /sys, /etc, state directories, a fake
VSperf). A reboot is a test double: the reboot command leaves a request the test's watcher picks up;
it gives the host a new boot id, drops its sessions and restarts its sshd (or, for "never comes
back", leaves it stopped). The hosts reach each other over a link of their own, so
perf_synchronization runs between them for real.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.metadata import METADATA_FILE
from remote.cli import main
from remote.errors import RemoteError
from remote.fetch import fetch_results
from remote.plan import HostPlan, RemoteStep
from remote.run import HostState, RebootSettings, RemoteRunState, Runner, RunOptions, new_run_id
from remote.ssh import Session, parse_target
from reporting.load import load_results_dir
from tests.beaker_tasks.shims import FAKE_VSPERF, REPO, VSPERF_STUB
from tests.beaker_tasks.shims import Lab as FakeMachine

from .conftest import Lab
from .sshd_hosts import SshHost, link_hosts

pytestmark = pytest.mark.dpdk  # root: namespaces, sshd, tmpfs


class Reboots:
    """The test double of rebooting: requests are files ``reboot-<address>`` in ``root``; the boot
    id of a host is the file ``boot-id-<address>``. ``come_back=False`` leaves a host down."""

    def __init__(self, root: Path, hosts: list[SshHost]) -> None:
        self.root = root
        self.hosts = {h.address: h for h in hosts}
        self.come_back = True
        self.count: dict[str, int] = {h.address: 0 for h in hosts}
        self._stop = threading.Event()
        for host in hosts:
            (root / f"boot-id-{host.address}").write_text(f"{uuid.uuid4()}\n")
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def command(self) -> str:
        """``--reboot-command``: which host runs it is in ``$SSH_CONNECTION`` (its own address)."""
        return f"sh -c 'set -- $SSH_CONNECTION; touch {self.root}/reboot-$3'"

    def boot_id_command(self) -> str:
        """``--boot-id-command``."""
        return f"sh -c 'set -- $SSH_CONNECTION; cat {self.root}/boot-id-$3'"

    def _watch(self) -> None:
        deadline = time.monotonic() + 600
        while not self._stop.is_set() and time.monotonic() < deadline:
            for address, host in self.hosts.items():
                request = self.root / f"reboot-{address}"
                if request.exists():
                    request.unlink()
                    self.count[address] += 1
                    (self.root / f"boot-id-{address}").write_text(f"{uuid.uuid4()}\n")
                    host.drop_sessions()
                    host.stop_sshd()
                    if self.come_back:
                        time.sleep(0.5)
                        host.start_sshd()
            time.sleep(0.1)

    def __enter__(self) -> Reboots:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(5)


def _perfsync_servers(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with suppress(OSError):
                cmdline = (entry / "cmdline").read_bytes()
                if b"perfsync.py" in cmdline and b"--serve" in cmdline and marker.encode() in cmdline:
                    pids.append(int(entry.name))
    return pids


@contextmanager
def perfsync_cleanup(marker: str) -> Iterator[None]:
    """End the perfsync servers the tasks started (their state directory holds ``marker``), by PID."""
    try:
        yield
    finally:
        for pid in _perfsync_servers(marker):
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        while _perfsync_servers(marker) and time.monotonic() < deadline:
            time.sleep(0.05)


def _run_argv(lab: Lab) -> list[str]:
    """Return ``run --config OVS_DPDK1q --tg root@TG --dut root@DUT``."""
    return [
        "run",
        "--config",
        "OVS_DPDK1q",
        "--tg",
        f"root@{lab.tg.address}",
        "--dut",
        f"root@{lab.dut.address}",
    ]


def _env_args(option: str, env: dict[str, str]) -> list[str]:
    return [word for name, value in env.items() for word in (option, f"{name}={value}")]


def test_a_whole_run_setup_reboots_sync_vsperf_results_then_reporting(lab: Lab, tmp_path: Path) -> None:
    """OVS_DPDK1q on two hosts: both setups reboot once, the hosts exchange SSH keys through
    perf_synchronization, VSperf (fake) runs, the results come back whole into the collector and
    generate-report's loader reads them."""
    lab.trust()
    link_hosts(lab.tg, lab.dut)
    tg_machine = FakeMachine(tmp_path / "tg-machine", nics=("0000:81:00.0", "0000:81:00.1"))
    dut_machine = FakeMachine(tmp_path / "dut-machine")
    (tg_machine.etc / "ssh").mkdir()
    (tg_machine.etc / "ssh" / "ssh_host_ed25519_key.pub").write_text(lab.tg.host_key_line + "\n")
    common = {
        "FAKE_VSPERF": str(FAKE_VSPERF),
        "FAKE_VSPERF_STUB_DIR": str(VSPERF_STUB),
        "TASK_NET_TIMEOUT_S": "60",
    }
    tg_env = {
        **tg_machine.env(),
        "PERFSYNC_STATE_DIR": str(tmp_path / "tg-machine" / "perfsync"),
        "SETUP_DPDK_HOST": "moongen01.example.com",
        "BUILD_MOONGEN_HOST": "moongen01.example.com",
        "MOONGEN_BASE_DIR": str(tmp_path / "tg-machine" / "lua-trafficgen"),
        "SYNC_HOST_NAMES": "192.0.2.10",
    }
    dut_env = {
        **dut_machine.env(),
        "PERFSYNC_STATE_DIR": str(tmp_path / "dut-machine" / "perfsync"),
        "DUT_HOSTNAME": "dut01.example.com",
        "VSPERF_DIR": str(tmp_path / "dut-machine" / "vswitchperf"),
        "VSPERF_VENV": str(tmp_path / "dut-machine" / "venv"),
        "VSPERF_BASE_PYTHON": "vsperf-base-python",
        "MOONGEN_LOG_DIR": str(tmp_path / "dut-machine" / "moongen"),
        "FAKE_VSPERF_LOG_DIR": str(tmp_path / "dut-machine" / "vsperf-out"),
        "FAKE_VSPERF_LOADER_DIR": str(REPO / "tests" / "vsperf_configs"),
    }
    for env in (tg_env, dut_env):
        for name in common:
            env.pop(name, None)
    collector = tmp_path / "ci_in"
    log_dir = tmp_path / "run-logs"
    with Reboots(tmp_path, [lab.tg, lab.dut]) as reboots, perfsync_cleanup(str(tmp_path)):
        started = time.monotonic()
        code = main(
            [
                *_run_argv(lab),
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
                *_env_args("--env", common),
                *_env_args("--tg-env", tg_env),
                *_env_args("--dut-env", dut_env),
                *lab.ssh_args(),
            ]
        )
        elapsed = time.monotonic() - started
    logs = {p.name: p.read_text() for p in log_dir.glob("*.log")}
    assert code == ExitCode.OK, logs
    # Both setups asked for one reboot each (setup_dpdk on the generator, vsperf_test on the DUT).
    assert reboots.count == {lab.tg.address: 1, lab.dut.address: 1}
    state = json.loads((log_dir / "state.json").read_text())
    assert {role: h["next_step"] for role, h in state["hosts"].items()} == {"TRAFFICGEN": 5, "DUT": 5}
    # The DUT's key reached the generator's authorized_keys through perf_synchronization.
    assert (tmp_path / "tg-machine" / "home" / ".ssh" / "authorized_keys").read_text().strip()
    [delivered] = [p for p in collector.iterdir()]
    assert delivered.name.startswith("results_") and not list(collector.glob(".*"))
    assert (delivered / METADATA_FILE).is_file()
    assert state["results"] == str(delivered)
    # The local --inventory went along: each run directory has it, the tasks were told its copy.
    example = (REPO / "vsperf_configs" / "inventory.example.yaml").read_text()
    for role in ("trafficgen", "dut"):
        assert (tmp_path / "remote" / state["run_id"] / role / "inventory.yaml").read_text() == example
    assert "INVENTORY=inventory.yaml" in logs["dut.log"]
    loaded = load_results_dir(delivered)
    assert [r.test for r in loaded.runs] == ["phy2phy_tput"]
    assert elapsed < 120
    assert "[root@" in logs["dut.log"] or "PHASE" in logs["dut.log"]


def _runner(
    lab: Lab,
    tmp_path: Path,
    tg_steps: list[RemoteStep],
    dut_steps: list[RemoteStep],
    *,
    env: dict[str, dict[str, str]] | None = None,
    reboot: RebootSettings | None = None,
    state: RemoteRunState | None = None,
    dut_user: str = "root",
) -> Runner:
    """A runner of two hand-made plans (the catalog's need the whole fake lab)."""
    plans = (
        HostPlan("TRAFFICGEN", lab.tg.address, tuple(tg_steps), ()),
        HostPlan("DUT", lab.dut.address, tuple(dut_steps), ()),
    )
    if state is None:
        run_id = new_run_id()
        state = RemoteRunState(
            run_id,
            "TEST",
            RemoteRunState.plan_of(plans),
            {
                p.role: HostState(p.role, p.host, str(tmp_path / "remote" / run_id / p.role.lower()))
                for p in plans
            },
        )
    env = env or {
        role: {
            "TASK_STATE_DIR": str(tmp_path / role / "state"),
            "PERFSYNC_STATE_DIR": str(tmp_path / role / "ps"),
        }
        for role in ("TRAFFICGEN", "DUT")
    }
    settings = lab.settings()
    options = RunOptions(
        log_dir=tmp_path / "logs", deadline_s=300, env=env, reboot=reboot or RebootSettings()
    )
    (tmp_path / "logs").mkdir(exist_ok=True)
    targets = {
        "TRAFFICGEN": parse_target(f"root@{lab.tg.address}", "--tg"),
        "DUT": parse_target(f"{dut_user}@{lab.dut.address}", "--dut"),
    }
    return Runner(state, plans, targets, settings, options, console=open(os.devnull, "w"))


SLEEP = RemoteStep("sleeper", (("SLEEP_HOURS", "1"), ("SLEEPER_TICK_S", "1")))
ABORTING = RemoteStep("perf_synchronization", (("SYNC_ACTION", "bogus"), ("SYNC_STATE", "X")))


def _tasks_left(marker: Path) -> list[str]:
    """Return the command lines of processes still running a task from under ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with suppress(OSError):
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                if str(marker) in cmdline and "runtest.sh" in cmdline:
                    found.append(cmdline)
    return found


def test_a_task_aborting_on_one_host_stops_the_other_at_once(lab: Lab, tmp_path: Path) -> None:
    """The DUT's step aborts (exit 2): the generator's hour-long step is ended within seconds,
    with its children, instead of running on."""
    lab.trust()
    started = time.monotonic()
    outcome = _runner(lab, tmp_path, [SLEEP], [ABORTING]).run()
    elapsed = time.monotonic() - started
    assert list(outcome.failures) == ["DUT"] and outcome.stopped == ["TRAFFICGEN"]
    assert "Step 1. perf_synchronization on root@" in outcome.failures["DUT"]
    assert "exited 2 (task_abort: a lab problem)" in outcome.failures["DUT"]
    assert elapsed < 30, elapsed
    assert _tasks_left(tmp_path / "remote") == []
    assert not outcome.complete and outcome.results is None
    state = json.loads((tmp_path / "logs" / "state.json").read_text())
    assert state["hosts"]["DUT"]["next_step"] == 0 and state["hosts"]["TRAFFICGEN"]["next_step"] == 0


def test_a_connection_dropping_mid_task_is_a_clear_failure(lab: Lab, tmp_path: Path) -> None:
    lab.trust()
    runner = _runner(lab, tmp_path, [SLEEP], [SLEEP])
    log = tmp_path / "logs" / "trafficgen.log"

    def drop_when_the_task_runs() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if log.exists() and "Reserved until" in log.read_text():
                lab.tg.drop_sessions()
                return
            time.sleep(0.1)

    dropper = threading.Thread(target=drop_when_the_task_runs)
    dropper.start()
    try:
        outcome = runner.run()
    finally:
        dropper.join(60)
    assert list(outcome.failures) == ["TRAFFICGEN"] and outcome.stopped == ["DUT"]
    assert f"The connection to root@{lab.tg.address} " in outcome.failures["TRAFFICGEN"]
    assert _tasks_left(tmp_path / "remote") == []


def test_a_reboot_that_never_comes_back_ends_the_run_at_its_deadline(lab: Lab, tmp_path: Path) -> None:
    """setup_dpdk asks for its reboot; the host never returns: the run ends after --reboot-timeout,
    naming the host, and the other host is stopped."""
    lab.trust()
    machine = FakeMachine(tmp_path / "tg-machine", nics=("0000:03:00.0", "0000:03:00.1"))
    env = {
        "TRAFFICGEN": {**machine.env(), "PERFSYNC_STATE_DIR": str(tmp_path / "ps")},
        "DUT": {"TASK_STATE_DIR": str(tmp_path / "dut-state")},
    }
    setup = RemoteStep("setup_dpdk", (("TEST_NICS", "0000:03:00.0 0000:03:00.1"), ("ISOLATED_CPUS", "2-11")))
    with Reboots(tmp_path, [lab.tg, lab.dut]) as reboots:
        reboots.come_back = False
        settings = RebootSettings(
            command=tuple(shlex.split(reboots.command())),
            boot_id_command=tuple(shlex.split(reboots.boot_id_command())),
            timeout_s=8,
        )
        started = time.monotonic()
        outcome = _runner(lab, tmp_path, [setup], [SLEEP], env=env, reboot=settings).run()
        elapsed = time.monotonic() - started
    assert reboots.count[lab.tg.address] == 1
    assert list(outcome.failures) == ["TRAFFICGEN"] and outcome.stopped == ["DUT"]
    assert (
        f"root@{lab.tg.address} did not come back from its reboot within 8 s"
        in outcome.failures["TRAFFICGEN"]
    )
    assert 8 <= elapsed < 40
    state = json.loads((tmp_path / "logs" / "state.json").read_text())
    assert state["hosts"]["TRAFFICGEN"]["reboot_count"] == 1  # a resume runs the second boot's part


def test_a_resumed_run_skips_what_was_done_and_finishes(lab: Lab, tmp_path: Path) -> None:
    """The DUT's first step fails for a reason outside the plan (its state directory is a file);
    after the fix, --resume runs only what was left: the generator's finished step is not rerun."""
    lab.trust()
    blocker = tmp_path / "dut-state"
    blocker.write_text("not a directory\n")
    short = RemoteStep("sleeper", (("SLEEP_HOURS", "0.0003"), ("SLEEPER_TICK_S", "1")))
    env = {
        "TRAFFICGEN": {"TASK_STATE_DIR": str(tmp_path / "tg-state")},
        "DUT": {"TASK_STATE_DIR": str(blocker)},
    }
    first = _runner(lab, tmp_path, [short], [short, short], env=env)
    outcome = first.run()
    assert list(outcome.failures) == ["DUT"]
    saved = RemoteRunState.load(tmp_path / "logs" / "state.json")
    done_tg = saved.hosts["TRAFFICGEN"].next_step
    blocker.unlink()
    second = _runner(lab, tmp_path, [short], [short, short], env=env, state=saved)
    outcome = second.run()
    assert outcome.complete and not outcome.failures
    final = json.loads((tmp_path / "logs" / "state.json").read_text())
    assert {r: h["next_step"] for r, h in final["hosts"].items()} == {"TRAFFICGEN": 1, "DUT": 2}
    runs_on_tg = (tmp_path / "logs" / "trafficgen.log").read_text().count("# env ")
    assert runs_on_tg == (1 if done_tg == 1 else 2)


def test_a_full_collector_disk_delivers_nothing_and_says_so(lab: Lab, tmp_path: Path) -> None:
    lab.trust()
    results = tmp_path / "dut-results" / "results_2026-11-26_08-00-00"
    results.mkdir(parents=True)
    (results / "result_0_phy2phy_tput_p2p.csv").write_text("packet_size\n64\n")
    (results / "moongen.log").write_bytes(os.urandom(3 * 1024 * 1024))
    (results / METADATA_FILE).write_text("{}\n")
    collector = tmp_path / "collector"
    collector.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(collector)], check=True, timeout=10)
    try:
        settings = lab.settings()
        with Session(parse_target(f"root@{lab.dut.address}", "--dut"), settings) as session:
            with pytest.raises(RemoteError, match=r"No space left on device.*nothing was delivered"):
                fetch_results(session, str(results), collector)
        assert list(collector.iterdir()) == []
    finally:
        subprocess.run(["umount", str(collector)], check=True, timeout=10)


def test_an_unreachable_host_fails_the_run_before_anything_runs(
    lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab.trust()
    lab.dut.stop_sshd()
    code = main(
        [
            *_run_argv(lab),
            "--log-dir",
            str(tmp_path / "logs"),
            "--remote-dir",
            str(tmp_path / "remote"),
            *lab.ssh_args(),
        ]
    )
    err = capsys.readouterr().err
    assert code == ExitCode.ERROR
    assert f"DUT: Cannot reach root@{lab.dut.address}" in err and "TRAFFICGEN stopped" in err
    assert "--resume" in err
    state = json.loads((tmp_path / "logs" / "state.json").read_text())
    assert state["options"]["dut"] == f"root@{lab.dut.address}" and state["options"]["timeout"] == 12.0
    # --resume needs nothing else: the hosts, the plan's options and the SSH options' effect come back.
    code = main(["run", "--resume", str(tmp_path / "logs"), *lab.ssh_args()])
    err = capsys.readouterr().err
    assert code == ExitCode.ERROR and f"DUT: Cannot reach root@{lab.dut.address}" in err
    assert json.loads((tmp_path / "logs" / "state.json").read_text())["run_id"] == state["run_id"]


def test_sudo_asking_for_a_password_stops_the_run_before_anything_runs(
    lab: Lab, tmp_path: Path, plain_user: str
) -> None:
    lab.trust()
    outcome = _runner(lab, tmp_path, [SLEEP], [SLEEP], dut_user=plain_user).run()
    assert list(outcome.failures) == ["DUT"] and outcome.stopped == ["TRAFFICGEN"]
    assert f"sudo asks {plain_user} for a password" in outcome.failures["DUT"]
    assert f"'{plain_user} ALL=(ALL) NOPASSWD: ALL'" in outcome.failures["DUT"]
    assert not list((tmp_path / "remote").glob("*/dut"))  # nothing was uploaded to the DUT


def test_a_broken_local_inventory_is_refused_before_any_host_is_touched(
    lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab.trust()
    broken = tmp_path / "inventory.yaml"
    broken.write_text("hosts: [unclosed\n")
    code = main(
        [
            *_run_argv(lab),
            "--inventory",
            str(broken),
            "--log-dir",
            str(tmp_path / "logs"),
            "--remote-dir",
            str(tmp_path / "remote"),
            *lab.ssh_args(),
        ]
    )
    assert code == ExitCode.ERROR
    assert str(broken) in capsys.readouterr().err
    assert not (tmp_path / "remote").exists() and not (tmp_path / "logs").exists()
