"""Define the records and closed sets that describe a performance scenario.

Names follow VSperf where VSperf has one (``OvsDpdkVhost``, ``phy2phy_tput``, ``p2p``,
``testpmd``), so the values can be written into VSperf configurations unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from ovsperf_common.errors import FieldError
from ovsperf_common.fields import positive_int
from ovsperf_common.spec import SpecEnum

MAX_FLOWS = 1_048_576
"""Most UDP flows per direction the traffic generator tells apart (``TG_MAX_FLOWS`` in
``trafficgen/src/trafficgen.h``, docs/trafficgen.md) [1]; the lab's limit for ``--flows``."""


class Vswitch(SpecEnum):
    """The vswitch flavour, by its VSperf class name (VSperf ``--vswitch``)."""

    OVS_DPDK = "OvsDpdkVhost"
    """OVS with the DPDK datapath (netdev), vhost-user ports toward guests."""
    OVS_VANILLA = "OvsVanilla"
    """OVS with the kernel datapath, tap/virtio-net toward guests."""


class Engine(SpecEnum):
    """What measures a scenario on the nightly path (the Beaker job, ``ovsperf-remote run``)."""

    VSPERF = "vsperf"
    """VSperf on the DUT driving MoonGen on the TG (the design's engine; the default)."""
    OVSPERF = "ovsperf"
    """``ovsperf-lab run`` on the DUT driving ``ovsperf-trafficgen`` on the TG over SSH (docs/engines.md)."""


class VsperfTrafficgen(SpecEnum):
    """The traffic generator VSperf drives on the TG (engine ``vsperf``): VSperf's ``TRAFFICGEN``.

    Chosen by the host inventory (the DUT's peer record, ``generator``) and by jobcreator's
    ``--generator`` (which TG task the job runs); docs/beaker_tasks.md, "TRex".
    """

    MOONGEN = "moongen"
    """MoonGen with lua-trafficgen, built by the ``build_moongen`` task (the default)."""
    TREX = "trex"
    """TRex's stateless server, installed from its release tarball by the ``setup_trex`` task."""

    @property
    def vsperf_class(self) -> str:
        """Return VSperf's class name of the generator (``TRAFFICGEN``, case-sensitive)."""
        return {"moongen": "Moongen", "trex": "Trex"}[self.value]


class Topology(SpecEnum):
    """Where frames travel, by VSperf deployment name."""

    P2P = "p2p"
    """phy → OVS → phy."""
    PVP = "pvp"
    """phy → OVS → guest → OVS → phy."""
    PVVP = "pvvp"
    """phy → OVS → guest → OVS → guest → OVS → phy."""
    OP2P = "op2p"
    """phy → OVS (tunnel decapsulation or encapsulation) → phy, one direction: VSperf's overlay
    deployment (``conf/integration/01_testcases.conf``, ``core/vswitch_controller_op2p.py``)."""


