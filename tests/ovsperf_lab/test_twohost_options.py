"""Two-host mode's inputs: SSH targets, remote command quoting, devargs, PCI ports, option checks, install.

No DPDK: these run in-process (``main(argv)``) or against the shell and the file system; the runs
themselves are in ``test_twohost.py``.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import cast

import pytest

from ovsperf_common.exitcodes import ExitCode
from ovsperf_lab.cli import main
from ovsperf_lab.crosscheck import CablingError, check_cabling, compare
from ovsperf_lab.devargs import parse_devargs, pci_port_problem
from ovsperf_lab.errors import LabError
from ovsperf_lab.generators.api import Attachment, AttachmentKind, GeneratorPort, GeneratorRequest, PortRole
from ovsperf_lab.generators.registry import GENERATORS
from ovsperf_lab.generators.sshhost import STOP_SCRIPT, SshTarget, remote_command, start_words
from ovsperf_lab.model import TrialSpec
from ovsperf_lab.ovs import OvsSandbox, PortCounters
from ovsperf_lab.plan import LabOptions
from tests.ovsperf_lab.fakes import FakeTrafficGenerator

ROOT = Path(__file__).resolve().parents[2]
AFP = ["--tg-port", "net_af_packet0,iface=a", "--tg-port", "net_af_packet1,iface=b"]
A, B, C, D = (f"net_af_packet{n % 2},iface={x}" for n, x in enumerate("abcd"))


def run_argv(tmp_path: Path) -> list[str]:
    """Return ``ovsperf-lab --state-dir … run --config OVS_DPDK1q --output …`` under ``tmp_path``."""
    return [
        "--state-dir",
        str(tmp_path / "state"),
        "run",
        "--config",
        "OVS_DPDK1q",
        "--output",
        str(tmp_path / "o"),
    ]


@pytest.mark.parametrize(
    ("text", "user", "host", "port"),
    [
        ("tg.lab.example", None, "tg.lab.example", None),
        ("root@tg-1", "root", "tg-1", None),
        ("perf@198.51.100.2:2222", "perf", "198.51.100.2", 2222),
        ("root@[2001:db8::5]:22", "root", "2001:db8::5", 22),
        ("2001:db8::5", None, "2001:db8::5", None),
    ],
)
def test_ssh_targets_parse(text: str, user: str | None, host: str, port: int | None) -> None:
    target = SshTarget.parse(text)
    assert (target.user, target.host, target.port) == (user, host, port)


@pytest.mark.parametrize(
    "text",
    ["-oProxyCommand=x", "root@-host", "a;b", "root@host:0", "root@host:70000", "ro ot@host", "$(id)@h",
     "root@ho`st`", "host:22x", "root@[::1", "@"],
)  # fmt: skip
def test_ssh_targets_outside_the_charset_are_refused(text: str) -> None:
    with pytest.raises(LabError, match="Option '--tg-ssh'"):
        SshTarget.parse(text)


def test_key_paths_that_ssh_would_split_are_refused() -> None:
    with pytest.raises(LabError, match="Option '--tg-known-hosts'"):
        SshTarget("tg", known_hosts=Path("/tmp/a b"))


def test_every_remote_word_is_quoted_and_the_pid_comes_first(tmp_path: Path) -> None:
    target = SshTarget("tg", "root", 2222, Path("/k/id"), Path("/k/known"))
    words = start_words(["/opt/tg bin", "--vdev", "net_af_packet0,iface=$(touch x)", "it's"])
    argv = target.argv(words)
    assert argv[:2] == ["ssh", "-o"] and "BatchMode=yes" in argv and "StrictHostKeyChecking=yes" in argv
    assert argv[argv.index("-i") + 1] == "/k/id" and "UserKnownHostsFile=/k/known" in argv
    assert argv[argv.index("-p") + 1] == "2222"
    assert argv[-3:-1] == ["root@tg", "--"]
    assert shlex.split(argv[-1]) == words  # the remote shell gets back exactly these words
    # Run the very command line in a shell here (as sshd would): it prints its PID, then execs.
    script = tmp_path / "show"
    script.write_text('#!/bin/sh\nprintf "%s|" "$@"\n')
    script.chmod(0o755)
    line = remote_command(start_words([str(script), "a b", "$(touch x)", "it's"]))
    done = subprocess.run(
        ["sh", "-c", line], capture_output=True, text=True, timeout=10, cwd=tmp_path, check=True
    )
    pid, out = done.stdout.split("\n", 1)
    assert pid.isdigit() and out == "a b|$(touch x)|it's|"
    assert not (tmp_path / "x").exists()


def test_the_stop_script_kills_only_a_pid_running_with_the_prefix(tmp_path: Path) -> None:
    huge, runtime = tmp_path / "huge", tmp_path / "run"
    (runtime / "ovsperf-lab-t-tg").mkdir(parents=True)
    huge.mkdir()
    (huge / "ovsperf-lab-t-tgmap_0").write_text("")
    (huge / "other-map_0").write_text("")
    sleeper = [sys.executable, "-c", "import time; time.sleep(30)"]
    other = subprocess.Popen([*sleeper, "ovsperf-lab-t-tgx"])  # the prefix as part of a word only
    ours = subprocess.Popen([*sleeper, "ovsperf-lab-t-tg"])
    try:
        for proc, stopped in ((other, False), (ours, True)):
            done = subprocess.run(
                ["sh", "-c", STOP_SCRIPT, "sh", str(proc.pid), "ovsperf-lab-t-tg", str(huge), str(runtime)],
                capture_output=True, text=True, timeout=20, check=True,
            )  # fmt: skip
            assert ("stopped" in done.stdout) is stopped
            assert (proc.poll() is None) is not stopped or proc.wait(timeout=5) is not None
        assert sorted(p.name for p in huge.iterdir()) == ["other-map_0"] and list(runtime.iterdir()) == []
    finally:
        other.kill()
        ours.kill()
        other.wait()
        ours.wait()


def test_the_stop_script_returns_only_when_a_stopped_generator_is_gone(tmp_path: Path) -> None:
    """A generator that is stopped (SIGSTOP) and ignores SIGTERM is killed and has exited on return.

    CI once saw the killed process still in state D (the kernel unmapping its memory) after the old
    script had printed 'stopped'; now it waits until the process is gone or a zombie, at most 5 s.
    """
    huge, runtime = tmp_path / "huge", tmp_path / "run"
    huge.mkdir()
    runtime.mkdir()
    # 1.5 GiB of touched memory, as a generator's hugepages: unmapping it at exit takes a while.
    code = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "m = b'\\x01' * (3 << 29); print(1, flush=True); time.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, "ovsperf-lab-t-st"], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"1\n"  # SIGTERM is ignored from here
        os.kill(proc.pid, signal.SIGSTOP)
        start = time.monotonic()
        done = subprocess.run(
            ["sh", "-c", STOP_SCRIPT, "sh", str(proc.pid), "ovsperf-lab-t-st", str(huge), str(runtime)],
            capture_output=True, text=True, timeout=30, check=True,
        )  # fmt: skip
        took = time.monotonic() - start
        assert done.stdout.split() == ["stopped"], done
        # Not yet reaped by its parent (this test), so a zombie: it has exited, nothing runs.
        state = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        assert state == "Z", state
        assert 4.5 <= took < 12.0, took  # 5 s for SIGTERM, then SIGKILL and the short wait
        assert proc.wait(timeout=5) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(
    ("text", "pci", "name"),
    [
        ("0000:03:00.0", "0000:03:00.0", "0000:03:00.0"),
        ("03:00.1,txq_inline_max=128", "0000:03:00.1", "0000:03:00.1"),
        ("net_af_packet0,iface=veth0,framecnt=4096", None, "net_af_packet0"),
    ],
)
def test_devargs_parse(text: str, pci: str | None, name: str) -> None:
    devargs = parse_devargs(text)
    assert (devargs.pci_address, devargs.name, devargs.text) == (pci, name, text)


@pytest.mark.parametrize(
    "text", ["eth0", "0000:03:00.8", "net_af_packet0,iface=a b", "net_x;rm", "0000:03:00.0,"]
)
def test_bad_devargs_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="is not DPDK devargs"):
        parse_devargs(text)


def test_pci_problems_from_sysfs(tmp_path: Path) -> None:
    devices, net = tmp_path / "bus", tmp_path / "net"
    bound = tmp_path / "devices" / "0000:03:00.0"
    (bound / "virtio3" / "net" / "zz-test0").mkdir(parents=True)
    (tmp_path / "devices" / "0000:03:00.1").mkdir()
    devices.mkdir()
    net.mkdir()
    for name in ("0000:03:00.0", "0000:03:00.1"):
        (devices / name).symlink_to(tmp_path / "devices" / name)
    iface = bound / "virtio3" / "net" / "zz-test0"
    (net / "zz-test0").symlink_to(iface)
    (iface / "flags").write_text("0x1003\n")
    problem = pci_port_problem("0000:03:00.0", devices=devices, sys_net=net)
    assert problem is not None and "is network interface 'zz-test0' of its kernel driver, up" in problem
    (iface / "flags").write_text("0x1002\n")  # down, no address: DPDK may take it over
    assert pci_port_problem("0000:03:00.0", devices=devices, sys_net=net) is None
    assert pci_port_problem("0000:03:00.1", devices=devices, sys_net=net) is None  # vfio-pci: no interface
    assert "does not exist" in (pci_port_problem("0000:04:00.0", devices=devices, sys_net=net) or "")


def test_a_missing_pci_address_is_refused_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*run_argv(tmp_path), "--dut-port", "0000:ff:1f.7", "--dut-port", "0000:ff:1f.6", *AFP]
    assert main(argv) == ExitCode.ERROR
    out, err = capsys.readouterr()
    assert out == ""
    assert "Option '--dut-port': PCI device '0000:ff:1f.7' does not exist" in err
    assert "nothing was changed on this host" in err
    assert not (tmp_path / "o").exists() and not (tmp_path / "state").exists()


def _management_pci_address() -> tuple[str, str] | None:
    """Return (PCI address, interface) of the default route's interface, if it is a PCI device."""
    routes = json.loads(subprocess.run(["ip", "-j", "route", "show", "default"], capture_output=True,
                                       text=True, check=True, timeout=10).stdout or "[]")  # fmt: skip
    for route in routes:
        device = Path("/sys/class/net") / route.get("dev", "") / "device"
        for part in device.resolve().parts[::-1] if device.exists() else ():
            if parse_pci(part):
                return part, route["dev"]
    return None


