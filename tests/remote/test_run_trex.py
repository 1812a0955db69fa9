"""``ovsperf-remote run`` with a TRex inventory: its preflight before either host runs a step.

The TG must be the DUT's TRex peer of the local inventory (where ``setup_trex`` reads its tarball
URL), reachable over SSH as root and have what ``setup_trex`` runs (``remote.check.TOOLS['trex']``).
A refusal comes before the log directory is made: nothing ran, nothing to resume. The hosts of the
first tests are loopback ports nothing listens on; the last ones are real sshd hosts in namespaces.
"""

from __future__ import annotations

import hashlib
import io
import ipaddress
import json
import logging
import os
import signal
import tarfile
from contextlib import suppress
from pathlib import Path

import pytest

from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.metadata import METADATA_FILE
from remote import check
from remote.check import trex_preflight
from remote.cli import main
from remote.errors import RemoteError
from remote.ssh import parse_target
from tests.beaker_tasks.shims import FAKE_VSPERF, VSPERF_STUB
from tests.beaker_tasks.shims import Lab as FakeMachine
from tests.beaker_tasks.test_setup_trex import JOURNALCTL, SYSTEMCTL, Served
from tests.vsperf_configs.trexinv import TREX_DUT, TREX_NICS, TREX_TG, TREX_URL, write_trex_inventory

from .conftest import Lab
from .sshd_hosts import SshHost, link_hosts
from .test_run import Reboots, _env_args, perfsync_cleanup

REPO = Path(__file__).resolve().parents[2]


def _run(inventory: Path, tg: str, dut: str, tmp_path: Path, *extra: str) -> list[str]:
    """Return ``run --config OVS_DPDK1q`` of these hosts; SSH options: ``extra``, else none to use."""
    ssh = extra or ("--known-hosts", str(tmp_path / "known_hosts"), "--ssh-config", "/nonexistent")
    return [
        "run", "--config", "OVS_DPDK1q", "--tg", tg, "--dut", dut, "--inventory", str(inventory),
        "--log-dir", str(tmp_path / "logs"), "--remote-dir", str(tmp_path / "remote"),
        "--connect-timeout", "2", *ssh,
    ]  # fmt: skip


def test_a_tg_that_is_not_the_dut_s_trex_peer_is_refused_before_connecting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inventory = write_trex_inventory(tmp_path / "inventory.yaml")
    code = main(_run(inventory, "root@127.0.0.1:9", "root@127.0.0.2:9", tmp_path))
    captured = capsys.readouterr()
    assert code == ExitCode.ERROR and captured.out == ""
    assert (
        f"ovsperf-remote: error: field '--tg': '127.0.0.1' is not the traffic generator of the DUT "
        f"'127.0.0.2' in '{inventory}', which drives TRex on '{TREX_TG}' (address '192.0.2.20'): "
        "setup_trex would install another host's TRex.\n"
    ) in captured.err
    assert "Cannot reach" not in captured.err  # refused before any connection
    assert not (tmp_path / "logs").exists()


