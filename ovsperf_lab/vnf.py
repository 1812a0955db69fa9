"""Run the PVP forwarder: ``dpdk-testpmd`` io forwarding in a process, or a QEMU guest (KVM or TCG).

PVVP runs two forwarders, chained through OVS (:mod:`ovsperf_lab.testbed`), each with its own
sockets, log and CPU (testpmd: its file prefix; a guest: its serial console log and MACs). A guest
from an image whose manifest names a console marker (``ovsperf-vlab guest-image``: :data:`GUEST_MARKER`)
counts as up once its console shows it; a guest from any other image once OVS sees both its
vhost-user ports up (its virtio driver started them) (:func:`wait_guests_ready`, with a deadline; a
failure names the guest and quotes its console). Both kinds serve the two vhost-user
sockets of the topology's VNF ports (OVS is the client), so OVS (re)connects as soon as they
listen. testpmd runs with ``--no-pci``, ``--in-memory`` (no hugepage files, even after SIGKILL) and
``--single-file-segments`` (virtio_user shares at most 8 memory regions with the vhost-user
backend), on one CPU: main lcore and forwarding lcore share it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ovsperf_common.deadline import Deadline
from ovsperf_common.labfiles import (
    GUEST_ERROR_PREFIX,
    GUEST_KERNEL_SUFFIX,
    GUEST_MANIFEST_MAX_BYTES,
    GUEST_MANIFEST_SUFFIX,
    GUEST_MARKER,
    GUEST_MARKER_MAX_CHARS,
    guest_serial_log_name,
    guest_sidecar_name,
)
from ovsperf_common.regularfile import read_regular_text
from ovsperf_common.spec import SpecEnum
from ovsperf_lab.errors import GuestBootError, LabError, VnfError
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

    def __init__(
        self, state: LabRunState, name: str, argv: list[str], log_path: Path, *, enter_quits: bool = True
    ) -> None:
        self.state = state
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.enter_quits = enter_quits
        """Whether Enter on stdin stops it (testpmd); QEMU gets SIGTERM at once."""
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

    def exit_status(self) -> int | None:
        """Return the exit status once the process exited (negative: the signal), ``None`` while it runs."""
        return self._popen.poll() if self._popen is not None else None

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
        if self.enter_quits and self._popen.poll() is None and self._popen.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                self._popen.stdin.write(b"\n")
                self._popen.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._popen.wait(timeout=10)
        stop_process(self._proc, popen=self._popen)
        self._popen = None
        self._proc = None


class GuestAccel(SpecEnum):
    """How QEMU runs a guest's CPUs (``--guest-accel``)."""

    KVM = "kvm"
    """Hardware virtualisation through ``/dev/kvm`` (``-enable-kvm -cpu host``)."""
    TCG = "tcg"
    """QEMU's binary translator (``-accel tcg -cpu max``): any machine, tens of times slower."""


GUEST_BOOT_TIMEOUT_S = {GuestAccel.KVM: 120.0, GuestAccel.TCG: 600.0}
"""Default deadline of a guest's boot, from its QEMU's start to up: its image's marker, else both
vhost-user ports up in OVS [s]."""
TCG_TB_SIZE_MB = 64
"""TCG translation cache per guest [MiB] (QEMU's default, 1 GiB, would count in each guest's RSS)."""
CONSOLE_TAIL_LINES = 20
"""Console lines a boot failure quotes [1]."""


def guest_label(index: int) -> str:
    """Return how messages name guest ``index`` of the chain (0: ``'guest 1 of the chain'``)."""
    return f"guest {index + 1} of the chain"


def guest_serial_log(run_dir: Path, index: int) -> Path:
    """Return the serial console log of guest ``index``: ``guest-serial.log``, ``guest-2-serial.log``, ..."""
    return run_dir / guest_serial_log_name(index)