def parse_pci(text: str) -> bool:
    try:
        return parse_devargs(text).is_pci and len(text) == 12
    except ValueError:
        return False


def test_the_management_interface_is_refused_and_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = _management_pci_address()
    if found is None:
        pytest.skip("this machine's default route does not leave through a PCI network device")
    address, iface = found
    argv = [*run_argv(tmp_path), "--dut-port", address, "--dut-port", "0000:ff:1f.6", *AFP]
    assert main(argv) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert (
        f"Option '--dut-port': PCI device '{address}' is network interface '{iface}' of its kernel driver, up"
        in err
    )
    assert int(Path(f"/sys/class/net/{iface}/flags").read_text(), 16) & 1  # still up


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"dut_ports": (A,), "tg_ports": (B,)}, "--dut-port' must be given twice"),
        ({"dut_ports": (A, B)}, "go together"),
        ({"dut_ports": (A, A.replace("=a", "=b")), "tg_ports": (C, D)}, "same device twice"),
        ({"tg_ssh": SshTarget("tg")}, "'--tg-ssh' applies to two-host mode"),
        ({"tg_cpus": "1;2"}, "--tg-cpus"),
        ({"pmd_cpus": (1, 1)}, "--pmd-cpus"),
        ({"pmd_cpus": (1,), "lcore_cpu": 1}, "--lcore-cpu"),
        ({"pmd_cpus": (1, 2), "pmd_cores": 1}, "disagree"),
    ],
)  # fmt: skip
def test_two_host_options_are_checked(changes: dict[str, object], message: str) -> None:
    with pytest.raises(LabError, match=message):
        LabOptions(**changes)  # type: ignore[arg-type]


