"""Say how to start ``ovsperf-trafficgen`` and how it runs trials: its EAL arguments and options.

:class:`GeneratorConfig` is what the ``trafficgen`` backend (:mod:`~ovsperf_lab.generators.dpdk`)
starts the program with (``trafficgen/``; options: ``docs/trafficgen.md``), with the closed sets
its trials take (:class:`FlowField`, :class:`TxFullPolicy`) and where the binary is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ovsperf_common.spec import SpecEnum
from ovsperf_lab.errors import TrafficGeneratorError
from ovsperf_lab.generators.process import check_start_fields
from ovsperf_lab.generators.sshhost import DEFAULT_REMOTE_BINARY, SshTarget, start_words

BINARY_ENV = "OVSPERF_TRAFFICGEN"
"""Environment variable that overrides the generator binary path."""
DEFAULT_BINARY = Path(__file__).resolve().parents[2] / "trafficgen" / "build" / "ovsperf-trafficgen"
"""The binary ``make -C trafficgen`` builds in this checkout (``<checkout>/trafficgen/build``)."""


class FlowField(SpecEnum):
    """Which header field varies between the flows of a direction."""

    SRC_PORT = "src_port"
    """UDP source port 1024 + flow."""
    SRC_IP = "src_ip"
    """IPv4 source address base + flow."""
    TUPLE = "tuple"
    """IPv4 source address's low 16 bits = flow mod 65536, UDP destination port 1024 + flow / 65536:
    up to 1,048,576 flows (docs/trafficgen.md)."""


class TxFullPolicy(SpecEnum):
    """What the generator does with a frame the port's TX queue refuses at its due time."""

    LOSS = "loss"
    """Count it as sent and lost (virtual ports: the DUT did not take it)."""
    RETRY = "retry"
    """Retry it; a full queue slows the generator (physical NICs, max-rate measurements)."""


def default_binary() -> Path:
    """Return ``$OVSPERF_TRAFFICGEN``, else the binary ``make -C trafficgen`` builds in this checkout."""
    env = os.environ.get(BINARY_ENV)
    return Path(env) if env else DEFAULT_BINARY


def _default_lcore() -> str:
    """Return the highest CPU this process may run on, as an EAL ``-l`` list."""
    return str(max(os.sched_getaffinity(0)))


