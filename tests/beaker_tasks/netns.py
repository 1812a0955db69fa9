"""Two simulated lab hosts: network namespaces joined by a veth pair, cleaned up whatever happens.

Only addresses inside the namespaces we create are used (192.0.2.0/24, RFC 5737 TEST-NET-1). Every
perfsync server started in them is recorded by PID (from its PID file, checked against its command
line) and killed at the end; the namespaces are deleted, which removes the veth pair. They are named
``ovsperf-bt-p<pid>-…`` after the process that made them: a killed run's are removed (with the
servers in them) by the next, and SIGTERM unwinds so that their own are deleted
(``tests/netnsguard.py``). Both ends of the veth pair are inside the namespaces, so the addresses
cannot collide with the test's own namespace.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from tests.netnsguard import owned_name, remove_stale, sigterm_unwinds

NS_PREFIX = "ovsperf-bt-"
PERFSYNC = Path(__file__).resolve().parents[2] / "beaker_tasks" / "perf_synchronization" / "perfsync.py"
IP = shutil.which("ip") or "/usr/sbin/ip"
"""The real ip(8), by absolute path: the task tests put an ``ip`` shim first on PATH."""
PYTHON = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable


@dataclass
class Host:
    """One namespace with an address and a perfsync state directory."""

    ns: str
    address: str
    state_dir: Path
    started: set[int] = field(default_factory=set)

    @property
    def prefix(self) -> tuple[str, ...]:
        return (IP, "netns", "exec", self.ns)

    def perfsync(self, *args: str, timeout_s: float = 30) -> subprocess.CompletedProcess[str]:
        """Run perfsync.py in this namespace with this host's state directory."""
        proc = subprocess.run(
            [*self.prefix, PYTHON, str(PERFSYNC), "--state-dir", str(self.state_dir), *args],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        self.track_server()
        return proc

    def popen(self, *args: str) -> subprocess.Popen[str]:
        """Start perfsync.py in this namespace without waiting."""
        return subprocess.Popen(
            [*self.prefix, PYTHON, str(PERFSYNC), "--state-dir", str(self.state_dir), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def server_pid(self) -> int | None:
        try:
            return int((self.state_dir / "server.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def track_server(self) -> None:
        pid = self.server_pid()
        if pid is not None and _is_our_server(pid, self.state_dir):
            self.started.add(pid)

    def kill_server(self) -> None:
        """Stop the server by its PID (as a crash or reboot would end it) and wait until it is gone."""
        pid = self.server_pid()
        assert pid is not None and _is_our_server(pid, self.state_dir)
        _terminate(pid)

    def cleanup(self) -> None:
        self.track_server()
        for pid in self.started:
            if _is_our_server(pid, self.state_dir):
                _terminate(pid)


def _is_our_server(pid: int, state_dir: Path) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return str(PERFSYNC).encode() in cmdline and b"--serve" in cmdline and str(state_dir).encode() in cmdline


def _terminate(pid: int) -> None:
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        with suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        if Path(f"/proc/{pid}/status").exists() and "zombie" in Path(f"/proc/{pid}/status").read_text():
            return
        time.sleep(0.05)
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _ip(*args: str) -> None:
    subprocess.run([IP, *args], check=True, capture_output=True, timeout=10)


@contextmanager
def two_hosts(root: Path) -> Iterator[tuple[Host, Host]]:
    """Yield hosts A (192.0.2.1) and B (192.0.2.2) in fresh namespaces joined by a veth pair."""
    tag = uuid.uuid4().hex[:6]
    ns_a, ns_b = owned_name(NS_PREFIX, f"a-{tag}"), owned_name(NS_PREFIX, f"b-{tag}")
    veth_a, veth_b = f"obt{tag}a", f"obt{tag}b"
    hosts = (
        Host(ns_a, "192.0.2.1", root / "a" / "perfsync"),
        Host(ns_b, "192.0.2.2", root / "b" / "perfsync"),
    )
    remove_stale(NS_PREFIX)
    with sigterm_unwinds():
        yield from _made(hosts, (veth_a, veth_b))


def _made(hosts: tuple[Host, Host], veths: tuple[str, str]) -> Iterator[tuple[Host, Host]]:
    """Make the namespaces and the veth pair, yield the hosts, then delete everything made."""
    created: list[str] = []
    try:
        for host in hosts:
            _ip("netns", "add", host.ns)
            created.append(host.ns)
        _ip("link", "add", veths[0], "type", "veth", "peer", "name", veths[1])
        for host, veth in zip(hosts, veths, strict=True):
            _ip("link", "set", veth, "netns", host.ns)
        for host, veth in zip(hosts, veths, strict=True):
            _ip("-n", host.ns, "addr", "add", f"{host.address}/24", "dev", veth)
            _ip("-n", host.ns, "link", "set", veth, "up")
            _ip("-n", host.ns, "link", "set", "lo", "up")
        yield hosts
    finally:
        for host in hosts:
            host.cleanup()
        for ns in created:
            subprocess.run([IP, "netns", "del", ns], check=False, capture_output=True, timeout=10)
