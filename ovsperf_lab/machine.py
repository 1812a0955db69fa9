"""Probe the machine: CPUs, hugepages, binaries, KVM, kernel OVS module, versions (read-only).

The facts feed the scenario planner (refusals before anything starts), ``ovsperf-lab doctor``
and the environment section of the results (STYLE.md §5: record the DUT environment).
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ovsperf_lab.ovs import OVS_DPDK_VSWITCHD, OVS_SCHEMA


@dataclass(frozen=True)
class MachineFacts:
    """What this machine offers the lab."""

    cpus: tuple[int, ...]
    """CPUs this process may run on (``sched_getaffinity``), ascending."""
    hugepages_2m_total: int
    """2 MiB hugepages reserved [1]."""
    hugepages_2m_free: int
    """2 MiB hugepages free now [1]."""
    hugetlbfs_mounted: bool
    """Whether ``/dev/hugepages`` is a hugetlbfs mount."""
    ovs_vswitchd_dpdk: Path | None
    """The DPDK build of ovs-vswitchd, ``None`` when missing."""
    ovs_tools: dict[str, str | None]
    """``ovsdb-server``/``ovsdb-tool``/``ovs-vsctl``/``ovs-ofctl``/``ovs-appctl`` → path or ``None``."""
    ovs_schema: bool
    """Whether the OVS database schema is installed."""
    testpmd: str | None
    """Path of ``dpdk-testpmd``, ``None`` when missing."""
    qemu: str | None
    """Path of ``qemu-system-x86_64`` (or ``/usr/libexec/qemu-kvm``), ``None`` when missing."""
    kvm: bool
    """Whether ``/dev/kvm`` can be opened read-write."""
    kernel_ovs_module: bool
    """Whether the kernel ``openvswitch`` module is loaded or loadable (for OvsVanilla)."""
    is_root: bool
    """Whether we run as root (DPDK and hugepages need it)."""
    kernel: str
    """``uname -r``."""
    cpu_model: str
    """``model name`` from ``/proc/cpuinfo``."""
    os_name: str
    """``PRETTY_NAME`` from ``/etc/os-release``."""
    memory_kb: int
    """``MemTotal`` [kB]."""
    cmdline: str
    """``/proc/cmdline``."""
    ovs_version: str | None
    """``ovs-vswitchd-dpdk --version`` first line's version, e.g. ``'3.1.0'``."""
    dpdk_version: str | None
    """DPDK version the OVS build reports, e.g. ``'22.11.11'``."""
    pinnable_cpus: tuple[int, ...] = ()
    """CPUs a thread of this process may be pinned to: the cgroup cpuset's effective CPUs, which
    include CPUs isolated from the scheduler (tuned cpu-partitioning leaves this process on the
    housekeeping CPUs, yet OVS pins its PMD threads to isolated ones); empty: same as :attr:`cpus`."""


def _meminfo() -> dict[str, int]:
    values: dict[str, int] = {}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            key, _, rest = line.partition(":")
            values[key] = int(rest.split()[0]) if rest.split() else 0
    except OSError:
        pass
    return values


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def _kvm_usable() -> bool:
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
    except OSError:
        return False
    os.close(fd)
    return True


def _kernel_ovs_module(kernel: str) -> bool:
    if Path("/sys/module/openvswitch").exists():
        return True
    modules = Path("/lib/modules") / kernel
    if not modules.is_dir():
        return False
    return any(modules.rglob("openvswitch.ko*"))


def _ovs_versions(binary: Path | None) -> tuple[str | None, str | None]:
    if binary is None:
        return None, None
    try:
        out = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None, None
    ovs = re.search(r"Open vSwitch\)\s+(\S+)", out)
    dpdk = re.search(r"^DPDK\s+(\S+)", out, re.MULTILINE)
    return (ovs.group(1) if ovs else None, dpdk.group(1) if dpdk else None)


