"""Bring the virtual lab up, down and back to its saved state; say what runs.

``up`` builds the image when there is none (:mod:`vlab.image`), chooses the accelerator
(:func:`vlab.guest.choose_accel`), and starts the TG's QEMU and then the DUT's, each waited for
until it answers SSH: one boot at a time, so that two TCG boots never share the CPUs. A VM booted
afresh is then saved (QEMU ``savevm`` into its qcow2 overlay); the next ``up`` with the same image
and the same command line resumes from that state (``-loadvm``) instead of booting, and ``reset``
loads it into the running VMs. Every command that changes the lab holds the lab's lock file, and
``up`` refuses while the state file names a QEMU that still runs; ``down`` ends only the processes
the state file names (pid and start time).
"""

from __future__ import annotations

import hashlib
import json
import logging
import socket
import ssl
import stat
import subprocess
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from ovsperf_common.atomicio import atomic_write_text
from ovsperf_common.command import run_command
from ovsperf_common.deadline import Deadline
from ovsperf_common.filelock import exclusive_lock, holder_pid
from vlab import state
from vlab.config import DATA_NICS_PER_VM, LINKS, SNAPSHOT, VM_NAMES, LabConfig, LabPaths, VlabError
from vlab.guest import choose_accel, run_ssh, ssh_argv, wait_for_ssh
from vlab.image import Image, build_image, load_image
from vlab.qemu import Accel, VmFiles, qemu_argv
from vlab.qmp import Qmp

log = logging.getLogger(__name__)

BOOT_TIMEOUT_S = {Accel.KVM: 180.0, Accel.TCG: 900.0}
"""Longest a VM may take from QEMU's start to answering SSH [s] (TCG boots ~2.5 min here)."""
RESUME_TIMEOUT_S = 180.0
"""Longest a VM resumed from its saved state may take to answer SSH [s]."""
NAME_TIMEOUT_S = 120.0
"""Longest setting a fresh VM's hostname over SSH may take (a TCG guest is slow) [s]."""
SAVE_TIMEOUT_S = 600.0
PREPARE_VERSION = 2
"""Version of what :func:`prepare_vm` does to a fresh VM: a saved state prepared otherwise is not resumed."""
MAX_CA_BUNDLE_BYTES = 4 << 20
"""Largest host CA bundle copied to the VMs [B]."""
VM_CA_BUNDLE = "/etc/ssl/certs/ovsperf-vlab-host-ca.crt"
"""Where the VMs get the host's CA bundle (``/etc/pip.conf`` names it)."""
"""Longest ``savevm`` or ``loadvm`` of one VM may take [s]."""


@dataclass(frozen=True)
class UpOptions:
    """How ``up`` runs."""

    rebuild: bool = False
    """Build the image even when one is there."""
    accel: Accel | None = None
    """Force an accelerator (``None``: probe KVM, fall back to TCG)."""
    nice: int = 0
    """Niceness of QEMU and the image build (19 on a shared machine)."""
    boot_timeout_s: float | None = None
    """Longest one VM's boot may take [s] (``None``: :data:`BOOT_TIMEOUT_S` of the accelerator)."""


@dataclass(frozen=True)
class Timing:
    """What one step of the lab took, for the log and docs/vlab.md."""

    step: str
    """``build``, ``boot tg``, ``resume dut``, ``save tg``, ``reset``…"""
    seconds: float
    """Wall time [s]."""


def vm_files(paths: LabPaths, vm: str, image: Image) -> VmFiles:
    """Return the files of ``vm`` (overlay, console log, QMP socket) with the image's boot loader."""
    directory = paths.vm_dir(vm)
    return VmFiles(
        disk=directory / "root.qcow2",
        bootloader=image.bootloader,
        serial_log=directory / "console.log",
        qmp_socket=directory / "qmp.sock",
    )


def running_vms(paths: LabPaths) -> list[state.VmProcess]:
    """Return the recorded VMs whose QEMU still runs."""
    return [vm for vm in state.load_state(paths.state_file) if vm.running()]


def _locked(paths: LabPaths) -> AbstractContextManager[bool]:
    """Return the lab's lock, tried once: the block gets True when taken, False when another holds it."""
    paths.state_dir.mkdir(parents=True, exist_ok=True)
    return exclusive_lock(paths.lock)


def _refuse_busy(paths: LabPaths, command: str) -> VlabError:
    """Return the error refusing ``command`` because another command holds the lock, naming its pid."""
    holder = holder_pid(paths.lock)
    by = f" (pid {holder})" if holder is not None else ""
    return VlabError(
        f"'{command}' refused: another ovsperf-vlab command{by} holds the lab's lock '{paths.lock}'; "
        "wait for it to finish."
    )


