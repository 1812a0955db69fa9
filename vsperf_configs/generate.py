"""Generate one VSperf ``--conf-file`` for a scenario on a DUT: defaults → scenario → host inventory.

VSperf executes the file as Python in the module that already holds its ``conf/*.conf`` defaults
and keeps only UPPER_CASE names (VSperf ``conf/__init__.py`` ``Settings.load_from_file``). The
generator therefore writes only UPPER_CASE assignments of Python literals, and changes the keys of
dict settings (``TRAFFIC``, ``PATHS``, ``VSWITCHD_DPDK_CONFIG``) one by one: assigning a partial
dict would replace VSperf's whole default dict (reference/vsperf.md §4.2, §8).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.errors import CatalogError
from ovsperf_catalog.model import GuestLoopback, Scenario, Topology, VsperfTrafficgen, Vswitch
from ovsperf_common.errors import FieldError
from ovsperf_common.runner import one_line
from vsperf_configs.errors import InventoryError, VsperfConfigError
from vsperf_configs.inventory import cpu_mask, format_cpu_list, load_inventory, trex_peer
from vsperf_configs.model import HostInventory, HostRole, Layer, MoongenPeer, Setting, TrexInstall
from vsperf_configs.testcases import conntrack_settings, needs_integration, overlay_settings

log = logging.getLogger(__name__)

DEFAULT_FLOWS = 1024
"""Flows per direction (VSperf ``TRAFFIC['multistream']``) [1]; MoonGen needs at least 1 (vsperf.md §7.5)."""

_VMS_PER_TOPOLOGY = {Topology.P2P: 0, Topology.PVP: 1, Topology.PVVP: 2, Topology.OP2P: 0}
_HUGEPAGE_KB = {"2M": 2048, "1G": 1048576}


@dataclass(frozen=True)
class GeneratedConfig:
    """A rendered VSperf conf file and what the Beaker task needs to check its results."""

    text: str
    """The ``--conf-file`` content (Python source, UPPER_CASE assignments only)."""
    settings: tuple[Setting, ...]
    """The effective settings, in file order."""
    tests: tuple[tuple[int, str, str], ...]
    """``(VSperf result index, test name, deployment)`` per requested test, in run order."""


def default_settings() -> list[Setting]:
    """Return the defaults layer: MoonGen as traffic generator, packaged OVS/DPDK/QEMU, traffic shape."""
    d = Layer.DEFAULTS
    return [
        Setting(("TRAFFICGEN",), "Moongen", d, "VSperf class name, case-sensitive"),
        Setting(
            ("TRAFFICGEN_MOONGEN_LINE_SPEED_GBPS",),
            "10",
            d,
            "must be the STRING '10': VSperf compares with '10' and supports only 10 GbE",
        ),
        Setting(("TRAFFICGEN_RFC2544_TESTS",), 1, d, "binary searches per frame size (averaged by VSperf)"),
        Setting(
            ("TRAFFIC", "traffic_type"),
            "rfc2544_throughput",
            d,
            "TRAFFIC keys are set one by one, never TRAFFIC = {...}",
        ),
        Setting(("TRAFFIC", "bidir"), "True", d, "a string: MoonGen's runBidirec is 'True'.lower()"),
        Setting(("TRAFFIC", "frame_rate"), 100, d),
        Setting(
            ("TRAFFIC", "multistream"),
            DEFAULT_FLOWS,
            d,
            "at least 1: MoonGen's nrFlows = 0 breaks its flow generation",
        ),
        Setting(("TRAFFIC", "stream_type"), "L4", d),
        Setting(("TRAFFIC", "pre_installed_flows"), "No", d),
        Setting(
            ("PATHS", "vswitch", "OvsDpdkVhost", "type"), "bin", d, "OVS, DPDK and QEMU come from packages"
        ),
        Setting(("PATHS", "vswitch", "OvsVanilla", "type"), "bin", d),
        Setting(("PATHS", "vswitch", "ovs_var_tmp"), "/var/run/openvswitch/", d),
        Setting(("PATHS", "vswitch", "ovs_etc_tmp"), "/etc/openvswitch/", d),
        Setting(("PATHS", "dpdk", "type"), "bin", d),
        # VSperf's functions.settings_update_paths() checks every PATHS tool of the vswitch, DPDK and
        # QEMU before each test, p2p included, and fails the test on one it cannot find. VSperf's
        # defaults name DPDK 17.x's tools; checked with real VSperf 90ef48d4 (docs/beaker_tasks.md).
        Setting(
            ("PATHS", "dpdk", "bin", "bind-tool"),
            "dpdk-devbind.py",
            d,
            "on PATH (dpdk-tools), as setup_dpdk calls it; VSperf's /usr/share/dpdk/tools/ path is gone",
        ),
        Setting(
            ("PATHS", "dpdk", "bin", "testpmd"),
            "dpdk-testpmd",
            d,
            "its name since DPDK 20.11; VSperf's default 'testpmd' is not on PATH",
        ),
        Setting(
            ("PATHS", "dpdk", "bin", "modules"),
            ["vfio-pci"],
            d,
            "the driver setup_dpdk binds the NICs to; VSperf's default igb_uio is not packaged",
        ),
        Setting(("PATHS", "qemu", "type"), "bin", d),
        Setting(
            ("PATHS", "qemu", "bin", "qemu-system"),
            "/usr/libexec/qemu-kvm",
            d,
            "RHEL's QEMU (qemu-kvm; RHEL has no qemu-system-x86_64); VSperf checks it even for p2p",
        ),
        Setting(("VSWITCH_AFFINITIZATION_ON",), 1, d, "apply VSWITCH_PMD_CPU_MASK"),
        Setting(("VNF_AFFINITIZATION_ON",), True, d, "apply GUEST_CORE_BINDING"),
    ]


def vm_count(scenario: Scenario) -> int:
    """Return how many guests the scenario's most demanding test boots (pvp 1, pvvp 2) [1]."""
    return max(_VMS_PER_TOPOLOGY[t] for t in scenario.topologies)


