"""List what the local lab needs from this machine: one table for ``doctor`` and the run's plan.

Each requirement says what is checked, what was found, and the fix; ``doctor`` prints every one,
and :func:`~ovsperf_lab.plan.plan_run` refuses a scenario with the sentences of the ones its run
needs and the machine lacks. The thresholds (CPUs for the PMD threads asked for, hugepages for
the memory the run will reserve) come from the same :class:`Demand` in both.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

from ovsperf_lab.machine import MachineFacts

HUGEPAGE_MB = 2
"""Size of the hugepages the lab uses [MiB]."""

HUGEPAGE_HEADROOM = 64
"""Hugepages kept free beyond what the processes reserve (DPDK's own allocations) [1]."""


class Need(enum.Enum):
    """Which runs need a requirement."""

    ALWAYS = "always"
    """Every run (OVS-DPDK, the generator, hugepages, root)."""
    PVP_TESTPMD = "pvp-testpmd"
    """PVP with the testpmd process as forwarder."""
    PVP_GUEST = "pvp-guest"
    """PVP or PVVP through QEMU guests (``--guest-image``)."""
    PVP_GUEST_KVM = "pvp-guest-kvm"
    """Guests under KVM (``--guest-accel kvm``, or the default where ``/dev/kvm`` opens)."""
    KERNEL_DATAPATH = "kernel-datapath"
    """The kernel datapath (OvsVanilla)."""


@dataclass(frozen=True)
class Demand:
    """What one run (or, for ``doctor``, the default run) asks of the machine."""

    pmd_cores: int
    """OVS PMD threads; one more CPU is needed for the generator [1]."""
    memory_mb: int
    """Hugepage memory OVS, the generator and the forwarder reserve together [MiB]."""
    needs: frozenset[Need]
    """Which requirement groups apply."""
    guest_image: Path | None = None
    """The guest image for :attr:`Need.PVP_GUEST`."""
    pmd_cpus_named: bool = False
    """Whether the PMD CPUs are named (``--pmd-cpus``): checked against the cpuset, not counted
    among the CPUs this process runs on."""
    local_generator: bool = True
    """Whether the generator runs here and needs a CPU of its own (not on a TG host or a TRex server)."""
    guests: int = 0
    """QEMU guests of the run [1] (their memory is part of :attr:`memory_mb`)."""
    guest_memory_mb: int = 0
    """Memory of each guest [MiB]."""

    @property
    def hugepages_2m(self) -> int:
        """Return the free 2 MB hugepages the run needs: its memory plus headroom [1]."""
        return self.memory_mb // HUGEPAGE_MB + HUGEPAGE_HEADROOM


@dataclass(frozen=True)
class Check:
    """One requirement, checked on this machine."""

    name: str
    """What is checked, e.g. ``'2 MB hugepages'``."""
    ok: bool
    """Whether the machine meets it."""
    detail: str
    """What was found."""
    problem: str
    """The sentence that says what is missing, for a refusal (meaningful when not ok)."""
    fix: str
    """The command or step that fixes it."""
    need: Need
    """Which runs need it."""

    @property
    def refusal(self) -> str:
        """Return the refusal sentence: the problem and its fix."""
        return f"{self.problem}; {self.fix}."


def check_machine(facts: MachineFacts, demand: Demand) -> list[Check]:
    """Return every requirement checked against ``facts`` for ``demand``, ALWAYS ones first."""
    cpus_needed = (0 if demand.pmd_cpus_named else demand.pmd_cores) + (1 if demand.local_generator else 0)
    cpus_minimum = max(cpus_needed, 2 if demand.local_generator and not demand.pmd_cpus_named else 1)
    pages = demand.hugepages_2m
    free_mb = facts.hugepages_2m_free * HUGEPAGE_MB
    ovs = facts.ovs_vswitchd_dpdk
    missing_tools = sorted(t for t, path in facts.ovs_tools.items() if path is None)
    image = demand.guest_image
    guests = (
        f", of which {demand.guests} QEMU guest(s) x {demand.guest_memory_mb} MiB ('--guest-memory-mb')"
        if demand.guests
        else ""
    )
    return [
        Check(
            "root",
            facts.is_root,
            "running as root" if facts.is_root else "not root",
            "DPDK needs root (hugepages, vhost-user)",
            "run with sudo",
            Need.ALWAYS,
        ),
        Check(
            "CPUs",
            len(facts.cpus) >= cpus_minimum,
            f"{len(facts.cpus)} usable ({','.join(map(str, facts.cpus))}); 1 for the generator, "
            f"{max(len(facts.cpus) - 1, 0)} for OVS PMD threads",
            f"The lab needs at least 2 CPUs (generator and OVS PMD); {demand.pmd_cores} OVS PMD threads "
            f"need {cpus_needed} CPUs (one stays for the generator), this process may use {len(facts.cpus)}",
            f"use '--pmd-cores {max(len(facts.cpus) - 1, 1)}' or a machine (cpuset) with more CPUs",
            Need.ALWAYS,
        ),
        Check(
            "hugetlbfs",
            facts.hugetlbfs_mounted,
            "/dev/hugepages mounted" if facts.hugetlbfs_mounted else "/dev/hugepages not mounted",
            "No hugetlbfs at '/dev/hugepages'",
            "run 'sudo scripts/setup-debian.sh' (or mount -t hugetlbfs -o pagesize=2M nodev /dev/hugepages)",
            Need.ALWAYS,
        ),
        Check(
            "2 MB hugepages",
            facts.hugepages_2m_free >= pages,
            f"{facts.hugepages_2m_total} reserved, {facts.hugepages_2m_free} free ({free_mb} MiB); "
            f"this run needs {pages} ({demand.memory_mb} MiB + {HUGEPAGE_HEADROOM} pages headroom)",
            f"{pages} free 2 MB hugepages are needed ({demand.memory_mb} MiB{guests}, plus "
            f"{HUGEPAGE_HEADROOM} pages headroom), {facts.hugepages_2m_free} are free ({free_mb} MiB)",
            f"run 'echo {max(pages, facts.hugepages_2m_total + pages - facts.hugepages_2m_free)} "
            "> /proc/sys/vm/nr_hugepages' as root (or sudo scripts/setup-debian.sh)",
            Need.ALWAYS,
        ),
        Check(
            "OVS with DPDK",
            ovs is not None,
            f"{ovs} (OVS {facts.ovs_version}, DPDK {facts.dpdk_version})"
            if ovs
            else "ovs-vswitchd-dpdk missing",
            "The DPDK build of ovs-vswitchd is missing",
            "install 'openvswitch-switch-dpdk' (RHEL/Fedora: dnf install openvswitch)",
            Need.ALWAYS,
        ),
        Check(
            "OVS tools",
            not missing_tools and facts.ovs_schema,
            ", ".join(f"{k}={'ok' if v else 'MISSING'}" for k, v in facts.ovs_tools.items()),
            f"OVS tools missing ({', '.join(missing_tools) or 'schema'})",
            "install 'openvswitch-switch'",
            Need.ALWAYS,
        ),
        Check(
            "dpdk-testpmd (PVP forwarder)",
            facts.testpmd is not None,
            facts.testpmd or "missing",
            "PVP needs 'dpdk-testpmd' as forwarder",
            "install 'dpdk' (Debian) or 'dpdk-tools' (RHEL/Fedora)",
            Need.PVP_TESTPMD,
        ),
        Check(
            "QEMU (PVP with a guest image)",
            facts.qemu is not None,
            facts.qemu or "missing",
            "A guest image was given but QEMU is missing",
            "install 'qemu-system-x86' (RHEL: dnf install qemu-kvm)",
            Need.PVP_GUEST,
        ),
        Check(
            "KVM (PVP with a guest image)",
            facts.kvm,
            "/dev/kvm usable" if facts.kvm else "/dev/kvm missing or not accessible",
            "A guest image was given with '--guest-accel kvm' but '/dev/kvm' is not usable",
            "enable VT-x/AMD-V and load kvm_intel/kvm_amd, or give '--guest-accel tcg'",
            Need.PVP_GUEST_KVM,
        ),
        Check(
            "guest image",
            image is None or image.is_file(),
            "none given" if image is None else (str(image) if image.is_file() else f"{image} missing"),
            f"Guest image '{image}' does not exist",
            "give an existing qcow2 file with '--guest-image'",
            Need.PVP_GUEST,
        ),
        Check(
            "kernel openvswitch module (OvsVanilla)",
            facts.kernel_ovs_module,
            "available" if facts.kernel_ovs_module else f"not available for kernel {facts.kernel}",
            f"Vswitch 'OvsVanilla' needs the kernel 'openvswitch' module, which this kernel ({facts.kernel}) "
            "does not have",
            "install your kernel's modules package and run 'modprobe openvswitch', or choose an "
            "OVS-DPDK scenario (ovsperf-lab list)",
            Need.KERNEL_DATAPATH,
        ),
    ]


def unmet(facts: MachineFacts, demand: Demand) -> list[str]:
    """Return the refusal sentence of every requirement ``demand`` needs and ``facts`` lack."""
    return [c.refusal for c in check_machine(facts, demand) if c.need in demand.needs and not c.ok]
