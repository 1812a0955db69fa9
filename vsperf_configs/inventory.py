"""Load the host inventory (YAML) into validated :class:`~vsperf_configs.model.HostInventory` records.

The inventory says, per lab host name, which NICs are wired for testing and how the CPUs are
partitioned. The Beaker tasks read it on the lab machines (``INVENTORY`` parameter) and
``vsperf-config`` layers it over the scenario. ``vsperf_configs/inventory.example.yaml`` documents
every field.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from ovsperf_catalog.model import VsperfTrafficgen
from ovsperf_common import fields
from ovsperf_common.errors import FieldError
from ovsperf_common.regularfile import read_regular_text
from vsperf_configs.errors import CpuOverlapError, InventoryError
from vsperf_configs.model import HostInventory, HostRole, MoongenPeer, TrexInstall

log = logging.getLogger(__name__)

DEFAULT_INVENTORY_PATH = Path("/etc/ovsperf/inventory.yaml")
"""Where the inventory is looked up when neither ``--inventory`` nor ``$OVSPERF_INVENTORY`` is given."""

DEFAULT_SOCKET_MEM_MB = 1024
"""DPDK memory for OVS on the NICs' NUMA node when the inventory does not say [MiB]."""

_PCI_RE = re.compile(r"^(?:([0-9a-f]{4}):)?([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$")
_HOST_KEYS = frozenset(
    {
        "role",
        "nics",
        "dpdk_ports",
        "numa_node",
        "numa_nodes",
        "cpus",
        "socket_mem_mb",
        "guest_image",
        "moongen",
        "trafficgen",
        "trex",
    }
)
_CPU_KEYS = frozenset({"ovs_lcore", "pmd", "guest", "isolated", "moongen", "generator"})
_PEER_KEYS = ("trafficgen", "moongen")
"""The DUT's generator peer: the engine-neutral name first, then the old one (the same record)."""
_GENERATOR_CPU_KEYS = ("generator", "moongen")
"""A TG's generator CPUs: the engine-neutral name first, then the old one."""
_DEVARG_KV = r"[a-z_][a-z0-9_]*=[A-Za-z0-9_.:/+-]+"
_VDEV_RE = re.compile(r"^net_[a-z0-9_]+(?:," + _DEVARG_KV + r")*$")
_PCI_ARGS_RE = re.compile(r"^([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])((?:," + _DEVARG_KV + r")*)$")
MAX_DEVARGS_CHARS = 256
"""Longest DPDK devargs accepted [characters]."""
_ADDRESS_RE = re.compile(r"[A-Za-z0-9:][A-Za-z0-9.:_-]*")
_USER_RE = re.compile(r"[a-z_][a-z0-9_-]*")
_MOONGEN_KEYS = frozenset({"host", "address", "user", "base_dir", "ports", "generator"})
_TREX_KEYS = frozenset({"url", "sha256", "install_dir", "ports"})
_TREX_URL_RE = re.compile(r"https?://[A-Za-z0-9.-]+(?::([0-9]{1,5}))?/[A-Za-z0-9._~/%+-]*")
"""A TRex tarball URL: http(s), a host, a path of characters that need no quoting anywhere."""
_SHA256_RE = re.compile(r"[0-9a-f]{64}")
_INSTALL_DIR_RE = re.compile(r"(/[A-Za-z0-9._+-]+)+")
SYSTEM_DIRS = frozenset(
    """/bin /boot /dev /etc /home /lib /lib64 /media /mnt /opt /proc /root /run /sbin /srv /sys /tmp /usr
    /var /usr/bin /usr/include /usr/lib /usr/lib64 /usr/libexec /usr/local /usr/sbin /usr/share /usr/src
    /usr/local/bin /usr/local/lib /usr/local/lib64 /usr/local/sbin /usr/local/share
    /var/cache /var/lib /var/log /var/opt /var/run /var/spool /var/tmp""".split()
)
"""Directories TRex is never installed into (setup_trex's ``SETUP_TREX_SYSTEM_DIRS``: the same)."""
NO_INSTALL_TOPS = frozenset({"boot", "dev", "etc", "proc", "run", "sys"})
"""Top directories nothing is installed under (setup_trex's ``SETUP_TREX_NO_INSTALL_TOPS``)."""
MAX_TCP_PORT = 65535
MAX_TREX_URL_CHARS = 1024
"""Longest TRex tarball URL accepted [characters]."""
TREX_MIN_CPUS = 3
"""Fewest generator CPUs TRex runs on: its master thread, its latency thread, one worker [1]."""
_MAX_CPU = 4095
_MAX_CPU_DIGITS = len(str(_MAX_CPU))
MAX_NUMA_NODES = 1024
"""Most NUMA nodes a host may have (Linux ``MAX_NUMNODES`` at the largest ``CONFIG_NODES_SHIFT``, 10)."""
MAX_SOCKET_MEM_MB = 1 << 24
"""Largest DPDK memory per NUMA node [MiB] (16 TiB): the value is written as it is into VSperf's config."""


