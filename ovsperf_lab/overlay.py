"""Build VSperf's overlay deployment (``op2p``) in the sandboxed OVS: OVS-DPDK userspace tunnelling.

Configured as OVS's "Userspace tunnelling" how-to does it (Documentation/howto/userspace-tunneling),
with the route and the neighbour kept by OVS itself, so no kernel routing or ARP is involved:

* an **underlay bridge** ``olp<id>`` (``datapath_type=netdev``, ``other_config:hwaddr`` =
  :data:`VTEP_MAC`) holding the generator port that carries tunnel frames; its LOCAL port's tap
  device holds the VTEP address :data:`VTEP_IP`/24 (OVS 3.1 takes a tunnel's source address and
  the tunnel frames it terminates from the bridge's interface: ``ovs/route/add`` has no ``src=``).
  That tap device stays **down** and lives in **OVS's own network namespace**
  (:attr:`~ovsperf_lab.ovs.OvsConfig.netns`), so nothing reaches the host's network. In two-host
  mode (``--dut-port``: NIC ports, whose devargs may name this namespace's interfaces) OVS runs in
  the DUT's namespace, a machine of its own, and the down tap device with the address is there
  while the run lasts (deleted when OVS stops: :attr:`~ovsperf_lab.state.LabRunState.taps`);
* ``ovs-appctl ovs/route/add 198.19.254.0/24 olp<id>`` and ``tnl/arp/set olp<id>``
  :data:`REMOTE_IP` :data:`REMOTE_MAC`: the remote VTEP (the generator) is reached through the
  underlay bridge without ARP;
* the **integration bridge** (the sandbox's ``olab<id>``) with the other generator port and the
  tunnel port ``tun0`` (``type=vxlan|geneve``, ``options:remote_ip``, ``local_ip``,
  ``key`` = :data:`VNI`), OpenFlow port :data:`TUNNEL_OFPORT`.

Decapsulation (``overlay_p2p_decap_tput``): generator port 0 ↔ underlay port ``tg0`` (1; two-host
mode: the NIC port ``dpdk0``, and ``dpdk1`` for ``tg1``), rule
``in_port=1,actions=LOCAL`` (the frames go to the VTEP's MAC and address: OVS pops the tunnel,
datapath action ``tnl_pop``); integration rule ``in_port=3,actions=output:2`` to generator port 1.
Encapsulation (``overlay_p2p_tput``): generator port 0 ↔ integration port ``tg0`` (1), rule
``in_port=1,actions=output:3`` (``tnl_push``); underlay rule ``in_port=LOCAL,actions=output:2``
sends the encapsulated frames to generator port 1. One direction only, as VSperf's (``bidir``
False): port 0 → port 1.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

from ovsperf_catalog.model import TunnelType, VsperfTest
from ovsperf_common.deadline import Deadline, DeadlineExceededError
from ovsperf_lab.errors import LabError, OvsError
from ovsperf_lab.generators.api import PortInfo, TrafficGenerator
from ovsperf_lab.model import TrialResult, TrialSpec, TunnelEncap
from ovsperf_lab.ovs import OvsSandbox, PortCounters
from ovsperf_lab.topology import Layout, interface_settings

log = logging.getLogger(__name__)

VTEP_IP = "198.19.254.1"
"""The DUT's tunnel endpoint (OVS's ``local_ip``), in RFC 2544's benchmarking range 198.18.0.0/15."""
REMOTE_IP = "198.19.254.2"
"""The remote tunnel endpoint: the generator (OVS's ``remote_ip``)."""
VTEP_PREFIX = 24
"""Prefix length of the underlay network [bits]."""
VTEP_MAC = "02:00:00:00:fe:01"
"""The underlay bridge's MAC address: the outer destination of the frames the generator sends."""
REMOTE_MAC = "02:00:00:00:fe:02"
"""The remote VTEP's MAC address (OVS's neighbour entry): the outer destination OVS writes."""
VNI = 99
"""The tunnel key (VXLAN/Geneve VNI) [1]."""
TUNNEL_PORT = "tun0"
"""The tunnel port's name on the integration bridge."""
TUNNEL_OFPORT = 3
"""The tunnel port's OpenFlow port number."""
ROUTE_TIMEOUT_S = 10.0
"""Limit for OVS to accept the underlay route once the VTEP address is on the bridge's device [s]."""
LOCAL = "LOCAL"
"""OpenFlow's name of a bridge's own port."""


