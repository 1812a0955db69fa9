"""Forwarder command lines (the QEMU guest cannot boot here without an image: its argv is checked)."""

from __future__ import annotations

from pathlib import Path

from ovsperf_lab.vnf import make_testpmd_argv, qemu_argv

SOCKS = (Path("/run/x/vm0.sock"), Path("/run/x/vm1.sock"))


def test_testpmd_forwarder_is_confined_and_serves_both_sockets() -> None:
    argv = make_testpmd_argv(
        binary="dpdk-testpmd",
        cpu=1,
        file_prefix="ovsperf-lab-x-vnf",
        memory_mb=256,
        sockets=SOCKS,
        queues=2,
        queue_size=1024,
    )
    assert argv[:3] == ["dpdk-testpmd", "--lcores", "0@1,1@1"]
    assert "--no-pci" in argv and "--in-memory" in argv and "--single-file-segments" in argv
    assert "--file-prefix=ovsperf-lab-x-vnf" in argv
    assert "net_virtio_user0,path=/run/x/vm0.sock,server=1,queues=2,queue_size=1024" in argv
    assert "net_virtio_user1,path=/run/x/vm1.sock,server=1,queues=2,queue_size=1024" in argv
    app = argv[argv.index("--") + 1 :]
    assert "--forward-mode=io" in app and "--rxq=2" in app and "--txq=2" in app


def test_qemu_guest_shares_hugepage_memory_and_never_writes_the_image() -> None:
    argv = qemu_argv(
        binary="/usr/bin/qemu-system-x86_64",
        image=Path("/img/guest.qcow2"),
        cpu=1,
        vcpus=3,
        memory_mb=2048,
        sockets=SOCKS,
        queues=2,
        serial_log=Path("/run/x/serial.log"),
    )
    assert argv[:3] == ["taskset", "-c", "1"]
    joined = " ".join(argv)
    assert "memory-backend-file,id=mem0,size=2048M,mem-path=/dev/hugepages,share=on" in joined
    assert "file=/img/guest.qcow2,if=virtio,snapshot=on" in joined
    assert "socket,id=char0,path=/run/x/vm0.sock,server=on,wait=off" in joined
    assert "type=vhost-user,id=net1,chardev=char1,vhostforce=on,queues=2" in joined
    assert "-enable-kvm" in argv and "mq=on" in joined