@dataclass(frozen=True)
class Inventory:
    """All hosts of one inventory file, by host name, in file order."""

    path: Path
    """The file the inventory was read from."""
    hosts: Mapping[str, HostInventory]
    """Host name → host entry."""

    def get(self, hostname: str) -> HostInventory:
        """Return the entry for ``hostname`` (exact, then case-insensitive match).

        :raises InventoryError: listing the known hosts when there is no entry.
        """
        if hostname in self.hosts:
            return self.hosts[hostname]
        for name, entry in self.hosts.items():
            if name.lower() == hostname.lower():
                return entry
        known = ", ".join(f"'{h}'" for h in self.hosts) or "none"
        raise InventoryError(
            f"no inventory entry for this host; the inventory describes {known}. Add an entry "
            "for it (see vsperf_configs/inventory.example.yaml).",
            path=self.path,
            host=hostname,
        )


def resolve_inventory_path(path: Path | None) -> Path:
    """Return ``path``, else ``$OVSPERF_INVENTORY``, else :data:`DEFAULT_INVENTORY_PATH`."""
    if path is not None:
        return Path(path)
    env = os.environ.get("OVSPERF_INVENTORY")
    return Path(env) if env else DEFAULT_INVENTORY_PATH


def parse_cpu_list(raw: object, *, key: str) -> tuple[int, ...]:
    """Parse a CPU list given as a Linux cpulist string (``'2-5,8'``), an int, or a list of ints.

    Bounds are checked before a range is expanded, so ``'2-300000000'`` (or a range repeated
    many times) costs no more than a valid list.

    :returns: CPU ids in the given order, without repeats.
    :raises InventoryError: naming ``key`` when the text is malformed, a range is reversed, an id is
        negative or above 4095, or a CPU is listed twice.
    """
    items: list[int] = []
    if isinstance(raw, bool):
        raise InventoryError(f"{raw!r} is not a CPU list.", field=key)
    if isinstance(raw, int):
        items = [raw]
    elif isinstance(raw, list):
        if len(raw) > _MAX_CPU + 1:  # more ids than there are CPUs
            raise InventoryError("a CPU is listed twice.", field=key)
        for item in raw:
            if isinstance(item, bool) or not isinstance(item, int):
                raise InventoryError(f"{item!r} is not a CPU id.", field=key)
            items.append(item)
    elif isinstance(raw, str):
        for part in raw.replace(" ", "").split(","):
            match = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
            if match is None:
                raise InventoryError(f"'{_shown(raw, 80)}' is not a cpulist like '2-5,8'.", field=key)
            for number in match.groups():
                if number is not None and len(number.lstrip("0")) > _MAX_CPU_DIGITS:
                    raise InventoryError(f"CPU id {_shown(number)} is outside 0..{_MAX_CPU}.", field=key)
            first = int(match.group(1))
            last = int(match.group(2)) if match.group(2) is not None else first
            if last < first:
                raise InventoryError(f"range '{part}' runs backwards.", field=key)
            if last > _MAX_CPU:
                raise InventoryError(f"CPU id {last} is outside 0..{_MAX_CPU}.", field=key)
            if len(items) + last - first >= _MAX_CPU + 1:  # more ids than there are CPUs
                raise InventoryError("a CPU is listed twice.", field=key)
            items.extend(range(first, last + 1))
    else:
        raise InventoryError(f"{raw!r} is not a CPU list (cpulist text or list of ids).", field=key)
    for cpu in items:
        if not 0 <= cpu <= _MAX_CPU:
            raise InventoryError(f"CPU id {_shown(str(cpu))} is outside 0..{_MAX_CPU}.", field=key)
    if len(set(items)) != len(items):
        raise InventoryError("a CPU is listed twice.", field=key)
    return tuple(items)