def test_an_unreachable_tg_ends_a_trex_run_before_any_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The DUT (reachable or not) is never contacted: the TG's preflight fails first. A MoonGen run
    of the same hosts starts both threads and writes its state (the contrast)."""
    inventory = write_trex_inventory(tmp_path / "inventory.yaml", peer_address="127.0.0.1")
    code = main(_run(inventory, "root@127.0.0.1:9", "root@127.0.0.2:9", tmp_path))
    err = capsys.readouterr().err
    assert code == ExitCode.ERROR
    assert "ovsperf-remote: error: Cannot reach root@127.0.0.1:9 (127.0.0.1:9) within 2 s" in err
    assert "127.0.0.2" not in err and "DUT" not in err and "--resume" not in err
    assert not (tmp_path / "logs").exists()
    hosts = (inventory, "root@127.0.0.1:9", "root@127.0.0.2:9", tmp_path)
    assert main([*_run(*hosts), "--generator", "moongen"]) == ExitCode.ERROR
    assert "field '--generator': 'moongen' disagrees with the inventory" in capsys.readouterr().err
    assert not (tmp_path / "logs").exists()
    moongen = tmp_path / "moongen.yaml"
    moongen.write_text((REPO / "vsperf_configs" / "inventory.example.yaml").read_text())
    assert main(_run(moongen, "root@127.0.0.1:9", "root@127.0.0.2:9", tmp_path)) == ExitCode.ERROR
    state = json.loads((tmp_path / "logs" / "state.json").read_text())
    assert state["plan"]["TRAFFICGEN"][0][0] == "build_moongen"
    assert state["options"]["generator"] is None


@pytest.mark.dpdk  # root: namespaces, sshd
def test_the_trex_preflight_on_a_real_host(
    lab: Lab, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    lab.trust()
    target = parse_target(f"root@{lab.tg.address}", "--tg")
    with caplog.at_level(logging.INFO, logger="remote.check"):
        trex_preflight(target, lab.settings(), TREX_URL)
    (message,) = [m for m in caplog.messages if "can install TRex" in m]
    assert message.startswith(
        f"root@{lab.tg.address} can install TRex from {TREX_URL} "
        "(python3, curl, tar, sha256sum, systemctl, journalctl; Python python3"
    )
    # The tasks' own finder decides: one that finds no Python of 3.9 or later with PyYAML fails.
    task_sh = tmp_path / "task.sh"
    text = check.TASK_SH.read_text()
    assert '"${OVSPERF_PYTHON:-}" python3.12 python3.11 python3.9 python3; do' in text
    task_sh.write_text(
        text.replace('"${OVSPERF_PYTHON:-}" python3.12 python3.11 python3.9 python3; do', "python3.6; do")
    )
    monkeypatch.setattr(check, "TASK_SH", task_sh)
    with pytest.raises(RemoteError, match=r"no Python 3\.9 or later with PyYAML on root's PATH"):
        trex_preflight(target, lab.settings(), TREX_URL)
    monkeypatch.undo()
    monkeypatch.setitem(check.TOOLS, "trex", ("curl", "no-such-tool-a2", "tar"))
    with pytest.raises(RemoteError) as raised:
        trex_preflight(target, lab.settings(), None)
    assert str(raised.value) == (
        f"root@{lab.tg.address} cannot install TRex (setup_trex): missing on PATH: no-such-tool-a2."
    )
    lab.tg.stop_sshd()
    with pytest.raises(RemoteError, match=f"Cannot reach root@{lab.tg.address}"):
        trex_preflight(target, lab.settings(), TREX_URL)


@pytest.mark.dpdk  # root: namespaces, sshd
def test_a_trex_run_passes_its_preflight_and_starts_the_trex_plan(
    lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With the TG reachable, the run goes on past the preflight: state.json holds the TRex plan
    (the DUT's sshd is stopped, so the run then ends at the DUT, naming it)."""
    lab.trust()
    lab.dut.stop_sshd()
    inventory = write_trex_inventory(tmp_path / "inventory.yaml", peer_address=lab.tg.address)
    code = main(
        _run(inventory, f"root@{lab.tg.address}", f"root@{lab.dut.address}", tmp_path, *lab.ssh_args())
    )
    err = capsys.readouterr().err
    assert code == ExitCode.ERROR
    assert f"DUT: Cannot reach root@{lab.dut.address}" in err and "TRAFFICGEN stopped" in err
    state = json.loads((tmp_path / "logs" / "state.json").read_text())
    assert [step[0] for step in state["plan"]["TRAFFICGEN"]] == [
        "setup_trex", "setup_dpdk", "setup_trex", "perf_synchronization", "perf_synchronization",
        "perf_synchronization", "setup_trex",
    ]  # fmt: skip
    assert [step[0] for step in state["plan"]["DUT"]][:2] == ["vsperf_test", "setup_trex"]


