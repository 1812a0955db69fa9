"""The lab without VMs: command-line validation, the lock, the state file, only our pids ended, ports."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vlab import state
from vlab.cli import main
from vlab.config import LabConfig, LabPaths, VlabError
from vlab.lab import check_ports_free, down

LOCK_HOLDER = """\
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0)
os.write(fd, f"{os.getpid()}\\n".encode())
print("locked", flush=True)
time.sleep(60)
"""


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes this test starts (stand-ins for QEMU); each is ended by its pid afterwards."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def _sleeper(started: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(["sleep", "60"])
    started.append(proc)
    return proc


def test_help_names_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "{up,selftest,plan,down,reset,status,guest-image,guest-test,ssh}" in out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["up", "--nice", "25"], "argument --nice: invalid choice: 25"),
        (["up", "--accel", "hvf"], "argument --accel: invalid choice: 'hvf'"),
        (["ssh", "router"], "argument vm: invalid choice: 'router'"),
        (["status", "--ssh-port", "many"], "argument --ssh-port: invalid int value: 'many'"),
        (["rebuild"], "invalid choice: 'rebuild'"),
    ],
)
def test_bad_arguments_exit_2_naming_the_argument(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and needle in captured.err


def test_a_config_that_cannot_work_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status", "--state-dir", str(tmp_path), "--ssh-port", "47001"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "ovsperf-vlab: error: 'ssh_port' 47001 and 'data_port' 47000: the SSH ports and the 6 link ports "
        "overlap; choose ranges apart."
    ]


def test_status_of_a_lab_never_started_lists_both_stopped_and_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status", "--state-dir", str(tmp_path)]) == 3
    assert capsys.readouterr().out.splitlines() == ["tg\tstopped", "dut\tstopped"]


def test_a_second_up_while_one_runs_is_refused_naming_its_pid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sleepers: list[subprocess.Popen[bytes]]
) -> None:
    lock = LabPaths(tmp_path).lock
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(lock)], stdout=subprocess.PIPE)
    sleepers.append(holder)  # type: ignore[arg-type]
    assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
    for command in ("up", "down", "reset"):
        assert main([command, "--state-dir", str(tmp_path)]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.splitlines() == [
            f"ovsperf-vlab: error: '{command}' refused: another ovsperf-vlab command (pid {holder.pid}) "
            "holds "
            f"the lab's lock '{lock}'; wait for it to finish."
        ]
    assert not (tmp_path / "image").exists() and not (tmp_path / "vms").exists()  # nothing was started


def test_up_while_the_lab_is_up_is_refused_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sleepers: list[subprocess.Popen[bytes]]
) -> None:
    paths = LabPaths(tmp_path)
    qemu = _sleeper(sleepers)
    state.save_state(paths.state_file, [state.record("tg", qemu.pid, 2222, "tcg")])
    assert main(["up", "--state-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"ovsperf-vlab: error: 'up' refused: the lab is already up ('tg' (pid {qemu.pid})); "
        "run 'ovsperf-vlab down' first."
    ]
    assert qemu.poll() is None and not (tmp_path / "image").exists()
    assert main(["status", "--state-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"tg\trunning\t127.0.0.1:2222\t{qemu.pid}\ttcg",
        "dut\tstopped",
    ]


def test_the_state_file_round_trips_and_a_missing_one_means_nothing_runs(tmp_path: Path) -> None:
    path = tmp_path / "lab.json"
    assert state.load_state(path) == []
    vms = [
        state.VmProcess(vm="tg", pid=101, create_time=1700000000.25, ssh_port=2222, accel="tcg"),
        state.VmProcess(vm="dut", pid=102, create_time=1700000001.5, ssh_port=2223, accel="tcg"),
    ]
    state.save_state(path, vms)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["version"] == 1 and [v["pid"] for v in data["vms"]] == [101, 102]
    assert state.load_state(path) == vms
    assert [p.name for p in tmp_path.iterdir()] == ["lab.json"]  # no temporary left beside it
    state.save_state(path, [])
    assert not path.exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "is not JSON"),
        ('{"version": 7, "vms": []}', "expected an object with 'version' 1 and a 'vms' list."),
        ('{"version": 1, "vms": [{"vm": "tg"}]}', "'vms[0]': KeyError('pid') is missing or invalid."),
        (
            '{"version": 1, "vms": [{"vm": "router", "pid": 5, "create_time": 1, "ssh_port": 1, '
            '"accel": "tcg"}]}',
            "'vms[0]': 'vm' must be one of tg, dut, got 'router'.",
        ),
    ],
)
def test_a_bad_state_file_is_refused_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "lab.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(VlabError) as caught:
        state.load_state(path)
    assert f"'{path}'" in str(caught.value) and message in str(caught.value)


def test_a_reused_pid_is_not_taken_for_the_vm_and_never_signalled(
    sleepers: list[subprocess.Popen[bytes]],
) -> None:
    other = _sleeper(sleepers)
    real = state.record("tg", other.pid, 2222, "tcg")
    assert real.running()
    reused = state.VmProcess(
        vm="tg", pid=other.pid, create_time=real.create_time - 100.0, ssh_port=2222, accel="tcg"
    )
    assert not reused.running()
    assert state.stop(reused) is False
    time.sleep(0.2)
    assert other.poll() is None  # the stranger with the recycled pid still runs


def test_down_ends_only_the_processes_it_started(
    tmp_path: Path, sleepers: list[subprocess.Popen[bytes]]
) -> None:
    paths = LabPaths(tmp_path)
    ours = [_sleeper(sleepers), _sleeper(sleepers)]
    stranger = _sleeper(sleepers)
    recorded = [
        state.record(vm, p.pid, 2222 + i, "tcg")
        for i, (vm, p) in enumerate(zip(("tg", "dut"), ours, strict=True))
    ]
    state.save_state(paths.state_file, recorded)
    stopped = down(LabConfig(tmp_path))
    assert [(v.vm, v.pid) for v in stopped] == [("tg", ours[0].pid), ("dut", ours[1].pid)]
    assert [p.wait(timeout=10) is not None for p in ours] == [True, True]  # ended (psutil reaped them)
    assert stranger.poll() is None
    assert not paths.state_file.exists()
    assert down(LabConfig(tmp_path)) == []  # nothing left: a second down is a no-op


def test_a_taken_port_is_refused_naming_it(tmp_path: Path) -> None:
    with (
        socket.socket(socket.AF_INET, socket.SOCK_STREAM) as ssh,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp,
    ):
        ssh.bind(("127.0.0.1", 0))
        udp.bind(("127.0.0.1", 0))
        ssh_port, udp_port = ssh.getsockname()[1], udp.getsockname()[1]
        config = LabConfig(tmp_path, ssh_port=ssh_port + 1, data_port=udp_port - 2)
        with pytest.raises(VlabError) as caught:
            check_ports_free(config)  # the SSH ports come first
        assert str(caught.value).startswith(f"UDP port 127.0.0.1:{udp_port} (data NIC 1 of VM 'tg') is taken")
        taken = LabConfig(tmp_path, ssh_port=ssh_port - 1, data_port=udp_port - 2)
        with pytest.raises(VlabError) as caught:
            check_ports_free(taken)
        assert str(caught.value).startswith(f"TCP port 127.0.0.1:{ssh_port} (SSH of VM 'dut') is taken")


def test_the_runner_answers_help_without_psutil() -> None:
    """The parser is light: --help imports no psutil (tests/test_cli_crash.py blocks it for the rest)."""
    code = "import sys; from vlab import cli; sys.exit(0 if 'psutil' not in sys.modules else 1)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60, check=False,
                          env={**os.environ})  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_make_test_needs_none_of_the_lab_s_packages() -> None:
    """`make setup` (CI) installs packaging/debian-packages.txt; the lab's own list only `make vlab` does."""
    root = Path(__file__).resolve().parents[2]

    def listed(name: str) -> set[str]:
        lines = (root / "packaging" / name).read_text(encoding="utf-8").splitlines()
        return {line.strip() for line in lines if line.strip() and not line.startswith("#")}

    lab_only = listed("vlab-packages.txt")
    assert {"qemu-system-x86", "qemu-utils", "mmdebstrap"} <= lab_only
    assert not {"qemu-system-x86", "qemu-utils", "mmdebstrap"} & listed("debian-packages.txt")
    makefile = (root / "Makefile").read_text(encoding="utf-8")
    recipes: dict[str, str] = {}
    rule = ""
    for line in makefile.splitlines():
        target = re.match(r"^([\w-]+):", line)
        if target:
            rule = target.group(1)
        elif line.startswith("\t"):
            recipes[rule] = recipes.get(rule, "") + line
    assert sorted(r for r, recipe in recipes.items() if "vlab-packages.txt" in recipe) == [
        "vlab",
        "vlab-test",
    ]
    assert (
        "setup" in recipes
        and "vlab" not in recipes["setup"]
        and "ovsperf-vlab selftest" in recipes["vlab-test"]
    )
    assert "vlab-packages.txt" not in (root / "scripts" / "setup-debian.sh").read_text(encoding="utf-8")


def test_the_host_s_ca_bundle_is_given_to_the_vms_but_never_a_private_key_or_a_fifo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ssl

    from vlab import lab

    bundle = tmp_path / "ca.crt"
    monkeypatch.setattr(ssl, "get_default_verify_paths", lambda: type("P", (), {"cafile": str(bundle)})())
    assert lab.host_ca_bundle() == b""  # no bundle: nothing copied
    bundle.write_bytes(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    assert lab.host_ca_bundle().startswith(b"-----BEGIN CERTIFICATE-----")
    key_marker = b"-----BEGIN " + b"PRIVATE KEY-----"  # built here: no key-like text is committed
    bundle.write_bytes(b"-----BEGIN CERTIFICATE-----\nx\n" + key_marker + b"\ny\n")
    with pytest.raises(VlabError, match="private key: not copied"):
        lab.host_ca_bundle()
    bundle.unlink()
    os.mkfifo(bundle)
    with pytest.raises(VlabError, match="is not a regular file"):
        lab.host_ca_bundle()  # returns at once: a FIFO is never opened