def _shown(text: str, limit: int = 20) -> str:
    """Return ``text`` (digits, a cpulist) for a message: its first ``limit`` characters, '…' if longer."""
    return text if len(text) <= limit else f"{text[:limit]}…"


def format_cpu_list(cpus: tuple[int, ...]) -> str:
    """Return ``cpus`` as a compact Linux cpulist, ascending, e.g. ``'2-5,8'`` (tuned, isolcpus)."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    start = prev = None
    for cpu in ordered:
        if start is None:
            start = prev = cpu
        elif prev is not None and cpu == prev + 1:
            prev = cpu
        else:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = prev = cpu
    if start is not None:
        parts.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(parts)


def cpu_mask(cpus: tuple[int, ...]) -> str:
    """Return the hexadecimal CPU mask of ``cpus`` without ``0x`` (VSperf ``VSWITCH_PMD_CPU_MASK``)."""
    mask = 0
    for cpu in cpus:
        mask |= 1 << cpu
    return f"{mask:x}"


def normalize_pci(raw: object, *, key: str) -> str:
    """Return a PCI address in the full lowercase form ``0000:03:00.0``.

    :raises InventoryError: naming ``key`` when ``raw`` is not ``[dddd:]bb:dd.f``.
    """
    text = str(raw).strip().lower()
    match = _PCI_RE.match(text)
    if not isinstance(raw, str) or match is None:
        raise InventoryError(f"{raw!r} is not a PCI address like '0000:03:00.0'.", field=key)
    domain, bus, dev, fn = match.groups()
    return f"{domain or '0000'}:{bus}:{dev}.{fn}"


def dpdk_devargs(raw: object, *, key: str) -> str:
    """Return DPDK devargs of one port: a PCI address (full lowercase form) or a ``net_*`` vdev.

    Either may carry ``,name=value`` arguments (``net_af_packet0,iface=veth0``); the characters
    are those of DPDK's device arguments that need no quoting anywhere (no blank, quote, ``;``,
    ``$``, glob or control character), and the text never starts with ``-`` (it reaches argv).

    :raises InventoryError: naming ``key`` when ``raw`` is neither.
    """
    if not isinstance(raw, str) or not raw or len(raw) > MAX_DEVARGS_CHARS:
        raise InventoryError(
            f"{raw!r} is not DPDK devargs (a PCI address or a net_* vdev of at most "
            f"{MAX_DEVARGS_CHARS} characters).",
            field=key,
        )
    text = raw.strip()
    pci_part = text.split(",", 1)[0]
    if _PCI_RE.match(pci_part.lower()):
        candidate = normalize_pci(pci_part, key=key) + text[len(pci_part) :]
        if _PCI_ARGS_RE.match(candidate):
            return candidate
    elif _VDEV_RE.match(text):
        return text
    raise InventoryError(
        f"'{_shown(text, 80)}' is not DPDK devargs: a PCI address like '0000:03:00.0' or a vdev like "
        "'net_af_packet0,iface=veth0' (name=value arguments of letters, digits and _.:/+-).",
        field=key,
    )


def load_inventory(path: Path) -> Inventory:
    """Read and validate the host inventory at ``path``.

    :returns: the inventory with every host entry validated.
    :raises InventoryError: naming the file, the host and the field when the file cannot be read, is
        not YAML, or an entry is malformed (unknown key, wrong type, bad PCI address or cpulist).
    :raises InventoryError: also when a host's CPU lists overlap (PMD or guest CPUs on the OVS lcore,
        guest on PMD CPUs, the OVS lcore isolated).
    """
    path = Path(path)
    try:
        text = read_regular_text(path)
    except (OSError, UnicodeDecodeError) as err:
        raise InventoryError(
            f"cannot read the host inventory ({err.__class__.__name__}: {err}); give one with "
            "--inventory FILE or $OVSPERF_INVENTORY.",
            path=path,
        ) from err
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise InventoryError(f"not valid YAML: {err}", path=path) from err
    except (ValueError, RecursionError) as err:  # an int of > 4300 digits; nesting past the stack
        raise InventoryError(
            f"not a usable inventory ({err.__class__.__name__}: {str(err)[:200]}).", path=path
        ) from err
    if not isinstance(data, dict) or not isinstance(data.get("hosts"), dict):
        raise InventoryError("expected a mapping with a 'hosts' mapping at the top level.", path=path)
    if set(data) != {"hosts"}:
        raise InventoryError(f"unknown top-level keys {sorted(set(data) - {'hosts'})}.", path=path)
    hosts: dict[str, HostInventory] = {}
    for name, entry in data["hosts"].items():
        try:
            hosts[str(name)] = _parse_host(str(name), entry)
        except CpuOverlapError as err:
            raise CpuOverlapError(
                err.reason, cpus=err.cpus, path=path, host=str(name), field=err.field
            ) from err
        except (InventoryError, FieldError) as err:
            raise InventoryError(err.reason, path=path, host=str(name), field=err.field) from err
    for name, host in hosts.items():
        try:
            _check_trex_peer(host, hosts)
        except FieldError as err:
            raise InventoryError(err.reason, path=path, host=name, field=err.field) from err
    log.debug("Loaded %d hosts from '%s'.", len(hosts), path)
    return Inventory(path=path, hosts=hosts)


def trex_peer(dut: HostInventory, hosts: Mapping[str, HostInventory]) -> HostInventory:
    """Return the traffic generator entry of a DUT whose peer's ``generator`` is ``trex``.

    VSperf's TRex settings and the DUT's copy of TRex's client come from the TG's ``trex:``
    record, so the TG must be in the same inventory, with that record.

    :raises FieldError: naming ``trafficgen.host`` when the peer is not a traffic generator of the
        inventory with a ``trex:`` record, ``trafficgen.ports`` when its ports differ from the
        record's (both say which TG NIC faces which DUT NIC).
    """
    peer = dut.moongen
    if peer is None or peer.generator is not VsperfTrafficgen.TREX:
        raise FieldError("the traffic generator peer does not run TRex.", field="trafficgen.generator")
    entry = hosts.get(peer.host) or next(
        (h for n, h in hosts.items() if n.lower() == peer.host.lower()), None
    )
    if entry is None or entry.role is not HostRole.TRAFFICGEN or entry.trex is None:
        raise FieldError(
            f"generator 'trex' needs the traffic generator '{peer.host}' in this inventory with its "
            "'trex:' record (url, sha256, install_dir, ports).",
            field="trafficgen.host",
        )
    if entry.trex.ports != peer.ports:
        raise FieldError(
            f"{list(peer.ports)} differ from the traffic generator's 'trex.ports' {list(entry.trex.ports)}; "
            "both name the TG NICs wired to the DUT's port 0 and port 1.",
            field="trafficgen.ports",
        )
    return entry


def _check_trex_peer(host: HostInventory, hosts: Mapping[str, HostInventory]) -> None:
    """Check a DUT whose generator is TRex against its TG's entry (:func:`trex_peer`)."""
    if host.moongen is not None and host.moongen.generator is VsperfTrafficgen.TREX:
        trex_peer(host, hosts)


