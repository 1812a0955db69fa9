"""Print the ``ovsperf-lab run`` options of one DUT from the host inventory (the ``ovsperf`` engine).

``python3 -m vsperf_configs.labargs --inventory FILE --host DUT_FQDN [--null]`` prints, one argv
word per line (``--null``: each word ended by NUL), the options of the two-host engine contract
(docs/engines.md)::

    --dut-port DEVARGS   --dut-port DEVARGS     the DUT's test ports, port 0 first (``dpdk_ports``/``nics``)
    --tg-port DEVARGS    --tg-port DEVARGS      the generator's ports cabled to them (peer ``ports``)
    --tg-ssh USER@ADDRESS                       the generator host (the DUT's ``trafficgen``/``moongen`` peer)
    --tg-cpus CPULIST                           its generator CPUs (``cpus.generator``/``cpus.moongen``)
    --pmd-cpus CPULIST  --lcore-cpu N  --socket-mem-mb N    the DUT's OVS CPUs and memory

A shell script reads them without word splitting or globbing: ``mapfile -t ARGS <FILE`` (or
``mapfile -d '' -t``). Every word is checked again before it is printed — devargs of a PCI address
or a ``net_*`` vdev (:func:`~vsperf_configs.inventory.dpdk_devargs`), a user and address that cannot
be taken for an option, cpulists of digits — so a word never holds a newline, a blank or a shell
character, and none but the option names starts with ``-``. Runs on the lab hosts (Python 3.9).
Exit 0, or 2 naming the file, the host and the field.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from pathlib import Path

from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.runner import run_command
from vsperf_configs.errors import InventoryError
from vsperf_configs.inventory import (
    Inventory,
    dpdk_devargs,
    format_cpu_list,
    load_inventory,
    resolve_inventory_path,
)
from vsperf_configs.model import HostRole

log = logging.getLogger(__name__)

LAB_OPTIONS = (
    "--dut-port",
    "--tg-port",
    "--tg-ssh",
    "--tg-cpus",
    "--pmd-cpus",
    "--lcore-cpu",
    "--socket-mem-mb",
)
"""The ``ovsperf-lab run`` options this module produces (a user giving one too is refused by
``ovsperf-remote lab``)."""

_SSH_USER_RE = re.compile(r"\A[a-z_][a-z0-9_-]{0,31}\Z")
_SSH_ADDRESS_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,252}\Z")
_CPULIST_RE = re.compile(r"\A[0-9]+(?:-[0-9]+)?(?:,[0-9]+(?:-[0-9]+)?)*\Z")


def lab_options(inventory: Inventory, dut_host: str) -> tuple[str, ...]:
    """Return the ``ovsperf-lab run`` argv words for the DUT ``dut_host`` (module docstring).

    :returns: option, value, option, value, … in the order of :data:`LAB_OPTIONS`.
    :raises InventoryError: naming the file, host and field when the host is missing or not a DUT,
        its generator peer has no inventory entry or is not a traffic generator, a peer port id
        is not one of the generator's ports, or a value is not fit for an argv word.
    """
    dut = inventory.get(dut_host)
    if dut.role is not HostRole.DUT or dut.moongen is None:
        raise InventoryError(
            f"the host is a '{dut.role.value}', not a DUT; give the DUT's name.",
            path=inventory.path,
            host=dut.hostname,
            field="role",
        )
    peer = dut.moongen
    try:
        tg = inventory.get(peer.host)
    except InventoryError as err:
        raise InventoryError(
            f"the DUT's traffic generator '{peer.host}' has no inventory entry, so its ports are unknown; "
            "add one with role 'trafficgen'.",
            path=inventory.path,
            host=dut.hostname,
            field="trafficgen.host",
        ) from err
    if tg.role is not HostRole.TRAFFICGEN:
        raise InventoryError(
            f"the DUT's traffic generator '{peer.host}' is a '{tg.role.value}' in the inventory, not a "
            "'trafficgen'.",
            path=inventory.path,
            host=dut.hostname,
            field="trafficgen.host",
        )
    tg_ports = []
    for port in peer.ports:
        if port >= len(tg.ports):
            raise InventoryError(
                f"generator port {port} does not exist: '{tg.hostname}' has {len(tg.ports)} test port(s) "
                "(ids count from 0 in its 'nics'/'dpdk_ports').",
                path=inventory.path,
                host=dut.hostname,
                field="trafficgen.ports",
            )
        tg_ports.append(tg.ports[port])
    words: list[str] = []
    for option, values, host, field in (
        ("--dut-port", dut.ports[:2], dut.hostname, "dpdk_ports"),
        ("--tg-port", tuple(tg_ports), tg.hostname, "dpdk_ports"),
    ):
        for value in values:
            words += [option, _checked(value, inventory, host, field)]
    if not _SSH_USER_RE.match(peer.user):
        raise _error(f"'{peer.user}' is not a user name for ssh.", inventory, dut.hostname, "trafficgen.user")
    if not _SSH_ADDRESS_RE.match(peer.address):
        raise _error(
            f"'{peer.address}' is not a host name or IPv4 address ssh can take in USER@HOST (an IPv6 "
            "address: give the host's name).",
            inventory,
            dut.hostname,
            "trafficgen.address",
        )
    words += ["--tg-ssh", f"{peer.user}@{peer.address}"]
    words += [
        "--tg-cpus",
        _cpulist(format_cpu_list(tg.generator_cpus), inventory, tg.hostname, "cpus.generator"),
    ]
    words += ["--pmd-cpus", _cpulist(format_cpu_list(dut.pmd_cpus), inventory, dut.hostname, "cpus.pmd")]
    words += ["--lcore-cpu", str(dut.ovs_lcore_cpus[0])]
    words += ["--socket-mem-mb", str(dut.socket_mem_mb)]
    return tuple(words)


def _checked(value: str, inventory: Inventory, host: str, field: str) -> str:
    """Return ``value`` after :func:`dpdk_devargs` accepted it (again: the output is argv)."""
    try:
        return dpdk_devargs(value, key=field)
    except InventoryError as err:
        raise _error(err.reason, inventory, host, field) from err


def _cpulist(text: str, inventory: Inventory, host: str, field: str) -> str:
    if not _CPULIST_RE.match(text):
        raise _error(f"'{text}' is not a cpulist like '2-5,8'.", inventory, host, field)
    return text


def _error(reason: str, inventory: Inventory, host: str, field: str) -> InventoryError:
    return InventoryError(reason, path=inventory.path, host=host, field=field)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python3 -m vsperf_configs.labargs",
        description="Print the ovsperf-lab run options of a DUT from the host inventory (engine 'ovsperf'): "
        "one argv word per line, or NUL-terminated with --null.",
        epilog=ExitCode.help_text(),
    )
    parser.add_argument("--host", required=True, help="the DUT's name as in the inventory")
    parser.add_argument(
        "--inventory",
        type=Path,
        help="host inventory YAML (default: $OVSPERF_INVENTORY, else /etc/ovsperf/inventory.yaml)",
    )
    parser.add_argument("--null", action="store_true", help="end every word with NUL instead of a newline")
    return parser


def _run(args: argparse.Namespace) -> int:
    words = lab_options(load_inventory(resolve_inventory_path(args.inventory)), args.host)
    end = "\0" if args.null else "\n"
    sys.stdout.write("".join(word + end for word in words))
    return int(ExitCode.OK)


def main(argv: list[str] | None = None) -> int:
    """Run ``python3 -m vsperf_configs.labargs``; return the exit code (0, or 2 for a bad inventory)."""
    return run_command(_parser(), _run, argv)


if __name__ == "__main__":
    sys.exit(main())
