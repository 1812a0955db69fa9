"""Build a VSperf topology in the sandboxed OVS: vhost-user client ports and OpenFlow rules.

VSperf (``core/vswitch_controller_p2p.py``, ``…_pxp.py``) deletes the bridge's flows and adds
one ``in_port=A,actions=output:B`` rule per direction. The local lab replaces the physical
ports with ``dpdkvhostuserclient`` ports whose sockets the traffic generator serves
(``net_virtio_user…,server=1``):

* P2P: generator port 0 ↔ OVS port 1, generator port 1 ↔ OVS port 2; rules 1→2 and 2→1.
* PVP: two more ports 3 and 4 to the forwarder (its port 0 and 1); rules 1→3, 4→2, 2→4, 3→1,
  so frames from generator port 0 cross the forwarder once and come back on generator port 1.
* PVVP: two forwarders chained, the first on ports 3 and 4 (``vm0``, ``vm1``), the second on 5
  and 6 (``vm2``, ``vm3``); rules 1→3, 4→5, 6→2 and back 2→6, 5→4, 3→1 (VSperf's serial PXP
  deployment with two VMs, ``core/vswitch_controller_pxp.py``).

Two-host mode (``--dut-port``) keeps VSperf's physical ports: ports 1 and 2 are ``type=dpdk``
ports ``dpdk0``/``dpdk1`` with ``options:dpdk-devargs`` (a PCI address or a vdev), cabled to the
TG's NIC ports; the rules and the PVP forwarder ports stay as above (the overlay tests' two
bridges: :mod:`ovsperf_lab.overlay`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ovsperf_catalog.model import Topology
from ovsperf_common.deadline import Deadline, DeadlineExceededError
from ovsperf_lab.errors import LabError, OvsError
from ovsperf_lab.generators.api import Attachment, AttachmentKind, GeneratorPort, PortRole
from ovsperf_lab.ovs import OvsSandbox

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VhostPort:
    """One port of the bridge: ``dpdkvhostuserclient``, or a NIC port (``type=dpdk``, two-host mode)."""

    name: str
    """Interface name in OVS, e.g. ``'tg0'``."""
    ofport: int
    """OpenFlow port number (``ofport_request``)."""
    socket: Path | None
    """vhost-user socket the peer serves (``options:vhost-server-path``); ``None`` for a NIC port."""
    devargs: str | None = None
    """A NIC port's DPDK devargs (``options:dpdk-devargs``); ``None`` for a vhost-user port."""


@dataclass(frozen=True)
class Layout:
    """Ports and rules of one topology."""

    topology: Topology
    """Deployment."""
    generator_ports: tuple[VhostPort, VhostPort]
    """Ports facing generator port 0 and 1."""
    vnf_ports: tuple[VhostPort, ...]
    """Ports facing the forwarders' port 0 and 1, forwarder by forwarder (PVP: one, PVVP: two), else empty."""
    rules: tuple[tuple[int, int], ...]
    """``(in_port, output)`` OpenFlow rules."""

    @property
    def ports(self) -> tuple[VhostPort, ...]:
        """Return all ports, generator ports first."""
        return self.generator_ports + self.vnf_ports

    @property
    def forwarder_sockets(self) -> tuple[tuple[Path, Path], ...]:
        """Return each forwarder's two vhost-user sockets, in chain order (PVP: one pair, PVVP: two)."""
        sockets = [p.socket for p in self.vnf_ports if p.socket is not None]
        return tuple((sockets[i], sockets[i + 1]) for i in range(0, len(sockets) - 1, 2))

    @property
    def wire(self) -> bool:
        """Return whether the generator's ports are NIC ports (two-host mode)."""
        return self.generator_ports[0].devargs is not None

    def attachments(self, tg_devargs: tuple[str, str] | None = None) -> tuple[GeneratorPort, GeneratorPort]:
        """Return the generator's two ports by role: west facing OVS port 1, east facing port 2.

        With ``dpdkvhostuserclient`` ports each generator port serves the vhost-user socket
        (``tg0``'s, ``tg1``'s); with NIC ports (:attr:`wire`) it is the TG's NIC port
        ``tg_devargs[i]``, cabled to OVS's ``dpdk<i>``.

        :raises LabError: when NIC ports lack ``tg_devargs``.
        """
        roles = (PortRole.WEST, PortRole.EAST)
        if self.wire:
            if tg_devargs is None:
                raise LabError("A two-host layout needs the generator's NIC ports ('--tg-port').")
            return (
                GeneratorPort(roles[0], Attachment(AttachmentKind.WIRE, devargs=tg_devargs[0])),
                GeneratorPort(roles[1], Attachment(AttachmentKind.WIRE, devargs=tg_devargs[1])),
            )
        west, east = self.generator_ports
        return (
            GeneratorPort(roles[0], Attachment(AttachmentKind.VHOST_USER_SERVER, west.socket)),
            GeneratorPort(roles[1], Attachment(AttachmentKind.VHOST_USER_SERVER, east.socket)),
        )