def scenario_settings(scenario: Scenario) -> list[Setting]:
    """Return the scenario layer: vswitch, frame sizes, trial duration, loss limit, queues, guest.

    :raises VsperfConfigError: when a DPDK guest has fewer than 2 vCPUs (testpmd needs a main core and a
        forwarding core).
    """
    s = Layer.SCENARIO
    settings = [
        Setting(("VSWITCH",), scenario.vswitch.value, s),
        Setting(
            ("TRAFFICGEN_PKT_SIZES",), scenario.frame_sizes_bytes, s, "frame sizes incl. FCS [B]; a tuple"
        ),
        Setting(
            ("TRAFFICGEN_DURATION",),
            scenario.search_trial_s,
            s,
            f"[s]; VSperf passes it as both MoonGen searchRunTime and validationRunTime, so the "
            f"catalog's validation_trial_s ({scenario.validation_trial_s} s) cannot be applied",
        ),
        Setting(("TRAFFICGEN_LOSSRATE",), scenario.loss_percent_limit, s, "acceptable loss [%]"),
        Setting(
            ("HUGEPAGE_RAM_ALLOCATION",),
            scenario.hugepages.count * _HUGEPAGE_KB[scenario.hugepages.size],
            s,
            "[kB]",
        ),
    ]
    if scenario.vswitch is Vswitch.OVS_DPDK:
        settings.append(Setting(("VSWITCH_DPDK_MULTI_QUEUES",), scenario.rx_queues, s, "n_rxq per DPDK port"))
    guest = scenario.guest
    vms = vm_count(scenario)
    if guest is None or vms == 0:
        return settings
    settings += [
        Setting(("VNF",), "QemuDpdkVhostUser" if scenario.dpdk_in_host else "QemuVirtioNet", s),
        Setting(("GUEST_LOOPBACK",), [guest.loopback.value] * vms, s),
        Setting(("GUEST_SMP",), [str(guest.vcpus)] * vms, s),
        Setting(("GUEST_MEMORY",), [str(guest.memory_mb)] * vms, s, "[MiB]"),
        Setting(("GUEST_NICS_NR",), [2] * vms, s),
        Setting(
            ("GUEST_NIC_QUEUES",),
            [guest.nic_queues if guest.nic_queues > 1 else 0] * vms,
            s,
            "0 = no multi-queue",
        ),
    ]
    if guest.loopback is GuestLoopback.TESTPMD:
        if guest.vcpus < 2:
            raise VsperfConfigError(
                f"scenario '{scenario.name}': testpmd in the guest needs at least 2 vCPUs, got {guest.vcpus}."
            )
        forwarding = guest.vcpus - 1
        testpmd = (
            f"-l 0-{guest.vcpus - 1} -n 4 --socket-mem 1024 -- --burst=64 -i "
            f"--nb-cores={forwarding} --rxq={guest.nic_queues} --txq={guest.nic_queues}"
        )
        settings += [
            Setting(
                ("GUEST_DPDK_BIND_DRIVER",),
                ["vfio_no_iommu"] * vms,
                s,
                "vsperf_test setup --guest enables it",
            ),
            Setting(("GUEST_TESTPMD_PARAMS",), [testpmd] * vms, s),
        ]
    return settings