def check_ports_free(config: LabConfig) -> None:
    """Refuse to start when a port the lab needs on 127.0.0.1 is taken.

    :raises VlabError: naming the port and what it is for.
    """
    wanted = [(socket.SOCK_STREAM, config.ssh_port_of(vm), f"SSH of VM '{vm}'") for vm in VM_NAMES]
    wanted += [
        (socket.SOCK_DGRAM, config.data_ports_of(vm, nic)[0],
         f"data NIC {nic} of VM '{vm}'" if nic < DATA_NICS_PER_VM else f"the interconnect NIC of VM '{vm}'")
        for vm in VM_NAMES
        for nic in range(LINKS)
    ]  # fmt: skip
    for kind, port, what in wanted:
        with socket.socket(socket.AF_INET, kind) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError as err:
                protocol = "TCP" if kind == socket.SOCK_STREAM else "UDP"
                raise VlabError(
                    f"{protocol} port 127.0.0.1:{port} ({what}) is taken ({err.strerror}); free it or "
                    "choose other ports (--ssh-port, --data-port)."
                ) from err


def _overlay_key(argv: list[str], image: Image, ca_bundle: bytes) -> str:
    """Return what a saved state depends on.

    That is the QEMU command line (without niceness), the image and what :func:`prepare_vm` put in
    (its version, the host's CA bundle).
    """
    start = argv.index("qemu-system-x86_64")
    prepared = {"version": PREPARE_VERSION, "ca_sha256": hashlib.sha256(ca_bundle).hexdigest()}
    return json.dumps({"argv": argv[start:], "image_built_at": image.built_at, "prepared": prepared},
                      sort_keys=True)  # fmt: skip


def host_ca_bundle() -> bytes:
    """Return the CA certificates this host trusts (its OpenSSL default bundle), for the VMs' pip.

    A lab host trusts what its admin installed (a company CA, an egress proxy's CA); the VMs reach
    the package index through this host, so they are given the same trust. Public certificates
    only; empty when the host has no bundle file.

    :raises VlabError: when the bundle is not a regular file or larger than :data:`MAX_CA_BUNDLE_BYTES`.
    """
    path = Path(ssl.get_default_verify_paths().cafile or "/etc/ssl/certs/ca-certificates.crt")
    if not path.exists():
        return b""
    info = path.stat()
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CA_BUNDLE_BYTES:
        raise VlabError(
            f"The host's CA bundle '{path}' is not a regular file of at most {MAX_CA_BUNDLE_BYTES} B."
        )
    with open(path, "rb") as bundle:  # bounded: the file may have grown since stat
        data = bundle.read(MAX_CA_BUNDLE_BYTES)
    if (data and b"-----BEGIN CERTIFICATE-----" not in data) or b"PRIVATE KEY" in data:
        raise VlabError(f"The host's CA bundle '{path}' holds no certificate, or a private key: not copied.")
    return data


def _has_snapshot(disk: Path) -> bool:
    """Return whether the overlay ``disk`` holds the saved state :data:`SNAPSHOT`."""
    done = run_command(
        ["qemu-img", "snapshot", "-l", "-U", str(disk)], timeout_s=60.0, what="qemu-img snapshot -l"
    )
    return done.returncode == 0 and any(line.split()[1:2] == [SNAPSHOT] for line in done.stdout.splitlines())


def prepare_overlay(files: VmFiles, image: Image, fingerprint: str) -> bool:
    """Make ``files.disk`` an overlay of ``image`` for this command line; return whether it can resume.

    An overlay made for another image or command line (its saved state would not fit) is replaced
    by a fresh one.

    :raises VlabError: when ``qemu-img create`` fails.
    """
    directory = files.disk.parent
    directory.mkdir(parents=True, exist_ok=True)
    stamp = directory / "fingerprint.json"
    if files.disk.is_file() and stamp.is_file() and stamp.read_text(encoding="utf-8") == fingerprint:
        if _has_snapshot(files.disk):
            return True
    files.disk.unlink(missing_ok=True)
    stamp.unlink(missing_ok=True)
    create = [
        "qemu-img",
        "create",
        "-q",
        "-f",
        "qcow2",
        "-b",
        str(image.disk),
        "-F",
        "qcow2",
        str(files.disk),
    ]
    done = run_command(create, timeout_s=60.0, what="qemu-img create")
    if done.returncode != 0:
        raise VlabError(f"qemu-img could not create the overlay '{files.disk}': {done.stderr.strip()}")
    atomic_write_text(stamp, fingerprint)
    return False