def test_testpmd_cannot_drive_nic_ports() -> None:
    wire = {"dut_ports": ("0000:03:00.0", "0000:03:00.1"), "tg_ports": ("0000:04:00.0", "0000:04:00.1")}
    with pytest.raises(LabError, match="Option '--generator': 'testpmd' cannot drive NIC ports"):
        LabOptions(generator="testpmd", search=LabOptions().search, **wire)  # type: ignore[arg-type]


def test_make_install_honours_prefix_and_destdir(tmp_path: Path) -> None:
    subprocess.run(
        ["make", "-s", "-C", str(ROOT / "trafficgen"), "install", f"DESTDIR={tmp_path}", "PREFIX=/opt/tg"],
        check=True, timeout=300, capture_output=True,
    )  # fmt: skip
    installed = tmp_path / "opt" / "tg" / "bin" / "ovsperf-trafficgen"
    assert installed.is_file() and installed.stat().st_mode & 0o111
    assert installed.read_bytes() == (ROOT / "trafficgen" / "build" / "ovsperf-trafficgen").read_bytes()


class CountingOvs:
    """OVS's port counters before and after one trial (what ``check_cabling`` reads)."""

    def __init__(self, after: dict[int, PortCounters]) -> None:
        self.snapshots = [ZERO, after]

    def port_counters(self, bridge: str) -> dict[int, PortCounters]:
        return self.snapshots.pop(0)


