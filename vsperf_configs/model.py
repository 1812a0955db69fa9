"""Define the records of the host inventory and of a generated VSperf configuration.

A :class:`HostInventory` describes one lab machine by its host name (the DUT that runs VSperf or
the traffic generator that runs MoonGen); a :class:`Setting` is one line of a VSperf
``--conf-file``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ovsperf_catalog.model import VsperfTrafficgen
from ovsperf_common.errors import FieldError
from ovsperf_common.spec import SpecEnum


class HostRole(SpecEnum):
    """What a lab machine does in a run."""

    DUT = "dut"
    """Device under test: runs OVS, the guest and VSperf."""
    TRAFFICGEN = "trafficgen"
    """Traffic generator: runs MoonGen, driven over SSH by VSperf on the DUT."""

    @classmethod
    def spec_label(cls) -> str:
        """Return ``'role'``, the inventory field's name."""
        return "role"


@dataclass(frozen=True)
class MoongenPeer:
    """The DUT's traffic generator host as the DUT reaches it over SSH.

    The inventory calls it ``moongen:`` (VSperf's ``TRAFFICGEN_MOONGEN_*``) or, the same record
    under an engine-neutral name, ``trafficgen:``. The engine ``ovsperf`` uses ``host``, ``address``,
    ``user`` and ``ports`` (``python3 -m vsperf_configs.labargs``); ``base_dir`` is MoonGen's only.
    """

    host: str
    """Host name of the traffic generator (its inventory key and SSH known-hosts name)."""
    address: str
    """Address VSperf pings and SSHes to (``TRAFFICGEN_MOONGEN_HOST_IP_ADDR``)."""
    user: str
    """SSH user on the traffic generator (``TRAFFICGEN_MOONGEN_USER``)."""
    base_dir: str
    """lua-trafficgen checkout holding ``trafficgen.lua`` and ``MoonGen/build/MoonGen``."""
    ports: tuple[int, int]
    """The generator's port ids (indexes into its ``nics``/``dpdk_ports``) wired to the DUT's first
    and second test NIC."""
    generator: VsperfTrafficgen = VsperfTrafficgen.MOONGEN
    """What VSperf drives on that host (``generator``: ``moongen``, the default, or ``trex``, whose
    host entry then carries a :class:`TrexInstall`)."""


@dataclass(frozen=True)
class TrexInstall:
    """A TG's TRex: the release tarball to install and the ports of its ``/etc/trex_cfg.yaml``.

    The inventory's ``trex:`` record of a traffic generator host; the ``setup_trex`` Beaker task
    installs it there (and its client library on the DUT, for VSperf), docs/beaker_tasks.md "TRex".
    """

    url: str
    """Where the release tarball is downloaded from (``https://`` or ``http://``), e.g.
    ``https://trex-tgn.cisco.com/trex/release/v3.04.tar.gz``."""
    sha256: str
    """The tarball's SHA-256, 64 lower-case hex digits: checked before anything is unpacked."""
    install_dir: str
    """Absolute directory the tarball's top directory is unpacked into (``t-rex-64`` lands there);
    VSperf's ``TRAFFICGEN_TREX_BASE_DIR``."""
    ports: tuple[int, int]
    """Indexes into the host's ``nics``: TRex's port 0 and port 1 (``interfaces`` of
    ``/etc/trex_cfg.yaml``, in this order), wired to the DUT's first and second test NIC."""


