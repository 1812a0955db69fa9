"""Bring the lab's testbed up and tear it down: sandboxed OVS, topology, forwarder, traffic generator.

Both ``ovsperf-lab run`` (:mod:`ovsperf_lab.run`: one OVS per run, one topology per test) and
``ovsperf-lab compare`` (:mod:`ovsperf_lab.compare.abtest`: one OVS per side and round) stand on it, in
two levels from frozen inputs (:class:`TestbedConfig`, :class:`SwitchBuild`):

1. :class:`Switch`: the sandboxed OVS, started and reniced; stopped on exit.
2. :func:`open_testbed`, inside a running switch: the topology (built; PMD threads reniced once
   the ports exist), the forwarder for PVP, the generator (tracked in the run state, reniced),
   the links (the generator's and OVS's view of the forwarder's ports, :data:`LINK_TIMEOUT_S`)
   and the rings checked. On exit the generator is closed, the forwarder stopped, the topology
   removed (when OVS still lives) and the sockets deleted; a failure that a dead OVS or forwarder
   explains is raised as that death (:func:`root_cause`), not as its symptom.

The caller owns the run state (:class:`~ovsperf_lab.state.LabRunState`) and releases it last
(:func:`~ovsperf_lab.state.release`), which also stops anything a crash left.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from ovsperf_catalog.model import Topology
from ovsperf_common.labfiles import GUEST_MARKER
from ovsperf_lab import overlay, topology
from ovsperf_lab.devargs import parse_devargs
from ovsperf_lab.errors import GuestBootError, LabError, OvsError, TrafficGeneratorError, VnfError
from ovsperf_lab.generators.api import (
    DEFAULT_LINK_SPEED_MBPS,
    GeneratorFactory,
    GeneratorRequest,
    TrafficGenerator,
    pool_mbufs,
    pool_memory_mb,
)
from ovsperf_lab.generators.registry import generator_backend
from ovsperf_lab.generators.sshhost import SshTarget
from ovsperf_lab.machine import MachineFacts
from ovsperf_lab.ovs import OVS_DPDK_VSWITCHD, OvsConfig, OvsSandbox
from ovsperf_lab.plan import CpuPlan, FlowRules, LabOptions, LabPlan, VnfKind
from ovsperf_lab.state import LabRunState, renice
from ovsperf_lab.vnf import (
    ForwarderProcess,
    GuestAccel,
    guest_serial_log,
    make_testpmd_argv,
    qemu_argv,
    wait_guests_ready,
)

log = logging.getLogger(__name__)

DEATH_GRACE_S = 3.0
"""How long to watch OVS for a death that explains a failure [s]."""

LINK_TIMEOUT_S = 90.0
"""Limit for OVS to connect to the generator's and forwarder's vhost-user sockets [s]."""


@dataclass(frozen=True)
class SwitchBuild:
    """Which ovs-vswitchd runs, with which libraries and settings (a ``compare`` side, or the system's)."""

    vswitchd: Path = OVS_DPDK_VSWITCHD
    """The DPDK-enabled ovs-vswitchd binary."""
    other_config: tuple[tuple[str, str], ...] = ()
    """``other_config`` settings on top of the lab's."""
    library_dir: Path | None = None
    """``LD_LIBRARY_PATH`` of ovs-vswitchd; ``None``: the system's libraries."""
    name: str | None = None
    """What a start failure's message begins with (``'Side B (/x/ovs-vswitchd)'``); ``None``: OVS's
    message alone."""


@dataclass(frozen=True)
class ForwarderSpec:
    """How the PVP forwarder runs: a ``dpdk-testpmd`` process or a QEMU guest (KVM or TCG)."""

    kind: VnfKind
    """testpmd or QEMU."""
    binary: str
    """``dpdk-testpmd`` or ``qemu-system-x86_64`` (a path or a name on ``PATH``)."""
    cpu: int
    """The CPU it runs on."""
    memory_mb: int
    """testpmd: EAL ``-m`` at least, raised to what its rings need; QEMU: guest memory [MiB]."""
    guest_image: Path | None = None
    """The guest's disk image (QEMU only)."""
    vcpus: int = 2
    """Guest vCPUs (QEMU only) [1]."""
    next_cpus: tuple[int, ...] = ()
    """CPUs of the forwarders after the first in a chain (PVVP: the second's), in chain order;
    a forwarder beyond them runs on :attr:`cpu`."""
    accel: GuestAccel = GuestAccel.KVM
    """How QEMU runs the guests (QEMU only)."""
    kernel: Path | None = None
    """What QEMU loads with ``-kernel`` (QEMU only); ``None``: the disk boots by itself."""
    boot_timeout_s: float = 120.0
    """Deadline of each guest's boot (QEMU only): to its image's marker, else both vhost-user ports
    up in OVS [s]."""
    marker: str | None = GUEST_MARKER
    """The console line that says a guest forwards (QEMU only); ``None``: the image prints none, the
    guest is up when OVS sees its two vhost-user ports up."""

    def cpu_of(self, index: int) -> int:
        """Return the CPU of forwarder ``index`` of the chain (0: the first)."""
        return self.next_cpus[index - 1] if 0 < index <= len(self.next_cpus) else self.cpu

    @classmethod
    def for_plan(cls, plan: LabPlan, facts: MachineFacts) -> ForwarderSpec:
        """Return the forwarder ``plan`` asks for on this machine (testpmd unless a QEMU guest can run)."""
        cpu = plan.cpus.vnf_cpu if plan.cpus.vnf_cpu is not None else plan.cpus.generator_cpu
        if plan.vnf is VnfKind.QEMU and plan.guest is not None and facts.qemu is not None:
            guest = plan.guest
            return cls(
                kind=VnfKind.QEMU,
                binary=facts.qemu,
                cpu=cpu,
                memory_mb=guest.memory_mb,
                guest_image=guest.image,
                vcpus=guest.vcpus,
                next_cpus=plan.cpus.vnf_cpus[1:],
                accel=guest.accel,
                kernel=guest.kernel,
                boot_timeout_s=guest.boot_timeout_s,
                marker=guest.marker,
            )
        return cls(
            VnfKind.TESTPMD,
            facts.testpmd or "dpdk-testpmd",
            cpu,
            plan.options.vnf_memory_mb,
            next_cpus=plan.cpus.vnf_cpus[1:],
        )


@dataclass(frozen=True)
class WireConfig:
    """Two-host mode: OVS's and the generator's NIC ports, and where the generator runs."""

    dut_ports: tuple[str, str]
    """OVS's ports 0 and 1 as DPDK devargs (``--dut-port``)."""
    tg_ports: tuple[str, str]
    """The generator's ports 0 and 1 as DPDK devargs (``--tg-port``), cabled to the DUT's."""
    ssh: SshTarget | None = None
    """The TG host (``--tg-ssh``); ``None``: the generator runs on this machine."""
    binary: Path | None = None
    """The generator binary (``--tg-binary``); ``None``: the backend's default."""
    cpus: str | None = None
    """The generator's EAL core list (``--tg-cpus``); ``None``: the CPU plan's generator CPU."""

    @property
    def pci_allow(self) -> tuple[str, ...]:
        """Return the PCI addresses of :attr:`dut_ports` (OVS's EAL allow-list; empty: ``--no-pci``)."""
        ports = (parse_devargs(text) for text in self.dut_ports)
        return tuple(p.pci_address for p in ports if p.pci_address is not None)

    @classmethod
    def for_options(cls, options: LabOptions) -> WireConfig | None:
        """Return the two-host settings of ``options``, ``None`` without ``--dut-port``."""
        if not options.wire:
            return None
        dut, tg = options.dut_ports, options.tg_ports
        return cls((dut[0], dut[1]), (tg[0], tg[1]), options.tg_ssh, options.tg_binary, options.tg_cpus)


@dataclass(frozen=True)
class TestbedConfig:
    """What every testbed of a run or comparison shares: CPUs, queues, rings, nice, memory."""

    __test__ = False  # not a pytest test class

    cpus: CpuPlan
    """CPU assignment of OVS, the generator and the forwarder."""
    queues: int
    """RX queues per OVS port (``n_rxq``) and generator/forwarder queues [1]."""
    ring_size: int
    """Descriptors per vhost-user ring of the generator and the testpmd forwarder [1]."""
    nice: int
    """Nice value of OVS, the generator and the forwarder [1]."""
    ovs_socket_mem_mb: int
    """OVS ``dpdk-socket-mem`` [MiB]."""
    generator_memory_mb: int
    """Generator memory at least [MiB]."""
    generator: str
    """Traffic generator backend (``--generator``): names its process in the run state."""
    match_udp: bool = False
    """Whether the OpenFlow rules also match ``udp`` (``--flow-rules udp``)."""
    forwarder: ForwarderSpec | None = None
    """The PVP forwarder; ``None``: P2P only."""
    flows: int = 1
    """Flows per direction every trial asks for [1]; a generator that fixes it at start (testpmd)
    starts with it."""
    wire: WireConfig | None = None
    """Two-host mode's NIC ports and TG host; ``None``: vhost-user ports to a local generator."""
    ovs_netns: bool = False
    """Run ovs-vswitchd in a network namespace of its own (the overlay tests: :mod:`ovsperf_lab.overlay`;
    never in two-host mode, whose NIC ports' devargs may name interfaces of this namespace)."""

    def __post_init__(self) -> None:
        """Check the generator's name before anything starts.

        :raises LabError: naming ``--generator`` and the known backends.
        """
        generator_backend(self.generator)

    @classmethod
    def for_plan(cls, plan: LabPlan, facts: MachineFacts) -> TestbedConfig:
        """Return the testbed settings of ``plan`` (its options and CPU plan) on this machine."""
        options = plan.options
        return cls(
            cpus=plan.cpus,
            queues=plan.queues,
            ring_size=options.ring_size,
            nice=options.nice,
            ovs_socket_mem_mb=options.ovs_socket_mem_mb,
            generator_memory_mb=options.generator_memory_mb,
            generator=options.generator,
            match_udp=options.flow_rules is FlowRules.UDP,
            forwarder=ForwarderSpec.for_plan(plan, facts) if plan.vnf is not None else None,
            wire=WireConfig.for_options(options),
            ovs_netns=not options.wire and any(t.topology is Topology.OP2P for t in plan.tests),
        )


class Switch:
    """The sandboxed OVS of a run (or of one ``compare`` side and round), as a context manager.

    Entering starts it and renices its daemons; leaving stops it. Nothing starts before
    ``with``, so the logs' paths (``switch.ovs.vswitchd_log``) are known even when it fails.
    """

    def __init__(self, state: LabRunState, config: TestbedConfig, build: SwitchBuild) -> None:
        self.state = state
        self.config = config
        self.build = build
        self.ovs = OvsSandbox(
            state,
            OvsConfig(
                lcore_cpu=config.cpus.ovs_lcore_cpu,
                pmd_cpus=config.cpus.pmd_cpus,
                file_prefix=state.new_file_prefix("ovs"),
                socket_mem_mb=config.ovs_socket_mem_mb,
                vswitchd=build.vswitchd,
                extra_other_config=build.other_config,
                library_dir=build.library_dir,
                pci_allow=config.wire.pci_allow if config.wire is not None else (),
                netns=config.ovs_netns,
            ),
        )
        self.versions = ("unknown", "unknown")
        """(OVS, DPDK) versions as the running daemon reports them."""

    def __enter__(self) -> Switch:
        """Start OVS, renice its daemons and read its versions.

        :raises OvsError: when it does not start (the message begins with :attr:`SwitchBuild.name`).
        """
        try:
            try:
                self.ovs.start()
            except OvsError as err:
                if self.build.name is None:
                    raise
                raise OvsError(f"{self.build.name}: {err}") from err
            self.renice()
            self.versions = self.ovs.versions()
        except BaseException:
            self.ovs.stop()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.ovs.stop()

    def renice(self) -> None:
        """Renice every thread of the OVS daemons (PMD threads exist only once ports are added)."""
        for daemon_pid in self.ovs.pids.values():
            renice(daemon_pid, self.config.nice)


@dataclass(frozen=True)
class Testbed:
    """A running topology with its generator (and forwarder), what a test measures on."""

    __test__ = False  # not a pytest test class

    switch: Switch
    """The OVS it is built in."""
    layout: topology.Layout
    """Its ports and rules."""
    generator: TrafficGenerator
    """The traffic generator, links up."""
    link_speed_mbps: int
    """The generator's link speed, :data:`DEFAULT_LINK_SPEED_MBPS` when its ports report none [Mbit/s]."""
    vnf: ForwarderProcess | None
    """The PVP forwarder (PVVP: the first of the chain), ``None`` for P2P."""
    vnfs: tuple[ForwarderProcess, ...] = ()
    """Every forwarder, in chain order (PVP: :attr:`vnf` alone, PVVP: two)."""
    guest_boot_s: tuple[float, ...] = ()
    """Each QEMU guest's boot time, from its QEMU's start to up, in chain order [s]; empty without
    guests."""

    @property
    def ovs(self) -> OvsSandbox:
        """Return the running OVS."""
        return self.switch.ovs

    @property
    def versions(self) -> tuple[str, str]:
        """Return (OVS, DPDK) versions as the running daemon reports them."""
        return self.switch.versions


@contextlib.contextmanager
def open_testbed(
    switch: Switch,
    deployment: Topology,
    generator_factory: GeneratorFactory,
    *,
    on_generator: Callable[[TrafficGenerator], None] | None = None,
    tunnel: overlay.OverlaySpec | None = None,
) -> Iterator[Testbed]:
    """Build ``deployment`` in ``switch``, start its forwarder and generator; tear them down on exit.

    :param generator_factory: starts the generator (a backend's ``start``, or a test's fake).
    :param on_generator: told the generator runs, before its links are awaited (tests inject
        crashes there; the CLI shows progress).
    :param tunnel: the overlay test's tunnel (``op2p``): the bridges, tunnel port and rules come
        from :func:`ovsperf_lab.overlay.build`.
    :raises OvsError: when OVS refuses the topology, dies, or a forwarder port stays down; also
        when a dead OVS explains any other failure of the bring-up or of the ``with`` block.
    :raises VnfError: when the forwarder does not start or dies (and OVS lives).
    :raises TrafficGeneratorError: from the generator (start, links), when OVS and the forwarder live.
    :raises LabError: for a topology the lab cannot build, or PVP without a forwarder.
    """
    config, state, ovs = switch.config, switch.state, switch.ovs
    wire = config.wire
    lay = topology.layout(deployment, state.run_dir / "sock", wire.dut_ports if wire is not None else None)
    if lay.vnf_ports and config.forwarder is None:
        raise LabError(f"Topology '{deployment.value}' needs a forwarder, and the testbed has none.")
    vnf: ForwarderProcess | None = None
    vnfs: list[ForwarderProcess] = []
    boot_s: list[float] = []
    generator: TrafficGenerator | None = None
    try:
        if tunnel is not None:
            overlay.build(ovs, lay, tunnel, config.queues)
        else:
            topology.build(ovs, lay, config.queues, match_udp=config.match_udp)
        switch.renice()
        if config.forwarder is not None and lay.vnf_ports:
            for index, sockets in enumerate(lay.forwarder_sockets):
                vnfs.append(_start_forwarder(config.forwarder, config, state, sockets, index))
            vnf = vnfs[0]
            spec = config.forwarder
            if spec.kind is VnfKind.QEMU:
                for each in vnfs:  # booting under TCG shares the PMD's CPU on a small machine
                    if each.pid is not None:
                        renice(each.pid, config.nice)
                boot_s = wait_guests_ready(
                    [(each, guest_serial_log(state.run_dir, i)) for i, each in enumerate(vnfs)],
                    timeout_s=spec.boot_timeout_s,
                    accel=spec.accel,
                    marker=spec.marker,
                    ports_up=lambda i: _guest_ports_up(ovs, lay, i),
                )
        generator = generator_factory(
            GeneratorRequest(
                ports=lay.attachments(wire.tg_ports if wire is not None else None),
                cpu=config.cpus.generator_cpu,
                file_prefix=state.new_file_prefix("tg"),
                memory_mb=config.generator_memory_mb,
                queues=config.queues,
                ring_size=config.ring_size,
                flows=config.flows,
                ssh=wire.ssh if wire is not None else None,
                binary=wire.binary if wire is not None else None,
                lcores=wire.cpus if wire is not None else None,
            )
        )
        if generator.pid is not None:
            state.track_process(generator_backend(config.generator).label, generator.pid)
            renice(generator.pid, config.nice)
        for each in vnfs:
            if each.pid is not None:
                renice(each.pid, config.nice)
        if on_generator is not None:
            on_generator(generator)
        ports = generator.wait_link(timeout_s=LINK_TIMEOUT_S)
        # OVS must see the forwarder's ports (and its NICs) up too, or the first trials measure a
        # broken path.
        awaited = lay.vnf_ports + (lay.generator_ports if lay.wire else ())
        if awaited:
            topology.wait_links_up(
                ovs, lay, timeout_s=LINK_TIMEOUT_S, ports=awaited, alive=lambda: _check_alive(vnfs)
            )
        _check_alive(vnfs)
        if not lay.wire:  # a NIC's ring is the driver's choice (rte_eth_dev_adjust_nb_rx_tx_desc)
            check_rings(generator, config.ring_size)
        speed = ports[0].link_speed_mbps or DEFAULT_LINK_SPEED_MBPS
        yield Testbed(switch, lay, generator, speed, vnf, tuple(vnfs), tuple(boot_s))
    except (TrafficGeneratorError, VnfError, OvsError) as err:
        # A guest's boot failure names the guest and quotes its console: only OVS's death beats it.
        if isinstance(err, GuestBootError):
            cause = root_cause(err, ovs, None)
            if cause is err:
                raise
            raise cause from err
        cause = root_cause(err, ovs, vnfs[0] if vnfs else None)
        for later in vnfs[1:]:
            if cause is err:
                cause = root_cause(err, None, later)
        if cause is err:
            raise
        raise cause from err
    finally:
        if generator is not None:
            generator.close()
        for each in vnfs:
            each.stop()
        with contextlib.suppress(OvsError):
            ovs.check_alive()
            topology.remove(ovs)
            if tunnel is not None:
                overlay.remove(ovs)
        for port in lay.ports:
            if port.socket is not None:
                port.socket.unlink(missing_ok=True)


def _check_alive(vnfs: list[ForwarderProcess]) -> None:
    """Raise for the first forwarder of ``vnfs`` that exited.

    :raises VnfError: naming it, its exit status and its log.
    """
    for vnf in vnfs:
        vnf.check_alive()


def _guest_ports_up(ovs: OvsSandbox, lay: topology.Layout, index: int) -> bool:
    """Return whether OVS sees both vhost-user ports of forwarder ``index`` of the chain up."""
    mine = {p.name for p in lay.vnf_ports[2 * index : 2 * index + 2]}
    states = topology.port_link_states(ovs, lay)
    return bool(mine) and all(states.get(name) == "up" for name in mine)


def _start_forwarder(
    spec: ForwarderSpec, config: TestbedConfig, state: LabRunState, sockets: tuple[Path, Path], index: int = 0
) -> ForwarderProcess:
    """Start forwarder ``index`` of the chain on its two vhost-user ``sockets``; it is tracked in ``state``.

    The first is ``vnf-testpmd`` (log ``vnf-testpmd.log``), the second ``vnf-testpmd-2``, each with
    its own DPDK file prefix and CPU (:meth:`ForwarderSpec.cpu_of`). Guests likewise: ``qemu``
    (log ``qemu.log``, console ``guest-serial.log``), ``qemu-2`` (``guest-2-serial.log``), each on
    its CPU with its own MACs.

    :raises VnfError: when it cannot be started.
    """
    if spec.kind is VnfKind.QEMU and spec.guest_image is not None:
        argv = qemu_argv(
            binary=spec.binary,
            image=spec.guest_image,
            cpu=spec.cpu_of(index),
            vcpus=spec.vcpus,
            memory_mb=spec.memory_mb,
            sockets=sockets,
            queues=config.queues,
            serial_log=guest_serial_log(state.run_dir, index),
            accel=spec.accel,
            kernel=spec.kernel,
            index=index,
        )
        name = "qemu" if index == 0 else f"qemu-{index + 1}"
        guest = ForwarderProcess(state, name, argv, state.run_dir / f"{name}.log", enter_quits=False)
        guest.start()
        return guest
    else:
        ring, queues = config.ring_size, config.queues
        argv = make_testpmd_argv(
            binary=spec.binary,
            cpu=spec.cpu_of(index),
            file_prefix=state.new_file_prefix("vnf"),
            memory_mb=max(spec.memory_mb, pool_memory_mb(len(sockets), queues, ring)),
            sockets=sockets,
            queues=queues,
            queue_size=ring,
            total_mbufs=pool_mbufs(len(sockets), queues, ring),
        )
        name = "vnf-testpmd" if index == 0 else f"vnf-testpmd-{index + 1}"
    vnf = ForwarderProcess(state, name, argv, state.run_dir / f"{name}.log")
    vnf.start()
    return vnf


def check_rings(generator: TrafficGenerator, ring_size: int) -> None:
    """Log a WARNING when a generator port runs with rings smaller than ``ring_size`` [descriptors].

    A smaller ring than asked for makes zero-loss trials fail on every scheduler hiccup (a
    virtio_user port once ran with 1024 of its 4096 descriptors: the driver takes the smaller of
    ``queue_size`` and the queue setup's count). A larger one is a backend's choice (testpmd's RX
    ring is twice its TX ring, so that the drain loses nothing) and harms no trial.
    """
    for port in generator.ports():
        for kind, got in (("RX", port.rx_descriptors), ("TX", port.tx_descriptors)):
            if got is not None and got < ring_size:
                log.warning(
                    "Generator port %d runs with a %s ring of %d descriptors, not the %d asked for.",
                    port.index,
                    kind,
                    got,
                    ring_size,
                )


def root_cause(err: LabError, ovs: OvsSandbox | None, vnf: ForwarderProcess | None) -> LabError:
    """Return the error naming the component that died, if one did (OVS before the VNF).

    A failed OVS command or a vanished vhost-user peer often comes a moment before the dying
    daemon can be reaped, so OVS is watched for up to :data:`DEATH_GRACE_S`.
    """
    if ovs is not None:
        deadline = time.monotonic() + DEATH_GRACE_S
        while True:
            try:
                ovs.check_alive()
            except OvsError as dead:
                return dead
            if time.monotonic() >= deadline:
                break
            time.sleep(0.1)
    if vnf is not None:
        try:
            vnf.check_alive()
        except VnfError as dead:
            return dead
    return err