class VsperfTest(SpecEnum):
    """A VSperf RFC 2544 throughput test case.

    Names are VSperf's (``conf/01_testcases.conf``; the overlay tests from
    ``conf/integration/01_testcases.conf``, run with ``vsperf --integration``) except the
    conntrack tests, which VSperf has none of: ours, defined for VSperf in the generated
    configuration (docs/beaker_tasks.md).
    """

    PHY2PHY_TPUT = "phy2phy_tput"
    PVP_TPUT = "pvp_tput"
    PVVP_TPUT = "pvvp_tput"
    OVERLAY_P2P_TPUT = "overlay_p2p_tput"
    """VSperf's overlay encapsulation test: plain frames in, tunnel-encapsulated frames out, one direction."""
    OVERLAY_P2P_DECAP_TPUT = "overlay_p2p_decap_tput"
    """VSperf's overlay decapsulation test: tunnel-encapsulated frames in, inner frames out, one direction."""
    PHY2PHY_CT_TPUT = "phy2phy_ct_tput"
    """Ours: P2P through userspace conntrack, ``ct(commit)``, both directions."""
    PHY2PHY_CT_NAT_TPUT = "phy2phy_ct_nat_tput"
    """Ours: P2P through userspace conntrack with source NAT, ``ct(commit,nat(src=…))``, both directions."""

    @property
    def topology(self) -> Topology:
        """Return the deployment the test case runs (VSperf ``Deployment`` field)."""
        return {
            VsperfTest.PHY2PHY_TPUT: Topology.P2P,
            VsperfTest.PVP_TPUT: Topology.PVP,
            VsperfTest.PVVP_TPUT: Topology.PVVP,
            VsperfTest.OVERLAY_P2P_TPUT: Topology.OP2P,
            VsperfTest.OVERLAY_P2P_DECAP_TPUT: Topology.OP2P,
            VsperfTest.PHY2PHY_CT_TPUT: Topology.P2P,
            VsperfTest.PHY2PHY_CT_NAT_TPUT: Topology.P2P,
        }[self]

    @property
    def tunnel_operation(self) -> str | None:
        """Return VSperf's ``Tunnel Operation`` of an overlay test, ``None`` for any other test.

        ``'encapsulation'`` (``overlay_p2p_tput``) or ``'decapsulation'`` (``overlay_p2p_decap_tput``),
        as ``conf/integration/01_testcases.conf`` spells it.
        """
        return {
            VsperfTest.OVERLAY_P2P_TPUT: "encapsulation",
            VsperfTest.OVERLAY_P2P_DECAP_TPUT: "decapsulation",
        }.get(self)

    @property
    def conntrack(self) -> str | None:
        """Return the arguments of a conntrack test's committing ``ct()`` action, ``None`` for any other test.

        ``'commit'`` or ``'commit,nat'`` (the NAT addresses are the configuration's, docs/beaker_tasks.md).
        """
        return {
            VsperfTest.PHY2PHY_CT_TPUT: "commit",
            VsperfTest.PHY2PHY_CT_NAT_TPUT: "commit,nat",
        }.get(self)

    @property
    def bidirectional(self) -> bool:
        """Return whether traffic flows both ways (VSperf ``biDirectional``); overlay tests are one-way."""
        return self.tunnel_operation is None


class TunnelType(SpecEnum):
    """The tunnel protocol of an overlay test (VSperf ``TUNNEL_TYPE``, conf/integration/02_vswitch.conf)."""

    VXLAN = "vxlan"
    """VXLAN (RFC 7348) over UDP port 4789: 50 B of outer Ethernet/IPv4/UDP/VXLAN headers."""
    GENEVE = "geneve"
    """Geneve (RFC 8926) over UDP port 6081: 50 B of headers without options."""

    @property
    def overhead_bytes(self) -> int:
        """Return what encapsulation adds to a frame: outer Ethernet 14 + IPv4 20 + UDP 8 + tunnel 8 [B].

        Sources: RFC 7348 §5 (VXLAN header, 8 B), RFC 8926 §3.4 (Geneve base header, 8 B, no options).
        """
        return 50


class GuestLoopback(SpecEnum):
    """What forwards frames inside the guest (VSperf ``GUEST_LOOPBACK`` values)."""

    TESTPMD = "testpmd"
    """DPDK testpmd in io/mac forwarding over virtio-pci bound to vfio-pci (no-IOMMU)."""
    LINUX_BRIDGE = "linux_bridge"
    """A Linux bridge joining the guest's two virtio-net interfaces."""

    @property
    def uses_dpdk(self) -> bool:
        """Return whether the guest runs DPDK for this loopback."""
        return self is GuestLoopback.TESTPMD


@dataclass(frozen=True)
class Hugepages:
    """Hugepages reserved on a host through the kernel command line."""

    size: str
    """Page size as the kernel spells it: ``'2M'`` or ``'1G'``."""
    count: int
    """Number of pages [1]."""

    def __post_init__(self) -> None:
        """Check the page size and count.

        :raises FieldError: naming ``hugepages.size`` or ``hugepages.count``.
        """
        if self.size not in ("2M", "1G"):
            raise FieldError(f"hugepage size '{self.size}' is not '2M' or '1G'.", field="hugepages.size")
        positive_int(self.count, "hugepages.count")

    @property
    def kernel_options(self) -> tuple[str, ...]:
        """Return the kernel command-line options that reserve these pages."""
        return (f"default_hugepagesz={self.size}", f"hugepagesz={self.size}", f"hugepages={self.count}")