@dataclass(frozen=True)
class HostInventory:
    """One lab machine: its test NICs, CPU partitioning and (for a DUT) its traffic generator.

    CPU ids are Linux logical CPU numbers. Created by :func:`vsperf_configs.inventory.load_inventory`,
    which validates every field and the disjointness of the CPU lists.
    """

    hostname: str
    """Inventory key: the host's FQDN as Beaker knows it."""
    role: HostRole
    """DUT or traffic generator."""
    nics: tuple[str, ...]
    """PCI addresses of the test NICs, in port order, e.g. ``('0000:03:00.0', '0000:03:00.1')``."""
    numa_node: int
    """NUMA node the test NICs are attached to."""
    numa_nodes: int
    """Number of NUMA nodes of the machine [1]."""
    isolated_cpus: tuple[int, ...]
    """CPUs removed from the scheduler (tuned cpu-partitioning), ascending."""
    ovs_lcore_cpus: tuple[int, ...]
    """DUT: CPUs of OVS's non-PMD threads (``dpdk-lcore-mask``); empty on a traffic generator."""
    pmd_cpus: tuple[int, ...]
    """DUT: CPUs of the OVS PMD threads (``pmd-cpu-mask``); empty on a traffic generator."""
    guest_cpus: tuple[int, ...]
    """DUT: CPUs the guest vCPUs are pinned to, in vCPU order; empty when there is no guest."""
    generator_cpus: tuple[int, ...]
    """Traffic generator: CPUs the generator may use (MoonGen's ``dpdk-conf.lua`` ``cores``,
    ``ovsperf-trafficgen``'s EAL ``-l``); the inventory's ``cpus.generator`` or ``cpus.moongen``."""
    socket_mem_mb: int
    """DPDK memory for OVS on the NICs' NUMA node [MiB] (``DPDK_SOCKET_MEM``)."""
    guest_image: str | None
    """DUT: qcow2 image VSperf boots for PVP tests (``GUEST_IMAGE``); None when not given."""
    moongen: MoongenPeer | None
    """DUT: the traffic generator it sends traffic with (``moongen:`` or ``trafficgen:``); None on
    a traffic generator."""
    dpdk_ports: tuple[str, ...] = ()
    """DPDK devargs of the test ports in port order, as the ``ovsperf`` engine gives them to DPDK
    (a PCI address, or a vdev such as ``net_af_packet0,iface=veth0`` in a stand-in lab); the
    inventory's ``dpdk_ports``, default :attr:`nics`."""
    trex: TrexInstall | None = None
    """Traffic generator: its TRex installation (the inventory's ``trex:``); None when it has none."""

    def __post_init__(self) -> None:
        """Check that the host has a test NIC and one DPDK port per NIC.

        :raises FieldError: naming ``nics`` when it has none, ``dpdk_ports`` when their number differs.
        """
        if not self.nics:
            raise FieldError("at least one test NIC is required.", field="nics")
        if self.dpdk_ports and len(self.dpdk_ports) != len(self.nics):
            raise FieldError(
                f"{len(self.dpdk_ports)} DPDK port(s) for {len(self.nics)} test NIC(s); give one per NIC, "
                "in the same order.",
                field="dpdk_ports",
            )

    @property
    def ports(self) -> tuple[str, ...]:
        """Return the DPDK devargs of the test ports: :attr:`dpdk_ports`, else :attr:`nics`."""
        return self.dpdk_ports or self.nics


class Layer(enum.Enum):
    """Where a configuration value comes from, lowest precedence first."""

    DEFAULTS = "defaults"
    """Our fixed choices for every run (MoonGen, packaged binaries, VSperf traps)."""
    SCENARIO = "scenario"
    """The scenario catalog entry (vswitch, frame sizes, loss limit, queues, guest)."""
    INVENTORY = "inventory"
    """The DUT's inventory entry (NICs, CPU lists, MoonGen host)."""
    TASK = "task"
    """What the Beaker task adds on the DUT (our VSperf collector and pod, VSperf's hugepage mount)."""


@dataclass(frozen=True)
class Setting:
    """One assignment of a VSperf conf file: ``NAME = value`` or ``NAME['k']['k2'] = value``."""

    target: tuple[str, ...]
    """Setting name followed by the dict keys to assign into, e.g. ``('TRAFFIC', 'bidir')``."""
    value: object
    """Value: a str, int, float, bool, or a tuple/list of those; written with ``repr()``."""
    layer: Layer
    """Which layer set it."""
    comment: str | None = None
    """Why, for the reader of the generated file (e.g. which VSperf trap it avoids)."""
    append: bool = False
    """Append the list ``value`` to the setting VSperf's defaults already hold: ``NAME = NAME + [...]``
    (VSperf's own idiom in ``conf/integration/01a_testcases_l34_vxlan.conf``), for a list setting
    such as ``PERFORMANCE_TESTS`` that an assignment would replace whole."""

    def __post_init__(self) -> None:
        if not self.target or not self.target[0].isupper() or not self.target[0].isidentifier():
            raise ValueError(f"VSperf only reads UPPER_CASE settings, got {self.target!r}.")
        if self.append and (len(self.target) != 1 or not isinstance(self.value, list)):
            raise ValueError(f"Only a whole list setting can be appended to, got {self.target!r}.")