def _parse_host(name: str, entry: Any) -> HostInventory:
    """Return the validated entry of host ``name``.

    :raises FieldError: naming the field that is unknown, missing or invalid (the host's name is
        checked as a host name: it reaches the generated VSperf configuration).
    """
    try:
        fields.hostname(name)
    except FieldError as err:
        raise FieldError(f"the host's name: {err.reason}") from err
    if not isinstance(entry, dict):
        raise FieldError("the entry must be a mapping of fields.")
    fields.reject_unknown(entry, _HOST_KEYS)
    role = HostRole.from_spec(entry.get("role"), field="role")
    raw_nics = entry.get("nics")
    if not isinstance(raw_nics, list) or not raw_nics:
        raise FieldError("expected a non-empty list of PCI addresses.", field="nics")
    nics = tuple(normalize_pci(n, key="nics") for n in raw_nics)
    if len(set(nics)) != len(nics):
        raise FieldError("a NIC is listed twice.", field="nics")
    dpdk_ports = _dpdk_ports(entry.get("dpdk_ports"), len(nics))
    numa_node = _non_negative_int(entry, "numa_node", default=None, maximum=MAX_NUMA_NODES - 1)
    numa_nodes = _non_negative_int(entry, "numa_nodes", default=numa_node + 1, maximum=MAX_NUMA_NODES)
    if numa_nodes <= numa_node:
        raise FieldError(f"{numa_nodes} nodes cannot include node {numa_node}.", field="numa_nodes")
    socket_mem_mb = _non_negative_int(
        entry, "socket_mem_mb", default=DEFAULT_SOCKET_MEM_MB, maximum=MAX_SOCKET_MEM_MB
    )
    raw_cpus = entry.get("cpus")
    if not isinstance(raw_cpus, dict):
        raise FieldError("expected a mapping of CPU lists.", field="cpus")
    fields.reject_unknown(raw_cpus, _CPU_KEYS, "cpus")
    cpus = {k: parse_cpu_list(v, key=f"cpus.{k}") for k, v in raw_cpus.items()}
    guest_image = entry.get("guest_image")
    if guest_image is not None:
        guest_image = fields.absolute_path(guest_image, "guest_image")

    if role is HostRole.DUT and "trex" in entry:
        raise FieldError("only a traffic generator has a TRex installation.", field="trex")
    if role is HostRole.DUT:
        dut = _dut(name, entry, nics, numa_node, numa_nodes, socket_mem_mb, cpus, guest_image)
        return replace(dut, dpdk_ports=dpdk_ports)
    for peer_key in _PEER_KEYS:
        if peer_key in entry:
            raise FieldError("only a DUT names a traffic generator peer.", field=peer_key)
    for dut_only in ("ovs_lcore", "pmd", "guest"):
        if dut_only in cpus:
            raise FieldError("only a DUT has this CPU list.", field=f"cpus.{dut_only}")
    if "isolated" not in cpus:
        raise FieldError("a traffic generator needs its isolated CPUs.", field="cpus.isolated")
    generator_cpus = _generator_cpus(cpus)
    trex = _trex(entry["trex"], len(nics), generator_cpus) if "trex" in entry else None
    return HostInventory(
        hostname=name,
        role=role,
        nics=nics,
        numa_node=numa_node,
        numa_nodes=numa_nodes,
        isolated_cpus=tuple(sorted(cpus["isolated"])),
        ovs_lcore_cpus=(),
        pmd_cpus=(),
        guest_cpus=(),
        generator_cpus=generator_cpus,
        socket_mem_mb=socket_mem_mb,
        guest_image=guest_image,
        moongen=None,
        dpdk_ports=dpdk_ports,
        trex=trex,
    )