def inventory_settings(
    scenario: Scenario, host: HostInventory, generator_host: HostInventory | None = None
) -> list[Setting]:
    """Return the inventory layer: test NICs, MoonGen peer, DPDK memory, CPU masks, guest pinning.

    When the DUT's peer runs TRex (its ``generator``), the peer's keys are VSperf's TRex ones
    (:func:`trex_settings`) from ``generator_host``, the TG's entry, instead of the MoonGen ones.

    :raises FieldError: naming the host's field when ``host`` is not a DUT, or lacks what the
        scenario needs (guest CPUs for every vCPU, a guest image), or its peer runs TRex and
        ``generator_host`` has no ``trex`` record.
    """
    i = Layer.INVENTORY
    if host.role is not HostRole.DUT or host.moongen is None:
        raise FieldError(
            "is a traffic generator; vsperf-config needs the DUT that runs VSperf.", field="role"
        )
    peer = host.moongen
    if peer.generator is VsperfTrafficgen.TREX:
        if generator_host is None or generator_host.trex is None:
            raise FieldError("the peer runs TRex; give its TG's 'trex:' record.", field="trafficgen.host")
        settings = [Setting(("WHITELIST_NICS",), list(host.nics), i, "test NICs in port order")]
        settings += trex_settings(peer, generator_host, generator_host.trex)
    else:
        settings = _moongen_settings(host, peer)
    settings += _dut_settings(scenario, host)
    return settings


def _moongen_settings(host: HostInventory, peer: MoongenPeer) -> list[Setting]:
    """Return the test NICs and VSperf's MoonGen keys of the inventory layer (the default generator)."""
    i = Layer.INVENTORY
    return [
        Setting(("WHITELIST_NICS",), list(host.nics), i, "test NICs in port order"),
        Setting(("TRAFFICGEN_MOONGEN_HOST_IP_ADDR",), peer.address, i, f"MoonGen host {peer.host}"),
        Setting(("TRAFFICGEN_MOONGEN_USER",), peer.user, i),
        Setting(
            ("TRAFFICGEN_MOONGEN_BASE_DIR",), peer.base_dir, i, "the lua-trafficgen checkout, not MoonGen's"
        ),
        Setting(
            ("TRAFFICGEN_MOONGEN_PORTS",),
            f"{{{peer.ports[0]},{peer.ports[1]}}}",
            i,
            "Lua text, copied verbatim",
        ),
    ]


TREX_CLIENT_SUBDIR = "automation/trex_control_plane/interactive"
"""Where a TRex release tarball keeps its Python client (``trex_stl_lib``), under the install dir."""