def layout(topology: Topology, socket_dir: Path, dut_devargs: tuple[str, str] | None = None) -> Layout:
    """Return the ports and rules of ``topology`` with sockets in ``socket_dir``.

    :param dut_devargs: OVS's NIC ports 0 and 1 (two-host mode, ``--dut-port``); ``None``:
        vhost-user ports to a generator on this machine.
    :raises LabError: for a topology the lab cannot build.
    """
    tg = (
        (VhostPort("tg0", 1, socket_dir / "tg0.sock"), VhostPort("tg1", 2, socket_dir / "tg1.sock"))
        if dut_devargs is None
        else (VhostPort("dpdk0", 1, None, dut_devargs[0]), VhostPort("dpdk1", 2, None, dut_devargs[1]))
    )
    if topology is Topology.P2P:
        return Layout(topology, tg, (), ((1, 2), (2, 1)))
    if topology is Topology.PVP:
        vm = (VhostPort("vm0", 3, socket_dir / "vm0.sock"), VhostPort("vm1", 4, socket_dir / "vm1.sock"))
        return Layout(topology, tg, vm, ((1, 3), (4, 2), (2, 4), (3, 1)))
    if topology is Topology.PVVP:
        # VSperf's serial PXP with two VMs (core/vswitch_controller_pxp.py): phy1 <-> vm0[0],
        # vm0[-1] <-> vm1[0], vm1[-1] <-> phy2; forwarder 0 on ports 3/4, forwarder 1 on 5/6.
        chain = tuple(VhostPort(f"vm{i}", 3 + i, socket_dir / f"vm{i}.sock") for i in range(4))
        return Layout(topology, tg, chain, ((1, 3), (4, 5), (6, 2), (2, 6), (5, 4), (3, 1)))
    if topology is Topology.OP2P:
        # Overlay: the generator's ports (vhost-user or NIC) as in P2P, on two bridges;
        # ovsperf_lab.overlay builds them.
        return Layout(topology, tg, (), ())
    raise LabError(f"Topology '{topology.value}' is not supported by the local lab.")


def interface_settings(port: VhostPort) -> tuple[str, str]:
    """Return ``port``'s type and peer as ``ovs-vsctl set Interface`` arguments.

    A NIC port (two-host mode) is ``type=dpdk`` with ``options:dpdk-devargs``; else a
    ``dpdkvhostuserclient`` with ``options:vhost-server-path``.
    """
    if port.devargs is not None:
        return ("type=dpdk", f"options:dpdk-devargs={port.devargs}")
    return ("type=dpdkvhostuserclient", f"options:vhost-server-path={port.socket}")


def build(ovs: OvsSandbox, lay: Layout, n_rxq: int, *, match_udp: bool = False) -> None:
    """Create the bridge, the vhost-user client ports (``n_rxq`` queues) and the rules.

    With ``match_udp`` each rule also matches ``udp`` (``in_port=A,udp,actions=output:B``): the
    datapath's megaflows then match the IPv4/UDP headers and every generated flow takes its own
    EMC/SMC/megaflow entry; port-only rules are classified by OVS >= 2.17's *simple match*
    whatever the flows (docs/lab.md, flow scale).

    Replaces a bridge of the same name left by an earlier test of the same run.

    :raises OvsError: when OVS refuses a port or a rule.
    """
    for port in lay.ports:
        if port.socket is not None:
            port.socket.parent.mkdir(parents=True, exist_ok=True)
    ovs.vsctl("--if-exists", "del-br", ovs.bridge)
    ovs.vsctl("add-br", ovs.bridge, "--", "set", "bridge", ovs.bridge, "datapath_type=netdev")
    for port in lay.ports:
        kind = interface_settings(port)
        ovs.vsctl(
            "add-port",
            ovs.bridge,
            port.name,
            "--",
            "set",
            "Interface",
            port.name,
            *kind,
            f"options:n_rxq={n_rxq}",
            f"ofport_request={port.ofport}",
        )
    ovs.wait_bridge(ovs.bridge)
    target = ovs.bridge_target(ovs.bridge)
    ovs.ofctl("del-flows", target)
    for in_port, out_port in lay.rules:
        match = f"in_port={in_port},udp" if match_udp else f"in_port={in_port}"
        ovs.ofctl("add-flow", target, f"{match},actions=output:{out_port}")
    log.info(
        "Built %s topology on bridge '%s': ports %s, rules %s.",
        lay.topology.value,
        ovs.bridge,
        ", ".join(f"{p.name}={p.ofport}" for p in lay.ports),
        ", ".join(f"{a}->{b}" for a, b in lay.rules),
    )


def remove(ovs: OvsSandbox) -> None:
    """Delete the bridge (and its ports); the sockets' owners are stopped separately."""
    ovs.vsctl("--if-exists", "del-br", ovs.bridge)


def wait_links_up(
    ovs: OvsSandbox,
    lay: Layout,
    timeout_s: float = 60.0,
    ports: tuple[VhostPort, ...] | None = None,
    alive: Callable[[], None] | None = None,
) -> None:
    """Wait until OVS sees ``ports`` (default: every port of ``lay``) up (peer connected, or a NIC's link).

    :param alive: called at every poll; raises when a peer died (a forwarder that exited never
        brings its ports up, so the wait ends at once, naming it).
    :raises OvsError: naming the ports still down after ``timeout_s`` [s].
    """
    wanted = {p.name for p in (ports if ports is not None else lay.ports)}
    deadline = Deadline.in_seconds(timeout_s, f"OVS ports {', '.join(sorted(wanted))} to come up")

    def all_up() -> bool | None:
        if alive is not None:
            alive()
        states = port_link_states(ovs, lay)
        return True if all(states[name] == "up" for name in wanted) else None

    try:
        deadline.poll(all_up, log=log)
    except DeadlineExceededError as err:
        raise OvsError(f"{err} Link states: {port_link_states(ovs, lay)}.") from err


def port_link_states(ovs: OvsSandbox, lay: Layout) -> dict[str, str]:
    """Return interface name → ``link_state`` (``'up'``/``'down'``) as OVS sees it."""
    return {p.name: ovs.vsctl("get", "Interface", p.name, "link_state").strip() for p in lay.ports}
