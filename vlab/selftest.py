"""Check the lab end to end (``make vlab-test``): SSH, links, vfio-pci, setup_dpdk with a reboot, reset.

The steps, each under a deadline, with the wall time of each kept for docs/vlab.md:

1. ``up`` (builds the image when there is none; resumes the saved state when it fits);
2. SSH into both VMs; both data NICs are PCI devices at the fixed addresses on each;
3. the data links carry frames: TG data NIC ``i`` pings DUT data NIC ``i`` (the crosswise wiring);
4. DUT data NIC 1 is bound to ``vfio-pci``: it has an IOMMU group and ``/dev/vfio/<group>``;
5. the Beaker task setup_dpdk, standalone on the DUT (a Debian host: /etc/default/grub and
   update-grub), boot 0; a real reboot of the DUT, waited for until its boot id changes;
   setup_dpdk boot 1 (``dpdk-devbind.py`` binds the NIC to vfio-pci, hugepages, IOMMU groups);
6. ``reset``: both VMs back at their saved state (the DUT's boot id is the saved one again);
7. ``down`` (unless asked to keep the lab up).

The QEMU processes' RSS is read after the boot and at the end [B] (the goal: the lab within 8 GiB).
"""

from __future__ import annotations

import logging
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

from ovsperf_common.command import run_command
from vlab import state
from vlab.config import DATA_NICS_PER_VM, LabConfig, LabPaths, VlabError
from vlab.guest import run_ssh, ssh_argv, wait_for_ssh
from vlab.image import load_image
from vlab.lab import BOOT_TIMEOUT_S, Timing, UpOptions, down, reset, running_vms, up, vm_files
from vlab.qemu import FIRST_DATA_SLOT, Accel, data_mac

log = logging.getLogger(__name__)

SSH_COMMAND_TIMEOUT_S = 120.0
"""Longest one command over SSH may take in the check (TCG is slow) [s]."""


@dataclass
class SelftestReport:
    """What the check measured."""

    timings: list[Timing] = field(default_factory=list)
    """Wall time of each step [s]."""
    rss_bytes: dict[str, int] = field(default_factory=dict)
    """``<vm> after <step>`` → RSS of that VM's QEMU [B]."""
    notes: list[str] = field(default_factory=list)
    """What each check found, one sentence each."""


def _pci(slot: int) -> str:
    return f"0000:00:{slot:02x}.0"


def _rss(report: SelftestReport, paths: LabPaths, when: str) -> None:
    for vm in running_vms(paths):
        proc = vm.process()
        if proc is not None:
            report.rss_bytes[f"{vm.vm} after {when}"] = proc.memory_info().rss


def _note(report: SelftestReport, note: str) -> None:
    report.notes.append(note)
    log.info("Self-test: %s", note)


def _timed(report: SelftestReport, step: str, start: float) -> None:
    report.timings.append(Timing(step, time.monotonic() - start))
    log.info("Self-test step '%s' took %.1f s.", step, report.timings[-1].seconds)


def selftest(config: LabConfig, options: UpOptions, *, keep: bool = False) -> SelftestReport:
    """Run the end-to-end check of the lab; return what it measured.

    :raises VlabError: naming the first step that failed (the lab is brought down unless ``keep``).
    """
    paths = LabPaths(config.state_dir)
    report = SelftestReport()
    begin = time.monotonic()
    start = begin
    vms, timings = up(config, options)
    report.timings += timings
    _timed(report, "up", start)
    _rss(report, paths, "up")
    ports = {vm.vm: vm.ssh_port for vm in vms}
    accel = Accel.from_spec(vms[0].accel, field="accel")
    try:
        _check_nics(report, paths, ports)
        _check_links(report, paths, ports)
        _check_vfio(report, paths, ports["dut"])
        _rss(report, paths, "vfio")
        _setup_dpdk(report, paths, ports["dut"], boot=0)
        saved_boot_id = _check_reboot(report, paths, ports["dut"], accel, options)
        _setup_dpdk(report, paths, ports["dut"], boot=1)
        start = time.monotonic()
        report.timings += reset(config)
        _timed(report, "reset (command)", start)
        after = _ssh(paths, ports["dut"], "cat /proc/sys/kernel/random/boot_id").strip()
        device = f"/sys/bus/pci/devices/{_pci(FIRST_DATA_SLOT + 1)}"
        driver = _ssh(paths, ports["dut"], f"basename $(readlink {device}/driver)").strip()
        if after != saved_boot_id or driver != "virtio-pci":
            raise VlabError(
                f"After 'reset' the DUT has boot id '{after}' (saved: '{saved_boot_id}') and its NIC "
                f"{_pci(FIRST_DATA_SLOT + 1)} is on '{driver}' (saved: 'virtio-pci')."
            )
        _note(report, f"reset: the DUT is back at its saved state (boot id '{after}', NIC on virtio-pci).")
        _rss(report, paths, "reset")
    finally:
        if not keep:
            start = time.monotonic()
            down(config)
            _timed(report, "down", start)
            _timed(report, "selftest", begin)
    return report


