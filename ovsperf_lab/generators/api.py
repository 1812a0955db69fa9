"""Define the traffic-generator interface the lab's search and run drive (an ``abc.ABC``).

Implementations: :class:`~ovsperf_lab.generators.dpdk.DpdkTrafficGenerator` (drives the C program
``trafficgen/``), :class:`~ovsperf_lab.generators.testpmd.FlowgenGenerator` (drives
``dpdk-testpmd --forward-mode=flowgen``: MRR at full load only),
:class:`~ovsperf_lab.crosscheck.CrossCheckedGenerator` (wraps another and checks its counters
against OVS's), and the tests' fake. The backends a user can pick
(``--generator``) are registered in :mod:`ovsperf_lab.generators.registry`.

What the lab asks a backend for is a :class:`GeneratorRequest`: two ports *by role* (west sends
direction 0 into the DUT's first port, east direction 1), each with the attachment the testbed
built for it, plus CPU, memory and queues. A backend turns that into its own arguments; nothing
above this module knows a backend's command line.

"Generator" here is the lab's traffic generator on this machine. On the Beaker path the
generator is a host (MoonGen + lua-trafficgen driven by VSperf, ``beaker_tasks/``); the two
never meet.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ovsperf_common.spec import SpecEnum
from ovsperf_lab.errors import LabError
from ovsperf_lab.model import MAX_FLOWS, TrialResult, TrialSpec

if TYPE_CHECKING:  # a field type only: importing the API loads no SSH or backend code
    from ovsperf_lab.generators.sshhost import SshTarget


@dataclass(frozen=True)
class PortInfo:
    """One generator port as the generator sees it."""

    index: int
    """Port index in the generator [index]."""
    mac: str
    """MAC address, ``'aa:bb:cc:dd:ee:ff'``."""
    link_speed_mbps: int | None
    """Link speed the driver reports [Mbit/s]; ``None`` when it reports none (virtio_user)."""
    link_up: bool
    """Whether the link is up."""
    rx_descriptors: int | None = None
    """RX ring of queue 0 as the generator configured it [descriptors]; ``None``: not reported."""
    tx_descriptors: int | None = None
    """TX ring of queue 0 as the generator configured it [descriptors]; ``None``: not reported."""
    name: str | None = None
    """DPDK device name (a PCI address, a vdev's name such as ``'net_af_packet0'``); ``None``: not
    reported."""


class TrafficGenerator(abc.ABC):
    """A traffic generator that runs RFC 2544 trials on two ports.

    Implementations own a process or remote session; :meth:`close` releases it and must be
    safe to call twice. Use as a context manager.
    """

    pid: int | None = None
    """PID of the generator's process on this machine, for tracking and nice; ``None`` when it has
    none of its own (a wrapper, a fake)."""
    host: str | None = None
    """The TG host it runs on (``[USER@]HOST[:PORT]``, two-host mode; :attr:`pid` is then its ssh
    client's); ``None``: this machine."""

    def wait_link(self, timeout_s: float) -> tuple[PortInfo, ...]:
        """Wait until every port's link is up; return the ports.

        The default asks :meth:`ports` once (for generators whose links are up when they start).

        :raises TrafficGeneratorError: when a link stays down for ``timeout_s`` [s].
        """
        return self.ports()

    @abc.abstractmethod
    def ports(self) -> tuple[PortInfo, ...]:
        """Return the generator's ports, index order.

        :raises TrafficGeneratorError: when the generator does not answer.
        """

    @abc.abstractmethod
    def run_trial(self, spec: TrialSpec) -> TrialResult:
        """Run one trial and return its counters.

        :raises TrafficGeneratorError: when the generator fails, replies with an error, or does
            not reply within its deadline (it is then killed).
        """

    @abc.abstractmethod
    def close(self) -> None:
        """Stop the generator and release its resources (hugepage files, sockets); idempotent."""

    def __enter__(self) -> TrafficGenerator:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class PortRole(SpecEnum):
    """Which side of the DUT a generator port stands on (RFC 2544 §6's bidirectional test)."""

    WEST = "west"
    """Generator port 0: sends direction 0 into the DUT's first port, receives direction 1."""
    EAST = "east"
    """Generator port 1: sends direction 1 into the DUT's second port, receives direction 0."""


class AttachmentKind(SpecEnum):
    """How a generator port meets the DUT; the testbed builds the DUT's side of it."""

    VHOST_USER_SERVER = "vhost-user-server"
    """The generator serves a vhost-user socket (DPDK ``net_virtio_user…,server=1``); OVS connects
    to it as a ``dpdkvhostuserclient`` port."""
    WIRE = "wire"
    """The generator drives a NIC port (DPDK devargs: a PCI address or a vdev such as
    ``net_af_packet0,iface=veth0``) cabled to one of the DUT's NIC ports (two-host mode)."""


@dataclass(frozen=True)
class Attachment:
    """The DUT side of one generator port, as the testbed built it."""

    kind: AttachmentKind
    """What it is."""
    socket: Path | None = None
    """The vhost-user socket's path (:attr:`AttachmentKind.VHOST_USER_SERVER` only)."""
    devargs: str | None = None
    """The generator's own port as DPDK devargs (:attr:`AttachmentKind.WIRE` only)."""

    def __post_init__(self) -> None:
        """Check that the kind has its field and only it.

        :raises LabError: naming the kind and the field it needs.
        """
        wire = self.kind is AttachmentKind.WIRE
        if (self.devargs is not None) != wire or (self.socket is not None) == wire:
            need = "'devargs'" if wire else "'socket'"
            raise LabError(f"An attachment of kind '{self.kind.value}' takes {need} and nothing else.")


@dataclass(frozen=True)
class GeneratorPort:
    """One port the run asks a generator for."""

    role: PortRole
    """West (port 0) or east (port 1)."""
    attachment: Attachment
    """Where it meets the DUT."""


@dataclass(frozen=True)
class GeneratorRequest:
    """What a run needs from a traffic generator: two ports by role, one CPU, memory and queues."""

    ports: tuple[GeneratorPort, GeneratorPort]
    """West, then east."""
    cpu: int
    """CPU for the generator's lcore (its busy-polling thread)."""
    file_prefix: str
    """DPDK ``--file-prefix`` (or another unique name) recorded in the run state."""
    memory_mb: int
    """Hugepage memory at least [MiB]; a backend raises it to what its rings need."""
    queues: int
    """Queues per port [1]."""
    ring_size: int
    """Descriptors per RX and TX ring [1]."""
    flows: int = 1
    """Flows per direction the trials ask for [1]: a backend that fixes its flow count when it
    starts (``testpmd``'s ``--flowgen-flows``) starts with it and refuses a trial with another."""
    ssh: SshTarget | None = None
    """Run the generator on this TG host over SSH (two-host mode); ``None``: on this machine."""
    binary: Path | None = None
    """The generator binary (with :attr:`ssh`: a path on the TG); ``None``: the backend's default."""
    lcores: str | None = None
    """EAL core list of the generator (``--tg-cpus``), instead of :attr:`cpu`; ``None``: :attr:`cpu`."""

    def __post_init__(self) -> None:
        """Check the roles' order and the flow count.

        :raises LabError: when the ports are not west then east, or ``flows`` is out of range.
        """
        if type(self.flows) is not int or not 1 <= self.flows <= MAX_FLOWS:
            raise LabError(f"Field 'flows' must be an integer in [1, {MAX_FLOWS}], got {self.flows!r}.")
        if tuple(p.role for p in self.ports) != (PortRole.WEST, PortRole.EAST):
            raise LabError(
                f"A generator request's ports must be west then east, got "
                f"{[p.role.value for p in self.ports]!r}."
            )

    @property
    def wire(self) -> bool:
        """Return whether the ports are NIC ports (:attr:`AttachmentKind.WIRE`, two-host mode)."""
        return any(p.attachment.kind is AttachmentKind.WIRE for p in self.ports)

    def sockets(self) -> tuple[Path, Path]:
        """Return the two ports' vhost-user sockets, west then east.

        :raises LabError: when a port's attachment is not a vhost-user server.
        """
        west, east = (p.attachment.socket for p in self._attached(AttachmentKind.VHOST_USER_SERVER))
        assert west is not None and east is not None  # Attachment.__post_init__
        return (west, east)

    def devargs(self) -> tuple[str, str]:
        """Return the two ports' DPDK devargs, west then east (two-host mode).

        :raises LabError: when a port's attachment is not a NIC port.
        """
        west, east = (p.attachment.devargs for p in self._attached(AttachmentKind.WIRE))
        assert west is not None and east is not None  # Attachment.__post_init__
        return (west, east)

    def _attached(self, kind: AttachmentKind) -> tuple[GeneratorPort, GeneratorPort]:
        """Return the ports, checking that each is attached as ``kind``.

        :raises LabError: naming the port and both kinds.
        """
        for port in self.ports:
            if port.attachment.kind is not kind:
                raise LabError(
                    f"Generator port '{port.role.value}' is attached as "
                    f"'{port.attachment.kind.value}', not as '{kind.value}'."
                )
        return self.ports


DEFAULT_LINK_SPEED_MBPS = 10_000
"""Link speed the lab assumes for a generator port that reports none (virtio_user) [Mbit/s]:
MoonGen's 10 GbE, so that line rate and MRR trials mean what they mean on the Beaker lab."""


# -- DPDK mbuf pool sizing (every DPDK backend and the VNF's testpmd) ------------------------

MIN_RING_SIZE = 64
"""Smallest ring a DPDK backend accepts [descriptors] (``--rxd``/``--txd``)."""

MAX_RING_SIZE = 32768
"""Largest ring a DPDK backend accepts [descriptors]: the virtio maximum queue size."""

MBUF_BYTES = 2048 + 128 + 128 + 64
"""Hugepage bytes per mbuf of a standard pool: data room (2048 B + 128 B headroom,
``RTE_MBUF_DEFAULT_BUF_SIZE``), ``struct rte_mbuf`` (128 B) and the mempool object header [B]."""

JUMBO_MBUF_BYTES = 9216 + 128 + 128 + 64
"""Hugepage bytes per mbuf of a jumbo pool (``JUMBO_DATA_ROOM`` in ``trafficgen/src/main.c``) [B]."""

EAL_OVERHEAD_MB = 64
"""Hugepage memory EAL, rings and the JSON side need besides the mbuf pool [MiB]."""


def pool_memory_mb(ports: int, queues: int, ring_size: int, *, jumbo: bool = False) -> int:
    """Return the EAL ``-m`` [MiB] a process needs to fill every ring of ``ports`` with mbufs.

    The pool holds ``ports * queues * 2 * ring_size + 4096`` mbufs (every RX and TX ring full
    plus frames in flight: the sizing in ``trafficgen/src/main.c`` and what ``dpdk-testpmd``
    needs with ``--total-num-mbufs`` of :func:`pool_mbufs`), plus :data:`EAL_OVERHEAD_MB`.
    """
    per = JUMBO_MBUF_BYTES if jumbo else MBUF_BYTES
    return -(-pool_mbufs(ports, queues, ring_size) * per // (1 << 20)) + EAL_OVERHEAD_MB


def pool_mbufs(ports: int, queues: int, ring_size: int) -> int:
    """Return the mbufs that fill every RX and TX ring of ``ports`` plus 4096 in flight [1]."""
    return ports * queues * 2 * ring_size + 4096


GeneratorFactory = Callable[[GeneratorRequest], TrafficGenerator]
"""Start a generator for a request; the caller closes it."""


@dataclass(frozen=True)
class Readiness:
    """Whether a backend can start on this machine (``ovsperf-lab doctor`` shows it)."""

    ready: bool
    """Whether everything it needs is there."""
    detail: str
    """What was found (the binary's path, or what is missing)."""
    fix: str | None = None
    """The command that fixes it; ``None`` when ready."""

    def require(self, name: str) -> None:
        """Refuse to go on unless ready.

        :raises LabError: naming the backend, what is missing and the fix.
        """
        if not self.ready:
            raise LabError(
                f"Traffic generator '{name}': {self.detail}; fix: {self.fix} (see 'ovsperf-lab doctor')."
            )


@dataclass(frozen=True)
class GeneratorBackend:
    """One traffic generator a user can pick with ``--generator`` (:mod:`ovsperf_lab.generators.registry`)."""

    name: str
    """What ``--generator`` takes, e.g. ``'trafficgen'``."""
    summary: str
    """One line for ``--help`` and ``ovsperf-lab doctor``."""
    label: str
    """What the results call it (``ovsperf-metadata.json`` hosts, the environment's generator)."""
    attachment: AttachmentKind
    """The attachment its ports need."""
    paced: bool
    """Whether it holds an offered load below its maximum (an RFC 2544 search needs that; an
    MRR trial, at full load, does not)."""
    start: GeneratorFactory
    """Start it for a request."""
    readiness: Callable[[], Readiness]
    """Check, without starting anything, whether it can start here."""
    wire: bool = False
    """Whether it drives NIC ports (:attr:`AttachmentKind.WIRE`) and runs on a TG host over SSH
    (two-host mode, ``--dut-port``/``--tg-port``/``--tg-ssh``)."""