def _trex(raw: Any, nic_count: int, generator_cpus: tuple[int, ...]) -> TrexInstall:
    """Return a TG's TRex installation (the inventory's ``trex:`` record).

    :raises FieldError: naming ``trex.<key>`` when a key is unknown, missing or invalid (a URL that
        is not http(s) or holds a character needing quotes, a SHA-256 that is not 64 hex digits, a
        relative install directory, ports that are not two distinct indexes into ``nics``), or
        ``cpus.generator`` when fewer than :data:`TREX_MIN_CPUS` CPUs are given.
    """
    if not isinstance(raw, dict):
        raise FieldError("expected a mapping: url, sha256, install_dir, ports.", field="trex")
    fields.reject_unknown(raw, _TREX_KEYS, "trex")
    url = raw.get("url")
    if (
        not isinstance(url, str)
        or len(url) > MAX_TREX_URL_CHARS
        or not (url_match := _TREX_URL_RE.fullmatch(url))
        or url.endswith("/")
        or int(url_match.group(1) or 80) > MAX_TCP_PORT
    ):
        shown = _shown(url, 80) if isinstance(url, str) else repr(url)
        raise FieldError(
            f"'{shown}' is not the URL of a TRex release tarball (http:// or https://, a host and a file "
            f"path, at most {MAX_TREX_URL_CHARS} characters of letters, digits and ._~/%+-, a port up to "
            f"{MAX_TCP_PORT}), e.g. "
            "'https://trex-tgn.cisco.com/trex/release/v3.04.tar.gz'.",
            field="trex.url",
        )
    sha256 = raw.get("sha256")
    if isinstance(sha256, (int, float)) and not isinstance(sha256, bool):
        raise FieldError("YAML read it as a number: write the SHA-256 in quotes.", field="trex.sha256")
    if not isinstance(sha256, str) or not _SHA256_RE.fullmatch(sha256.lower()):
        raise FieldError(
            f"{_shown(str(sha256), 80)!r} is not a SHA-256 (64 hex digits; `sha256sum` of the tarball).",
            field="trex.sha256",
        )
    if "install_dir" not in raw:
        raise FieldError("required field is missing (e.g. /opt/trex).", field="trex.install_dir")
    install_dir = _install_dir(raw["install_dir"])
    ports = raw.get("ports", [0, 1])
    if (
        not isinstance(ports, list)
        or len(ports) != 2
        or any(isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < nic_count for p in ports)
        or ports[0] == ports[1]
    ):
        raise FieldError(
            f"{ports!r} is not two distinct indexes into the host's {nic_count} 'nics'.", field="trex.ports"
        )
    if len(generator_cpus) < TREX_MIN_CPUS:
        raise FieldError(
            f"TRex needs at least {TREX_MIN_CPUS} generator CPUs (its master thread, its latency thread and "
            f"a worker), got {len(generator_cpus)}.",
            field="cpus.generator",
        )
    return TrexInstall(url=url, sha256=sha256.lower(), install_dir=install_dir, ports=(ports[0], ports[1]))


