"""Command line of ``ovsperf-remote``: check pre-provisioned lab hosts over SSH."""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.errors import CatalogError
from ovsperf_catalog.model import Engine, VsperfTrafficgen
from ovsperf_common.errors import FieldError
from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.runner import run_command
from remote.defaults import DEFAULT_KNOWN_HOSTS, DEFAULT_REMOTE_BASE, DEFAULT_SSH_CONFIG, RUN_DEFAULTS
from remote.errors import RemoteError
from vsperf_configs.errors import InventoryError
from vsperf_configs.inventory import Inventory, load_inventory

if TYPE_CHECKING:
    from remote.plan import HostPlan
    from remote.runargs import ScenarioChoice
    from remote.ssh import Settings

# The SSH and plan modules (paramiko, Jinja2: ovsperf[remote]) are imported by each sub-command.

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
    check.add_argument(
        "--trex", metavar="HOST[:PORT]",
        help="also ask this TRex server (RPC port 4501) for its version and ports (ovsperf[trex])",
    )  # fmt: skip
    check.add_argument(
        "--trex-async-port", type=int, default=4500, metavar="PORT", help="its publisher port (4500)"
    )
    _ssh_options(check)
    plan = commands.add_parser(
        "plan",
        help="print what runs where: the Beaker job's tasks and parameters, host by host",
        description="Print each host's tasks in order with their parameters, from jobcreator's job plan.",
    )
    _plan_options(plan, required=True)
    run = commands.add_parser(
        "run",
        help="run the plan on both hosts: upload, setup, reboots, sync, VSperf, results",
        description="Run each host's tasks over SSH in parallel, as the Beaker job would (docs/remote.md).",
    )
    _plan_options(run, required=False)
    run.add_argument("--timeout", type=float, metavar="H", help="deadline of the whole run [hours] (12)")
    run.add_argument(
        "--log-dir",
        type=Path,
        help="a new directory for state.json and a log per host (./ovsperf-remote-<run id>); "
        "an existing one is refused (--resume continues a run)",
    )
    run.add_argument(
        "--remote-dir",
        default=DEFAULT_REMOTE_BASE,
        metavar="DIR",
        help="where each host gets <run id>/<role>/ with the tasks (%(default)s)",
    )
    run.add_argument("--resume", type=Path, metavar="LOG_DIR", help="continue the run whose log dir this is")
    for option, what in (
        ("--env", "both hosts"),
        ("--tg-env", "the generator host"),
        ("--dut-env", "the DUT"),
    ):
        run.add_argument(
            option,
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help=f"more environment for every task on {what} (repeatable; shown in the logs: no secrets)",
        )
    reboot = run.add_argument_group("reboots the tasks ask for")
    reboot.add_argument(
        "--reboot-command", metavar="CMD", help=f"run as root ({RUN_DEFAULTS['reboot_command']})"
    )
    reboot.add_argument(
        "--boot-id-command",
        metavar="CMD",
        help=f"prints an id that changes at every boot ({RUN_DEFAULTS['boot_id_command']})",
    )
    reboot.add_argument("--reboot-timeout", type=float, metavar="S", help="until the host is back [s] (1200)")
    _ssh_options(run)
    lab = commands.add_parser(
        "lab",
        help="run ovsperf-lab on a remote machine and bring its results back",
        description="Run 'ovsperf-lab ARGS' on HOST as root, show its output, fetch a run's results "
        "(docs/remote.md). Example: ovsperf-remote lab --host perf1 -- run --config OVS_DPDK1q. Two hosts "
        "(docs/engines.md): ovsperf-remote lab --tg TG --dut DUT --inventory FILE -- run --config OVS_DPDK1q",
    )
    lab.add_argument("--host", metavar="[USER@]HOST[:PORT]", help="the machine to run the lab on")
    lab.add_argument(
        "--dut",
        metavar="[USER@]HOST[:PORT]",
        help="with --tg: the DUT, where the lab runs (its inventory key is HOST)",
    )
    lab.add_argument(
        "--tg",
        metavar="HOST",
        help="the traffic generator the DUT's lab drives over SSH (the DUT's peer in --inventory)",
    )
    lab.add_argument(
        "--inventory",
        type=Path,
        metavar="FILE",
        help="with --tg and --dut: host inventory YAML giving the DUT's lab options (ports, --tg-ssh, CPUs)",
    )
    lab.add_argument(
        "--output", type=Path, default=Path("."), help="where the results come (current directory)"
    )
    lab.add_argument(
        "--ovsperf-lab",
        default="ovsperf-lab",
        metavar="CMD",
        help="the lab's command on the host (%(default)s)",
    )
    lab.add_argument(
        "--remote-dir",
        default=DEFAULT_REMOTE_BASE,
        metavar="DIR",
        help="the lab's --output there: DIR/<id>/lab",
    )
    lab.add_argument("--timeout", type=float, default=12.0, metavar="H", help="deadline [hours] (12)")
    lab.add_argument("lab_args", nargs=argparse.REMAINDER, metavar="-- ARGS", help="ovsperf-lab's arguments")
    _ssh_options(lab)
    return parser


