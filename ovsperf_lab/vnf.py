"""Run the PVP forwarder: ``dpdk-testpmd`` io forwarding in a process, or a QEMU/KVM guest.

PVVP runs two testpmd forwarders, chained through OVS (:mod:`ovsperf_lab.testbed`), each with its
own file prefix, sockets, log and CPU. Both kinds serve the two vhost-user sockets of the
topology's VNF ports (OVS is the client), so OVS (re)connects as soon as they listen. testpmd runs
with ``--no-pci``, ``--in-memory`` (no hugepage files, even after SIGKILL) and
``--single-file-segments`` (virtio_user shares at most 8 memory regions with the vhost-user
backend), on one CPU: main lcore and forwarding lcore share it.
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
from pathlib import Path

from ovsperf_lab.errors import VnfError
from ovsperf_lab.state import LabRunState, TrackedProcess, stop_process

log = logging.getLogger(__name__)


def make_testpmd_argv(
    *,
    binary: str,
    cpu: int,
    file_prefix: str,
    memory_mb: int,
    sockets: tuple[Path, Path],
    queues: int,
    forward_mode: str = "io",
    queue_size: int = 256,
    total_mbufs: int | None = None,
    extra_app_args: tuple[str, ...] = (),
    auto_start: bool = True,
    rx_queue_size: int | None = None,
) -> list[str]:
    """Return the ``dpdk-testpmd`` command line of a forwarder on ``sockets`` (server mode).

    ``queue_size`` [descriptors] is both the virtio_user ring and testpmd's ``--rxd``/``--txd``
    (the ring holds the smaller of the two); ``total_mbufs`` [1] sets ``--total-num-mbufs``
    (``None``: testpmd's default), see :func:`ovsperf_lab.generators.api.pool_mbufs`;
    ``auto_start`` false leaves forwarding stopped (interactive ``-i`` drives it);
    ``rx_queue_size`` [descriptors], when given, is the vdev's ring and ``--rxd`` while
    ``queue_size`` stays ``--txd`` (a traffic generator's RX ring larger than its TX ring).
    """
    ring = rx_queue_size if rx_queue_size is not None else queue_size
    argv = [
        binary,
        "--lcores",
        f"0@{cpu},1@{cpu}",
        "--no-pci",
        "--in-memory",
        "--single-file-segments",
        f"--file-prefix={file_prefix}",
        "-m",
        str(memory_mb),
    ]
    for i, sock in enumerate(sockets):
        argv += ["--vdev", f"net_virtio_user{i},path={sock},server=1,queues={queues},queue_size={ring}"]
    argv += [
        "--",
        f"--forward-mode={forward_mode}",
        *(["--auto-start"] if auto_start else []),
        "--nb-cores=1",
        f"--rxq={queues}",
        f"--txq={queues}",
        f"--rxd={ring}",
        f"--txd={queue_size}",
        "--no-lsc-interrupt",
        *([f"--total-num-mbufs={total_mbufs}"] if total_mbufs is not None else []),
        *extra_app_args,
    ]
    return argv


class ForwarderProcess:
    """A forwarder child process (testpmd or QEMU): stopped by Enter on stdin, then SIGTERM, then SIGKILL."""

    def __init__(self, state: LabRunState, name: str, argv: list[str], log_path: Path) -> None:
        self.state = state
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self._popen: subprocess.Popen[bytes] | None = None
        self._proc: TrackedProcess | None = None

    def start(self) -> None:
        """Start testpmd (it forwards as soon as OVS connects).

        :raises VnfError: when it cannot be started.
        """
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as out:
            try:
                self._popen = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=out, stderr=out)
            except OSError as err:
                raise VnfError(f"Cannot start {self.name} ('{self.argv[0]}'): {err}.") from err
        self._proc = self.state.track_process(self.name, self._popen.pid)
        log.info("Started %s (PID %d), log '%s'.", self.name, self._popen.pid, self.log_path)

    @property
    def pid(self) -> int | None:
        """Return the process id, ``None`` before :meth:`start`."""
        return self._popen.pid if self._popen else None

    def check_alive(self) -> None:
        """Raise if the process exited.

        :raises VnfError: naming the exit status and the log.
        """
        if self._popen is not None and self._popen.poll() is not None:
            raise VnfError(
                f"{self.name} (PID {self._popen.pid}) exited with status {self._popen.returncode}; "
                f"see '{self.log_path}'."
            )

    def command(self, line: str) -> None:
        """Write one line to the process's stdin (a testpmd ``-i`` command such as ``stop``).

        :raises VnfError: when the process is not running.
        """
        if self._popen is None or self._popen.stdin is None or self._popen.poll() is not None:
            raise VnfError(f"{self.name} is not running; cannot send {line!r}.")
        self._popen.stdin.write(line.encode() + b"\n")
        self._popen.stdin.flush()

    def stop(self) -> None:
        """Ask testpmd to quit (Enter on stdin), else SIGTERM/SIGKILL; idempotent."""
        if self._popen is None or self._proc is None:
            return
        if self._popen.poll() is None and self._popen.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                self._popen.stdin.write(b"\n")
                self._popen.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._popen.wait(timeout=10)
        stop_process(self._proc, popen=self._popen)
        self._popen = None
        self._proc = None


def qemu_argv(
    *,
    binary: str,
    image: Path,
    cpu: int,
    vcpus: int,
    memory_mb: int,
    sockets: tuple[Path, Path],
    queues: int,
    serial_log: Path,
) -> list[str]:
    """Return a QEMU/KVM command line for a guest with two vhost-user NICs on ``sockets``.

    Guest memory is shared hugepage memory (vhost-user needs ``share=on``); the image is opened
    with ``snapshot=on`` so the user's image is never modified. The guest must start forwarding
    between its two NICs by itself (testpmd or a Linux bridge at boot). ``cpu`` is pinned by
    the caller with ``taskset``.
    """
    argv = [
        "taskset",
        "-c",
        str(cpu),
        binary,
        "-enable-kvm",
        "-cpu",
        "host",
        "-smp",
        str(vcpus),
        "-m",
        str(memory_mb),
        "-object",
        f"memory-backend-file,id=mem0,size={memory_mb}M,mem-path=/dev/hugepages,share=on",
        "-numa",
        "node,memdev=mem0",
        "-mem-prealloc",
        "-drive",
        f"file={image},if=virtio,snapshot=on",
        "-display",
        "none",
        "-serial",
        f"file:{serial_log}",
        "-nodefaults",
    ]
    for i, sock in enumerate(sockets):
        argv += [
            "-chardev",
            f"socket,id=char{i},path={sock},server=on,wait=off",
            "-netdev",
            f"type=vhost-user,id=net{i},chardev=char{i},vhostforce=on,queues={queues}",
            "-device",
            f"virtio-net-pci,netdev=net{i},mac=52:54:00:00:00:0{i + 1},mq={'on' if queues > 1 else 'off'}",
        ]
    return argv
