"""Command line of ``ovsperf-remote``: check pre-provisioned lab hosts over SSH."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from jobcreator.catalog import load_catalog
from jobcreator.errors import CatalogError
from ovsperf_common.errors import FieldError
from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.runner import run_command
from remote.check import Outcome, check_host, render_table
from remote.errors import RemoteError
from remote.plan import remote_plan, render_plan
from remote.ssh import DEFAULT_KNOWN_HOSTS, DEFAULT_SSH_CONFIG, Settings, parse_target
from vsperf_configs.errors import InventoryError
from vsperf_configs.inventory import Inventory, load_inventory

log = logging.getLogger(__name__)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ovsperf-remote",
        description="Run the Beaker job's plan on pre-provisioned lab hosts over SSH (no Beaker).",
        epilog=ExitCode.help_text(),
    )
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser(
        "check",
        help="can these hosts run a scenario? SSH, sudo, tools, hugepages, NICs: one table",
        description="Log into the traffic-generator host and the DUT and print one row per check.",
    )
    check.add_argument("--tg", required=True, metavar="[USER@]HOST[:PORT]", help="traffic-generator host")
    check.add_argument("--dut", required=True, metavar="[USER@]HOST[:PORT]", help="device under test")
    check.add_argument(
        "--inventory", type=Path, help="host inventory YAML: the test NICs to look for (vsperf-config's)"
    )
    ssh = check.add_argument_group("SSH (keys and agent only; never a password)")
    ssh.add_argument(
        "--identity", type=Path, action="append", default=[], help="private key file (repeatable)"
    )
    ssh.add_argument(
        "--known-hosts", type=Path, default=DEFAULT_KNOWN_HOSTS, help="known_hosts file (%(default)s)"
    )
    ssh.add_argument("--ssh-config", type=Path, default=DEFAULT_SSH_CONFIG, help="SSH config (%(default)s)")
    ssh.add_argument(
        "--accept-new-host-key",
        action="store_true",
        help="trust a host not yet in known_hosts and record its key (a changed key is always refused)",
    )
    ssh.add_argument(
        "--connect-timeout", type=float, default=20.0, metavar="S", help="connect and login deadline [s] (20)"
    )
    plan = commands.add_parser(
        "plan",
        help="print what runs where: the Beaker job's tasks and parameters, host by host",
        description="Print each host's tasks in order with their parameters, from jobcreator's job plan.",
    )
    plan.add_argument(
        "--config", required=True, help="scenario name from the catalog (jobcreator --list-configs)"
    )
    plan.add_argument(
        "--tg", required=True, metavar="HOST", help="traffic-generator host (as the DUT reaches it)"
    )
    plan.add_argument(
        "--dut", required=True, metavar="HOST", help="device under test (as the generator reaches it)"
    )
    plan.add_argument("--catalog", type=Path, help="scenario catalog YAML (default: the packaged one)")
    plan.add_argument("--inventory", help="INVENTORY of the tasks: a path on the hosts")
    plan.add_argument("--collector", metavar="USER@HOST:/PATH", help="where vsperf_test sends the results")
    return parser


def _nics(inventory: Inventory | None, host: str) -> tuple[str, ...] | None:
    """Return the host's test NICs from the inventory; None when there is none or no entry."""
    if inventory is None:
        return None
    try:
        return tuple(inventory.get(host).nics)
    except InventoryError:
        return None  # not in the inventory: the nics row says so


def _plan(args: argparse.Namespace) -> int:
    try:
        scenario = load_catalog(args.catalog).get(args.config)
    except CatalogError as err:
        raise RemoteError(str(err)) from err
    sys.stdout.write(
        render_plan(
            remote_plan(scenario, args.tg, args.dut, inventory=args.inventory, collector=args.collector)
        )
    )
    return ExitCode.OK


def _run(args: argparse.Namespace) -> int:
    if args.command == "plan":
        return _plan(args)
    if not 0 < args.connect_timeout <= 600:
        raise FieldError("must be in (0, 600] seconds.", field="--connect-timeout")
    targets = {"tg": parse_target(args.tg, "--tg"), "dut": parse_target(args.dut, "--dut")}
    settings = Settings(
        known_hosts=args.known_hosts,
        ssh_config=args.ssh_config,
        identities=tuple(args.identity),
        accept_new_host_key=args.accept_new_host_key,
        connect_timeout_s=args.connect_timeout,
    )
    inventory = load_inventory(args.inventory) if args.inventory is not None else None  # errors name the file
    rows = []
    for role, target in targets.items():
        log.info("Checking %s (%s)...", target, role)
        rows += check_host(target, role, settings, _nics(inventory, target.host))
    sys.stdout.write(render_table(rows))
    failed = [r for r in rows if r.outcome is Outcome.FAIL]
    if failed:
        raise RemoteError(f"{len(failed)} check(s) failed; the table says what to fix.")
    return ExitCode.OK


def main(argv: list[str] | None = None) -> int:
    """Run ``ovsperf-remote``; return the exit code (0 every check passed, 2 otherwise)."""
    return run_command(_parser(), _run, argv)


if __name__ == "__main__":
    sys.exit(main())
