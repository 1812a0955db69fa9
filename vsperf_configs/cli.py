"""Command line of ``vsperf-config``: render the VSperf conf file for a scenario on a DUT."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from ovsperf_common.atomicio import atomic_write_text
from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.runner import one_line, run_command
from vsperf_configs.errors import VsperfConfigError
from vsperf_configs.generate import (
    DEFAULT_GUEST_DPDK_DIR,
    DEFAULT_HUGEPAGE_DIR,
    DEFAULT_POD_DIR,
    HOST_HUGEPAGE_DIR,
    generate_config,
)
from vsperf_configs.inventory import host_environment, load_inventory, resolve_inventory_path

log = logging.getLogger(__name__)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vsperf-config",
        description=(
            "Write the VSperf --conf-file for SCENARIO on the DUT HOST: our defaults, then the scenario "
            "from the catalog, then the host's inventory entry (NICs, CPU lists, MoonGen peer)."
        ),
        epilog=ExitCode.help_text(),
    )
    parser.add_argument("--scenario", help="scenario name from the catalog (jobcreator --list-configs)")
    parser.add_argument("--host", required=True, help="host name as in the inventory (the DUT's FQDN)")
    parser.add_argument(
        "--inventory",
        type=Path,
        help="host inventory YAML (default: $OVSPERF_INVENTORY, else /etc/ovsperf/inventory.yaml)",
    )
    parser.add_argument("--catalog", type=Path, help="scenario catalog YAML (default: the packaged one)")
    parser.add_argument(
        "--output", type=Path, help="write the conf file here (atomically) and print its path"
    )
    parser.add_argument(
        "--telemetry-collector-dir",
        type=Path,
        help="absolute directory holding ovsperf_telemetry.py: VSperf then captures OVS's PMD counters, "
        "rx queues and thread CPU around each test (the vsperf_test task passes its own)",
    )
    parser.add_argument(
        "--pod-dir",
        type=Path,
        default=DEFAULT_POD_DIR,
        help="absolute directory holding ovsperf_nopod.py, the pod VSperf makes for every p2p test "
        "instead of its Kubernetes one (default: this checkout's beaker_tasks/vsperf_test/pods)",
    )
    parser.add_argument(
        "--hugepage-dir",
        default=DEFAULT_HUGEPAGE_DIR,
        help="VSperf's own hugetlbfs mount point (HUGEPAGE_DIR), which VSperf unmounts after each test; "
        f"never the host's {HOST_HUGEPAGE_DIR} (default: %(default)s)",
    )
    parser.add_argument(
        "--guest-dpdk-dir",
        default=DEFAULT_GUEST_DPDK_DIR,
        help="where the vsperf_test task installed its guest DPDK adapter, which VSperf copies into "
        "testpmd guests as their DPDK tree (PATHS['dpdk']['src']['path']; default: %(default)s)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--list-tests",
        action="store_true",
        help="print 'INDEX TEST DEPLOYMENT' per VSperf test of the scenario instead of the conf file",
    )
    mode.add_argument(
        "--host-env",
        action="store_true",
        help="print the host's inventory entry as NAME=VALUE lines for the Beaker tasks (no --scenario)",
    )
    return parser


def _run(args: argparse.Namespace) -> int:
    """Print the host's environment, the scenario's tests, or write/print the conf file."""
    inventory_path = resolve_inventory_path(args.inventory)
    if args.host_env:
        env = host_environment(load_inventory(inventory_path).get(args.host))
        sys.stdout.write("".join(f"{key}={value}\n" for key, value in env.items()))
        return ExitCode.OK
    if not args.scenario:
        raise VsperfConfigError("--scenario is required unless --host-env is given.")
    config = generate_config(
        args.scenario,
        args.host,
        inventory_path,
        args.catalog,
        args.telemetry_collector_dir,
        args.pod_dir,
        args.hugepage_dir,
        args.guest_dpdk_dir,
    )
    if args.list_tests:
        sys.stdout.write("".join(f"{i} {name} {dep}\n" for i, name, dep in config.tests))
    elif args.output is not None:
        try:
            atomic_write_text(args.output, config.text)
        except OSError as err:
            raise VsperfConfigError(f"cannot write '{args.output}': {err.strerror or err}.") from err
        print(one_line(args.output))
    else:
        sys.stdout.write(config.text)
    return ExitCode.OK


def main(argv: list[str] | None = None) -> int:
    """Run ``vsperf-config``; return the exit code (0 OK, 2 error)."""
    return run_command(_parser(), _run, argv)


if __name__ == "__main__":
    sys.exit(main())
