"""Run a sandboxed OVS-DPDK: own ovsdb, run/db/log/etc directories and sockets; never the service.

Layout under the run directory ``<run_dir>/ovs/``: ``run/`` (``db.sock``, control sockets,
pidfiles, ``<bridge>.mgmt``), ``db/conf.db``, ``log/`` (``ovsdb-server.log``,
``ovs-vswitchd.log``) and ``etc/``. The ``OVS_RUNDIR``/``OVS_DBDIR``/``OVS_LOGDIR``/
``OVS_SYSCONFDIR`` variables point every OVS tool there, and every ``ovs-vsctl``/``ovs-appctl``
call names the sandbox's sockets explicitly. DPDK runs with ``--no-pci`` (two-host mode: an
allow-list ``-a`` of the ``--dut-port`` PCI addresses instead) and a file prefix of the run (OVS
3.x adds ``--in-memory``, so no hugepage files are created). Both daemons are children of
this process and recorded in the run's :class:`~ovsperf_lab.state.LabRunState`.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ovsperf_common.deadline import Deadline, DeadlineExceededError, load_scaled_timeout, overload_note
from ovsperf_lab.errors import OvsError, OvsOverloadedError
from ovsperf_lab.state import LabRunState, TrackedProcess, delete_netns, delete_tap, stop_process

log = logging.getLogger(__name__)

OVS_DPDK_VSWITCHD = Path("/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk")
"""Debian's DPDK build of ovs-vswitchd (the ``ovs-vswitchd`` alternative is the non-DPDK one)."""

OVS_SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
"""The Open_vSwitch database schema shipped with OVS."""


_DUMP_PORTS_RE = re.compile(
    r'port\s+"?(?P<port>[^:"\s]+)"?:\s+rx pkts=(?P<rx_pkts>\d+|\?), bytes=(?P<rx_bytes>\d+|\?), '
    r"drop=(?P<rx_drop>\d+|\?),"
    r".*?tx pkts=(?P<tx_pkts>\d+|\?), bytes=(?P<tx_bytes>\d+|\?), drop=(?P<tx_drop>\d+|\?),",
    re.DOTALL,
)


def _count(text: str) -> int | None:
    return None if text == "?" else int(text)


def accepts_connections(path: Path) -> bool:
    """Return whether the Unix stream socket ``path`` accepts a connection now (then closed).

    A daemon's socket file exists from ``bind()``, before its ``listen()``: a client connecting in
    between is refused, and ``ovs-vsctl`` and ``ovs-ofctl`` try only once (seen
    "database connection failed (Connection refused)" right after the file appeared, under load).
    """
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(str(path))
        except OSError:  # missing, refused, not a socket, or a 1 s stall
            return False
    return True


@dataclass(frozen=True)
class PortCounters:
    """Counters of one OVS port, as OVS sees them (``ovs-ofctl dump-ports``) [1]."""

    rx_packets: int | None
    """Frames OVS received from the peer (what the peer sent into OVS)."""
    rx_dropped: int | None
    """Frames OVS dropped on receive."""
    tx_packets: int | None
    """Frames OVS delivered to the peer."""
    tx_dropped: int | None
    """Frames OVS could not deliver to the peer (its ring was full)."""
    rx_bytes: int | None = None
    """Bytes of the frames OVS received, without FCS [B]; ``None``: not reported."""
    tx_bytes: int | None = None
    """Bytes of the frames OVS delivered, without FCS [B] (an encapsulating port's are the outer
    frames'); ``None``: not reported."""


def cpu_mask(cpus: tuple[int, ...]) -> str:
    """Return the hex mask of ``cpus`` as OVS wants it (``'0x2'`` for CPU 1)."""
    mask = 0
    for cpu in cpus:
        mask |= 1 << cpu
    return hex(mask)


@dataclass(frozen=True)
class OvsConfig:
    """How to start the sandboxed OVS."""

    lcore_cpu: int
    """CPU for OVS's DPDK main lcore (``dpdk-lcore-mask``); mostly idle."""
    pmd_cpus: tuple[int, ...]
    """CPUs for the PMD threads (``pmd-cpu-mask``); one PMD each."""
    file_prefix: str
    """DPDK ``--file-prefix`` of this OVS."""
    socket_mem_mb: int = 512
    """Hugepage memory DPDK preallocates (``dpdk-socket-mem``) [MiB]."""
    vswitchd: Path = OVS_DPDK_VSWITCHD
    """The DPDK-enabled ovs-vswitchd binary."""
    schema: Path = OVS_SCHEMA
    """Database schema for ``ovsdb-tool create``."""
    start_timeout_s: float = 180.0
    """Limit for ovsdb-server and DPDK initialisation on an idle machine [s] (a busy 2-core box needs
    ~30 s); stretched by the load average, at most 4× (``OvsSandbox._wait``)."""
    extra_other_config: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    """More ``other_config`` keys, e.g. ``(('pmd-rxq-assign', 'roundrobin'),)``."""
    library_dir: Path | None = None
    """``LD_LIBRARY_PATH`` of ovs-vswitchd (another DPDK build of the same ABI); ``None``: the system's."""
    pci_allow: tuple[str, ...] = ()
    """PCI addresses DPDK may probe (EAL ``-a``, two-host mode's ``--dut-port``); empty: ``--no-pci``."""
    netns: bool = False
    """Run ovs-vswitchd in a network namespace of its own, named :attr:`file_prefix`, created at
    start and deleted at stop (``state.release`` deletes it after a crash): the overlay tests give
    the underlay bridge's tap device the VTEP address, which must not reach the host's network."""