TREX_LATENCY_PPS = 1000
"""Rate of VSperf's separate latency stream per direction (``TRAFFICGEN_TREX_LATENCY_PPS``) [pps]."""

TREX_LEARNING_DURATION_S = 5
"""Learning frames VSperf sends before each test's traffic (``TRAFFICGEN_TREX_LEARNING_DURATION``) [s]."""


def trex_settings(peer: MoongenPeer, tg: HostInventory, trex: TrexInstall) -> list[Setting]:
    """Return VSperf's TRex keys: ``TRAFFICGEN = 'Trex'``, its host, user, directory and client path.

    Keys and meanings from VSperf's ``conf/03_traffic.conf`` (TRex section) and
    ``tools/pkt_gen/trex/trex_client.py``: ``connect()`` pings ``TRAFFICGEN_TREX_HOST_IP_ADDR``,
    runs ``ssh USER@HOST ls <BASE_DIR>t-rex-64`` (the base dir is concatenated, so it ends in
    ``/``) and connects TRex's client to the server's port 4501; the client library is imported
    from ``PATHS['trafficgen']['Trex']['src']['path']``, which the ``setup_trex`` task unpacks on
    the DUT from the same tarball. The driver always drives TRex's ports 0 and 1 (the order of
    ``/etc/trex_cfg.yaml``'s ``interfaces``). ``TRAFFICGEN_TREX_PORT1``/``PORT2`` are defined by
    VSperf but read by no code of it; they get the TG's PCI addresses of TRex's ports 0 and 1
    (``tg``'s ``nics`` at ``trex.ports``), as VSperf's own ``xtesting/baremetal/vsperf.conf`` does. The
    driver reads ``TRAFFICGEN_TREX_RFC2544_MAX_REPEAT`` and ``..._BINARY_SEARCH_LOSS_VERIFICATION``,
    which only ``conf/10_custom.conf`` defines: they are written too. No line-speed key: VSperf
    has none for TRex (it takes the ports' speed from TRex).
    """
    i = Layer.INVENTORY
    return [
        Setting(
            ("TRAFFICGEN",), "Trex", i, "VSperf class name, case-sensitive; the peer's generator is trex"
        ),
        Setting(
            ("TRAFFICGEN_TREX_HOST_IP_ADDR",), peer.address, i, f"TRex host {peer.host}: ping, ssh, TCP 4501"
        ),
        Setting(("TRAFFICGEN_TREX_USER",), peer.user, i, "ssh user VSperf checks t-rex-64 with"),
        Setting(
            ("TRAFFICGEN_TREX_BASE_DIR",),
            trex.install_dir + "/",
            i,
            "VSperf appends 't-rex-64' to it: ends in '/'",
        ),
        Setting(
            ("PATHS", "trafficgen", "Trex", "src", "path"),
            f"{trex.install_dir}/{TREX_CLIENT_SUBDIR}",
            i,
            "TRex's client library, unpacked on the DUT by setup_trex from the same tarball",
        ),
        Setting(
            ("TRAFFICGEN_TREX_PORT1",),
            tg.nics[trex.ports[0]],
            i,
            "informational (no VSperf code reads it): TRex's port 0, facing the DUT's port 0",
        ),
        Setting(
            ("TRAFFICGEN_TREX_PORT2",),
            tg.nics[trex.ports[1]],
            i,
            "informational (no VSperf code reads it): TRex's port 1, facing the DUT's port 1",
        ),
        Setting(
            ("TRAFFICGEN_TREX_LATENCY_PPS",), TREX_LATENCY_PPS, i, "[pps] per direction; 0 disables latency"
        ),
        Setting(("TRAFFICGEN_TREX_LEARNING_MODE",), True, i, "learning frames before each test"),
        Setting(("TRAFFICGEN_TREX_LEARNING_DURATION",), TREX_LEARNING_DURATION_S, i, "[s]"),
        Setting(
            ("TRAFFICGEN_TREX_RFC2544_MAX_REPEAT",),
            0,
            i,
            "read by the driver, defined only in 10_custom.conf",
        ),
        Setting(
            ("TRAFFICGEN_TREX_RFC2544_BINARY_SEARCH_LOSS_VERIFICATION",),
            False,
            i,
            "read by the driver, defined only in 10_custom.conf",
        ),
        Setting(
            ("TRAFFICGEN_TREX_VERIFICATION_MODE",), False, i, "no extra verification run after the search"
        ),
    ]


