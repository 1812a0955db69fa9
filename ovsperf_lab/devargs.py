"""Name a NIC port as DPDK devargs (``--dut-port``, ``--tg-port``) and check a PCI one on this host.

A port is a PCI address (``0000:03:00.0``, optionally with driver arguments after a comma; DPDK
then needs it on its allow-list, ``-a``) or a virtual device (``net_af_packet0,iface=veth0``; the
process keeps ``--no-pci``). :func:`parse_devargs` validates the text (it enters OVS's database
and EAL's command line, never a shell). :func:`pci_port_problem` says, from ``/sys`` alone and
before anything changes, why this host must not hand a PCI device to DPDK: it does not exist, or
its kernel driver owns a network interface that is up or carries an address (the management
interface, in the worst case). Pure but for reading ``/sys`` and ``ip -j addr``; raises
``ValueError`` (callers name their option).
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

PCI_DEVICES = Path("/sys/bus/pci/devices")
"""Where the kernel lists PCI devices by address (sysfs-bus-pci)."""

SYS_NET = Path("/sys/class/net")
"""Network interfaces (sysfs-class-net): ``flags`` holds ``IFF_UP`` (0x1)."""

_PCI_RE = re.compile(r"(?:(?P<domain>[0-9a-fA-F]{4}):)?(?P<bdf>[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\Z")
_VDEV_RE = re.compile(r"net_[a-z0-9_]+\Z")
_ARGS_RE = re.compile(r"[A-Za-z0-9_.:/=+@-]+\Z")
IFF_UP = 0x1
"""``IFF_UP`` of ``/sys/class/net/<if>/flags`` (netdevice(7))."""


@dataclass(frozen=True)
class Devargs:
    """One NIC port as DPDK devargs."""

    text: str
    """The whole devargs, as OVS's ``options:dpdk-devargs`` and EAL ``-a``/``--vdev`` take them."""
    pci_address: str | None
    """The full PCI address (``0000:03:00.0``) of a PCI port; ``None`` for a vdev."""
    name: str
    """The DPDK device name: the PCI address, or the vdev's name (``net_af_packet0``)."""

    @property
    def is_pci(self) -> bool:
        """Return whether it is a PCI device (allow-listed with ``-a``, not ``--vdev``)."""
        return self.pci_address is not None


def parse_devargs(text: str) -> Devargs:
    """Return ``text`` as devargs: ``[DOMAIN:]BUS:DEV.FN[,ARGS]`` or ``net_<driver><n>[,ARGS]``.

    ``ARGS`` are ``key=value`` pairs of letters, digits and ``_ . : / = + @ -`` separated by commas.

    :raises ValueError: naming the text and the accepted forms.
    """
    name, comma, args = text.partition(",")
    match = _PCI_RE.match(name)
    ok_args = not comma or all(_ARGS_RE.match(part) for part in args.split(","))
    if match and ok_args:
        address = f"{(match.group('domain') or '0000').lower()}:{match.group('bdf').lower()}"
        return Devargs(text, address, address)
    if _VDEV_RE.match(name) and ok_args:
        return Devargs(text, None, name)
    raise ValueError(
        f"{text[:120]!r} is not DPDK devargs of a NIC port: a PCI address (0000:03:00.0) or a virtual "
        "device (net_af_packet0,iface=veth0), with optional key=value arguments after commas"
    )


def pci_port_problem(address: str, *, devices: Path = PCI_DEVICES, sys_net: Path = SYS_NET) -> str | None:
    """Return why PCI device ``address`` must not be given to DPDK here, ``None`` when it may.

    Refused: no ``<devices>/<address>``; a network interface of its kernel driver (an entry of
    ``sys_net`` that resolves below the device) that is up or carries an IPv4/IPv6 address. A device bound
    to ``vfio-pci`` (or any driver without interfaces) passes; DPDK itself tells whether it can
    drive it.
    """
    device = devices / address
    if not device.exists():
        return f"PCI device '{address}' does not exist (no '{device}')"
    for interface in _interfaces_of(device.resolve(), sys_net):
        try:
            flags = int((sys_net / interface / "flags").read_text().strip(), 16)
        except (OSError, ValueError):
            flags = 0
        addresses = _addresses(interface)
        if flags & IFF_UP or addresses:
            state = "up" if flags & IFF_UP else "down"
            held = f" with address {', '.join(addresses)}" if addresses else ""
            return (
                f"PCI device '{address}' is network interface '{interface}' of its kernel driver, "
                f"{state}{held} (perhaps the management interface); bind the port to vfio-pci first "
                f"('dpdk-devbind.py -b vfio-pci {address}') or name another port"
            )
    return None


def _interfaces_of(device: Path, sys_net: Path) -> list[str]:
    """Return the network interfaces whose sysfs device lies at or below ``device``.

    ``device`` is a resolved ``/sys/devices/…`` path; an interface is ``<dev>/net/<if>``, or deeper
    as with virtio's ``<dev>/virtioN/net/<if>``.
    """
    found = []
    for entry in sorted(sys_net.iterdir()) if sys_net.is_dir() else []:
        try:
            real = entry.resolve()
        except OSError:
            continue
        if real.is_relative_to(device):
            found.append(entry.name)
    return found


def _addresses(interface: str) -> list[str]:
    """Return the IP addresses of ``interface`` (``ip -j addr show dev``); none when ``ip`` fails."""
    try:
        done = subprocess.run(
            ["ip", "-j", "addr", "show", "dev", interface],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        entries = json.loads(done.stdout or "[]") if done.returncode == 0 else []
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError):
        return []
    return [
        str(info.get("local"))
        for entry in entries
        if isinstance(entry, dict)
        for info in entry.get("addr_info", [])
        if isinstance(info, dict) and info.get("local")
    ]