@dataclass(frozen=True)
class OverlaySpec:
    """One overlay test's tunnel: its type, decapsulation or encapsulation, and extra options."""

    scenario: str
    """The scenario, for error messages."""
    tunnel_type: TunnelType
    """VXLAN or Geneve."""
    decap: bool
    """Decapsulation (the generator sends tunnel frames); False: encapsulation (OVS adds them)."""
    options: tuple[tuple[str, str], ...] = ()
    """More ``options:KEY=VALUE`` of the tunnel port (``--tunnel-option``); they replace the lab's."""

    @classmethod
    def for_test(
        cls,
        scenario: str,
        test: VsperfTest,
        tunnel_type: TunnelType | None,
        options: tuple[tuple[str, str], ...] = (),
    ) -> OverlaySpec | None:
        """Return the tunnel of ``test``, ``None`` when it is no overlay test.

        :raises LabError: for an overlay test without ``tunnel_type`` (the catalog refuses that).
        """
        if test.tunnel_operation is None:
            return None
        if tunnel_type is None:
            raise LabError(f"Scenario '{scenario}': test '{test.value}' needs the field 'tunnel_type'.")
        return cls(scenario, tunnel_type, test.tunnel_operation == "decapsulation", options)

    @property
    def encap(self) -> TunnelEncap | None:
        """Return the outer headers the generator sends (decapsulation), ``None`` for encapsulation."""
        if not self.decap:
            return None
        return TunnelEncap(self.tunnel_type, VNI, VTEP_MAC, REMOTE_IP, VTEP_IP)

    @property
    def delivered_delta_bytes(self) -> int:
        """Return how much longer a frame leaves OVS toward generator port 1 than it entered [B].

        +50 for encapsulation, -50 for decapsulation (:attr:`TunnelType.overhead_bytes`).
        """
        overhead = self.tunnel_type.overhead_bytes
        return -overhead if self.decap else overhead

    @property
    def datapath_action(self) -> str:
        """Return the datapath action that proves the tunnel path ran: ``tnl_pop`` or ``tnl_push``."""
        return "tnl_pop" if self.decap else "tnl_push"


def _check_port(ovs: OvsSandbox, spec: OverlaySpec, settings: list[str]) -> None:
    """Raise when OVS refused the tunnel port (its ``error`` column, or no OpenFlow port).

    OVS 3.1 refuses a bad address (``remote_ip``, ``local_ip``) this way; an unknown option or a
    bad value of another it only logs (``ovs-vswitchd.log``) and ignores.

    :raises OvsError: naming the scenario, the port's settings and OVS's message.
    """
    error = ovs.vsctl("--if-exists", "get", "Interface", TUNNEL_PORT, "error").strip().strip('"')
    error = "; ".join(line for line in error.split("\\n") if line)  # OVS's lines, one sentence
    ofport = ovs.vsctl("--if-exists", "get", "Interface", TUNNEL_PORT, "ofport").strip()
    if error and error != "[]":
        reason = error
    elif ofport != str(TUNNEL_OFPORT):
        reason = f"the port got OpenFlow port {ofport or 'none'}, not {TUNNEL_OFPORT}"
    else:
        return
    raise OvsError(
        f"Scenario '{spec.scenario}': OVS refused the {spec.tunnel_type.value} tunnel port "
        f"'{TUNNEL_PORT}' ({' '.join(settings)}): {reason}"
    )