def _dut_settings(scenario: Scenario, host: HostInventory) -> list[Setting]:
    """Return the inventory layer's DUT part: DPDK memory, CPU masks, guest image and pinning.

    :raises FieldError: naming ``cpus.guest`` or ``guest_image`` when the scenario's guests lack them.
    """
    i = Layer.INVENTORY
    settings: list[Setting] = []
    if scenario.dpdk_in_host:
        lcore_mask = "0x" + cpu_mask(host.ovs_lcore_cpus)
        socket_mem = [str(host.socket_mem_mb) if n == host.numa_node else "0" for n in range(host.numa_nodes)]
        settings += [
            Setting(
                ("DPDK_SOCKET_MEM",),
                socket_mem,
                i,
                f"[MiB] per NUMA node, strings; NICs on node {host.numa_node}",
            ),
            Setting(
                ("VSWITCH_PMD_CPU_MASK",),
                cpu_mask(host.pmd_cpus),
                i,
                f"hex without 0x; PMD CPUs {format_cpu_list(host.pmd_cpus)}",
            ),
            Setting(
                ("VSWITCHD_DPDK_CONFIG", "dpdk-lcore-mask"),
                lcore_mask,
                i,
                f"lcore CPU(s) {format_cpu_list(host.ovs_lcore_cpus)}",
            ),
            Setting(
                ("VSWITCHD_DPDK_ARGS",), ["-c", lcore_mask, "-n", "4"], i, "legacy --dpdk form, same lcore"
            ),
        ]
    guest = scenario.guest
    vms = vm_count(scenario)
    if guest is not None and vms:
        needed = guest.vcpus * vms
        if len(host.guest_cpus) < needed:
            raise FieldError(
                f"scenario '{scenario.name}' pins {vms} guest(s) x {guest.vcpus} vCPUs = {needed} CPUs, "
                f"but the host lists {len(host.guest_cpus)} guest CPU(s).",
                field="cpus.guest",
            )
        if host.guest_image is None:
            raise FieldError(
                f"scenario '{scenario.name}' boots a guest; give its qcow2 image.",
                field="guest_image",
            )
        binding = [
            tuple(str(c) for c in host.guest_cpus[vm * guest.vcpus : (vm + 1) * guest.vcpus])
            for vm in range(vms)
        ]
        settings += [
            Setting(("GUEST_IMAGE",), [host.guest_image] * vms, i),
            Setting(("GUEST_CORE_BINDING",), list(binding), i, "host CPU per vCPU, one tuple per guest"),
        ]
    return settings


TELEMETRY_COLLECTOR = "OvsperfTelemetry"
"""Class name of our VSperf collector (``beaker_tasks/vsperf_test/collectors/ovsperf_telemetry.py``)."""

TELEMETRY_COLLECTOR_MODULE = "ovsperf_telemetry.py"
"""Its module, which ``--telemetry-collector-dir`` must hold."""


def telemetry_settings(collector_dir: Path) -> list[Setting]:
    """Return the task layer: VSperf loads our collector (pidstat + OVS counters around each test).

    VSperf picks the class named ``COLLECTOR`` among the modules of ``COLLECTOR_DIR``
    (``core/loader/loader.py``); ours subclasses VSperf's ``Pidstat``, so its logs stay.

    :raises VsperfConfigError: when ``collector_dir`` is not absolute or lacks the module.
    """
    if not collector_dir.is_absolute() or not (collector_dir / TELEMETRY_COLLECTOR_MODULE).is_file():
        raise VsperfConfigError(
            f"--telemetry-collector-dir '{one_line(collector_dir)}' is not an absolute directory "
            f"holding {TELEMETRY_COLLECTOR_MODULE}."
        )
    t = Layer.TASK
    return [
        Setting(("COLLECTOR_DIR",), str(collector_dir), t, "VSperf's pidstat + OVS counters"),
        Setting(("COLLECTOR",), TELEMETRY_COLLECTOR, t, "writes ovsperf-telemetry-raw/test-<index>.json"),
    ]


