"""Keep the record of the running lab: which QEMU processes this tool started, in a JSON state file.

A VM is recorded by pid *and* the process's start time (psutil's ``create_time``): a pid that the
kernel has given to another process since is never taken for the VM, and never signalled. The file
is replaced atomically; a missing file means no lab is up.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from ovsperf_common.atomicio import atomic_write_text
from ovsperf_common.deadline import Deadline, DeadlineExceededError
from ovsperf_common.regularfile import read_regular_text
from vlab.config import VM_NAMES, VlabError

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
"""Version of the state file's layout."""
CREATE_TIME_TOLERANCE_S = 0.05
"""Most a recorded start time may differ from the process's own and still be it [s]."""


@dataclass(frozen=True)
class VmProcess:
    """One QEMU process this tool started."""

    vm: str
    """``tg`` or ``dut``."""
    pid: int
    """Its process id."""
    create_time: float
    """Its start time as psutil reports it [s since the epoch]."""
    ssh_port: int
    """Its SSH port on 127.0.0.1."""
    accel: str
    """``kvm`` or ``tcg``."""

    def __post_init__(self) -> None:
        """Refuse an unknown VM name or a non-positive pid.

        :raises VlabError: naming the field.
        """
        if self.vm not in VM_NAMES:
            raise VlabError(f"'vm' must be one of {', '.join(VM_NAMES)}, got {self.vm!r}.")
        if self.pid <= 0:
            raise VlabError(f"'pid' must be positive, got {self.pid}.")

    def process(self) -> psutil.Process | None:
        """Return the process if it still runs and is the one started (same start time), else ``None``."""
        try:
            proc = psutil.Process(self.pid)
            if abs(proc.create_time() - self.create_time) > CREATE_TIME_TOLERANCE_S:
                return None
            if proc.status() == psutil.STATUS_ZOMBIE:
                return None
            return proc
        except psutil.NoSuchProcess:
            return None

    def running(self) -> bool:
        """Return whether the process still runs."""
        return self.process() is not None


def record(vm: str, pid: int, ssh_port: int, accel: str) -> VmProcess:
    """Return the record of the just-started process ``pid`` of ``vm``.

    :raises VlabError: when it has exited already.
    """
    try:
        create_time = psutil.Process(pid).create_time()
    except psutil.NoSuchProcess as err:
        raise VlabError(f"QEMU of VM '{vm}' (pid {pid}) exited right after its start.") from err
    return VmProcess(vm=vm, pid=pid, create_time=create_time, ssh_port=ssh_port, accel=accel)


MAX_STATE_BYTES = 64 * 1024
"""Largest state file read [B]; two VMs' records take a few hundred."""


def load_state(path: Path) -> list[VmProcess]:
    """Return the VM processes recorded in ``path``; an empty list when the file does not exist.

    :raises VlabError: when the file is unreadable or malformed, naming the file and the field.
    """
    try:
        text = read_regular_text(path, max_bytes=MAX_STATE_BYTES)  # never a FIFO, never a huge file
    except FileNotFoundError:
        return []
    except OSError as err:
        raise VlabError(f"Cannot read the state file '{path}': {err.strerror}.") from err
    try:
        data = json.loads(text)
    except ValueError as err:
        raise VlabError(
            f"State file '{path}' is not JSON ({err}); remove it after checking no VM runs."
        ) from err
    if (
        not isinstance(data, dict)
        or data.get("version") != FORMAT_VERSION
        or not isinstance(data.get("vms"), list)
    ):
        raise VlabError(
            f"State file '{path}': expected an object with 'version' {FORMAT_VERSION} and a 'vms' list."
        )
    found = []
    for index, entry in enumerate(data["vms"]):
        try:
            found.append(
                VmProcess(
                    vm=str(entry["vm"]),
                    pid=int(entry["pid"]),
                    create_time=float(entry["create_time"]),
                    ssh_port=int(entry["ssh_port"]),
                    accel=str(entry["accel"]),
                )
            )
        except (KeyError, TypeError, ValueError) as err:
            raise VlabError(f"State file '{path}', 'vms[{index}]': {err!r} is missing or invalid.") from err
        except VlabError as err:
            raise VlabError(f"State file '{path}', 'vms[{index}]': {err}") from err
    return found


def save_state(path: Path, vms: list[VmProcess]) -> None:
    """Replace the state file ``path`` with ``vms`` (atomically); remove it when ``vms`` is empty."""
    if not vms:
        path.unlink(missing_ok=True)
        return
    data = {"version": FORMAT_VERSION, "saved_at": time.time(), "vms": [asdict(v) for v in vms]}
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")


def stop(vm: VmProcess, timeout_s: float = 20.0) -> bool:
    """End ``vm``'s QEMU (SIGTERM, then SIGKILL after ``timeout_s`` [s]); return whether it was running.

    Only the recorded process is signalled, and only while it is the one started (pid and start time).

    :raises VlabError: when it is still running after SIGKILL.
    """
    proc = vm.process()
    if proc is None:
        return False
    log.info("Stopping VM '%s' (QEMU pid %d).", vm.vm, vm.pid)
    try:
        proc.terminate()
        proc.wait(timeout=timeout_s)
    except psutil.TimeoutExpired:
        log.warning("VM '%s' (pid %d) ignored SIGTERM for %.0f s; killing it.", vm.vm, vm.pid, timeout_s)
        proc.kill()
        try:
            Deadline(what=f"QEMU pid {vm.pid} to exit", timeout_s=10.0).poll(
                lambda: True if not vm.running() else None, interval_s=0.2
            )
        except DeadlineExceededError as err:
            raise VlabError(f"VM '{vm.vm}' (QEMU pid {vm.pid}) is still running after SIGKILL.") from err
    except psutil.NoSuchProcess:
        pass
    return True