def _install_dir(raw: object) -> str:
    """Return a TG's ``trex.install_dir`` (a trailing ``/`` dropped), checked as setup_trex checks it.

    setup_trex replaces the directory only when it is absent, empty or its own; this refuses what
    must never be one: ``.`` or ``..`` components, fewer than two components, a system directory
    (:data:`SYSTEM_DIRS`), anything under :data:`NO_INSTALL_TOPS`, a home directory itself.

    :raises FieldError: naming ``trex.install_dir``.
    """
    install_dir = fields.absolute_path(raw, "trex.install_dir").rstrip("/")
    parts = install_dir.split("/")[1:]
    if (
        not _INSTALL_DIR_RE.fullmatch(install_dir)
        or len(parts) < 2
        or any(part in (".", "..") for part in parts)
        or install_dir in SYSTEM_DIRS
        or parts[0] in NO_INSTALL_TOPS
        or (parts[0] == "home" and len(parts) == 2)
    ):
        raise FieldError(
            f"'{_shown(str(raw), 80)}' is not a directory to install TRex into: an absolute path of at least "
            "two components of letters, digits and ._+- (no '.' or '..': it reaches a systemd unit and "
            "VSperf's ssh command line), not a system directory such as /opt, /usr/local or /var/lib, "
            "nothing under /boot, /dev, /etc, /proc, /run or /sys; e.g. /opt/trex or /opt/trex/v3.04.",
            field="trex.install_dir",
        )
    return install_dir


