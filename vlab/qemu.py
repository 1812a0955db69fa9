"""Build the QEMU command line of one lab VM (pure: no process is started here).

Each VM is a q35 machine with an emulated Intel IOMMU (``intel_iommu=on`` on the guest's kernel
command line), so that ``vfio-pci`` binds a NIC inside the VM as it does on a real host; its data
NICs are virtio 1.0 devices behind that IOMMU (``iommu_platform=on``: DMA is translated, as DPDK's
vfio expects). Data NIC ``i`` of the TG and data NIC ``i`` of the DUT are the two ends of one link
made of loopback UDP sockets (``-netdev socket,udp=…,localaddr=…``): each end listens on its own
port and sends to the other's. The management NIC is user networking with the guest's SSH forwarded
to ``127.0.0.1`` only; a third link, the interconnect, joins the two VMs as a lab network does
(static addresses, names in /etc/hosts: the DUT reaches ``tg`` over SSH there). The root disk is a
qcow2 overlay (QEMU ``savevm``/``loadvm`` keep the VM's state in it); QEMU loads the image's GRUB
core image with ``-kernel`` (:data:`vlab.image.BOOTLOADER`), which boots the kernel
``/boot/grub/grub.cfg`` names with its arguments, on every boot and reboot. Each VM is named by the
hostname ``up`` gives it on its first boot. PCI addresses are fixed, so the guest's device names and
BDFs are the same on every boot (docs/vlab.md lists them).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ovsperf_common.spec import SpecEnum
from vlab.config import DATA_NICS_PER_VM, INTERCONNECT_LINK, LabConfig, interconnect_mac
from vlab.image import MGMT_MAC

DISK_SLOT = 2
"""PCI slot of the virtio-blk root disk (guest 0000:00:02.0)."""
MGMT_SLOT = 3
"""PCI slot of the management NIC (guest 0000:00:03.0, ``enp0s3``)."""
FIRST_DATA_SLOT = 4
"""PCI slot of data NIC 0 (guest 0000:00:04.0, ``enp0s4``); NIC ``i`` is at slot 4 + i."""
INTERCONNECT_SLOT = FIRST_DATA_SLOT + DATA_NICS_PER_VM
"""PCI slot of the interconnect NIC (guest 0000:00:06.0, ``enp0s6``): the hosts' own network."""


class Accel(SpecEnum):
    """How QEMU runs the guest's CPUs."""

    KVM = "kvm"
    TCG = "tcg"


@dataclass(frozen=True)
class VmFiles:
    """The files one VM's QEMU uses."""

    disk: Path
    """qcow2 overlay of the root disk (backed by the image)."""
    bootloader: Path
    """The GRUB core image QEMU loads with ``-kernel``."""
    serial_log: Path
    """The guest's serial console, appended to."""
    qmp_socket: Path
    """QMP control socket (savevm, loadvm, quit)."""


def data_mac(vm: str, nic: int) -> str:
    """Return the MAC of data NIC ``nic`` of ``vm``: ``52:54:00:a<vm>:00:0<nic>``, stable per VM and NIC."""
    return f"52:54:00:{0xA0 + (0 if vm == 'tg' else 1):02x}:00:{nic:02x}"


def qemu_argv(
    vm: str,
    config: LabConfig,
    files: VmFiles,
    accel: Accel,
    *,
    loadvm: str | None = None,
    nice: int = 0,
) -> list[str]:
    """Return the argv that starts VM ``vm`` (``tg`` or ``dut``) of the lab ``config``.

    :param accel: KVM where the host can run it, else TCG with a ``tb-size`` of
        ``config.tb_size_mib`` [MiB] (the translation cache counts in the VM's RSS).
    :param loadvm: a saved VM state to resume from instead of booting (``-loadvm``).
    :param nice: niceness to run QEMU at (0: none).
    """
    accel_option = "kvm" if accel is Accel.KVM else f"tcg,tb-size={config.tb_size_mib}"
    argv = ["nice", "-n", str(nice)] if nice else []
    argv += [
        "qemu-system-x86_64",
        "-name", f"{vm},process=ovsperf-vlab-{vm}",
        "-machine", "q35",
        "-accel", accel_option,
        "-cpu", "host" if accel is Accel.KVM else "max",
        "-smp", str(config.cpus),
        "-m", f"{config.memory_mib}M",
        "-nodefaults",
        "-display", "none",
        "-vga", "none",
        "-device", "intel-iommu,intremap=on",
        "-serial", f"file:{files.serial_log}",
        "-qmp", f"unix:{files.qmp_socket},server=on,wait=off",
        "-kernel", str(files.bootloader),
        "-drive", f"file={files.disk},if=none,id=root,format=qcow2,discard=unmap",
        "-device", f"virtio-blk-pci,drive=root,addr={DISK_SLOT:#x}",
        "-netdev", f"user,id=mgmt,hostfwd=tcp:127.0.0.1:{config.ssh_port_of(vm)}-:22",
        "-device", f"virtio-net-pci,netdev=mgmt,mac={MGMT_MAC},addr={MGMT_SLOT:#x}",
    ]  # fmt: skip
    for nic in range(DATA_NICS_PER_VM):
        local, remote = config.data_ports_of(vm, nic)
        argv += [
            "-netdev", f"socket,id=data{nic},udp=127.0.0.1:{remote},localaddr=127.0.0.1:{local}",
            "-device",
            f"virtio-net-pci,netdev=data{nic},mac={data_mac(vm, nic)},addr={FIRST_DATA_SLOT + nic:#x},"
            "disable-legacy=on,iommu_platform=on",
        ]  # fmt: skip
    local, remote = config.data_ports_of(vm, INTERCONNECT_LINK)
    argv += [
        "-netdev", f"socket,id=lan,udp=127.0.0.1:{remote},localaddr=127.0.0.1:{local}",
        "-device", f"virtio-net-pci,netdev=lan,mac={interconnect_mac(vm)},addr={INTERCONNECT_SLOT:#x}",
    ]  # fmt: skip
    if loadvm is not None:
        argv += ["-loadvm", loadvm]
    return argv