POD_CLASS = "OvsperfNoPod"
"""Class name of our no-op VSperf pod (``beaker_tasks/vsperf_test/pods/ovsperf_nopod.py``)."""

POD_MODULE = "ovsperf_nopod.py"
"""Its module, which the pod directory must hold."""

DEFAULT_POD_DIR = Path(__file__).resolve().parents[1] / "beaker_tasks" / "vsperf_test" / "pods"
"""The pod directory of this checkout (the vsperf_test task passes its own with ``--pod-dir``)."""

HOST_HUGEPAGE_DIR = "/dev/hugepages"
"""The host's own hugetlbfs mount (systemd's ``dev-hugepages.mount``), VSperf's default ``HUGEPAGE_DIR``."""

DEFAULT_HUGEPAGE_DIR = "/dev/hugepages-vsperf"
"""VSperf's own hugetlbfs mount point, which the vsperf_test task mounts before VSperf runs."""


DEFAULT_GUEST_DPDK_DIR = "/opt/ovsperf/vsperf-guest-dpdk"
"""Where the vsperf_test task's setup installs ``beaker_tasks/vsperf_test/guest-dpdk`` on the DUT."""


def guest_dpdk_settings(scenario: Scenario, guest_dpdk_dir: str) -> list[Setting]:
    """Return the task layer's DPDK "source tree" for testpmd guests, none for other scenarios.

    With ``GUEST_LOOPBACK = ['testpmd']`` and ``PATHS['dpdk']['type'] = 'bin'`` VSperf 90ef48d4 rsyncs
    ``PATHS['dpdk']['src']['path']`` into each guest's share as ``DPDK/``
    (``testcases/testcase.py`` ``_copy_fwd_tools_for_guest``; ``tools/functions.py``
    ``settings_update_paths`` copies the path into ``TOOLS['dpdk_src']`` unchecked, so a p2p test
    never needs it), runs its ``./*tools/dpdk*bind.py`` and ``make`` + ``./testpmd`` in
    ``app/test-pmd`` in the guest (``vnfs/qemu/qemu.py`` ``_configure_testpmd``) and reads its
    ``lib/librte_eal/common/include/rte_version.h`` for the results (``tools/systeminfo.py``
    ``get_version('loopback_testpmd')``). ``guest_dpdk_dir`` holds our adapter that runs the guest's
    packaged tools instead. Only testpmd guests get the setting: other configurations stay as they were.

    :raises VsperfConfigError: when ``guest_dpdk_dir`` is not an absolute, normalised path.
    """
    path = Path(guest_dpdk_dir)
    if not path.is_absolute() or str(path) != guest_dpdk_dir or ".." in path.parts:
        raise VsperfConfigError(
            f"--guest-dpdk-dir '{one_line(guest_dpdk_dir)}' is not an absolute, normalised directory."
        )
    guest = scenario.guest
    if guest is None or vm_count(scenario) == 0 or guest.loopback is not GuestLoopback.TESTPMD:
        return []
    return [
        Setting(
            ("PATHS", "dpdk", "src", "path"),
            guest_dpdk_dir,
            Layer.TASK,
            "vsperf_test's adapter: VSperf copies it into each guest as DPDK/; it runs the packaged testpmd",
        )
    ]