def _start(vm: str, argv: list[str], files: VmFiles, config: LabConfig, accel: Accel) -> state.VmProcess:
    """Start QEMU for ``vm`` detached from this process (its output to ``qemu.log``); return its record."""
    files.qmp_socket.unlink(missing_ok=True)
    qemu_log = files.disk.parent / "qemu.log"
    with open(qemu_log, "ab") as out:
        out.write(f"\n# {time.strftime('%Y-%m-%dT%H:%M:%S')} {' '.join(argv)}\n".encode())
        out.flush()
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
        )
    log.info("Started VM '%s' (QEMU pid %d, %s), SSH on 127.0.0.1:%d.", vm, proc.pid, accel,
             config.ssh_port_of(vm))  # fmt: skip
    return state.record(vm, proc.pid, config.ssh_port_of(vm), str(accel))


def up(config: LabConfig, options: UpOptions) -> tuple[list[state.VmProcess], list[Timing]]:
    """Bring both VMs up (building the image first if needed); return their records and the timings.

    :raises VlabError: when another command holds the lock, the lab is already up, a port is
        taken, the build fails or a VM does not answer SSH in time (the VMs this call started are
        stopped again; their console logs stay).
    """
    paths = LabPaths(config.state_dir)
    timings: list[Timing] = []
    with _locked(paths) as taken:
        if not taken:
            raise _refuse_busy(paths, "up")
        running = running_vms(paths)
        if running:
            names = ", ".join(f"'{v.vm}' (pid {v.pid})" for v in running)
            raise VlabError(f"'up' refused: the lab is already up ({names}); run 'ovsperf-vlab down' first.")
        image = None if options.rebuild else load_image(paths)
        if image is None:
            start = time.monotonic()
            image = build_image(paths, config.mirror, nice=options.nice)
            timings.append(Timing("build", time.monotonic() - start))
        accel = choose_accel(paths, image, nice=options.nice, forced=options.accel)
        check_ports_free(config)
        started: list[state.VmProcess] = []
        try:
            for vm in VM_NAMES:
                started.append(_bring_up(vm, config, paths, image, accel, options, timings))
                state.save_state(paths.state_file, started)
        except BaseException:
            # Every VM recorded now was started by this call (none ran when it began), the one
            # that failed to answer too: stop them all, by their recorded pid and start time.
            for vm_process in state.load_state(paths.state_file):
                state.stop(vm_process)
            state.save_state(paths.state_file, [])
            raise
    return started, timings


def _bring_up(
    vm: str,
    config: LabConfig,
    paths: LabPaths,
    image: Image,
    accel: Accel,
    options: UpOptions,
    timings: list[Timing],
) -> state.VmProcess:
    """Start ``vm`` (resuming its saved state when it fits), wait for SSH, save the state of a fresh boot."""
    files = vm_files(paths, vm, image)
    fresh_argv = qemu_argv(vm, config, files, accel, nice=options.nice)
    ca_bundle = host_ca_bundle()
    resumable = prepare_overlay(files, image, _overlay_key(fresh_argv, image, ca_bundle))
    argv = (
        qemu_argv(vm, config, files, accel, loadvm=SNAPSHOT, nice=options.nice) if resumable else fresh_argv
    )
    start = time.monotonic()
    record = _start(vm, argv, files, config, accel)
    state.save_state(paths.state_file, [*running_vms(paths), record])
    timeout_s = RESUME_TIMEOUT_S if resumable else (options.boot_timeout_s or BOOT_TIMEOUT_S[accel])
    wait_for_ssh(paths, vm, config.ssh_port_of(vm), timeout_s=timeout_s, alive=record.running,
                 serial_log=files.serial_log)  # fmt: skip
    if resumable:
        set_clock(paths, vm, config.ssh_port_of(vm))
    step = "resume" if resumable else "boot"
    timings.append(Timing(f"{step} {vm}", time.monotonic() - start))
    log.info("VM '%s' answers SSH after %.1f s (%s).", vm, timings[-1].seconds, step)
    if not resumable:
        prepare_vm(paths, vm, config.ssh_port_of(vm), ca_bundle)
        start = time.monotonic()
        with Qmp(files.qmp_socket, Deadline(what=f"savevm of VM '{vm}'", timeout_s=SAVE_TIMEOUT_S)) as qmp:
            qmp.hmp(f"savevm {SNAPSHOT}")
        timings.append(Timing(f"save {vm}", time.monotonic() - start))
        log.info("Saved the state of VM '%s' in %.1f s.", vm, timings[-1].seconds)
    return record


