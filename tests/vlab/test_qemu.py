"""The QEMU command line of each lab VM: accelerator, IOMMU, crosswise data links, SSH on 127.0.0.1 only."""

from __future__ import annotations

from pathlib import Path

import pytest

from vlab.config import LabConfig, VlabError
from vlab.qemu import Accel, VmFiles, qemu_argv


def _files(vm: str) -> VmFiles:
    base = Path("/s/vms") / vm
    return VmFiles(
        disk=base / "root.qcow2",
        bootloader=Path("/s/image/grub.lnx"),
        serial_log=base / "console.log",
        qmp_socket=base / "qmp.sock",
    )


def _values(argv: list[str], option: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == option]


def test_tcg_has_a_bounded_translation_cache_and_kvm_the_host_cpu() -> None:
    config = LabConfig(Path("/s"), tb_size_mib=128)
    tcg = qemu_argv("tg", config, _files("tg"), Accel.TCG)
    kvm = qemu_argv("tg", config, _files("tg"), Accel.KVM)
    assert (_values(tcg, "-accel"), _values(tcg, "-cpu")) == (["tcg,tb-size=128"], ["max"])
    assert (_values(kvm, "-accel"), _values(kvm, "-cpu")) == (["kvm"], ["host"])
    assert (
        tcg[0] == "qemu-system-x86_64" and _values(tcg, "-m") == ["2048M"] and _values(tcg, "-smp") == ["2"]
    )


def test_the_vm_has_an_emulated_iommu_and_the_kernel_turns_it_on() -> None:
    argv = qemu_argv("dut", LabConfig(Path("/s")), _files("dut"), Accel.TCG)
    assert _values(argv, "-machine") == ["q35"]
    devices = _values(argv, "-device")
    assert devices[0] == "intel-iommu,intremap=on"  # before every PCI device
    # The kernel and its arguments come from the guest's GRUB (grub.cfg), not from QEMU.
    assert _values(argv, "-kernel") == ["/s/image/grub.lnx"]
    assert _values(argv, "-append") == [] and _values(argv, "-initrd") == []
    data = [d for d in devices if "netdev=data" in d]
    assert data == [
        "virtio-net-pci,netdev=data0,mac=52:54:00:a1:00:00,addr=0x4,disable-legacy=on,iommu_platform=on",
        "virtio-net-pci,netdev=data1,mac=52:54:00:a1:00:01,addr=0x5,disable-legacy=on,iommu_platform=on",
    ]


def _udp_ends(argv: list[str]) -> dict[str, tuple[int, int]]:
    """netdev id → (local port, remote port) of the socket netdevs."""
    ends = {}
    for spec in _values(argv, "-netdev"):
        kind, *options = spec.split(",")
        if kind != "socket":
            continue
        fields = dict(o.split("=", 1) for o in options)
        host_r, port_r = fields["udp"].split(":")
        host_l, port_l = fields["localaddr"].split(":")
        assert (host_r, host_l) == ("127.0.0.1", "127.0.0.1")
        ends[fields["id"]] = (int(port_l), int(port_r))
    return ends


def test_two_data_nics_and_the_interconnect_are_wired_crosswise_over_loopback_udp() -> None:
    config = LabConfig(Path("/s"), data_port=50000)
    tg = _udp_ends(qemu_argv("tg", config, _files("tg"), Accel.TCG))
    dut = _udp_ends(qemu_argv("dut", config, _files("dut"), Accel.TCG))
    assert tg == {"data0": (50000, 50001), "data1": (50002, 50003), "lan": (50004, 50005)}
    assert dut == {"data0": (50001, 50000), "data1": (50003, 50002), "lan": (50005, 50004)}
    for nic in ("data0", "data1", "lan"):  # each end sends to where the other listens
        assert tg[nic][1] == dut[nic][0] and dut[nic][1] == tg[nic][0]


def test_ssh_is_forwarded_on_127_0_0_1_only_one_port_per_vm() -> None:
    config = LabConfig(Path("/s"), ssh_port=3300)
    for vm, port in (("tg", 3300), ("dut", 3301)):
        argv = qemu_argv(vm, config, _files(vm), Accel.TCG)
        user = [n for n in _values(argv, "-netdev") if n.startswith("user,")]
        assert user == [f"user,id=mgmt,hostfwd=tcp:127.0.0.1:{port}-:22"]
        assert "0.0.0.0" not in " ".join(argv)
        assert "virtio-net-pci,netdev=mgmt,mac=52:54:00:00:01:01,addr=0x3" in _values(argv, "-device")
        mac = "52:54:00:b0:00:00" if vm == "tg" else "52:54:00:b1:00:00"
        assert f"virtio-net-pci,netdev=lan,mac={mac},addr=0x6" in _values(argv, "-device")


def test_resume_niceness_and_the_control_files() -> None:
    argv = qemu_argv("tg", LabConfig(Path("/s")), _files("tg"), Accel.TCG, loadvm="vlab-ready", nice=19)
    assert argv[:4] == ["nice", "-n", "19", "qemu-system-x86_64"]
    assert argv[-2:] == ["-loadvm", "vlab-ready"]
    assert _values(argv, "-qmp") == ["unix:/s/vms/tg/qmp.sock,server=on,wait=off"]
    assert _values(argv, "-serial") == ["file:/s/vms/tg/console.log"]
    assert _values(argv, "-drive") == ["file=/s/vms/tg/root.qcow2,if=none,id=root,format=qcow2,discard=unmap"]
    assert "-nodefaults" in argv and "-loadvm" not in qemu_argv(
        "tg", LabConfig(Path("/s")), _files("tg"), Accel.TCG
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"ssh_port": 80}, "'ssh_port' must be within 1024 and 65533, got 80."),
        ({"data_port": 65534}, "'data_port' must be within 1024 and 65529, got 65534."),
        ({"ssh_port": 5000, "data_port": 4998},
         "'ssh_port' 5000 and 'data_port' 4998: the SSH ports and the 6 "
                                                "link ports overlap; choose ranges apart."),
        ({"memory_mib": 256}, "'memory_mib' must be at least 512 MiB, got 256."),
        ({"tb_size_mib": 8}, "'tb_size_mib' must be at least 32 MiB, got 8."),
        ({"cpus": 0}, "'cpus' must be within 1 and 64, got 0."),
    ],
)  # fmt: skip
def test_a_config_that_cannot_work_is_refused_naming_the_field(fields: dict[str, int], message: str) -> None:
    with pytest.raises(VlabError) as caught:
        LabConfig(Path("/s"), **fields)  # type: ignore[arg-type]
    assert str(caught.value) == message