def pod_settings(pod_dir: Path) -> list[Setting]:
    """Return the task layer's pod: VSperf loads our no-op pod instead of its Kubernetes one.

    VSperf 10 makes a pod of class ``POD`` (default ``'Papi'``, which reads a kube-config and fails
    with "Invalid kube-config file" on a host without Kubernetes) for every ``p2p`` test, loading it
    from the modules of ``POD_DIR`` (``core/pod_controller.py``, ``core/loader/loader.py``).

    :raises VsperfConfigError: when ``pod_dir`` is not absolute or lacks the module.
    """
    if not pod_dir.is_absolute() or not (pod_dir / POD_MODULE).is_file():
        raise VsperfConfigError(
            f"--pod-dir '{one_line(pod_dir)}' is not an absolute directory holding {POD_MODULE} "
            "(VSperf makes a Kubernetes pod for every p2p test without it)."
        )
    t = Layer.TASK
    return [
        Setting(("POD_DIR",), str(pod_dir), t, "no Kubernetes here: VSperf's 'Papi' pod needs a kube-config"),
        Setting(("POD",), POD_CLASS, t, "a pod that does nothing, made for every p2p test"),
    ]


def hugepage_settings(hugepage_dir: str) -> list[Setting]:
    """Return the task layer's ``HUGEPAGE_DIR``: VSperf's own mount, never the host's.

    VSperf (``testcases/testcase.py``, ``tools/hugepages.py``) mounts hugetlbfs at ``HUGEPAGE_DIR``
    only when no hugetlbfs is mounted anywhere, yet after every test that uses DPDK or a guest it
    runs ``umount HUGEPAGE_DIR`` whenever any hugetlbfs is mounted. With the default
    ``/dev/hugepages`` that unmounts the host's mount; QEMU backs guest memory with
    ``HUGEPAGE_DIR`` (``mem-path``). So it names a mount point of VSperf's own: the vsperf_test
    task stacks one hugetlbfs mount there per test (each test's ``umount`` takes one, so every
    test still finds hugetlbfs there) and removes what is left after VSperf.

    :raises VsperfConfigError: when ``hugepage_dir`` is not an absolute, normalised path, or is the
        host's mount (or a directory above it).
    """
    path = Path(hugepage_dir)
    host = Path(HOST_HUGEPAGE_DIR)
    if not path.is_absolute() or str(path) != hugepage_dir or ".." in path.parts:
        raise VsperfConfigError(
            f"--hugepage-dir '{one_line(hugepage_dir)}' is not an absolute, normalised directory."
        )
    if path == host or path in host.parents:
        raise VsperfConfigError(
            f"--hugepage-dir '{one_line(hugepage_dir)}' would make VSperf unmount the host's "
            f"{HOST_HUGEPAGE_DIR} after each test; give a mount point of VSperf's own "
            f"(default {DEFAULT_HUGEPAGE_DIR})."
        )
    return [
        Setting(
            ("HUGEPAGE_DIR",),
            hugepage_dir,
            Layer.TASK,
            f"VSperf unmounts it after each test: its own hugetlbfs, never the host's {HOST_HUGEPAGE_DIR}",
        )
    ]


def merge_layers(layers: Iterable[list[Setting]]) -> tuple[Setting, ...]:
    """Merge layers in order; a later setting with the same target replaces the earlier one.

    :returns: the effective settings, each at the position of its last assignment.
    """
    merged: dict[tuple[str, ...], Setting] = {}
    for layer in layers:
        for setting in layer:
            merged.pop(setting.target, None)
            merged[setting.target] = setting
    return tuple(merged.values())