def _plan_options(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """Add the options naming the scenario and hosts (``plan``; ``run``, where --resume may stand in)."""
    parser.add_argument(
        "--config", required=required, help="scenario name from the catalog (jobcreator --list-configs)"
    )
    parser.add_argument(
        "--tg",
        required=required,
        metavar="[USER@]HOST[:PORT]",
        help="traffic-generator host (as the DUT reaches it)",
    )
    parser.add_argument(
        "--dut",
        required=required,
        metavar="[USER@]HOST[:PORT]",
        help="device under test (as the generator reaches it)",
    )
    parser.add_argument("--catalog", type=Path, help="scenario catalog YAML (default: the packaged one)")
    parser.add_argument(
        "--engine",
        metavar="ENGINE",
        help="what measures: 'vsperf' (VSperf + MoonGen) or 'ovsperf' (ovsperf-lab + ovsperf-trafficgen); "
        "default: the scenario's 'engine' (docs/engines.md)",
    )
    parser.add_argument(
        "--generator",
        metavar="GENERATOR",
        help="engine 'vsperf': what VSperf drives on the traffic generator, "
        + " or ".join(f"'{g.value}'" for g in VsperfTrafficgen)
        + " (build_moongen or setup_trex); default: the inventory's 'generator' of the DUT's peer, "
        "else 'moongen' (docs/remote.md)",
    )
    parser.add_argument(
        "--inventory",
        help="INVENTORY of the tasks: a local file (read here; run uploads it) or a path on the hosts",
    )
    parser.add_argument(
        "--collector",
        metavar="DIR|USER@HOST:/PATH",
        help="where the results go: a local directory (fetched over SFTP) or USER@HOST:/PATH "
        "(the DUT's own rsync)",
    )


def _ssh_options(parser: argparse.ArgumentParser) -> None:
    """Add the SSH options (``check`` and ``run``)."""
    ssh = parser.add_argument_group("SSH (keys and agent only; never a password)")
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


def _nics(inventory: Inventory | None, host: str) -> tuple[str, ...] | None:
    """Return the host's test NICs from the inventory; None when there is none or no entry."""
    if inventory is None:
        return None
    try:
        return tuple(inventory.get(host).nics)
    except InventoryError:
        return None  # not in the inventory: the nics row says so


def _plans(
    args: ScenarioChoice, tg: str, dut: str, collector: str | None, local: Inventory | None
) -> tuple[HostPlan, HostPlan]:
    from remote.plan import remote_plan

    try:
        scenario = load_catalog(args.catalog).get(args.config)
    except CatalogError as err:
        raise RemoteError(str(err)) from err
    engine = Engine.from_spec(args.engine, field="--engine") if args.engine else None
    generator = VsperfTrafficgen.from_spec(args.generator, field="--generator") if args.generator else None
    return remote_plan(
        scenario,
        tg,
        dut,
        inventory=args.inventory,
        collector=collector,
        engine=engine,
        generator=generator,
        local_inventory=local,
    )


def _plan(args: argparse.Namespace) -> int:
    from remote.plan import render_plan
    from remote.runargs import local_inventory, remote_collector
    from remote.ssh import parse_target

    tg, dut = parse_target(args.tg, "--tg").host, parse_target(args.dut, "--dut").host
    local = local_inventory(args.inventory)
    plans = _plans(args, tg, dut, remote_collector(args.collector), local[1] if local else None)
    sys.stdout.write(render_plan(plans))
    return ExitCode.OK


def _lab(args: argparse.Namespace) -> int:
    if not 0 < args.timeout <= 168:
        raise FieldError("must be in (0, 168] hours.", field="--timeout")
    from remote.lab import run_lab
    from remote.run import new_run_id
    from remote.runargs import remote_base
    from remote.ssh import Session, parse_target

    lab_args = args.lab_args[1:] if args.lab_args[:1] == ["--"] else args.lab_args
    if (args.host is None) == (args.dut is None):
        raise FieldError(
            "give the machine once: --host HOST, or --dut DUT with --tg and --inventory.", field="--host"
        )
    option, where = ("--host", args.host) if args.host is not None else ("--dut", args.dut)
    target = parse_target(where, option)
    if args.dut is not None or args.tg is not None or args.inventory is not None:
        missing = [
            o
            for o, v in (("--dut", args.dut), ("--tg", args.tg), ("--inventory", args.inventory))
            if v is None
        ]
        if missing:
            raise FieldError(
                f"two hosts need --dut, --tg and --inventory; {', '.join(missing)} missing.", field="--tg"
            )
        from remote.lab import two_host_args

        lab_args = two_host_args(lab_args, load_inventory(args.inventory), target.host, args.tg)
    with Session(target, _settings(args)) as session:
        outcome = run_lab(
            session,
            shlex.split(args.ovsperf_lab),
            lab_args,
            remote_base=str(remote_base(args.remote_dir)),
            run_id=new_run_id(),
            local_output=args.output,
            timeout_s=args.timeout * 3600,
        )
    if outcome.results is not None:
        print(outcome.results)
    return outcome.exit_status if outcome.exit_status in (0, 1, 2, 3) else int(ExitCode.ERROR)


def _settings(args: argparse.Namespace) -> Settings:
    from remote.ssh import Settings

    if not 0 < args.connect_timeout <= 600:
        raise FieldError("must be in (0, 600] seconds.", field="--connect-timeout")
    return Settings(
        known_hosts=args.known_hosts,
        ssh_config=args.ssh_config,
        identities=tuple(args.identity),
        accept_new_host_key=args.accept_new_host_key,
        connect_timeout_s=args.connect_timeout,
    )


def _run(args: argparse.Namespace) -> int:
    if args.command == "plan":
        return _plan(args)
    if args.command == "run":
        from remote.runargs import run_command_line

        return run_command_line(args, _settings(args), _plans)
    if args.command == "lab":
        return _lab(args)
    from remote.check import Outcome, check_host, render_table
    from remote.ssh import parse_target

    targets = {"tg": parse_target(args.tg, "--tg"), "dut": parse_target(args.dut, "--dut")}
    settings = _settings(args)
    inventory = load_inventory(args.inventory) if args.inventory is not None else None  # errors name the file
    rows = []
    for role, target in targets.items():
        log.info("Checking %s (%s)...", target, role)
        rows += check_host(target, role, settings, _nics(inventory, target.host))
    if args.trex is not None:
        from ovsperf_common.trexclient import TrexError, TrexServer
        from remote.check import check_trex

        try:
            server = TrexServer.parse(args.trex, async_port=args.trex_async_port)
        except TrexError as err:
            raise FieldError(str(err), field="--trex") from err
        log.info("Asking TRex at %s for its version and ports...", server.address)
        rows += check_trex(server)
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
