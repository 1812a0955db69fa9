"""Say where the virtual lab keeps its files and how its two VMs are sized and wired (stdlib only).

The parser of ``ovsperf-vlab`` shows these defaults, so this module is light: no QEMU, no psutil.
One state directory holds everything (docs/vlab.md): the image (built by :mod:`vlab.image`), the
lab's SSH key, the per-VM qcow2 overlays with their saved state, the QEMU logs and sockets, the
state file of the running lab and the lock file.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from ovsperf_common.errors import OvsperfError

DEFAULT_STATE_DIR = Path("/var/lib/ovsperf-vlab")
"""Where the image, the key, the overlays and the state file live unless ``--state-dir`` says."""
DEFAULT_SSH_PORT = 2222
"""The TG's SSH port on 127.0.0.1; the DUT's is the next one."""
DEFAULT_DATA_PORT = 47000
"""First of the six loopback UDP ports that carry the data links and the interconnect (two per link)."""
DEFAULT_MEMORY_MIB = 2048
"""Guest memory of each VM [MiB]: room for 512 MiB of 2 MiB hugepages beside Debian."""
DEFAULT_TB_SIZE_MIB = 256
"""TCG translation-block cache of each VM [MiB] (QEMU's default is 1 GiB: the 8 GiB goal needs less)."""
DEFAULT_CPUS = 2
"""Virtual CPUs of each VM (OVS-DPDK needs a PMD core beside the one of the system)."""
DEFAULT_MIRROR = "http://deb.debian.org/debian"
"""The distribution's own mirror the image is built from (packages only, never an image)."""
SUITE = "bookworm"
"""The Debian release of the image (Debian 12)."""

VM_NAMES = ("tg", "dut")
"""The two VMs, in start order: the traffic generator host and the device under test."""
DATA_NICS_PER_VM = 2
"""Data NICs per VM; NIC ``i`` of the TG is linked to NIC ``i`` of the DUT."""
INTERCONNECT_LINK = DATA_NICS_PER_VM
"""Link index of the hosts' own network (after the data links): the TG and the DUT reach each other
over it by name (SSH from the DUT to the TG, perfsync), as lab hosts do over their lab network."""
INTERCONNECT_ADDRESS = {"tg": "10.98.0.1", "dut": "10.98.0.2"}
"""Each VM's address on the interconnect (/24; the image's /etc/hosts names them ``tg`` and ``dut``)."""
LINKS = DATA_NICS_PER_VM + 1
"""Point-to-point links between the VMs: the data links and the interconnect (two UDP ports each)."""


def interconnect_mac(vm: str) -> str:
    """Return the MAC of ``vm``'s interconnect NIC: ``52:54:00:b<vm>:00:00`` (``b0`` TG, ``b1`` DUT)."""
    return f"52:54:00:{0xB0 + VM_NAMES.index(vm):02x}:00:00"


SNAPSHOT = "vlab-ready"
"""Name of the saved VM state (QEMU ``savevm``) taken once both VMs answer SSH; ``reset`` loads it."""


class VlabError(OvsperfError):
    """The virtual lab cannot do what was asked (bad input, a VM that does not come up, a busy lab)."""


MAX_STATE_DIR_CHARS = 90
"""Longest state directory: ``<dir>/vms/<vm>/qmp.sock`` must fit a Unix socket path (107 bytes)."""
_STATE_DIR_RE = re.compile(r"/[A-Za-z0-9._/-]*")
_MIRROR_RE = re.compile(r"[A-Za-z0-9._~:/?#@!&+,;=%-]+")


@dataclass(frozen=True)
class LabConfig:
    """How the lab is laid out on this machine: state directory, ports and VM size."""

    state_dir: Path
    """The directory of the image, key, overlays, logs, state file and lock."""
    ssh_port: int = DEFAULT_SSH_PORT
    """TG's forwarded SSH port on 127.0.0.1; the DUT gets ``ssh_port + 1``."""
    data_port: int = DEFAULT_DATA_PORT
    """First loopback UDP port of the links; six consecutive ports are used (:data:`LINKS`)."""
    memory_mib: int = DEFAULT_MEMORY_MIB
    """Guest memory of each VM [MiB]."""
    tb_size_mib: int = DEFAULT_TB_SIZE_MIB
    """TCG translation-block cache of each VM [MiB] (unused with KVM)."""
    cpus: int = DEFAULT_CPUS
    """Virtual CPUs of each VM [1]."""
    mirror: str = DEFAULT_MIRROR
    """Debian mirror the image is built from."""

    def __post_init__(self) -> None:
        """Refuse ports and sizes that cannot work, naming the field.

        :raises VlabError: for a port range outside 1024–65535 or overlapping the other, or a
            size below its minimum.
        """
        if not 1024 <= self.ssh_port <= 65535 - len(VM_NAMES):
            raise VlabError(
                f"'ssh_port' must be within 1024 and {65535 - len(VM_NAMES)}, got {self.ssh_port}."
            )
        links = 2 * LINKS
        if not 1024 <= self.data_port <= 65535 - links:
            raise VlabError(f"'data_port' must be within 1024 and {65535 - links}, got {self.data_port}.")
        ssh = set(range(self.ssh_port, self.ssh_port + len(VM_NAMES)))
        if ssh & set(range(self.data_port, self.data_port + links)):
            raise VlabError(
                f"'ssh_port' {self.ssh_port} and 'data_port' {self.data_port}: the SSH ports and the "
                f"{links} link ports overlap; choose ranges apart."
            )
        if self.memory_mib < 512:
            raise VlabError(f"'memory_mib' must be at least 512 MiB, got {self.memory_mib}.")
        if self.tb_size_mib < 32:
            raise VlabError(f"'tb_size_mib' must be at least 32 MiB, got {self.tb_size_mib}.")
        if not 1 <= self.cpus <= 64:
            raise VlabError(f"'cpus' must be within 1 and 64, got {self.cpus}.")
        # The state directory goes into QEMU options (split on commas), ssh options (split on
        # blanks) and mmdebstrap's shell hooks: plain absolute paths only, short enough for the
        # QMP socket (:data:`MAX_STATE_DIR_CHARS`).
        state = str(self.state_dir)
        if not _STATE_DIR_RE.fullmatch(state) or len(state) > MAX_STATE_DIR_CHARS:
            raise VlabError(
                f"'state_dir' must be an absolute path of at most {MAX_STATE_DIR_CHARS} letters, digits and "
                f"'._/-', got "
                f"{state[:80]!r}."
            )
        split = urllib.parse.urlsplit(self.mirror)
        if split.scheme not in ("http", "https") or not split.netloc or not _MIRROR_RE.fullmatch(self.mirror):
            raise VlabError(
                f"'mirror' must be an http(s) URL without blanks or quotes, got {self.mirror[:80]!r}."
            )

    def ssh_port_of(self, vm: str) -> int:
        """Return the forwarded SSH port of ``vm`` on 127.0.0.1."""
        return self.ssh_port + VM_NAMES.index(vm)

    def data_ports_of(self, vm: str, nic: int) -> tuple[int, int]:
        """Return (local, remote) loopback UDP ports of link ``nic`` of ``vm``.

        ``nic`` is a data NIC or :data:`INTERCONNECT_LINK`.

        Link ``nic`` joins TG NIC ``nic`` and DUT NIC ``nic``: TG listens on
        ``data_port + 2·nic``, the DUT on the port after it, each sends to the other's.
        """
        tg_port = self.data_port + 2 * nic
        dut_port = tg_port + 1
        return (tg_port, dut_port) if vm == "tg" else (dut_port, tg_port)


@dataclass(frozen=True)
class LabPaths:
    """The files of the lab under its state directory."""

    state_dir: Path

    @property
    def image_dir(self) -> Path:
        """The complete image (only a finished build is renamed to this name)."""
        return self.state_dir / "image"

    @property
    def key(self) -> Path:
        """The lab's private SSH key (``.pub`` beside it is authorised in the image)."""
        return self.state_dir / "id_ed25519"

    @property
    def build_log(self) -> Path:
        """The output of the last image build's mmdebstrap."""
        return self.state_dir / "build.log"

    @property
    def known_hosts(self) -> Path:
        """The VMs' host keys, as ``ssh`` learns them (dropped with each new image)."""
        return self.state_dir / "known_hosts"

    @property
    def state_file(self) -> Path:
        """JSON record of the running lab (the QEMU pids)."""
        return self.state_dir / "lab.json"

    @property
    def lock(self) -> Path:
        """Lock file held by every command that changes the lab."""
        return self.state_dir / "vlab.lock"

    @property
    def accel_file(self) -> Path:
        """The accelerator the KVM probe chose on this boot of the host."""
        return self.state_dir / "accel.json"

    def vm_dir(self, vm: str) -> Path:
        """Return the directory of the overlay, logs and sockets of ``vm``."""
        return self.state_dir / "vms" / vm