class OvsSandbox:
    """A running ovsdb-server + ovs-vswitchd pair confined to one run directory.

    Use :meth:`start`, then the port and flow helpers; :meth:`stop` is idempotent and also
    called by the run's teardown.
    """

    def __init__(self, state: LabRunState, config: OvsConfig) -> None:
        self.state = state
        self.config = config
        self.root = state.run_dir / "ovs"
        self.run_dir = self.root / "run"
        self.db_dir = self.root / "db"
        self.log_dir = self.root / "log"
        self.etc_dir = self.root / "etc"
        self.db_sock = self.run_dir / "db.sock"
        self.vswitchd_ctl = self.run_dir / "ovs-vswitchd.ctl"
        self.vswitchd_log = self.log_dir / "ovs-vswitchd.log"
        self.ovsdb_log = self.log_dir / "ovsdb-server.log"
        self._children: list[tuple[TrackedProcess, subprocess.Popen[bytes]]] = []
        self._netns_created = False
        self.bridge = f"olab{secrets.token_hex(4)}"
        """Bridge name, unique per sandbox: a netdev bridge creates a tap device of that name in
        the network namespace, so two OVS instances using VSperf's ``br0`` would collide."""
        self.underlay_bridge = "olp" + self.bridge.removeprefix("olab")
        """The overlay tests' underlay bridge: ``olp`` + :attr:`bridge`'s random part."""
        if not config.netns:  # OVS keeps a netdev bridge's tap device when it stops: ours to delete
            state.track_taps(self.bridge, self.underlay_bridge)
        self.env = {
            **os.environ,
            "OVS_RUNDIR": str(self.run_dir),
            "OVS_DBDIR": str(self.db_dir),
            "OVS_LOGDIR": str(self.log_dir),
            "OVS_SYSCONFDIR": str(self.etc_dir),
        }

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Create the database, start ovsdb-server and ovs-vswitchd, wait for DPDK to initialise.

        :raises OvsError: when a daemon fails to start, dies, or DPDK does not initialise within
            ``start_timeout_s``; the message names the log to read.
        """
        for d in (self.run_dir, self.db_dir, self.log_dir, self.etc_dir):
            d.mkdir(parents=True, exist_ok=True)
        if self.netns is not None:
            self._run(["ip", "netns", "add", self.netns])
            self._netns_created = True
        db = self.db_dir / "conf.db"
        self._run(["ovsdb-tool", "create", str(db), str(self.config.schema)])
        self._spawn(
            "ovsdb-server",
            [
                "ovsdb-server",
                str(db),
                f"--remote=punix:{self.db_sock}",
                f"--pidfile={self.run_dir / 'ovsdb-server.pid'}",
                f"--unixctl={self.run_dir / 'ovsdb-server.ctl'}",
                f"--log-file={self.ovsdb_log}",
            ],
            self.ovsdb_log,
        )
        self._wait(
            self.config.start_timeout_s,
            f"ovsdb-server socket '{self.db_sock}' to accept connections",
            lambda: True if accepts_connections(self.db_sock) else None,
            self.ovsdb_log,
        )
        other = {
            "dpdk-init": "true",
            "dpdk-socket-mem": str(self.config.socket_mem_mb),
            "dpdk-lcore-mask": cpu_mask((self.config.lcore_cpu,)),
            "pmd-cpu-mask": cpu_mask(self.config.pmd_cpus),
            "dpdk-extra": " ".join(
                [
                    *(f"-a {a}" for a in self.config.pci_allow),
                    *([] if self.config.pci_allow else ["--no-pci"]),
                    f"--file-prefix={self.config.file_prefix}",
                ]
            ),
            **dict(self.config.extra_other_config),
        }
        self.vsctl("--no-wait", "init")
        self.vsctl(
            "--no-wait", "set", "Open_vSwitch", ".", *(f"other_config:{k}={v}" for k, v in other.items())
        )
        self._spawn(
            "ovs-vswitchd",
            [
                str(self.config.vswitchd),
                f"unix:{self.db_sock}",
                f"--pidfile={self.run_dir / 'ovs-vswitchd.pid'}",
                f"--unixctl={self.vswitchd_ctl}",
                f"--log-file={self.vswitchd_log}",
            ],
            self.vswitchd_log,
        )
        self._wait(
            self.config.start_timeout_s,
            "OVS DPDK initialisation (dpdk_initialized=true)",
            self._dpdk_initialized,
            self.vswitchd_log,
        )
        log.info(
            "Sandboxed OVS started in '%s' (PMD CPUs %s, lcore CPU %d, DPDK prefix '%s').",
            self.root,
            ",".join(map(str, self.config.pmd_cpus)),
            self.config.lcore_cpu,
            self.config.file_prefix,
        )

    def stop(self) -> None:
        """Stop ovs-vswitchd and ovsdb-server, then delete what OVS leaves in the network; idempotent.

        SIGTERM, SIGKILL after 10 s; then the namespace it ran in, or the bridges' tap devices
        it leaves in the host's namespace (a netdev bridge's LOCAL port is a persistent tap).
        """
        for proc, popen in reversed(self._children):
            stop_process(proc, popen=popen)
        self._children.clear()
        if self.netns is not None and self._netns_created:
            delete_netns(self.netns)
            self._netns_created = False
        if self.netns is None:
            for tap in (self.bridge, self.underlay_bridge):
                delete_tap(tap)

    @property
    def netns(self) -> str | None:
        """Return the network namespace ovs-vswitchd runs in (:attr:`OvsConfig.netns`), or ``None``."""
        return self.config.file_prefix if self.config.netns else None

    def ip(self, *args: str, dut_host: bool = False) -> str:
        """Run ``ip`` in ovs-vswitchd's network namespace (``ip -n``); return stdout.

        :param dut_host: OVS runs in this namespace on purpose: two-host mode's DUT, a machine
            (or a test's namespace) of its own; ``ip`` then runs here.
        :raises OvsError: when it fails, or when OVS runs in the host's namespace and not
            ``dut_host`` (never changed).
        """
        if self.netns is None:
            if not dut_host:
                raise OvsError("This OVS runs in the host's network namespace; the lab does not change it.")
            return self._run(["ip", *args])
        return self._run(["ip", "-n", self.netns, *args])

    def check_alive(self) -> None:
        """Raise if a daemon died.

        :raises OvsError: naming the dead daemon, its exit status and its log.
        """
        for proc, popen in self._children:
            code = popen.poll()
            if code is not None:
                logfile = self.vswitchd_log if proc.name == "ovs-vswitchd" else self.ovsdb_log
                raise OvsError(
                    f"{proc.name} (PID {proc.pid}) died with status {code}.", log_path=str(logfile)
                )

    @property
    def pids(self) -> dict[str, int]:
        """Return daemon name → PID."""
        return {proc.name: proc.pid for proc, _ in self._children}

    # -- commands ----------------------------------------------------------------------------

    def vsctl(self, *args: str) -> str:
        """Run ``ovs-vsctl`` against the sandbox database; return stdout.

        :raises OvsError: when it fails (the message holds its stderr).
        """
        return self._run(["ovs-vsctl", f"--db=unix:{self.db_sock}", "--timeout=30", *args])

    def ofctl(self, *args: str) -> str:
        """Run ``ovs-ofctl``; bridge names are turned into the sandbox's ``<bridge>.mgmt`` socket."""
        return self._run(["ovs-ofctl", "-O", "OpenFlow13", *args])

    def bridge_target(self, bridge: str) -> str:
        """Return the ``ovs-ofctl`` target of ``bridge`` in the sandbox."""
        return f"unix:{self.run_dir / (bridge + '.mgmt')}"

    def wait_bridge(self, bridge: str, timeout_s: float = 30.0) -> None:
        """Wait until ``bridge``'s OpenFlow management socket accepts connections.

        :param timeout_s: the wait on an idle machine [s]; stretched by the load average
            (:func:`~ovsperf_common.deadline.load_scaled_timeout`).
        :raises OvsError: when it does not appear in time (saying when the machine was
            overloaded) or OVS dies.
        """
        mgmt = self.run_dir / (bridge + ".mgmt")
        self._wait(
            timeout_s,
            f"bridge '{bridge}' management socket '{mgmt}' to accept connections",
            lambda: True if accepts_connections(mgmt) else None,
            self.vswitchd_log,
        )

    def appctl(self, *args: str, timeout_s: int = 30) -> str:
        """Run ``ovs-appctl`` against the sandbox's ovs-vswitchd (``--timeout``: its deadline [s]).

        :raises OvsError: when it fails or times out (the message holds its stderr).
        """
        return self._run(["ovs-appctl", "-t", str(self.vswitchd_ctl), f"--timeout={int(timeout_s)}", *args])

    def port_counters(self, bridge: str) -> dict[int, PortCounters]:
        """Return OpenFlow port number → live counters of every port of ``bridge``.

        Source: ``ovs-ofctl dump-ports`` (read from the netdev now; the database's
        ``statistics`` column lags by up to ``stats-update-interval``, 5 s). The local port
        is left out.

        :raises OvsError: when the bridge does not exist or the reply cannot be parsed.
        """
        out = self.ofctl("--no-names", "dump-ports", self.bridge_target(bridge))
        counters: dict[int, PortCounters] = {}
        for match in _DUMP_PORTS_RE.finditer(out):
            port = match.group("port")
            if not port.isdigit():
                continue
            counters[int(port)] = PortCounters(
                rx_packets=_count(match.group("rx_pkts")),
                rx_dropped=_count(match.group("rx_drop")),
                tx_packets=_count(match.group("tx_pkts")),
                tx_dropped=_count(match.group("tx_drop")),
                rx_bytes=_count(match.group("rx_bytes")),
                tx_bytes=_count(match.group("tx_bytes")),
            )
        if not counters:
            raise OvsError(f"Cannot parse 'ovs-ofctl dump-ports {bridge}' output: {out[:200]!r}.")
        return counters

    def versions(self) -> tuple[str, str]:
        """Return (OVS version, DPDK version) as the running daemon reports them.

        E.g. ``('3.1.0', '22.11.11')``.
        """
        banner = self.appctl("version").split()
        ovs = banner[-1] if banner else "unknown"
        dpdk = self.vsctl("get", "Open_vSwitch", ".", "dpdk_version").strip().strip('"')
        return ovs, dpdk.removeprefix("DPDK ").strip()

    # -- internals ---------------------------------------------------------------------------

    def _run(self, argv: list[str]) -> str:
        try:
            done = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise OvsError(f"'{' '.join(argv[:3])} …' failed: {err}.") from err
        if done.returncode != 0:
            raise OvsError(
                f"'{' '.join(argv)}' exited with {done.returncode}: "
                f"{done.stderr.strip() or done.stdout.strip()}"
            )
        return done.stdout

    def _spawn(self, name: str, argv: list[str], logfile: Path) -> None:
        out = open(self.log_dir / f"{name}.out", "ab")
        env = self.env
        if name == "ovs-vswitchd" and self.config.library_dir is not None:
            env = {**env, "LD_LIBRARY_PATH": str(self.config.library_dir)}
        if name == "ovs-vswitchd" and self.netns is not None:
            argv = ["ip", "netns", "exec", self.netns, *argv]  # exec: the PID stays the daemon's
        try:
            popen = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        except OSError as err:
            raise OvsError(f"Cannot start {name} ('{argv[0]}'): {err}.") from err
        finally:
            out.close()
        proc = self.state.track_process(name, popen.pid)
        self._children.append((proc, popen))
        log.debug("Started %s (PID %d), log '%s'.", name, popen.pid, logfile)

    def _wait(self, timeout_s: float, what: str, probe: Callable[[], bool | None], logfile: Path) -> None:
        """Poll ``probe`` until it returns True, for ``timeout_s`` [s] stretched by the machine's load.

        OVS's daemons start slower on a loaded machine (two waits of 30 s expired at load average
        ~7 on 2 CPUs): the deadline grows with the load average per CPU, at most
        :data:`~ovsperf_common.deadline.MAX_LOAD_FACTOR` times, and a timeout says when the machine
        was overloaded.

        :raises OvsOverloadedError: when the deadline passes on an overloaded machine (OVS alive).
        :raises OvsError: when the deadline passes otherwise or a daemon dies, naming ``logfile``.
        """

        def checked() -> bool | None:
            self.check_alive()
            return probe()

        deadline = Deadline.in_seconds(load_scaled_timeout(timeout_s), what)
        try:
            deadline.poll(checked, interval_s=0.25, log=log, progress_every_s=30.0)
        except DeadlineExceededError as err:
            note = overload_note()
            kind = OvsOverloadedError if note else OvsError
            raise kind(f"{err}{note}", log_path=str(logfile)) from err

    def _dpdk_initialized(self) -> bool | None:
        out = self._run(
            [
                "ovs-vsctl",
                f"--db=unix:{self.db_sock}",
                "--timeout=5",
                "get",
                "Open_vSwitch",
                ".",
                "dpdk_initialized",
            ]
        )
        return True if out.strip() == "true" else None