def guest_mac(index: int, nic: int) -> str:
    """Return the MAC of NIC ``nic`` (0, 1) of guest ``index``: ``52:54:00:00:<guest+1>:<nic+1>``."""
    return f"52:54:00:00:{index + 1:02x}:{nic + 1:02x}"


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
    accel: GuestAccel = GuestAccel.KVM,
    kernel: Path | None = None,
    index: int = 0,
) -> list[str]:
    """Return a QEMU command line for guest ``index`` with two vhost-user NICs on ``sockets``.

    Guest memory [MiB] is shared hugepage memory (vhost-user needs ``share=on``; QEMU unlinks its
    file at once, so none outlives it); the image is opened with ``snapshot=on`` so the user's
    image is never modified. The guest must start forwarding between its two NICs by itself
    (testpmd or a Linux bridge at boot); it is up at its image's marker on its serial console, else
    when both its vhost-user ports are up in OVS (:func:`wait_guests_ready`).
    ``accel`` KVM: ``-enable-kvm -cpu host``; TCG: ``-accel tcg`` with a
    :data:`TCG_TB_SIZE_MB` cache and ``-cpu max``. ``kernel``: a file QEMU loads with ``-kernel``
    (the GRUB core image beside an ``ovsperf-vlab guest-image`` disk, which reads its ``grub.cfg``
    from the disk); ``None``: the disk boots by itself. ``-no-reboot``: a guest that panics exits.
    NIC MACs are :func:`guest_mac` of ``index``. ``cpu`` is pinned with ``taskset``. Under TCG the
    NICs have no MSI-X (``vectors=0``, INTx): QEMU 7.2 (Debian 12) dies with SIGSEGV in
    ``vhost_net_start`` → ``msix_set_vector_notifiers`` without KVM's irqfd once the guest's
    virtio-net driver starts a vhost-user NIC that OVS serves (measured here, gdb backtrace).
    """
    cpu_args = (
        ["-enable-kvm", "-cpu", "host"]
        if accel is GuestAccel.KVM
        else ["-accel", f"tcg,tb-size={TCG_TB_SIZE_MB}", "-cpu", "max"]
    )
    argv = [
        "taskset",
        "-c",
        str(cpu),
        binary,
        *cpu_args,
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
        *(["-kernel", str(kernel)] if kernel is not None else []),
        "-display",
        "none",
        "-serial",
        f"file:{serial_log}",
        "-nodefaults",
        "-no-reboot",
    ]
    for i, sock in enumerate(sockets):
        argv += [
            "-chardev",
            f"socket,id=char{i},path={sock},server=on,wait=off",
            "-netdev",
            f"type=vhost-user,id=net{i},chardev=char{i},vhostforce=on,queues={queues}",
            "-device",
            f"virtio-net-pci,netdev=net{i},mac={guest_mac(index, i)},mq={'on' if queues > 1 else 'off'}"
            + (",vectors=0" if accel is GuestAccel.TCG else ""),
        ]
    return argv


def console_tail(serial_log: Path, lines: int = CONSOLE_TAIL_LINES) -> str:
    """Return the last ``lines`` lines of a guest's console log, indented; a note when there is none."""
    try:
        text = serial_log.read_bytes()[-256 * 1024 :].decode("utf-8", "replace")
    except OSError:
        return "    (no console output)"
    kept = [line.rstrip() for line in text.replace("\r", "").splitlines() if line.strip()][-lines:]
    return "\n".join(f"    {line[:200]}" for line in kept) or "    (no console output)"


def wait_guests_ready(
    guests: Sequence[tuple[ForwarderProcess, Path]],
    *,
    timeout_s: float,
    accel: GuestAccel,
    marker: str | None = GUEST_MARKER,
    ports_up: Callable[[int], bool] | None = None,
    interval_s: float = 0.5,
) -> list[float]:
    """Wait until every guest is up; return each one's boot time [s].

    Up: the guest printed ``marker`` on its console; with ``marker`` ``None`` (an image that names
    none), ``ports_up(index)`` says OVS sees guest ``index``'s two vhost-user ports up. A console
    line starting with :data:`~ovsperf_common.labfiles.GUEST_ERROR_PREFIX` (the guest image's
    bridge script failed) fails at once.
    ``guests`` are (QEMU process, serial log) in chain order, all started: they boot at once, and
    each has ``timeout_s`` [s] from now. Progress is logged every minute.

    :raises ValueError: when ``marker`` and ``ports_up`` are both ``None``.
    :raises GuestBootError: for the first guest whose QEMU exits, whose console shows an error line
        (quoted) or that misses the deadline: which of
        the chain, its QEMU exit status (if it exited), the console log's path and its last
        :data:`CONSOLE_TAIL_LINES` lines.
    """
    if marker is None and ports_up is None:
        raise ValueError("wait_guests_ready needs a console marker or a ports_up check.")
    sign = repr(marker) if marker is not None else "its two vhost-user ports up in OVS"
    start = time.monotonic()
    deadline = Deadline(what=f"{len(guests)} guest(s) to show {sign}", timeout_s=timeout_s)
    booted: dict[int, float] = {}
    last_note = start
    while len(booted) < len(guests):
        for index, (qemu, serial_log) in enumerate(guests):
            if index in booted:
                continue
            if marker is not None:
                up = _console_has(serial_log, marker)
            else:
                up = bool(ports_up and ports_up(index))
            error_line = _console_error(serial_log)
            if error_line is not None:
                raise GuestBootError(
                    f"The {guest_label(index)} ({qemu.name}) cannot forward: its console says "
                    f"{error_line!r}. Its console log '{serial_log}' ends with:\n{console_tail(serial_log)}"
                )
            if up:
                booted[index] = time.monotonic() - start
                log.info("%s is up (%s) after %.1f s.", guest_label(index).capitalize(), sign, booted[index])
                continue
            status = qemu.exit_status()
            if status is not None:
                raise GuestBootError(
                    f"The {guest_label(index)} ({qemu.name}) did not come up: its QEMU exited with status "
                    f"{status} before showing {sign}{_kvm_hint(accel)}. Its console log "
                    f"'{serial_log}' ends with:\n{console_tail(serial_log)}"
                )
        if len(booted) == len(guests):
            break
        if deadline.expired():
            index = next(i for i in range(len(guests)) if i not in booted)
            qemu, serial_log = guests[index]
            raise GuestBootError(
                f"The {guest_label(index)} ({qemu.name}) did not come up within {timeout_s:g} s: it never "
                f"showed {sign} (QEMU still running; '--guest-boot-timeout-s' sets the limit"
                f"{_kvm_hint(accel)}). Its console log '{serial_log}' ends with:\n{console_tail(serial_log)}"
            )
        now = time.monotonic()
        if now - last_note >= 60.0:
            last_note = now
            log.info("Waiting for %d guest(s) to boot (%.0f s of %g s).", len(guests) - len(booted),
                     now - start, timeout_s)  # fmt: skip
        time.sleep(interval_s)
    return [booted[i] for i in range(len(guests))]