@dataclass(frozen=True)
class GeneratorConfig:
    """How to start one generator process (EAL arguments) and how it runs trials.

    :raises TrafficGeneratorError: when there is no port, or a field is out of range (the
        message names the field).
    """

    vdevs: tuple[str, ...] = ()
    """EAL ``--vdev`` values, e.g. ``'net_virtio_user0,path=/run/x/vhu0.sock,server=1'``."""
    pci_allow: tuple[str, ...] = ()
    """PCI addresses to use (EAL ``-a``); when empty, ``--no-pci`` is passed."""
    lcores: str | None = None
    """EAL ``-l`` core list, or an ``--lcores`` map when it contains ``@`` (``'0@1,1@1,2@2'``);
    ``None`` picks the highest CPU in this process's affinity. One lcore does everything; with
    more, the worker lcores share the ports (TX and RX) and the first only drives the protocol."""
    memory_mb: int = 256
    """Hugepage memory for EAL ``-m`` [MiB]."""
    file_prefix: str | None = None
    """EAL ``--file-prefix``; ``None`` makes a unique ``ovsperf-tg-<pid>-<random>``."""
    extra_eal_args: tuple[str, ...] = ()
    """Further EAL arguments, passed through unchanged."""
    jumbo: bool = False
    """Start with ``--jumbo`` (frames up to 9018 B)."""
    ring_size: int | None = None
    """RX and TX descriptors per queue (``--rxd``/``--txd``, 64 to 32768); ``None`` keeps the
    generator's 1024. A virtio_user ring holds the smaller of this and the vdev's ``queue_size``,
    so give both the same value. See :func:`pool_memory_mb` for the ``memory_mb`` it needs."""
    queues: int = 1
    """RX and TX queues per port (``--queues``, 1 to 8): flow ``f`` is sent on TX queue
    ``f % queues`` and every RX queue is polled. Give virtio_user vdevs ``queues=<n>`` too."""
    netns: str | None = None
    """Run the generator in this network namespace (``ip netns exec``), e.g. for
    ``net_af_packet`` on veth interfaces that live there."""
    binary: Path | None = None
    """Generator binary; ``None`` means ``$OVSPERF_TRAFFICGEN`` or this checkout's build (with
    :attr:`ssh`: :data:`~ovsperf_lab.generators.sshhost.DEFAULT_REMOTE_BINARY` on the TG)."""
    ssh: SshTarget | None = None
    """Run the generator on this TG host over SSH (two-host mode); ``None``: on this machine."""
    startup_timeout_s: float = 60.0
    """Time allowed for EAL init until the ``ready`` line [s] (a virtio_user port in server
    mode waits here for its peer)."""
    reply_margin_s: float = 10.0
    """Allowance on top of a command's expected duration before the generator is declared hung [s]."""
    link_timeout_s: float = 5.0
    """Time a trial waits for the links before failing [s]."""
    flow_field: FlowField = FlowField.SRC_PORT
    """Header field that varies between flows."""
    on_tx_full: TxFullPolicy = TxFullPolicy.LOSS
    """Treatment of frames the TX queue refuses."""
    tx_tolerance_ratio: float = 0.005
    """Allowed shortfall of the achieved TX rate before a trial is invalid [1]."""
    drain_early_exit: bool = False
    """End the drain once every sent frame has arrived (faster searches; duplicates that
    arrive later are then not counted). ``False`` waits the full ``drain_s`` (RFC 2544 §23)."""
    hugepage_dir: Path = Path("/dev/hugepages")
    """hugetlbfs mount where DPDK would leave ``<file_prefix>map_*`` files."""
    runtime_dir: Path = Path("/var/run/dpdk")
    """DPDK runtime directory root (``<runtime_dir>/<file_prefix>`` is removed on close)."""

    def __post_init__(self) -> None:
        if not self.vdevs and not self.pci_allow:
            raise TrafficGeneratorError("Give at least one 'vdevs' entry or one 'pci_allow' address.")
        check_start_fields(self)
        if self.ssh is not None and self.netns is not None:
            raise TrafficGeneratorError("Give 'ssh' or 'netns', not both: the TG host has its own network.")
        if not 0 <= self.tx_tolerance_ratio < 1:
            raise TrafficGeneratorError(
                f"Field 'tx_tolerance_ratio' must lie in [0, 1), got {self.tx_tolerance_ratio!r}."
            )

    def resolved_binary(self) -> Path:
        """Return the generator binary to run (see :attr:`binary`); with :attr:`ssh`, a path on the TG."""
        if self.binary is not None:
            return self.binary
        return DEFAULT_REMOTE_BINARY if self.ssh is not None else default_binary()

    def command(self, file_prefix: str) -> list[str]:
        """Return the full command line: binary, EAL arguments, ``--``, application options.

        With :attr:`ssh` the command is ``ssh … HOST -- sh -c 'echo "$$"; exec "$@"' sh BINARY …``,
        every remote word shell-quoted: its first output line is the generator's PID on the TG.

        ``--in-memory --single-file-segments`` keeps hugepage files off the filesystem and lets
        virtio_user share its memory with a vhost-user peer in one region.
        """
        lcores = self.lcores if self.lcores is not None else _default_lcore()
        eal = ["--lcores" if "@" in lcores else "-l", lcores]
        eal += ["--file-prefix", file_prefix, "-m", str(self.memory_mb)]
        eal += ["--in-memory", "--single-file-segments"]
        if self.pci_allow:
            for address in self.pci_allow:
                eal += ["-a", address]
        else:
            eal.append("--no-pci")
        for vdev in self.vdevs:
            eal += ["--vdev", vdev]
        eal += list(self.extra_eal_args)
        app = ["--jumbo"] if self.jumbo else []
        if self.ring_size is not None:
            app += ["--rxd", str(self.ring_size), "--txd", str(self.ring_size)]
        if self.queues > 1:
            app += ["--queues", str(self.queues)]
        argv = [str(self.resolved_binary()), *eal, "--", *app]
        if self.ssh is not None:  # the remote shell prints its PID first (sshhost.START_SCRIPT)
            return self.ssh.argv(start_words(argv))
        netns = ["ip", "netns", "exec", self.netns] if self.netns else []
        return [*netns, *argv]