def _ssh(paths: LabPaths, port: int, command: str) -> str:
    return run_ssh(
        paths, port, command, timeout_s=SSH_COMMAND_TIMEOUT_S, what=f"'{command}' on 127.0.0.1:{port}"
    )


def _check_nics(report: SelftestReport, paths: LabPaths, ports: dict[str, int]) -> None:
    """Both data NICs of each VM are virtio network devices at their fixed PCI addresses."""
    for vm, port in ports.items():
        listing = _ssh(paths, port, "lspci -n -D")
        for nic in range(DATA_NICS_PER_VM):
            address = _pci(FIRST_DATA_SLOT + nic)
            if not any(line.startswith(f"{address} 0200: 1af4:1041") for line in listing.splitlines()):
                raise VlabError(f"VM '{vm}' has no virtio 1.0 NIC at {address}: lspci says {listing!r}.")
        _note(
            report, f"{vm}: data NICs at {_pci(FIRST_DATA_SLOT)} and {_pci(FIRST_DATA_SLOT + 1)} (1af4:1041)."
        )


def _check_links(report: SelftestReport, paths: LabPaths, ports: dict[str, int]) -> None:
    """TG data NIC i reaches DUT data NIC i and no other (the links are wired one per NIC index).

    The TG sends UDP datagrams to the DUT's address on link i; the DUT's NIC counts them and the
    TG's neighbour table learns the MAC of DUT NIC i (the image has no ping: bash's /dev/udp).
    """
    for nic in range(DATA_NICS_PER_VM):
        name = f"enp0s{FIRST_DATA_SLOT + nic}"
        for vm, host in (("tg", 1), ("dut", 2)):
            address = f"10.99.{nic}.{host}/24"
            _ssh(
                paths,
                ports[vm],
                f"ip addr flush dev {name} && ip addr add {address} dev {name} && ip link set {name} up",
            )
        counter = f"/sys/class/net/{name}/statistics/rx_packets"
        before = int(_ssh(paths, ports["dut"], f"cat {counter}"))
        target = f"10.99.{nic}.2"
        send = f"for i in 1 2 3 4 5; do echo x > /dev/udp/{target}/9; sleep 1; done; ip neigh show {target}"
        neighbour = _ssh(paths, ports["tg"], send)
        received = int(_ssh(paths, ports["dut"], f"cat {counter}")) - before
        for vm in ("tg", "dut"):
            _ssh(paths, ports[vm], f"ip addr flush dev {name} && ip link set {name} down")
        mac = data_mac("dut", nic)
        if mac not in neighbour or received < 5:
            raise VlabError(
                f"Data link {nic}: TG {name} → DUT {name}: the DUT received {received} frames (expected "
                f"≥ 5) and the TG's neighbour entry is {neighbour.strip()!r} (expected MAC {mac})."
            )
        _note(report, f"link {nic}: tg {name} → dut {name}: {received} frames received, neighbour {mac}.")


def _check_vfio(report: SelftestReport, paths: LabPaths, port: int) -> None:
    """Bind DUT data NIC 1 to vfio-pci: it needs the IOMMU (an IOMMU group and its /dev/vfio node)."""
    address = _pci(FIRST_DATA_SLOT + 1)
    device = f"/sys/bus/pci/devices/{address}"
    script = (
        f"set -e; modprobe vfio-pci; "
        f"if [ -e {device}/driver ]; then echo {address} > {device}/driver/unbind; fi; "
        f"echo vfio-pci > {device}/driver_override; echo {address} > /sys/bus/pci/drivers_probe; "
        f"basename $(readlink {device}/driver); basename $(readlink {device}/iommu_group); ls /dev/vfio"
    )
    driver, group, *nodes = _ssh(paths, port, script).split()
    if driver != "vfio-pci" or group not in nodes:
        raise VlabError(
            f"DUT NIC {address}: driver '{driver}', IOMMU group '{group}', /dev/vfio has {nodes}."
        )
    _note(report, f"dut: {address} bound to vfio-pci, IOMMU group {group}, /dev/vfio/{group} present.")


SETUP_DPDK_DIRS = ("beaker_tasks", "vsperf_configs", "ovsperf_catalog", "ovsperf_common")
"""What the Beaker task setup_dpdk needs of the repository on a host (its lib, vsperf-config's modules)."""
SETUP_DPDK_KERNEL_ARGS = "iommu=pt"
"""Kernel arguments setup_dpdk adds on the DUT (into /etc/default/grub on Debian)."""