ZERO = {1: PortCounters(0, 0, 0, 0), 2: PortCounters(0, 0, 0, 0)}
NAMES = ("dpdk0", "dpdk1")


def test_the_cabling_probe_passes_straight_links_and_names_crossed_or_missing_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    straight = CountingOvs({1: PortCounters(1000, 0, 0, 0), 2: PortCounters(0, 0, 1000, 0)})
    check = check_cabling(FakeTrafficGenerator(), cast(OvsSandbox, straight), "br", (1, 2), NAMES)
    assert check.ovs_rx_packets == {0: 1000, 1: 0}
    crossed = CountingOvs({1: PortCounters(0, 0, 1000, 0), 2: PortCounters(1000, 0, 0, 0)})
    with pytest.raises(
        CablingError, match=r"TG port 0 is cabled to DUT port 1 \('dpdk1'\) and TG port 1 to DUT"
    ):
        check_cabling(FakeTrafficGenerator(), cast(OvsSandbox, crossed), "br", (1, 2), NAMES)
    lossy = CountingOvs(
        {1: PortCounters(828, 0, 0, 0), 2: PortCounters(0, 0, 828, 0)}
    )  # a virtual lab's link
    with caplog.at_level(logging.WARNING, logger="ovsperf_lab.crosscheck"):
        check_cabling(FakeTrafficGenerator(), cast(OvsSandbox, lossy), "br", (1, 2), NAMES)
    assert "lost 172 of 1000 frames (17.2 %) at 10000 pps" in caplog.text
    nowhere = CountingOvs({1: PortCounters(3, 0, 0, 0), 2: PortCounters(0, 0, 0, 0)})
    with pytest.raises(
        CablingError, match=r"OVS received 3 of them on DUT port 0 .* not cabled to DUT port 0"
    ):
        check_cabling(FakeTrafficGenerator(), cast(OvsSandbox, nowhere), "br", (1, 2), NAMES)


def test_nic_counters_count_receive_drops_and_a_full_nic_queue_is_the_dut_s_loss() -> None:
    result = FakeTrafficGenerator(capacity_pps=900.0).run_trial(TrialSpec(64, 1000.0, 1.0))
    # Each NIC dropped 50 on receive (imissed) and could not send 30: OVS, not the generator, lost them.
    after = {1: PortCounters(950, 50, 900, 30), 2: PortCounters(950, 50, 900, 30)}
    assert compare(ZERO, after, result, (1, 2), wire=True).ok
    vhost = compare(ZERO, after, result, (1, 2))
    assert not vhost.ok and any("did not keep up" in m for m in vhost.mismatches)


def test_testpmd_refuses_nic_ports_naming_the_options() -> None:
    ports = tuple(
        GeneratorPort(role, Attachment(AttachmentKind.WIRE, devargs=f"net_af_packet{n},iface=x{n}"))
        for n, role in enumerate((PortRole.WEST, PortRole.EAST))
    )
    request = GeneratorRequest(
        ports=(ports[0], ports[1]), cpu=0, file_prefix="p", memory_mb=64, queues=1, ring_size=1024
    )
    with pytest.raises(LabError, match=r"cannot drive NIC ports \('--tg-port'\) or run on a TG host"):
        GENERATORS["testpmd"].start(request)
    with pytest.raises(LabError, match="attached as 'wire', not as 'vhost-user-server'"):
        request.sockets()
    assert request.devargs() == ("net_af_packet0,iface=x0", "net_af_packet1,iface=x1")
