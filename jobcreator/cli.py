"""Command line of ``jobcreator``: parse arguments, run :func:`~jobcreator.workflow.create_job`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from jobcreator.errors import JobCreatorError, option_error
from jobcreator.jobmodel import (
    DEFAULT_MOONGEN_COMMIT,
    DEFAULT_TRAFFICGEN_COMMIT,
    HubSettings,
    JobOptions,
    JobRequest,
    ReserveMode,
)
from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import Engine, VsperfTrafficgen
from ovsperf_common.errors import FieldError
from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.runner import run_command

EXAMPLE = """example:
  jobcreator --host moongen.example.com --host dut.example.com --config OVS_DPDK1q_GUEST_DPDK1q \\
      --distro RHEL-7.3 --kickrepo http://example.com/repos/dpdk/16.11/4.el7 --tag nightly \\
      --reserve 100 --autosubmit"""


EXIT_CODES = """exit codes: 0 OK (job printed, written or submitted; scenario names listed)
  2 error (bad option, unknown scenario, unreadable catalog, invalid job, submission failed);
  jobcreator never returns 1 (regression) or 3 (no results), which belong to the report tools"""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises :class:`JobCreatorError` instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        raise JobCreatorError(f"{message} (see 'jobcreator --help').")


def _build_parser() -> _Parser:
    parser = _Parser(
        prog="jobcreator",
        description=(
            "Render the Beaker job of an OVS/DPDK performance scenario, validate it against\n"
            "Beaker's beaker-job.rng, then print it, write it or submit it (printing J:<n>).\n"
            "The first --host is the traffic generator (MoonGen), the second the DUT."
        ),
        epilog=f"{EXAMPLE}\n\n{EXIT_CODES}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    job = parser.add_argument_group("job")
    job.add_argument(
        "--host", action="append", default=[], metavar="FQDN", help="give twice: traffic generator, then DUT"
    )
    job.add_argument("--config", metavar="NAME", help="scenario name from the catalog (see --list-configs)")
    job.add_argument(
        "--distro",
        metavar="DISTRO",
        help="Beaker distro name, e.g. RHEL-7.3, or family:OSMAJOR, e.g. family:CentOSStream9",
    )
    job.add_argument("--arch", default="x86_64", help="distro tree architecture (default: %(default)s)")
    job.add_argument("--variant", help="distro variant, e.g. Server (default: any)")
    job.add_argument(
        "--kickrepo",
        action="append",
        default=[],
        metavar="URL",
        help="extra package repository for every recipe, guest included (repeatable)",
    )
    job.add_argument("--tag", metavar="TEXT", help="text put first in the job whiteboard, e.g. nightly")
    job.add_argument(
        "--reserve",
        type=float,
        metavar="HOURS",
        help="keep both hosts reserved this long after the run (0: no reservation)",
    )
    job.add_argument(
        "--reserve-with",
        choices=[m.value for m in ReserveMode],
        default="reservesys",
        help="<reservesys> element (default; also after an abort) or the /ovsperf/sleeper task",
    )
    job.add_argument(
        "--collector",
        metavar="USER@HOST:/PATH",
        help="rsync destination vsperf_test sends the results to (COLLECTOR)",
    )
    job.add_argument(
        "--moongen-commit",
        default=DEFAULT_MOONGEN_COMMIT,
        metavar="SHA",
        help="MoonGen commit to build (default: %(default)s)",
    )
    job.add_argument(
        "--trafficgen-commit",
        default=DEFAULT_TRAFFICGEN_COMMIT,
        metavar="SHA",
        help="lua-trafficgen commit to use (default: %(default)s)",
    )
    job.add_argument(
        "--task-repo",
        metavar="URL",
        help="fetch the /ovsperf tasks from URL#beaker_tasks/<task> instead of the task library",
    )
    job.add_argument(
        "--inventory",
        metavar="PATH",
        help="host inventory for the tasks (INVENTORY), relative to the task repository root or absolute",
    )
    job.add_argument(
        "--catalog", type=Path, metavar="FILE", help="scenario catalog (default: the packaged one)"
    )
    job.add_argument(
        "--engine",
        metavar="ENGINE",
        help="what measures the scenario: "
        + " or ".join(f"'{e.value}'" for e in Engine)
        + " (default: the scenario's 'engine', else 'vsperf'; docs/engines.md)",
    )
    job.add_argument(
        "--generator",
        metavar="GENERATOR",
        help="engine 'vsperf': what VSperf drives on the traffic generator, "
        + " or ".join(f"'{g.value}'" for g in VsperfTrafficgen)
        + "; 'trex' needs --inventory. Default: the 'generator' of the DUT's peer when --inventory is "
        "a local file, else 'moongen'; a local inventory that says otherwise is refused "
        "(docs/beaker_tasks.md, 'TRex')",
    )

    out = parser.add_argument_group("output")
    out.add_argument(
        "--output",
        type=Path,
        metavar="FILE",
        help="write the job XML to FILE (atomically) instead of printing it",
    )
    out.add_argument(
        "--autosubmit",
        action="store_true",
        help="submit the job with the Beaker client configuration; print the job id J:<n>",
    )
    out.add_argument("--dry-run", action="store_true", help="with --autosubmit: validate only, do not submit")
    out.add_argument(
        "--hub-timeout",
        type=float,
        default=120.0,
        metavar="S",
        help="timeout of each request to the hub [s] (default: %(default)s)",
    )
    out.add_argument(
        "--hub-retries",
        type=int,
        default=2,
        metavar="N",
        help="retries after a connection failure, 10 s apart (default: %(default)s)",
    )
    out.add_argument("--list-configs", action="store_true", help="print the scenario names and exit")
    return parser


def _request(args: argparse.Namespace) -> JobRequest:
    """Turn parsed arguments into a request; the dataclasses validate the values.

    :raises JobCreatorError: when a required option is missing, --host is not given twice, or a
        value is invalid.
    """
    if len(args.host) != 2:
        raise JobCreatorError(
            f"expected exactly two --host options (traffic generator, then DUT), got {len(args.host)}."
        )
    for option, value in (("--config", args.config), ("--distro", args.distro)):
        if value is None:
            raise JobCreatorError(f"missing {option} (see 'jobcreator --help').")
    try:
        engine = Engine.from_spec(args.engine, field="--engine") if args.engine is not None else None
    except FieldError as err:
        raise option_error("--engine", err.reason) from err
    generator = _generator(args, engine)
    options = JobOptions(
        trafficgen_host=args.host[0],
        dut_host=args.host[1],
        distro=args.distro,
        arch=args.arch,
        variant=args.variant,
        kick_repos=tuple(args.kickrepo),
        tag=args.tag,
        reserve_hours=args.reserve,
        reserve_mode=ReserveMode(args.reserve_with),
        collector=args.collector,
        moongen_commit=args.moongen_commit,
        trafficgen_commit=args.trafficgen_commit,
        task_repo=args.task_repo,
        inventory=args.inventory,
        engine=engine,
        generator=generator,
    )
    return JobRequest(
        scenario_name=args.config,
        options=options,
        catalog_path=args.catalog,
        output=args.output,
        autosubmit=args.autosubmit,
        dry_run=args.dry_run,
        hub=HubSettings(timeout_s=args.hub_timeout, retries=args.hub_retries),
    )


def _generator(args: argparse.Namespace, engine: Engine | None) -> VsperfTrafficgen:
    """Return what VSperf drives on the TG: ``--generator`` checked against a local ``--inventory``.

    :raises JobCreatorError: naming ``--generator`` when it is unknown, ``trex`` without
        ``--inventory`` (setup_trex reads the TG's ``trex:`` record there), or when the local
        inventory's ``trafficgen.generator`` of the DUT says otherwise.
    :raises InventoryError: when ``--inventory`` names a local file that is not a valid inventory.
    """
    try:
        option = VsperfTrafficgen.from_spec(args.generator, field="--generator") if args.generator else None
    except FieldError as err:
        raise option_error("--generator", err.reason) from err
    if option is VsperfTrafficgen.TREX and args.inventory is None:
        raise option_error(
            "--generator",
            "'trex' needs --inventory: setup_trex installs TRex from the traffic generator's 'trex:' "
            "record there (url, sha256, install_dir, ports).",
        )
    local = Path(args.inventory).expanduser() if args.inventory else None
    if local is None or not local.is_file():
        return option or VsperfTrafficgen.MOONGEN  # a path on the hosts: nothing to read here
    from vsperf_configs.generatorchoice import choose_generator  # PyYAML only
    from vsperf_configs.inventory import load_inventory

    inventory = load_inventory(local)
    if engine is None and option is None:
        engine = load_catalog(args.catalog).get(args.config).engine
    try:
        return choose_generator(option, inventory, args.host[1], engine or Engine.VSPERF)
    except FieldError as err:
        raise option_error("--generator", err.reason) from err


def _run(args: argparse.Namespace) -> int:
    """List the catalog, or create the job the arguments ask for and print its id or XML."""
    if args.list_configs:
        for name in load_catalog(args.catalog).names():
            print(name)
        return ExitCode.OK
    from jobcreator.workflow import create_job  # Jinja2 and lxml: ovsperf[beaker]

    outcome = create_job(_request(args))
    if outcome.job_id is not None:
        print(outcome.job_id)
    elif outcome.written_to is None:
        sys.stdout.write(outcome.xml)
    return ExitCode.OK


def main(argv: list[str] | None = None) -> int:
    """Run ``jobcreator``; return the exit code (0 OK, 2 error; see ``--help``)."""
    return run_command(_build_parser(), _run, argv)


if __name__ == "__main__":
    sys.exit(main())