def find_dpdk_vswitchd() -> Path | None:
    """Return an ovs-vswitchd built with DPDK, ``None`` when there is none.

    Debian ships it as ``/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk`` (the
    ``ovs-vswitchd`` alternative is the non-DPDK build); RHEL/Fedora's ``/usr/sbin/ovs-vswitchd``
    is built with DPDK. A candidate counts when its ``--version`` names DPDK.
    """
    candidates = [OVS_DPDK_VSWITCHD, Path("/usr/sbin/ovs-vswitchd")]
    found = shutil.which("ovs-vswitchd")
    if found:
        candidates.append(Path(found))
    for candidate in candidates:
        if os.access(candidate, os.X_OK) and _ovs_versions(candidate)[1] is not None:
            return candidate
    return None


def parse_cpulist(text: str) -> tuple[int, ...]:
    """Parse a Linux CPU list (``0-3,8``, as in sysfs and ``--pmd-cpus``) into CPUs, ascending.

    :raises ValueError: for anything else (a reversed range, a non-number, a part over 11 characters).
    """
    cpus: set[int] = set()
    for part in text.strip().split(","):
        low, dash, high = part.strip().partition("-")
        end = high if dash else low
        if len(part) > 11 or not low.isdigit() or not end.isdigit() or int(end) < int(low):
            raise ValueError(f"{text[:60]!r} is not a CPU list such as '1' or '1,3-4'.")
        cpus.update(range(int(low), int(end) + 1))
    return tuple(sorted(cpus))


def _pinnable_cpus() -> tuple[int, ...]:
    """Return the effective CPUs of this process's cpuset (cgroup v2, else v1), else the online CPUs."""
    candidates = []
    for line in _read("/proc/self/cgroup").splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and not controllers:
            candidates.append(Path("/sys/fs/cgroup") / path.lstrip("/") / "cpuset.cpus.effective")
        elif "cpuset" in controllers.split(","):
            candidates.append(Path("/sys/fs/cgroup/cpuset") / path.lstrip("/") / "cpuset.effective_cpus")
    candidates.append(Path("/sys/devices/system/cpu/online"))
    for candidate in candidates:
        text = _read(str(candidate)).strip()
        if text:
            try:
                return parse_cpulist(text)
            except ValueError:
                continue
    return ()


def probe_machine() -> MachineFacts:
    """Return the facts of this machine (reads /proc, /sys, PATH; starts only ``--version``)."""
    mem = _meminfo()
    mounts = _read("/proc/mounts")
    kernel = platform.release()
    vswitchd = find_dpdk_vswitchd()
    model = re.search(r"^model name\s*:\s*(.*)$", _read("/proc/cpuinfo"), re.MULTILINE)
    os_name = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', _read("/etc/os-release"), re.MULTILINE)
    ovs_version, dpdk_version = _ovs_versions(vswitchd)
    qemu = shutil.which("qemu-system-x86_64") or (
        "/usr/libexec/qemu-kvm" if os.access("/usr/libexec/qemu-kvm", os.X_OK) else None
    )
    return MachineFacts(
        cpus=tuple(sorted(os.sched_getaffinity(0))),
        pinnable_cpus=_pinnable_cpus(),
        hugepages_2m_total=mem.get("HugePages_Total", 0) if mem.get("Hugepagesize") == 2048 else 0,
        hugepages_2m_free=mem.get("HugePages_Free", 0) if mem.get("Hugepagesize") == 2048 else 0,
        hugetlbfs_mounted=any(
            line.split()[1:3] == ["/dev/hugepages", "hugetlbfs"]
            for line in mounts.splitlines()
            if line.split()
        ),
        ovs_vswitchd_dpdk=vswitchd,
        ovs_tools={
            t: shutil.which(t) for t in ("ovsdb-server", "ovsdb-tool", "ovs-vsctl", "ovs-ofctl", "ovs-appctl")
        },
        ovs_schema=OVS_SCHEMA.is_file(),
        testpmd=shutil.which("dpdk-testpmd"),
        qemu=qemu,
        kvm=_kvm_usable(),
        kernel_ovs_module=_kernel_ovs_module(kernel),
        is_root=os.geteuid() == 0,
        kernel=kernel,
        cpu_model=model.group(1).strip() if model else platform.processor() or "unknown",
        os_name=os_name.group(1) if os_name else platform.system(),
        memory_kb=mem.get("MemTotal", 0),
        cmdline=_read("/proc/cmdline").strip(),
        ovs_version=ovs_version,
        dpdk_version=dpdk_version,
    )
