"""Tell the user what the local lab needs that this machine lacks, and the command that fixes it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from jobcreator.catalog import Catalog
from ovsperf_lab.errors import LabError, RefusedScenarioError
from ovsperf_lab.machine import MachineFacts
from ovsperf_lab.plan import LabOptions, plan_run

GENERATOR_BINARY = Path(__file__).resolve().parent.parent / "trafficgen" / "build" / "ovsperf-trafficgen"
"""Where ``make -C trafficgen`` puts the generator in this checkout."""


@dataclass(frozen=True)
class Check:
    """One line of the doctor's report."""

    name: str
    """What is checked."""
    ok: bool
    """Whether it is fine."""
    detail: str
    """What was found."""
    fix: str | None = None
    """Command or step that fixes it; ``None`` when ok."""
    required: bool = True
    """Whether the lab cannot run without it (``False``: only some scenarios need it)."""


def generator_binary() -> Path:
    """Return the generator binary the lab will use (``$OVSPERF_TRAFFICGEN`` overrides)."""
    override = os.environ.get("OVSPERF_TRAFFICGEN")
    return Path(override) if override else GENERATOR_BINARY


def diagnose(facts: MachineFacts) -> list[Check]:
    """Return every check, required ones first."""
    gen = generator_binary()
    free_mb = facts.hugepages_2m_free * 2
    checks = [
        Check("root", facts.is_root, "running as root" if facts.is_root else "not root", "run with sudo"),
        Check(
            "CPUs",
            len(facts.cpus) >= 2,
            f"{len(facts.cpus)} usable ({','.join(map(str, facts.cpus))}); 1 for the generator, "
            f"{max(len(facts.cpus) - 1, 0)} for OVS PMD threads",
            "use a machine (or cpuset) with at least 2 CPUs",
        ),
        Check(
            "hugetlbfs",
            facts.hugetlbfs_mounted,
            "/dev/hugepages mounted" if facts.hugetlbfs_mounted else "/dev/hugepages not mounted",
            "mount -t hugetlbfs -o pagesize=2M nodev /dev/hugepages",
        ),
        Check(
            "2 MB hugepages",
            free_mb >= 1280,
            f"{facts.hugepages_2m_total} reserved, {facts.hugepages_2m_free} free ({free_mb} MiB); "
            "P2P needs ~900 MiB, PVP ~1.2 GiB",
            "echo 1536 > /proc/sys/vm/nr_hugepages (or sudo scripts/setup-debian.sh)",
        ),
        Check(
            "OVS with DPDK",
            facts.ovs_vswitchd_dpdk is not None,
            f"{facts.ovs_vswitchd_dpdk} (OVS {facts.ovs_version}, DPDK {facts.dpdk_version})"
            if facts.ovs_vswitchd_dpdk
            else "ovs-vswitchd-dpdk missing",
            "apt-get install openvswitch-switch-dpdk (RHEL/Fedora: dnf install openvswitch)",
        ),
        Check(
            "OVS tools",
            all(facts.ovs_tools.values()) and facts.ovs_schema,
            ", ".join(f"{k}={'ok' if v else 'MISSING'}" for k, v in facts.ovs_tools.items()),
            "apt-get install openvswitch-switch",
        ),
        Check(
            "traffic generator",
            gen.is_file() and os.access(gen, os.X_OK),
            str(gen) if gen.is_file() else f"{gen} not built",
            "make -C trafficgen (needs libdpdk-dev, libjansson-dev)",
        ),
        Check(
            "dpdk-testpmd (PVP forwarder)",
            facts.testpmd is not None,
            facts.testpmd or "missing",
            "apt-get install dpdk (RHEL/Fedora: dnf install dpdk-tools)",
            required=False,
        ),
        Check(
            "KVM (PVP with a guest image)",
            facts.kvm,
            "/dev/kvm usable" if facts.kvm else "/dev/kvm missing or not accessible",
            "enable VT-x/AMD-V and load kvm_intel/kvm_amd",
            required=False,
        ),
        Check(
            "QEMU (PVP with a guest image)",
            facts.qemu is not None,
            facts.qemu or "missing",
            "apt-get install qemu-system-x86 (RHEL: dnf install qemu-kvm)",
            required=False,
        ),
        Check(
            "kernel openvswitch module (OvsVanilla)",
            facts.kernel_ovs_module,
            "available" if facts.kernel_ovs_module else f"not available for kernel {facts.kernel}",
            "install the kernel's modules package, then modprobe openvswitch",
            required=False,
        ),
    ]
    return [c if not c.ok else Check(c.name, True, c.detail, None, c.required) for c in checks]


def scenario_readiness(catalog: Catalog, facts: MachineFacts) -> list[tuple[str, str | None]]:
    """Return (scenario, ``None`` if it can run here, else the refusal) for every catalog entry."""
    out: list[tuple[str, str | None]] = []
    for name in catalog.names():
        try:
            plan_run(catalog.get(name), facts, LabOptions())
        except RefusedScenarioError as err:
            out.append((name, " ".join(err.reasons)))
        except LabError as err:
            out.append((name, str(err)))
        else:
            out.append((name, None))
    return out
