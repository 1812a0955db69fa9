"""Reach the lab's VMs: the SSH command line, waiting for a VM to answer, and the KVM probe.

Every wait has a deadline (:class:`~ovsperf_common.deadline.Deadline`) and stops early, naming the
QEMU log, when the VM's QEMU has exited. The KVM probe boots the image's kernel once under
``-accel kvm``, bounded: where ``/dev/kvm`` cannot run a stock kernel (a paravirtual KVM without
hardware virtualisation, as on this project's CI machines) the kernel never reaches its init, and
the lab falls back to TCG. The verdict is kept per boot of the host (its ``boot_id``).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from ovsperf_common.atomicio import atomic_write_text
from ovsperf_common.command import CommandError, run_command
from ovsperf_common.deadline import Deadline, DeadlineExceededError
from ovsperf_common.regularfile import read_regular_text
from ovsperf_common.runner import one_line
from vlab.config import LabPaths, VlabError
from vlab.image import Image
from vlab.qemu import Accel

log = logging.getLogger(__name__)

SSH_CONNECT_TIMEOUT_S = 10
"""Longest one SSH connection attempt may take to be set up [s]."""
PROBE_TIMEOUT_S = 60.0
"""Longest the KVM probe waits for the kernel to start its init [s] (a working KVM needs ~2 s)."""
PROBE_MARKER = "Run /init as init process"
"""The kernel's line when it hands over to the initramfs: KVM can boot a kernel."""


def ssh_argv(paths: LabPaths, port: int, *command: str, batch: bool = True) -> list[str]:
    """Return the ``ssh`` command reaching root on the VM forwarded to ``127.0.0.1:port``.

    The VMs' host keys are learnt on first use into the lab's own known-hosts file.
    """
    argv = ["ssh", "-i", str(paths.key), "-p", str(port), "-o", "IdentitiesOnly=yes"]
    argv += ["-o", f"UserKnownHostsFile={paths.known_hosts}", "-o", "StrictHostKeyChecking=accept-new"]
    argv += ["-o", f"ConnectTimeout={SSH_CONNECT_TIMEOUT_S}", "-o", "LogLevel=ERROR"]
    if batch:
        argv += ["-o", "BatchMode=yes"]
    return [*argv, "root@127.0.0.1", *command]


def run_ssh(paths: LabPaths, port: int, command: str, *, timeout_s: float, what: str) -> str:
    """Run ``command`` on the VM at ``port``; return its stdout.

    :raises VlabError: when it exits non-zero (naming ``what`` and its error output).
    :raises CommandError: when ssh is missing or the command outlives ``timeout_s`` [s].
    """
    done = run_command(ssh_argv(paths, port, command), timeout_s=timeout_s, what=what)
    if done.returncode != 0:
        raise VlabError(f"{what} failed with exit status {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def wait_for_ssh(
    paths: LabPaths,
    vm: str,
    port: int,
    *,
    timeout_s: float,
    alive: Callable[[], bool],
    serial_log: Path,
    not_boot_id: str | None = None,
) -> str:
    """Wait until VM ``vm`` answers SSH (with a boot id other than ``not_boot_id``); return its boot id.

    :param alive: whether the VM's QEMU still runs (asked before each attempt).
    :raises VlabError: when QEMU exits, or ``timeout_s`` [s] passes (naming the serial log).
    """
    what = f"VM '{vm}' to answer SSH on 127.0.0.1:{port}" + (" after its reboot" if not_boot_id else "")
    deadline = Deadline(what=what, timeout_s=timeout_s)

    def probe() -> str | None:
        if not alive():
            raise VlabError(
                f"QEMU of VM '{vm}' exited while waiting for SSH; see '{serial_log}' and its qemu.log."
            )
        attempt = min(SSH_CONNECT_TIMEOUT_S + 20.0, max(deadline.remaining_s(), 1.0))
        try:
            done = run_command(
                ssh_argv(paths, port, "cat /proc/sys/kernel/random/boot_id"), timeout_s=attempt, what="ssh"
            )
        except CommandError as err:
            if "did not finish" not in str(err):  # ssh itself is missing: no point in waiting
                raise
            return None
        boot_id = done.stdout.strip()
        if done.returncode != 0 or not boot_id or boot_id == not_boot_id:
            return None
        return boot_id

    try:
        return deadline.poll(probe, interval_s=3.0, log=log)
    except DeadlineExceededError as err:
        raise VlabError(f"{err} The guest's console is in '{serial_log}'.") from err