def _add_route(ovs: OvsSandbox, network: str, underlay: str) -> None:
    """Add OVS's route to ``network`` via ``underlay`` once OVS has seen the VTEP address on it.

    OVS learns the bridge device's addresses asynchronously; until then ``ovs/route/add`` answers
    "Error while inserting route.", so it is retried for :data:`ROUTE_TIMEOUT_S`.

    :raises OvsError: with OVS's last answer when it still refuses at the deadline.
    """
    refused: list[OvsError] = []

    def attempt() -> bool | None:
        try:
            ovs.appctl("ovs/route/add", network, underlay)
        except OvsError as err:
            refused.append(err)
            return None
        return True

    deadline = Deadline.in_seconds(ROUTE_TIMEOUT_S, f"OVS to take the route {network} via '{underlay}'")
    try:
        deadline.poll(attempt, interval_s=0.2, log=log)
    except DeadlineExceededError as err:
        raise OvsError(f"{err} OVS answered: {refused[-1] if refused else 'nothing'}") from err


def build(ovs: OvsSandbox, lay: Layout, spec: OverlaySpec, n_rxq: int) -> None:
    """Create both bridges, the generator's ports, the tunnel port, route, neighbour and rules.

    :param lay: the ``op2p`` layout (:func:`ovsperf_lab.topology.layout`): its two generator ports.
    :raises OvsError: when OVS refuses a bridge, port, route or rule; a refused tunnel port names
        the scenario and quotes OVS's message.
    :raises LabError: when OVS runs in this machine's network namespace with vhost-user ports (the
        VTEP address must not go there; two-host mode's DUT, :attr:`Layout.wire`, takes it).
    """
    if ovs.netns is None and not lay.wire:
        raise LabError(
            f"Scenario '{spec.scenario}': the overlay tests need OVS in a network namespace of its own "
            "(the underlay bridge's device holds the VTEP address); start it with 'netns'."
        )
    underlay = ovs.underlay_bridge
    west, east = lay.generator_ports
    phy_port, int_port = (west, east) if spec.decap else (east, west)
    for port in lay.ports:
        if port.socket is not None:
            port.socket.parent.mkdir(parents=True, exist_ok=True)
    for bridge in (ovs.bridge, underlay):
        ovs.vsctl("--if-exists", "del-br", bridge)
    ovs.vsctl(
        "add-br", underlay, "--", "set", "bridge", underlay, "datapath_type=netdev",
        f"other_config:hwaddr={VTEP_MAC}",
    )  # fmt: skip
    ovs.vsctl("add-br", ovs.bridge, "--", "set", "bridge", ovs.bridge, "datapath_type=netdev")
    for bridge, port in ((underlay, phy_port), (ovs.bridge, int_port)):
        ovs.vsctl(
            "add-port", bridge, port.name, "--", "set", "Interface", port.name,
            *interface_settings(port), f"options:n_rxq={n_rxq}", f"ofport_request={port.ofport}",
        )  # fmt: skip
    options = {"remote_ip": REMOTE_IP, "local_ip": VTEP_IP, "key": str(VNI), **dict(spec.options)}
    settings = [f"type={spec.tunnel_type.value}", *(f"options:{k}={v}" for k, v in options.items())]
    try:
        ovs.vsctl(
            "add-port", ovs.bridge, TUNNEL_PORT, "--", "set", "Interface", TUNNEL_PORT, *settings,
            f"ofport_request={TUNNEL_OFPORT}",
        )  # fmt: skip
    except OvsError as err:
        raise OvsError(
            f"Scenario '{spec.scenario}': OVS refused the {spec.tunnel_type.value} tunnel port "
            f"'{TUNNEL_PORT}' ({' '.join(settings)}): {err}"
        ) from err
    _check_port(ovs, spec, settings)
    # The VTEP address on the underlay bridge's tap device, which stays down, in OVS's namespace
    # (two-host mode: the DUT's own; the device goes when OVS stops, LabRunState.taps).
    ovs.ip("addr", "add", f"{VTEP_IP}/{VTEP_PREFIX}", "dev", underlay, dut_host=lay.wire)
    _add_route(ovs, VTEP_IP.rsplit(".", 1)[0] + f".0/{VTEP_PREFIX}", underlay)
    ovs.appctl("tnl/arp/set", underlay, REMOTE_IP, REMOTE_MAC)
    for bridge in (ovs.bridge, underlay):
        ovs.wait_bridge(bridge)
        ovs.ofctl("del-flows", ovs.bridge_target(bridge))
    if spec.decap:
        rules = ((underlay, f"in_port={phy_port.ofport},actions={LOCAL}"),
                 (ovs.bridge, f"in_port={TUNNEL_OFPORT},actions=output:{int_port.ofport}"))  # fmt: skip
    else:
        rules = ((ovs.bridge, f"in_port={int_port.ofport},actions=output:{TUNNEL_OFPORT}"),
                 (underlay, f"in_port={LOCAL},actions=output:{phy_port.ofport}"))  # fmt: skip
    for bridge, rule in rules:
        ovs.ofctl("add-flow", ovs.bridge_target(bridge), rule)
    log.info(
        "Built the %s %s overlay: underlay bridge '%s' (%s, VTEP %s, %s) with '%s', integration bridge '%s' "
        "with '%s' and '%s' (key %d, remote %s); rules %s.",
        spec.tunnel_type.value,
        "decapsulation" if spec.decap else "encapsulation",
        underlay,
        VTEP_MAC,
        VTEP_IP,
        f"OVS netns '{ovs.netns}'" if ovs.netns is not None else "the DUT's namespace",
        phy_port.name,
        ovs.bridge,
        int_port.name,
        TUNNEL_PORT,
        VNI,
        REMOTE_IP,
        "; ".join(f"{bridge}: {rule}" for bridge, rule in rules),
    )