@dataclass(frozen=True)
class Guest:
    """The virtual machine a PVP scenario forwards through."""

    loopback: GuestLoopback
    """Forwarding application in the guest."""
    vcpus: int
    """Number of guest vCPUs [1]."""
    memory_mb: int
    """Guest memory [MiB]; backed by hugepages for vhost-user."""
    nic_queues: int
    """Queues per guest virtio NIC [1]."""


@dataclass(frozen=True)
class Scenario:
    """One entry of the scenario catalog: everything every stage needs to run it.

    Created by :func:`ovsperf_catalog.catalog.load_catalog`, which validates every field.
    """

    name: str
    """Catalog key, e.g. ``'OVS_DPDK1q_GUEST_DPDK1q'``."""
    description: str
    """One line for humans."""
    vswitch: Vswitch
    """Vswitch flavour on the DUT."""
    tests: tuple[VsperfTest, ...]
    """VSperf test cases, in run order (their index is VSperf's result index)."""
    rx_queues: int
    """Receive queues per physical port (OVS ``n_rxq``) [1]."""
    tx_queues: int
    """Transmit queues per physical port [1]."""
    guest: Guest | None
    """The PVP guest, ``None`` for P2P-only scenarios."""
    frame_sizes_bytes: tuple[int, ...]
    """Frame sizes including FCS, ascending [B]."""
    loss_ratio_limit: float
    """Acceptable loss ratio for the throughput search [1]; 0 means NDR."""
    search_trial_s: int
    """Duration of each binary-search trial [s] (MoonGen ``searchRunTime``)."""
    validation_trial_s: int
    """Duration of the final validation trial [s] (MoonGen ``validationRunTime``)."""
    hugepages: Hugepages
    """Hugepages reserved on the DUT and the traffic generator."""
    kernel_options: tuple[str, ...]
    """Extra kernel command-line options for the DUT and TG (IOMMU etc.)."""
    engine: Engine = Engine.VSPERF
    """What measures it on the nightly path (jobcreator and ``ovsperf-remote run`` may override it)."""
    tunnel_type: TunnelType | None = None
    """The tunnel protocol of its overlay tests; ``None`` when it has none."""
    flows: tuple[int, ...] = (1,)
    """UDP flows per direction (distinct 5-tuples; connections for conntrack), the lab's default
    flow sweep; VSperf gets the first (``TRAFFIC['multistream']``) [1]."""

    @property
    def topologies(self) -> tuple[Topology, ...]:
        """Return the deployments of :attr:`tests`, in order, without repeats."""
        return tuple(dict.fromkeys(t.topology for t in self.tests))

    @property
    def guest_count(self) -> int:
        """Return how many guests its most demanding test boots at once (PVP 1, PVVP 2, else 0) [1]."""
        return max({Topology.PVP: 1, Topology.PVVP: 2}.get(t, 0) for t in self.topologies)

    @property
    def dpdk_in_host(self) -> bool:
        """Return whether OVS on the DUT uses the DPDK datapath."""
        return self.vswitch is Vswitch.OVS_DPDK

    @property
    def dpdk_in_guest(self) -> bool:
        """Return whether the guest runs DPDK."""
        return self.guest is not None and self.guest.loopback.uses_dpdk

    @property
    def loss_percent_limit(self) -> float:
        """Return :attr:`loss_ratio_limit` in percent, as VSperf ``TRAFFICGEN_LOSSRATE`` wants [%]."""
        return self.loss_ratio_limit * 100.0

    @property
    def all_kernel_options(self) -> tuple[str, ...]:
        """Return hugepage options followed by :attr:`kernel_options`."""
        return self.hugepages.kernel_options + self.kernel_options