def _generator_cpus(cpus: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
    """Return a TG's generator CPUs: ``cpus.generator`` or ``cpus.moongen``, default the isolated ones.

    :raises FieldError: naming ``cpus.moongen`` when both names are given.
    """
    given = [k for k in _GENERATOR_CPU_KEYS if k in cpus]
    if len(given) > 1:
        raise FieldError(
            "give the generator's CPUs once: 'cpus.generator' (or its old name 'cpus.moongen').",
            field="cpus.moongen",
        )
    return cpus[given[0]] if given else cpus["isolated"]


def _dpdk_ports(raw: Any, count: int) -> tuple[str, ...]:
    """Return the host's ``dpdk_ports`` (one devargs per test NIC), ``()`` when not given.

    :raises FieldError: naming ``dpdk_ports`` when it is not a list of ``count`` distinct devargs.
    """
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) != count:
        raise FieldError(
            f"expected a list of {count} DPDK devargs, one per test NIC in the same order.",
            field="dpdk_ports",
        )
    ports = tuple(dpdk_devargs(p, key="dpdk_ports") for p in raw)
    if len(set(ports)) != len(ports):
        raise FieldError("a DPDK port is listed twice.", field="dpdk_ports")
    return ports


def _dut(
    name: str,
    entry: dict[str, Any],
    nics: tuple[str, ...],
    numa_node: int,
    numa_nodes: int,
    socket_mem_mb: int,
    cpus: dict[str, tuple[int, ...]],
    guest_image: str | None,
) -> HostInventory:
    if len(nics) != 2:
        raise FieldError(f"a DUT needs exactly 2 test NICs (VSperf p2p), got {len(nics)}.", field="nics")
    for required in ("ovs_lcore", "pmd"):
        if required not in cpus or not cpus[required]:
            raise FieldError("required CPU list is missing.", field=f"cpus.{required}")
    for tg_only in _GENERATOR_CPU_KEYS:
        if tg_only in cpus:
            raise FieldError("only a traffic generator has this CPU list.", field=f"cpus.{tg_only}")
    lcore, pmd, guest = cpus["ovs_lcore"], cpus["pmd"], cpus.get("guest", ())
    _disjoint(pmd, lcore, "cpus.pmd", "the OVS lcore CPU list 'cpus.ovs_lcore'")
    _disjoint(guest, lcore, "cpus.guest", "the OVS lcore CPU list 'cpus.ovs_lcore'")
    _disjoint(guest, pmd, "cpus.guest", "the PMD CPU list 'cpus.pmd'")
    isolated = cpus.get("isolated", pmd + guest)
    _disjoint(
        isolated, lcore, "cpus.isolated", "the OVS lcore CPU list 'cpus.ovs_lcore' (it must stay schedulable)"
    )
    return HostInventory(
        hostname=name,
        role=HostRole.DUT,
        nics=nics,
        numa_node=numa_node,
        numa_nodes=numa_nodes,
        isolated_cpus=tuple(sorted(isolated)),
        ovs_lcore_cpus=lcore,
        pmd_cpus=pmd,
        guest_cpus=guest,
        generator_cpus=(),
        socket_mem_mb=socket_mem_mb,
        guest_image=guest_image,
        moongen=_peer(entry),
    )


def _disjoint(cpus: tuple[int, ...], other: tuple[int, ...], key: str, other_name: str) -> None:
    shared = tuple(sorted(set(cpus) & set(other)))
    if shared:
        raise CpuOverlapError(
            f"CPU(s) {format_cpu_list(shared)} also appear in {other_name}; the lists must not overlap.",
            cpus=shared,
            field=key,
        )


def _peer(entry: dict[str, Any]) -> MoongenPeer:
    """Return a DUT's traffic generator peer, given as ``trafficgen:`` or (its old name) ``moongen:``.

    :raises FieldError: naming the key when neither or both are given, or a field is invalid.
    """
    given = [k for k in _PEER_KEYS if k in entry]
    if len(given) > 1:
        raise FieldError(
            "give the traffic generator peer once: 'trafficgen' (or its old name 'moongen').", field="moongen"
        )
    return _moongen(entry.get(given[0]) if given else None, given[0] if given else "moongen")