def _console_has(serial_log: Path, marker: str) -> bool:
    """Return whether ``serial_log`` holds ``marker`` (kernel messages may share its line)."""
    try:
        return marker.encode() in serial_log.read_bytes()
    except OSError:
        return False


def _console_error(serial_log: Path) -> str | None:
    """Return the first console line of ``serial_log`` starting with ``GUEST_ERROR_PREFIX``, else ``None``."""
    try:
        text = serial_log.read_bytes()
    except OSError:
        return None
    needle = GUEST_ERROR_PREFIX.encode()
    at = text.find(needle)
    if at < 0:
        return None
    end = text.find(b"\n", at)
    line = text[at : end if end >= 0 else len(text)].decode("utf-8", "replace").strip()
    return line[:200]


def _kvm_hint(accel: GuestAccel) -> str:
    """Return the hint for a guest that failed under KVM (a ``/dev/kvm`` that cannot boot a kernel)."""
    if accel is GuestAccel.KVM:
        return "; under KVM: if '/dev/kvm' cannot run a guest here, try '--guest-accel tcg'"
    return ""


@dataclass(frozen=True)
class GuestImageInfo:
    """What the sidecars of a guest image say (:func:`read_guest_image`); ``None``: not said."""

    kernel: Path | None
    """The file QEMU loads with ``-kernel``; ``None``: the disk boots by itself."""
    loopback: str | None
    """What forwards in the guest (the manifest's ``loopback``); ``None``: what the scenario asks for."""
    marker: str | None
    """The line the guest prints on its console once it forwards (the manifest's ``marker``);
    ``None``: the image prints none, the guest is up when OVS sees its ports up."""


def read_guest_image(image: Path) -> GuestImageInfo:
    """Return what the sidecars of ``image`` say.

    ``ovsperf-vlab guest-image OUT.qcow2`` writes ``OUT.qcow2.kernel`` (its GRUB core image, for
    ``-kernel``) and ``OUT.qcow2.json`` (its manifest, ``"loopback": "linux_bridge"``, ``"marker":``
    :data:`~ovsperf_common.labfiles.GUEST_MARKER`); the names are
    :mod:`ovsperf_common.labfiles`'. An absent sidecar, or a manifest without ``loopback`` or
    ``marker``, gives ``None`` (an image that boots by itself, runs what the scenario asks for and
    prints no marker, e.g. VSperf's: it is up when OVS sees its ports up).

    :raises LabError: when the manifest is there but unreadable, not a JSON object, or its
        ``loopback`` or ``marker`` is not a string of 1 to 200 printable characters, or it says
        ``"complete": false`` (naming the file and the field).
    """
    kernel = image.with_name(guest_sidecar_name(image.name, GUEST_KERNEL_SUFFIX))
    manifest = image.with_name(guest_sidecar_name(image.name, GUEST_MANIFEST_SUFFIX))
    fields: dict[str, str | None] = {"loopback": None, "marker": None}
    if manifest.exists() or manifest.is_symlink():
        try:
            data = json.loads(read_regular_text(manifest, max_bytes=GUEST_MANIFEST_MAX_BYTES))
        except (OSError, ValueError) as err:
            raise LabError(
                f"Guest image manifest '{manifest}' is unreadable ({err}); rebuild the image with "
                "'ovsperf-vlab guest-image' or remove the manifest."
            ) from err
        if not isinstance(data, dict):
            raise LabError(f"Guest image manifest '{manifest}' is not a JSON object; rebuild the image.")
        if data.get("complete") is False:
            raise LabError(
                f"Guest image manifest '{manifest}': field 'complete' is false (its build was stopped "
                "or still runs); build it again with 'ovsperf-vlab guest-image'."
            )
        for key in fields:
            value = data.get(key)
            if value is None:
                continue
            if not (
                isinstance(value, str) and value.isprintable() and 0 < len(value) <= GUEST_MARKER_MAX_CHARS
            ):
                raise LabError(
                    f"Guest image manifest '{manifest}': field '{key}' must be a string of 1 to "
                    f"{GUEST_MARKER_MAX_CHARS} printable characters on one line, got {str(value)[:80]!r}."
                )
            fields[key] = value
    return GuestImageInfo(
        kernel=kernel if kernel.is_file() else None, loopback=fields["loopback"], marker=fields["marker"]
    )