FAKE_TREX = """#!/usr/bin/env python3
# Stand-in for TRex's t-rex-64 (tests only): accept connections on the sync port on every address,
# so the DUT's vsperf_test reaches it across the hosts' link.
import os, signal, socket, sys
print("Starting  TRex v3.04 please wait  ... ", " ".join(sys.argv[1:]), flush=True)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("0.0.0.0", int(os.environ.get("TREX_SYNC_PORT", "4501"))))
server.listen(8)
publisher = socket.socket()  # the async port: VSperf's client subscribes there
publisher.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
publisher.bind(("0.0.0.0", int(os.environ.get("TREX_ASYNC_PORT", "4500"))))
publisher.listen(8)
while True:
    for sock in (server, publisher):
        sock.settimeout(0.2)
        try:
            conn, _ = sock.accept()
        except OSError:
            continue
        conn.close()
"""


def _tarball() -> bytes:
    """Return a gzip tarball laid out like a TRex release, its ``t-rex-64`` the stand-in above."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data, mode in (
            ("v3.04/t-rex-64", FAKE_TREX.encode(), 0o755),
            ("v3.04/automation/trex_control_plane/interactive/trex_stl_lib/api.py", b"# stand-in\n", 0o644),
        ):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _outside(host: SshHost) -> str:
    """Return the test namespace's address on the host's veth pair (the /30's other end)."""
    return str(ipaddress.ip_address(host.address) - 1)


@pytest.mark.dpdk  # root: namespaces, sshd
def test_a_whole_trex_run_installs_starts_and_stops_trex_around_vsperf(lab: Lab, tmp_path: Path) -> None:
    """OVS_DPDK1q with a TRex inventory, through the command line: the TG downloads and checks the
    tarball, writes TRex's configuration, setup_dpdk binds the NICs (one reboot), the server starts
    as the (stub) unit, the DUT's vsperf_test reaches it on TCP 4501 across the hosts' link, VSperf
    (fake) runs with 'Trex', the server is stopped after VSPERF_END; the results come back."""
    lab.trust()
    link_hosts(lab.tg, lab.dut)
    tg_machine = FakeMachine(tmp_path / "tg-machine", nics=TREX_NICS)
    dut_machine = FakeMachine(tmp_path / "dut-machine")
    (tg_machine.etc / "ssh").mkdir()
    (tg_machine.etc / "ssh" / "ssh_host_ed25519_key.pub").write_text(lab.tg.host_key_line + "\n")
    for index, pci in enumerate(TREX_NICS):
        net = tg_machine.sysfs / "bus" / "pci" / "devices" / pci / "net" / f"ens1f{index}"
        (net / "address").write_text(f"3c:fd:fe:00:00:1{index}\n")
    for name, text in (("systemctl", SYSTEMCTL), ("journalctl", JOURNALCTL)):
        (tg_machine.bin / name).unlink(missing_ok=True)
        (tg_machine.bin / name).write_text(text)
        (tg_machine.bin / name).chmod(0o755)
    body = _tarball()
    tg_trex, dut_trex, pidfile = (
        tmp_path / "tg-opt" / "trex",
        tmp_path / "dut-opt" / "trex",
        tmp_path / "trex.pid",
    )
    collector, log_dir = tmp_path / "ci_in", tmp_path / "run-logs"
    server = Served("0.0.0.0")  # every address of the test's namespace: both hosts download
    server.files["/trex/v3.04.tar.gz"] = body
    port, clients = server.port, server.clients
    try:
        url = f"http://{_outside(lab.tg)}:{port}/trex/v3.04.tar.gz"
        inventory = write_trex_inventory(
            tmp_path / "inventory.yaml",
            url=url,
            sha256=hashlib.sha256(body).hexdigest(),
            install_dir=str(tg_trex),
            peer_address=lab.tg.address,
        )
        common = {"FAKE_VSPERF": str(FAKE_VSPERF), "FAKE_VSPERF_STUB_DIR": str(VSPERF_STUB)}
        tg_env = {
            **tg_machine.env(),
            "PERFSYNC_STATE_DIR": str(tmp_path / "tg-machine" / "perfsync"),
            "SETUP_DPDK_HOST": TREX_TG,
            "SETUP_TREX_HOST": TREX_TG,
            "TREX_INSTALL_DIR": str(tg_trex),  # the systemctl stub starts the server from there
            "FAKE_JOURNAL": str(tmp_path / "journal.log"),
            "FAKE_TREX_PIDFILE": str(pidfile),
            "SYNC_HOST_NAMES": lab.tg.address,
        }
        dut_env = {
            **dut_machine.env(),
            "PERFSYNC_STATE_DIR": str(tmp_path / "dut-machine" / "perfsync"),
            "DUT_HOSTNAME": TREX_DUT,
            "SETUP_TREX_HOST": TREX_DUT,
            # The same file system as the TG's: its own copy, from its own side of the test's links.
            "TREX_INSTALL_DIR": str(dut_trex),
            "TREX_URL": f"http://{_outside(lab.dut)}:{port}/trex/v3.04.tar.gz",
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
        try:
            with Reboots(tmp_path, [lab.tg, lab.dut]) as reboots, perfsync_cleanup(str(tmp_path)):
                code = main(
                    [
                        *("run", "--config", "OVS_DPDK1q", "--tg", f"root@{lab.tg.address}"),
                        *("--dut", f"root@{lab.dut.address}", "--inventory", str(inventory)),
                        *("--collector", str(collector), "--log-dir", str(log_dir)),
                        *("--remote-dir", str(tmp_path / "remote"), "--reboot-command", reboots.command()),
                        *("--boot-id-command", reboots.boot_id_command(), "--reboot-timeout", "60"),
                        *("--timeout", "0.2"),
                        *_env_args("--env", common),
                        *_env_args("--tg-env", tg_env),
                        *_env_args("--dut-env", dut_env),
                        *lab.ssh_args(),
                    ]
                )
        finally:
            if pidfile.exists():  # setup_trex stop ends it; a failed run may not have
                with suppress(ProcessLookupError, ValueError):
                    os.kill(int(pidfile.read_text()), signal.SIGKILL)
    finally:
        server.close()
    logs = {p.name: p.read_text() for p in log_dir.glob("*.log")}
    assert code == ExitCode.OK, logs
    assert reboots.count == {lab.tg.address: 1, lab.dut.address: 1}
    state = json.loads((log_dir / "state.json").read_text())
    assert [step[0] for step in state["plan"]["TRAFFICGEN"]] == [
        "setup_trex", "setup_dpdk", "setup_trex", "perf_synchronization", "perf_synchronization",
        "perf_synchronization", "setup_trex",
    ]  # fmt: skip
    assert {role: h["next_step"] for role, h in state["hosts"].items()} == {"TRAFFICGEN": 7, "DUT": 6}
    # Each host downloaded the tarball once (from its own side), checked and unpacked it.
    assert sorted(clients) == sorted([lab.tg.address, lab.dut.address])
    assert os.access(tg_trex / "t-rex-64", os.X_OK) and os.access(dut_trex / "t-rex-64", os.X_OK)
    assert (tg_machine.etc / "trex_cfg.yaml").read_text().count("src_mac") == 2
    # The server started after setup_dpdk, was reached by the DUT, and was stopped at the end.
    assert [c[:2] for c in tg_machine.calls() if c[0] == "systemctl" and c[1] != "is-active"][-1] == [
        "systemctl", "stop",
    ]  # fmt: skip
    assert "Starting  TRex v3.04" in (tmp_path / "journal.log").read_text()
    assert (
        f"TRex host {lab.tg.address} reachable over SSH, its server on TCP 4501 and 4500" in logs["dut.log"]
    )
    assert not pidfile.exists()
    [delivered] = list(collector.iterdir())
    confs = list(delivered.rglob("ovsperf-vsperf.conf"))
    assert confs and "TRAFFICGEN = 'Trex'" in confs[0].read_text()
    assert (delivered / METADATA_FILE).is_file()
