"""The ``--trex-*`` options of ``ovsperf-lab run`` and ``doctor``, and the checks they need first.

Light (standard library and the project's light modules): the parser lists them with the base
install. ``run --generator trex`` needs ``--trex-server`` and two-host mode's NIC ports
(``--dut-port``; ``--tg-port`` names TRex's ports by PCI address); ``--tg-ssh`` does not apply
(the client talks to TRex over ZMQ). ``doctor --trex-server`` asks the server for its version
and ports (:func:`~ovsperf_lab.generators.trex.server_line`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ovsperf_common.trexclient import DEFAULT_ASYNC_PORT, DEFAULT_TIMEOUT_S, TrexError, TrexServer
from ovsperf_lab.errors import LabError
from ovsperf_lab.generators.trex import NAME, TrexOptions, parse_ports


def add_trex_options(parser: Any, *, doctor: bool = False) -> None:
    """Add the TRex options to ``parser`` (``doctor``: only those that reach the server)."""
    group = parser.add_argument_group(
        "TRex (--generator trex; docs/lab.md 'Traffic generators')",
        None if doctor else "a running TRex v3.x stateless server on its own host and NIC ports",
    )
    group.add_argument(
        "--trex-server", metavar="HOST[:PORT]",
        help="the TRex server and its RPC port (4501)"
        + (": check it answers, with its version and ports" if doctor else ""),
    )  # fmt: skip
    group.add_argument(
        "--trex-async-port", type=int, default=DEFAULT_ASYNC_PORT, metavar="PORT",
        help="its publisher port (%(default)s)",
    )  # fmt: skip
    group.add_argument(
        "--trex-client-dir", type=Path, metavar="DIR",
        help="use the server installation's client (automation/trex_control_plane/interactive, or its "
        "trex_stl_lib) instead of the lbr-trex-client package",
    )  # fmt: skip
    group.add_argument(
        "--trex-timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
        help="time one call to the server may take [s] (%(default)s)",
    )  # fmt: skip
    if not doctor:
        group.add_argument(
            "--trex-ports", default="0,1", metavar="A,B",
            help="TRex's ports: A sends direction 0 (west), B direction 1 (east) (%(default)s)",
        )  # fmt: skip
        group.add_argument(
            "--trex-force-acquire", action="store_true",
            help="take the ports over even when another user holds them (stops their traffic)",
        )  # fmt: skip


def trex_server(args: argparse.Namespace) -> TrexServer | None:
    """Return the server of ``--trex-server`` with its options, ``None`` without it.

    :raises LabError: naming the option, for a malformed server or port.
    """
    if args.trex_server is None:
        return None
    try:
        return TrexServer.parse(
            args.trex_server,
            async_port=args.trex_async_port,
            client_dir=args.trex_client_dir,
            force_acquire=bool(getattr(args, "trex_force_acquire", False)),
            timeout_s=args.trex_timeout,
        )
    except TrexError as err:
        raise LabError(f"Option '--trex-server': {err}") from err


def trex_options(args: argparse.Namespace) -> TrexOptions | None:
    """Return the run's TRex options when ``--generator trex``, else ``None``; check they fit.

    :raises LabError: naming the option: ``--trex-server`` missing with ``trex`` or given
        without it, ``--tg-ssh`` with ``trex``, or two-host mode's ports missing.
    """
    given = [
        f"--{name.replace('_', '-')}" for name in ("trex_server", "trex_client_dir") if getattr(args, name)
    ]
    if args.generator != NAME:
        if given or getattr(args, "trex_force_acquire", False):
            raise LabError(
                f"Option '{(given or ['--trex-force-acquire'])[0]}' applies to '--generator {NAME}'."
            )
        return None
    server = trex_server(args)
    if server is None:
        raise LabError(f"Option '--generator {NAME}' needs '--trex-server HOST[:PORT]'.")
    if getattr(args, "tg_ssh", None):
        raise LabError(
            f"Option '--tg-ssh' does not apply to '--generator {NAME}': its client talks to the server "
            "over '--trex-server'."
        )
    if not getattr(args, "dut_port", None):
        raise LabError(
            f"Option '--generator {NAME}' drives NIC ports on the TRex host: give OVS's NICs cabled to "
            "them ('--dut-port' twice) and TRex's ports by PCI address ('--tg-port' twice)."
        )
    return TrexOptions(server, parse_ports(args.trex_ports))


def refuse_in_compare(args: argparse.Namespace) -> None:
    """Refuse ``--generator trex`` for ``compare`` (and ``bisect``): their testbeds are vhost-user only.

    :raises LabError: naming the option.
    """
    if getattr(args, "generator", None) == NAME:
        raise LabError(
            f"Option '--generator': '{NAME}' drives NIC ports on the TRex host, and this command builds "
            "vhost-user ports only; measure with 'ovsperf-lab run' in two-host mode."
        )