def _setup_dpdk(report: SelftestReport, paths: LabPaths, port: int, *, boot: int) -> None:
    """Run the Beaker task setup_dpdk standalone on the DUT: boot 0 (persistent part) or 1 (bind, verify).

    Boot 0 also copies the task and the modules it runs from this checkout to ``/root/ovsperf``.
    The task binds DUT data NIC 1 to vfio-pci with ``dpdk-devbind.py``. What boot 0 writes into
    /etc/default/grub (``update-grub``) reaches the kernel command line of boot 1 through the image's
    GRUB: boot 1 checks ``/proc/cmdline`` for :data:`SETUP_DPDK_KERNEL_ARGS`.

    :raises VlabError: when the checkout has no ``beaker_tasks``, or the task aborts or fails.
    """
    nic = _pci(FIRST_DATA_SLOT + 1)
    if boot == 0:
        root = Path(__file__).resolve().parents[1]
        missing = [d for d in SETUP_DPDK_DIRS if not (root / d).is_dir()]
        if missing:
            raise VlabError(
                f"'selftest' runs from a checkout of ovsperf: '{root}' has no {', '.join(missing)}."
            )
        remote_shell = " ".join(shlex.quote(a) for a in ssh_argv(paths, port)[:-1])
        argv = ["rsync", "-a", "--delete", "--exclude", "__pycache__", "-e", remote_shell]
        argv += [str(root / d) for d in SETUP_DPDK_DIRS] + ["root@127.0.0.1:/root/ovsperf/"]
        done = run_command(
            argv, timeout_s=SSH_COMMAND_TIMEOUT_S * 3, what="rsync of the Beaker tasks to the DUT"
        )
        if done.returncode != 0:
            raise VlabError(f"rsync of the Beaker tasks to the DUT failed: {done.stderr.strip()}")
    params = f"REBOOTCOUNT={boot} TEST_NICS={nic} ISOLATED_CPUS=1 KERNEL_ARGS={SETUP_DPDK_KERNEL_ARGS}"
    out = _ssh(paths, port, f"cd /root/ovsperf/beaker_tasks/setup_dpdk && {params} ./runtest.sh")
    results = [line.split("RESULT ", 1)[1] for line in out.splitlines() if "RESULT setup_dpdk/" in line]
    wanted = ["setup_dpdk/environment: PASS", "setup_dpdk/persistent: PASS"] if boot == 0 else [
        "setup_dpdk/bind: PASS"
    ]  # fmt: skip
    if results[: len(wanted)] != wanted:
        raise VlabError(f"setup_dpdk (boot {boot}) on the DUT reported {results}, expected {wanted} first.")
    if boot == 0:
        grub = _ssh(paths, port, "grep '^GRUB_CMDLINE_LINUX=' /etc/default/grub").strip()
        _note(report, f"setup_dpdk boot 0 on Debian: {', '.join(results)}; {grub}; update-grub ran.")
    else:
        driver = _ssh(paths, port, f"basename $(readlink /sys/bus/pci/devices/{nic}/driver)").strip()
        cmdline = _ssh(paths, port, "cat /proc/cmdline").split()
        if SETUP_DPDK_KERNEL_ARGS not in cmdline:
            raise VlabError(
                f"After the reboot the DUT's kernel command line {' '.join(cmdline)!r} lacks "
                f"'{SETUP_DPDK_KERNEL_ARGS}', which setup_dpdk wrote into /etc/default/grub."
            )
        _note(report, f"setup_dpdk boot 1: {', '.join(results)}; {nic} on {driver}; "
                      f"/proc/cmdline: {' '.join(cmdline)}.")  # fmt: skip


def _check_reboot(
    report: SelftestReport, paths: LabPaths, port: int, accel: Accel, options: UpOptions
) -> str:
    """Reboot the DUT for real and wait until it answers with a new boot id; return the old one."""
    image = load_image(paths)
    if image is None:
        raise VlabError(f"No image under '{paths.image_dir}'.")
    before = _ssh(paths, port, "cat /proc/sys/kernel/random/boot_id").strip()
    dut = next(vm for vm in state.load_state(paths.state_file) if vm.vm == "dut")
    start = time.monotonic()
    _ssh(paths, port, "systemd-run --on-active=1 systemctl reboot")
    after = wait_for_ssh(paths, "dut", port, timeout_s=options.boot_timeout_s or BOOT_TIMEOUT_S[accel],
                         alive=dut.running, serial_log=vm_files(paths, "dut", image).serial_log,
                         not_boot_id=before)  # fmt: skip
    _timed(report, "reboot dut", start)
    _note(report, f"reboot: DUT boot id '{before}' became '{after}'.")
    return before