def prepare_vm(paths: LabPaths, vm: str, port: int, ca_bundle: bytes) -> None:
    """Make the freshly booted ``vm`` a host of this lab; kept in its overlay and in the state saved next.

    * its hostname (``tg``, ``dut``): what ``hostname -f`` answers (the image's /etc/hosts gives each
      its interconnect address) and the tasks look up in the inventory. Both VMs boot the same image
      through the same grub.cfg, so the name cannot come from the kernel command line;
    * this host's CA bundle (:func:`host_ca_bundle`) as ``/etc/ssl/certs/ovsperf-vlab-host-ca.crt``
      and ``/etc/pip.conf`` pointing pip at it, so that a task's ``pip install`` verifies the package
      index as this host does.

    :raises VlabError: when a command fails on the VM.
    """
    if vm not in VM_NAMES:
        raise VlabError(f"Unknown VM '{vm}'.")
    run_ssh(paths, port, f"printf '%s\\n' {vm} > /etc/hostname && hostname {vm}", timeout_s=NAME_TIMEOUT_S,
            what=f"naming VM '{vm}'")  # fmt: skip
    if ca_bundle:
        command = (
            f"mkdir -p /etc/ssl/certs && cat > {VM_CA_BUNDLE}.tmp && mv {VM_CA_BUNDLE}.tmp {VM_CA_BUNDLE} && "
            f"printf '[global]\\ncert = {VM_CA_BUNDLE}\\n' > /etc/pip.conf"
        )
        done = run_command(
            ssh_argv(paths, port, command),
            timeout_s=NAME_TIMEOUT_S,
            what=f"copying the host's CA bundle to VM '{vm}'",
            input_text=ca_bundle.decode("ascii", "replace"),
        )
        if done.returncode != 0:
            raise VlabError(f"Copying the host's CA bundle to VM '{vm}' failed: {done.stderr.strip()}")


def set_clock(paths: LabPaths, vm: str, port: int) -> None:
    """Set ``vm``'s clock to this host's.

    A VM resumed from its saved state wakes at the time it was saved (the image runs no NTP
    client), and its logs and result timestamps would lie.

    :raises VlabError: when ``date`` fails on the VM.
    """
    run_ssh(paths, port, f"date -u -s @{time.time():.3f} >/dev/null", timeout_s=NAME_TIMEOUT_S,
            what=f"setting the clock of VM '{vm}'")  # fmt: skip


def down(config: LabConfig) -> list[state.VmProcess]:
    """Stop the QEMU processes the state file names; return those that were running.

    :raises VlabError: when another command holds the lock.
    """
    paths = LabPaths(config.state_dir)
    with _locked(paths) as taken:
        if not taken:
            raise _refuse_busy(paths, "down")
        stopped = [vm for vm in state.load_state(paths.state_file) if state.stop(vm)]
        state.save_state(paths.state_file, [])
    return stopped


def reset(config: LabConfig, *, timeout_s: float = RESUME_TIMEOUT_S) -> list[Timing]:
    """Load the saved state into both running VMs and wait until they answer SSH; return the timings.

    :raises VlabError: when the lab is not up, the lock is held, or a VM does not answer in time.
    """
    paths = LabPaths(config.state_dir)
    timings: list[Timing] = []
    with _locked(paths) as taken:
        if not taken:
            raise _refuse_busy(paths, "reset")
        recorded = state.load_state(paths.state_file)
        running = [vm for vm in recorded if vm.running()]
        if {vm.vm for vm in running} != set(VM_NAMES):
            raise VlabError("'reset' needs the lab up (both VMs running); run 'ovsperf-vlab up'.")
        image = load_image(paths)
        if image is None:
            raise VlabError(f"No image under '{paths.image_dir}'; run 'ovsperf-vlab up'.")
        start = time.monotonic()
        for vm in running:
            files = vm_files(paths, vm.vm, image)
            with Qmp(
                files.qmp_socket, Deadline(what=f"loadvm of VM '{vm.vm}'", timeout_s=SAVE_TIMEOUT_S)
            ) as qmp:
                qmp.hmp(f"loadvm {SNAPSHOT}")
        for vm in running:
            files = vm_files(paths, vm.vm, image)
            wait_for_ssh(paths, vm.vm, vm.ssh_port, timeout_s=timeout_s, alive=vm.running,
                         serial_log=files.serial_log)  # fmt: skip
            set_clock(paths, vm.vm, vm.ssh_port)
        timings.append(Timing("reset", time.monotonic() - start))
        log.info("Both VMs are back at their saved state after %.1f s.", timings[-1].seconds)
    return timings


def status(config: LabConfig) -> list[tuple[str, state.VmProcess | None]]:
    """Return each VM's name with its running QEMU's record (``None``: not running)."""
    paths = LabPaths(config.state_dir)
    running = {vm.vm: vm for vm in running_vms(paths)}
    return [(name, running.get(name)) for name in VM_NAMES]