def host_boot_id() -> str:
    """Return this host's boot id (``/proc/sys/kernel/random/boot_id``)."""
    return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="utf-8").strip()


def choose_accel(paths: LabPaths, image: Image, *, nice: int = 0, forced: Accel | None = None) -> Accel:
    """Return KVM when ``/dev/kvm`` boots the image's kernel, else TCG (with a log line saying why).

    The probe's verdict is kept in ``paths.accel_file`` for this boot of the host.

    :param forced: skip the probe and use this accelerator.
    """
    if forced is not None:
        return forced
    boot_id = host_boot_id()
    try:
        kept = json.loads(read_regular_text(paths.accel_file, max_bytes=64 * 1024))
        if kept.get("host_boot_id") == boot_id and kept.get("kernel") == image.kernel_version:
            accel = Accel.from_spec(kept.get("accel"), field="accel")
            log.info(
                "Accelerator %s (probed on this boot of the host: %s).",
                accel,
                one_line(str(kept.get("reason"))),
            )
            return accel
    except (OSError, ValueError, AttributeError):
        pass
    accel, reason = probe_kvm(paths, image, nice=nice)
    if accel is Accel.TCG:
        log.warning("KVM cannot run the lab here (%s); falling back to TCG, which is slow.", reason)
    else:
        log.info("KVM boots the image's kernel: the VMs run under KVM.")
    record = {"host_boot_id": boot_id, "kernel": image.kernel_version, "accel": str(accel), "reason": reason}
    atomic_write_text(paths.accel_file, json.dumps(record) + "\n")
    return accel


def probe_kvm(
    paths: LabPaths, image: Image, *, nice: int = 0, timeout_s: float = PROBE_TIMEOUT_S
) -> tuple[Accel, str]:
    """Boot the image's kernel under KVM until it starts its init, at most ``timeout_s`` [s].

    :returns: (the accelerator to use, the reason in words).
    """
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return Accel.TCG, "/dev/kvm is missing or not accessible"
    paths.state_dir.mkdir(parents=True, exist_ok=True)
    console = paths.state_dir / "kvm-probe.log"
    console.unlink(missing_ok=True)
    argv = ["nice", "-n", str(nice)] if nice else []
    argv += ["qemu-system-x86_64", "-machine", "q35", "-accel", "kvm", "-cpu", "host", "-m", "256M"]
    argv += ["-nodefaults", "-display", "none", "-vga", "none", "-no-reboot", "-serial", f"file:{console}"]
    argv += ["-kernel", str(image.kernel), "-initrd", str(image.initrd), "-append", "console=ttyS0 panic=-1"]
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = Deadline(what="the kernel to start its init under KVM", timeout_s=timeout_s)

        def reached() -> bool | None:
            if console.is_file() and PROBE_MARKER in console.read_text(encoding="utf-8", errors="replace"):
                return True
            return False if proc.poll() is not None else None

        try:
            booted = deadline.poll(reached, interval_s=0.5, log=log)
        except DeadlineExceededError:
            return Accel.TCG, f"the kernel did not reach its init within {timeout_s:g} s under KVM"
    finally:
        if proc.poll() is None:
            proc.kill()
        _, err = proc.communicate(timeout=10)
    if booted:
        return Accel.KVM, f"kernel reached its init in {time.monotonic() - start:.1f} s"
    detail = " ".join(err.decode("utf-8", "replace").split())[:300]
    return Accel.TCG, f"QEMU exited with status {proc.returncode} under KVM: {detail or 'no message'}"