def remove(ovs: OvsSandbox) -> None:
    """Delete the underlay bridge (the integration bridge goes with :func:`ovsperf_lab.topology.remove`)."""
    ovs.vsctl("--if-exists", "del-br", ovs.underlay_bridge)


def port_counters(ovs: OvsSandbox) -> dict[int, PortCounters]:
    """Return OpenFlow port number → live counters of both bridges' ports (the numbers are unique).

    :raises OvsError: as :meth:`~ovsperf_lab.ovs.OvsSandbox.port_counters`.
    """
    return {**ovs.port_counters(ovs.underlay_bridge), **ovs.port_counters(ovs.bridge)}


def datapath_flows(ovs: OvsSandbox) -> str:
    """Return the datapath's flows (``ovs-appctl dpctl/dump-flows``): ``tnl_pop``/``tnl_push`` in them."""
    return ovs.appctl("dpctl/dump-flows")


class OverlayGenerator(TrafficGenerator):
    """Wrap a generator for one overlay test: every trial one-way (port 0 → 1), tunnel frames for decap.

    The search asks for the test's frame size and load; this wrapper makes the trial
    unidirectional and, for decapsulation, adds the outer headers (:attr:`OverlaySpec.encap`).
    """

    def __init__(self, inner: TrafficGenerator, spec: OverlaySpec) -> None:
        self.inner = inner
        self.spec = spec
        self.pid = inner.pid
        self.host = inner.host

    def ports(self) -> tuple[PortInfo, ...]:
        """Return the inner generator's ports."""
        return self.inner.ports()

    def wait_link(self, timeout_s: float) -> tuple[PortInfo, ...]:
        """Wait for the inner generator's links."""
        return self.inner.wait_link(timeout_s)

    def run_trial(self, spec: TrialSpec) -> TrialResult:
        """Run ``spec`` one-way, tunnel-encapsulated for decapsulation; return its result (its spec as sent).

        :raises LabError: (``TrafficGeneratorError``) from the generator; a frame too small to
            carry a 64 B inner frame is refused naming ``frame_size_bytes``.
        """
        sent = dataclasses.replace(spec, bidirectional=False, tunnel=self.spec.encap)
        return self.inner.run_trial(sent)

    def close(self) -> None:
        """Close the inner generator."""
        self.inner.close()