def _moongen(raw: Any, key: str = "moongen") -> MoongenPeer:
    if not isinstance(raw, dict):
        raise FieldError(
            "a DUT needs its MoonGen peer ('moongen', or by the engine-neutral name 'trafficgen'): "
            "host, address, ports.",
            field=key,
        )
    fields.reject_unknown(raw, _MOONGEN_KEYS, key)
    host = fields.hostname(raw.get("host"), f"{key}.host")
    address = raw.get("address", host)
    if not isinstance(address, str) or not _ADDRESS_RE.fullmatch(address):
        raise FieldError(f"{address!r} is not a host name or IP address.", field=f"{key}.address")
    user = raw.get("user", "root")
    if not isinstance(user, str) or not _USER_RE.fullmatch(user):
        raise FieldError(f"{user!r} is not a user name.", field=f"{key}.user")
    base_dir = fields.absolute_path(raw.get("base_dir", "/root/lua-trafficgen"), f"{key}.base_dir")
    ports = raw.get("ports", [0, 1])
    if (
        not isinstance(ports, list)
        or len(ports) != 2
        or any(isinstance(p, bool) or not isinstance(p, int) or p < 0 for p in ports)
        or ports[0] == ports[1]
    ):
        raise FieldError(f"{ports!r} is not two distinct generator port ids.", field=f"{key}.ports")
    generator = VsperfTrafficgen.from_spec(raw.get("generator", "moongen"), field=f"{key}.generator")
    if generator is VsperfTrafficgen.TREX and "base_dir" in raw:
        raise FieldError(
            "is MoonGen's directory; TRex's is the traffic generator's 'trex.install_dir'.",
            field=f"{key}.base_dir",
        )
    return MoongenPeer(
        host=host,
        address=address,
        user=user,
        base_dir=base_dir,
        ports=(ports[0], ports[1]),
        generator=generator,
    )


def _non_negative_int(entry: dict[str, Any], key: str, default: int | None, maximum: int) -> int:
    """Return ``entry[key]`` (or ``default``) as an int in 0…``maximum``.

    :raises FieldError: naming ``key`` when it is missing without a default, not an int or
        outside 0…``maximum`` (checked before anything is sized by it).
    """
    value = entry.get(key, default)
    if value is None:
        raise FieldError("required field is missing.", field=key)
    return fields.non_negative_int(value, key, maximum=maximum)


def host_environment(host: HostInventory) -> dict[str, str]:
    """Return a host's settings as shell variables for the Beaker tasks (``vsperf-config --host-env``).

    :returns: variable name → value; lists are space-separated PCI addresses or Linux cpulists,
        empty strings where a field does not apply to the host's role.
    :raises InventoryError: when a value holds a control character (the loader refuses those
        already; this guards the line-parsed output itself).
    """
    peer = host.moongen
    env = {
        "ROLE": host.role.value,
        "TEST_NICS": " ".join(host.nics),
        "NUMA_NODE": str(host.numa_node),
        "ISOLATED_CPUS": format_cpu_list(host.isolated_cpus),
        "OVS_LCORE_CPUS": format_cpu_list(host.ovs_lcore_cpus),
        "PMD_CPUS": format_cpu_list(host.pmd_cpus),
        "GUEST_CPUS": format_cpu_list(host.guest_cpus),
        "MOONGEN_CPUS": ",".join(str(c) for c in host.generator_cpus),
        "GENERATOR_CPUS": ",".join(str(c) for c in host.generator_cpus),
        "DPDK_PORTS": " ".join(host.ports),
        "GUEST_IMAGE": host.guest_image or "",
        "MOONGEN_HOST": peer.host if peer else "",
        "MOONGEN_ADDRESS": peer.address if peer else "",
        "MOONGEN_USER": peer.user if peer else "",
        "MOONGEN_BASE_DIR": peer.base_dir if peer else "",
        "GENERATOR": peer.generator.value if peer else ("trex" if host.trex else ""),
        "TREX_URL": host.trex.url if host.trex else "",
        "TREX_SHA256": host.trex.sha256 if host.trex else "",
        "TREX_INSTALL_DIR": host.trex.install_dir if host.trex else "",
        "TREX_INTERFACES": " ".join(host.nics[p] for p in host.trex.ports) if host.trex else "",
    }
    for name, value in env.items():  # the tasks read NAME=VALUE lines: a value must stay on its line
        if not value.isprintable():
            raise InventoryError(
                f"{value!r} would leave its 'NAME=VALUE' line.", host=host.hostname, field=name
            )
    return env
