"""Real peers for the traffic-generator tests: dpdk-testpmd and a sandboxed OVS-DPDK.

Everything started here is stopped by PID and its sockets, hugepage files and DPDK runtime
directories are removed, also when a test fails. File prefixes start with ``ovsperf-tg-``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ovsperf_lab.generators.dpdk_config import GeneratorConfig

ROOT = Path(__file__).resolve().parents[2]
BINARY = ROOT / "trafficgen" / "build" / "ovsperf-trafficgen"
HUGEPAGES = Path("/dev/hugepages")
DPDK_RUNTIME = Path("/var/run/dpdk")
TESTPMD = "/usr/bin/dpdk-testpmd"
OVS_VSWITCHD_DPDK = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"
OVS_SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")


def cpus() -> list[int]:
    """Return the CPUs this process may use, ascending."""
    return sorted(os.sched_getaffinity(0))


def generator_cpu() -> str:
    """Return the CPU for the generator: the first one (the peer gets the last one)."""
    return str(cpus()[0])


def peer_cpu() -> int:
    """Return the CPU for the forwarder (testpmd or the OVS PMD thread)."""
    return cpus()[-1]


def build_generator() -> Path:
    """Build ``trafficgen/`` (no-op when up to date) and return the binary."""
    subprocess.run(["make", "-s", "-C", str(ROOT / "trafficgen")], check=True, timeout=300)
    assert BINARY.is_file()
    return BINARY


def unique_prefix(what: str) -> str:
    """Return a unique DPDK file prefix ``ovsperf-tg-<what>-<random>``."""
    return f"ovsperf-tg-{what}-{secrets.token_hex(3)}"


def hugepage_files(prefix: str) -> list[Path]:
    """Return the hugepage files DPDK left for ``prefix``."""
    return sorted(HUGEPAGES.glob(f"{prefix}map_*"))


def remove_dpdk_leftovers(prefix: str) -> None:
    """Remove hugepage files and the runtime directory of ``prefix``."""
    for path in hugepage_files(prefix):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    shutil.rmtree(DPDK_RUNTIME / prefix, ignore_errors=True)


def stop_pid(proc: subprocess.Popen[bytes] | subprocess.Popen[str], timeout_s: float = 5.0) -> None:
    """Terminate, then kill, one process we started (by its PID)."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=timeout_s)


def wait_for(predicate: object, timeout_s: float, what: str) -> None:
    """Poll ``predicate()`` every 50 ms until true; fail the test after ``timeout_s``."""
    assert callable(predicate)
    end = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"Timed out after {timeout_s} s waiting for {what}.")
        time.sleep(0.05)


def virtio_user_config(
    sockets: tuple[Path, ...], *, server: bool, queues: int = 1, **kwargs: object
) -> GeneratorConfig:
    """Return a generator configuration with one ``net_virtio_user`` port per socket.

    ``kwargs`` override :class:`GeneratorConfig` fields.
    """
    mode = f"{',server=1' if server else ''},queue_size=1024,queues={queues}"
    fields: dict[str, object] = {
        "queues": queues,
        "vdevs": tuple(f"net_virtio_user{i},path={sock}{mode}" for i, sock in enumerate(sockets)),
        "lcores": generator_cpu(),
        "memory_mb": 128,
        "file_prefix": unique_prefix("gen"),
        "binary": BINARY,
    }
    fields.update(kwargs)
    return GeneratorConfig(**fields)  # type: ignore[arg-type]


