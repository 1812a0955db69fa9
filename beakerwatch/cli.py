"""Command line ``ovsperf-beaker track|collect|status``: parse arguments, call one function, exit."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.runner import one_line, run_command

if TYPE_CHECKING:
    from beakerwatch.collect import Collected

EPILOG = (
    "exit codes: 0 OK (all collected, or nothing to do; collect --once: unfinished jobs wait for the next "
    "pass); 2 error (bad input or state file, hub unreachable or slow after retries, a job could not be "
    "collected, jobs still running at --deadline-s; every uncollected job stays tracked); 3 nothing tracked. "
    "The hub comes from the Beaker client configuration ($BEAKER_CLIENT_CONF, ~/.beaker_client/config, "
    "/etc/beaker/client.conf)."
)
MIB = 1 << 20


def _tsv(fields: list[str]) -> str:
    return "\t".join(one_line(f) for f in fields)


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of ``ovsperf-beaker``."""
    parser = argparse.ArgumentParser(
        prog="ovsperf-beaker",
        description="Follow submitted Beaker jobs and pull their results into ci_in (docs/beakerwatch.md).",
        epilog=EPILOG,
    )
    sub = parser.add_subparsers(dest="command", required=True)

    tr = sub.add_parser("track", help="record submitted jobs and the build they test", epilog=EPILOG)
    tr.add_argument("--state", type=Path, required=True, help="the collector's state file (JSON)")
    tr.add_argument(
        "--ids-file", type=Path, required=True, help="job ids JSON of 'ovsperf-koji submit --ids-file'"
    )
    tr.add_argument("--repo-json", type=Path, help="repo record of 'ovsperf-koji prepare-repo --output-json'")
    tr.add_argument(
        "--nvr", action="append", default=[], help="build NVR under test (repeatable; overrides files)"
    )
    tr.add_argument("--koji-tag", help="the Koji tag the build came from")
    tr.add_argument(
        "--build-url",
        default=os.environ.get("BUILD_URL") or None,
        help="Jenkins build that submitted the jobs (default: $BUILD_URL)",
    )
    tr.add_argument("--lock-timeout-s", type=float, default=600.0, help="longest wait for the state lock [s]")

    co = sub.add_parser("collect", help="pull the results of finished jobs into ci_in", epilog=EPILOG)
    co.add_argument("--state", type=Path, required=True, help="the collector's state file (JSON)")
    co.add_argument("--ci-in", type=Path, required=True, help="process-ci-results' inbox directory")
    co.add_argument("--deadline-s", type=float, default=3600.0, help="longest the pass may take [s]")
    co.add_argument("--poll-s", type=float, default=60.0, help="pause between looks at unfinished jobs [s]")
    co.add_argument("--once", action="store_true", help="look once; unfinished jobs wait for the next pass")
    co.add_argument("--max-tarball-mb", type=float, default=1024.0, help="cap on a results tarball [MiB]")
    co.add_argument("--max-unpacked-mb", type=float, default=8192.0, help="cap on its unpacked size [MiB]")
    co.add_argument(
        "--hub-timeout-s", type=float, default=60.0, help="limit of one hub request or download [s]"
    )
    co.add_argument("--hub-retries", type=int, default=4, help="retries of a failed request [1]")
    co.add_argument(
        "--retry-backoff-s", type=float, default=5.0, help="first pause before a retry, doubled each time [s]"
    )

    st = sub.add_parser("status", help="list the tracked jobs", epilog=EPILOG)
    st.add_argument("--state", type=Path, required=True, help="the collector's state file (JSON)")
    st.add_argument("--lock-timeout-s", type=float, default=600.0, help="longest wait for the state lock [s]")
    return parser


def _track(args: argparse.Namespace) -> int:
    from beakerwatch.collect import TrackRequest, track  # beaker-client, tenacity: ovsperf[beaker]

    request = TrackRequest(
        ids_file=args.ids_file,
        nvrs=tuple(args.nvr),
        repo_json=args.repo_json,
        koji_tag=args.koji_tag,
        build_url=args.build_url,
    )
    for job in track(args.state, request, args.lock_timeout_s):
        print(_tsv([job.job_id, job.scenario]))
    return ExitCode.OK


def _collect(args: argparse.Namespace) -> int:
    from beakerwatch.collect import CollectOptions, collect  # beaker-client, tenacity: ovsperf[beaker]
    from beakerwatch.fetch import Limits
    from beakerwatch.hub import HubRetryPolicy
    from jobcreator.submit import load_client_config

    options = CollectOptions(
        ci_in=args.ci_in,
        deadline_s=args.deadline_s,
        poll_s=args.poll_s,
        once=args.once,
        limits=Limits(
            max_tarball_bytes=int(args.max_tarball_mb * MIB),
            max_unpacked_bytes=int(args.max_unpacked_mb * MIB),
        ),
        policy=HubRetryPolicy(
            timeout_s=args.hub_timeout_s, retries=args.hub_retries, backoff_s=args.retry_backoff_s
        ),
    )

    def printed(result: Collected) -> None:
        print(_tsv(result.line()), flush=True)

    collect(args.state, options, load_client_config(), printed)
    return ExitCode.OK


def _status(args: argparse.Namespace) -> int:
    from beakerwatch.collect import status_lines  # beaker-client, tenacity: ovsperf[beaker]

    for row in status_lines(args.state, args.lock_timeout_s):
        print(_tsv(row))
    return ExitCode.OK


def _run(args: argparse.Namespace) -> int:
    commands = {"track": _track, "collect": _collect, "status": _status}
    return commands[args.command](args)


def main(argv: list[str] | None = None) -> int:
    """Run ``ovsperf-beaker``; return the process exit code (see ``--help``)."""
    return run_command(build_parser(), _run, argv)


if __name__ == "__main__":
    sys.exit(main())