def render(settings: tuple[Setting, ...], header: Iterable[str]) -> str:
    """Return the conf file text: comment header, then one ``TARGET = literal`` line per setting.

    A list setting appended to (:attr:`~vsperf_configs.model.Setting.append`) is written
    ``NAME = NAME + literal``. VSperf executes the file as Python, so nothing from outside may
    leave its token or line: values and dict keys are ``repr()`` literals, and every comment is
    escaped onto its one line (``ovsperf_common.runner.one_line``: a newline in a description or
    path cannot start a statement).
    """
    lines = [f"# {one_line(line)}" if line else "#" for line in header]
    current: Layer | None = None
    for setting in settings:
        if setting.layer is not current:
            current = setting.layer
            lines += ["", f"# --- {current.value} ---"]
        target = setting.target[0] + "".join(f"[{key!r}]" for key in setting.target[1:])
        value = f"{target} + {setting.value!r}" if setting.append else repr(setting.value)
        line = f"{target} = {value}"
        if setting.comment:
            line += f"  # {one_line(setting.comment)}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def generate_config(
    scenario_name: str,
    hostname: str,
    inventory_path: Path,
    catalog_path: Path | None = None,
    telemetry_collector_dir: Path | None = None,
    pod_dir: Path = DEFAULT_POD_DIR,
    hugepage_dir: str = DEFAULT_HUGEPAGE_DIR,
    guest_dpdk_dir: str = DEFAULT_GUEST_DPDK_DIR,
) -> GeneratedConfig:
    """Build the VSperf conf file for ``scenario_name`` on the DUT ``hostname``.

    With ``telemetry_collector_dir`` VSperf also loads our collector from there
    (:func:`telemetry_settings`). VSperf always loads our no-op pod from ``pod_dir``
    (:func:`pod_settings`) and uses ``hugepage_dir`` as its own hugetlbfs mount
    (:func:`hugepage_settings`); testpmd guests get ``guest_dpdk_dir`` as their DPDK tree
    (:func:`guest_dpdk_settings`).

    :raises VsperfConfigError: when the catalog cannot be loaded or has no such scenario, when
        ``pod_dir`` lacks our pod, ``hugepage_dir`` is the host's mount, or ``guest_dpdk_dir``
        is not an absolute, normalised path.
    :raises InventoryError: when the inventory cannot be read, has no entry for ``hostname``, the
        entry is not a DUT or lacks what the scenario needs.
    """
    try:
        scenario = load_catalog(catalog_path).get(scenario_name)
    except CatalogError as err:
        raise VsperfConfigError(str(err)) from err
    inventory = load_inventory(inventory_path)
    host = inventory.get(hostname)
    try:
        peer = host.moongen
        tg = trex_peer(host, inventory.hosts) if peer and peer.generator is VsperfTrafficgen.TREX else None
        layers = [default_settings(), scenario_settings(scenario), inventory_settings(scenario, host, tg)]
        generator = peer.generator if peer is not None else VsperfTrafficgen.MOONGEN
        layers.insert(2, overlay_settings(scenario, generator) + conntrack_settings(scenario))
        if telemetry_collector_dir is not None:
            layers.append(telemetry_settings(telemetry_collector_dir))
        task = pod_settings(pod_dir) + hugepage_settings(hugepage_dir)
        layers.append(task + guest_dpdk_settings(scenario, guest_dpdk_dir))
    except FieldError as err:
        raise InventoryError(err.reason, path=inventory.path, host=host.hostname, field=err.field) from err
    settings = merge_layers(layers)
    tests = tuple((index, test.value, test.topology.value) for index, test in enumerate(scenario.tests))
    header = [
        f"VSperf configuration for scenario '{scenario.name}' on DUT '{host.hostname}'.",
        f"Generated by vsperf-config from the catalog and '{inventory.path}'; do not edit, regenerate.",
        f"Scenario: {scenario.description}",
        "VSperf tests: " + " ".join(f"{name} ({dep})" for _, name, dep in tests),
        "Layers, later wins: defaults -> scenario -> inventory -> task. Only UPPER_CASE assignments;",
        "dict settings are changed key by key so VSperf's other defaults survive.",
    ]
    if needs_integration(scenario):
        header.append("Overlay tests: VSperf integration tests; vsperf_test runs them with --integration.")
    if any(t.conntrack is not None for t in scenario.tests):
        header.append("Conntrack tests: ours (VSperf has none), appended to PERFORMANCE_TESTS below.")
    log.info("Generated VSperf configuration for scenario '%s' on '%s'.", scenario.name, host.hostname)
    return GeneratedConfig(text=render(settings, header), settings=settings, tests=tests)