class SocketDir:
    """A short temporary directory for vhost-user sockets (paths must stay below 108 bytes)."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="ovsperf-tg-", dir="/tmp"))

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


class Testpmd:
    """``dpdk-testpmd`` forwarding between two ``net_vhost`` ports (vhost-user servers).

    io forwarding, pinned to one CPU (both lcores on it), ``--no-pci``, its own file prefix.
    """

    def __init__(self, sockets: SocketDir, *, forward_mode: str = "io", queues: int = 1) -> None:
        self.prefix = unique_prefix("testpmd")
        self.queues = queues
        self.sock0 = sockets / "pmd0.sock"
        self.sock1 = sockets / "pmd1.sock"
        cpu = peer_cpu()
        cmd = [
            TESTPMD,
            "--lcores",
            f"0@{cpu},1@{cpu}",
            "--no-pci",
            "--file-prefix",
            self.prefix,
            "-m",
            "256",
            "--in-memory",
            "--vdev",
            f"net_vhost0,iface={self.sock0},queues={queues}",
            "--vdev",
            f"net_vhost1,iface={self.sock1},queues={queues}",
            "--",
            "-i",
            f"--forward-mode={forward_mode}",
            f"--rxq={queues}",
            f"--txq={queues}",
            "--auto-start",
            "--no-mlockall",
        ]
        self.log = sockets / "testpmd.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: self.sock0.exists() and self.sock1.exists(), 30, "testpmd's vhost-user sockets")
        except AssertionError:
            self.stop()
            raise

    def generator_config(self, **kwargs: object) -> GeneratorConfig:
        """Return a generator configuration with virtio_user clients to this testpmd."""
        return virtio_user_config((self.sock0, self.sock1), server=False, queues=self.queues, **kwargs)

    def stop(self) -> None:
        """Kill testpmd (by PID) and remove its files."""
        stop_pid(self.proc)
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        remove_dpdk_leftovers(self.prefix)


class OvsSandbox:
    """A private ovsdb-server + ovs-vswitchd-dpdk with its own run/db/log/etc directories.

    Bridge ``br0`` (netdev datapath) with two ``dpdkvhostuserclient`` ports ``vhu0``/``vhu1``
    (OpenFlow ports 1 and 2) connecting to the generator's virtio_user servers. ovs-vswitchd runs
    in a network namespace of its own: the netdev datapath creates tap devices named
    ``ovs-netdev`` and ``br0``, which would collide with any other OVS on the machine.
    """

    def __init__(self, sockets: SocketDir) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="ovsperf-tg-ovs-"))
        self.prefix = unique_prefix("ovs")
        self.netns = unique_prefix("ns")
        self._netns_created = False
        self.sock0 = sockets / "vhu0.sock"
        self.sock1 = sockets / "vhu1.sock"
        self.env = dict(os.environ)
        for var in ("OVS_RUNDIR", "OVS_DBDIR", "OVS_LOGDIR", "OVS_SYSCONFDIR", "OVS_PKGDATADIR"):
            self.env.pop(var, None)
        for var in ("OVS_RUNDIR", "OVS_DBDIR", "OVS_LOGDIR", "OVS_SYSCONFDIR"):
            self.env[var] = str(self.dir)
        self.db_sock = self.dir / "db.sock"
        self.procs: list[subprocess.Popen[bytes]] = []
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _run(self, *cmd: str) -> str:
        done = subprocess.run(
            list(cmd), env=self.env, capture_output=True, text=True, timeout=30, check=False
        )
        if done.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout

    def vsctl(self, *args: str) -> str:
        """Run ``ovs-vsctl`` against this sandbox's database."""
        return self._run("ovs-vsctl", f"--db=unix:{self.db_sock}", "--timeout=20", *args)

    def appctl(self, *args: str) -> str:
        """Run ``ovs-appctl`` against this sandbox's ovs-vswitchd."""
        return self._run("ovs-appctl", f"--target={self.dir / 'ovs-vswitchd.ctl'}", *args)

    def ofctl(self, *args: str) -> str:
        """Run ``ovs-ofctl`` against ``br0`` of this sandbox."""
        return self._run("ovs-ofctl", *args)

    def _start(self) -> None:
        self._run("ip", "netns", "add", self.netns)
        self._netns_created = True
        db = self.dir / "conf.db"
        self._run("ovsdb-tool", "create", str(db), str(OVS_SCHEMA))
        self.procs.append(
            subprocess.Popen(
                [
                    "ovsdb-server",
                    str(db),
                    f"--remote=punix:{self.db_sock}",
                    "--pidfile=" + str(self.dir / "ovsdb-server.pid"),
                    "--unixctl=" + str(self.dir / "ovsdb-server.ctl"),
                    "--log-file=" + str(self.dir / "ovsdb-server.log"),
                ],
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        wait_for(self.db_sock.exists, 20, "ovsdb-server's socket")
        self.vsctl("--no-wait", "init")
        cpu = peer_cpu()
        self.vsctl(
            "--no-wait",
            "set",
            "Open_vSwitch",
            ".",
            "other_config:dpdk-init=true",
            f'other_config:dpdk-extra="--no-pci --file-prefix={self.prefix} --in-memory"',
            "other_config:dpdk-socket-mem=1024",
            "other_config:dpdk-socket-limit=1024",
            f"other_config:dpdk-lcore-mask={1 << cpu:#x}",
            f"other_config:pmd-cpu-mask={1 << cpu:#x}",
        )
        self.procs.append(
            subprocess.Popen(
                [
                    "ip",
                    "netns",
                    "exec",
                    self.netns,
                    OVS_VSWITCHD_DPDK,
                    f"unix:{self.db_sock}",
                    "--pidfile=" + str(self.dir / "ovs-vswitchd.pid"),
                    "--unixctl=" + str(self.dir / "ovs-vswitchd.ctl"),
                    "--log-file=" + str(self.dir / "ovs-vswitchd.log"),
                ],
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        self.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev")
        for name, sock, ofport in (("vhu0", self.sock0, 1), ("vhu1", self.sock1, 2)):
            self.vsctl(
                "add-port",
                "br0",
                name,
                "--",
                "set",
                "Interface",
                name,
                "type=dpdkvhostuserclient",
                f"options:vhost-server-path={sock}",
                f"ofport_request={ofport}",
            )
        mgmt = self.dir / "br0.mgmt"
        try:
            wait_for(mgmt.exists, 60, "OVS bridge br0's OpenFlow socket")
        except AssertionError as err:
            log = self.dir / "ovs-vswitchd.log"
            tail = log.read_text(errors="replace").splitlines()[-15:] if log.exists() else []
            raise AssertionError(f"{err} ovs-vswitchd.log ends:\n" + "\n".join(tail)) from None
        self.br = f"unix:{mgmt}"
        self.ofctl("del-flows", self.br)

    def p2p_flows(self, extra: tuple[str, ...] = ()) -> None:
        """Install port-to-port forwarding 1 <-> 2, plus ``extra`` flows (higher priority)."""
        self.ofctl("del-flows", self.br)
        self.ofctl("add-flow", self.br, "priority=10,in_port=1,actions=output:2")
        self.ofctl("add-flow", self.br, "priority=10,in_port=2,actions=output:1")
        for flow in extra:
            self.ofctl("add-flow", self.br, flow)

    def generator_config(self, **kwargs: object) -> GeneratorConfig:
        """Return a generator configuration with virtio_user servers for OVS's client ports."""
        return virtio_user_config((self.sock0, self.sock1), server=True, **kwargs)

    def stop(self) -> None:
        """Stop ovs-vswitchd and ovsdb-server (by PID), delete the namespace, remove their files."""
        for proc in reversed(self.procs):
            stop_pid(proc, timeout_s=10)
        if self._netns_created:
            subprocess.run(["ip", "netns", "del", self.netns], check=False, timeout=30)
        remove_dpdk_leftovers(self.prefix)
        shutil.rmtree(self.dir, ignore_errors=True)


@contextlib.contextmanager
def no_leftovers(prefix: str) -> Iterator[None]:
    """Assert that the body leaves no hugepage files for ``prefix``; remove them anyway."""
    try:
        yield
        assert hugepage_files(prefix) == [], f"hugepage files left for '{prefix}'"
    finally:
        remove_dpdk_leftovers(prefix)
