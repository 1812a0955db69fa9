"""Command line ``ovsperf-koji prepare-repo|submit|watch``: parse arguments, call one function, exit."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import logging
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kojiwatch.errors import BatchSubmitError, BuildRejectedError, KojiWatchError
from kojiwatch.message import read_message_file
from kojiwatch.model import (
    DEFAULT_ARCHES,
    BuildSelection,
    BuildState,
    PreparedRepo,
    RetryPolicy,
    SelectionKind,
    SubmitRequest,
    SubmittedJob,
    WatchConfig,
)
from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.runner import add_verbosity_options, one_line, run_command

if TYPE_CHECKING:
    from kojiwatch.koji_client import KojiClient

log = logging.getLogger(__name__)

EPILOG = (
    "exit codes: 0 OK; 2 error (bad input, Koji/createrepo_c/Beaker failure, a submission failed); "
    "3 nothing to test (prepare-repo: the build is not in the watched --tag)"
)


def _split(values: Sequence[str] | None) -> tuple[str, ...]:
    """Flatten repeated options that may also hold comma/space separated lists (Jenkins string parameters)."""
    return tuple(item for value in values or () for item in re.split(r"[,\s]+", value) if item)


def _add_koji(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("Koji")
    group.add_argument("--profile", help="koji client profile (/etc/koji.conf.d) giving hub and topurl")
    group.add_argument("--hub", help="Koji hub XML-RPC URL (overrides the profile's 'server')")
    group.add_argument("--topurl", help="Koji file server URL (overrides the profile's 'topurl')")
    group.add_argument(
        "--ca-bundle", help="PEM CA bundle for TLS to Koji (overrides the profile's 'serverca')"
    )
    group.add_argument(
        "--koji-timeout-s", type=float, default=60.0, help="timeout of one hub call or download [s]"
    )


def _add_publish(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("publishing")
    group.add_argument("--publish-dir", type=Path, required=True, help="directory your web server serves")
    group.add_argument("--base-url", required=True, help="URL at which --publish-dir is served")
    group.add_argument(
        "--arch",
        action="append",
        help=f"RPM arches to include (repeatable; default {' '.join(DEFAULT_ARCHES)})",
    )


def _add_lab(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("lab and jobs")
    group.add_argument("--host", action="append", required=True, help="traffic generator host, then DUT host")
    group.add_argument("--distro", required=True, help="Beaker distro, e.g. RHEL-9.4.0")
    group.add_argument(
        "--scenario",
        action="append",
        required=True,
        help="catalog scenario (repeatable, or a comma/space list)",
    )
    group.add_argument("--baseline", help="baseline label the results are compared against (recorded)")
    group.add_argument(
        "--reserve", type=float, help="hours to keep the hosts reserved after the run (fractions allowed)"
    )
    group.add_argument(
        "--collector",
        metavar="USER@HOST:/PATH",
        help="rsync destination the DUT pushes the results to (COLLECTOR); default: none, the "
        "collector pulls them from Beaker ('ovsperf-beaker collect')",
    )
    group.add_argument(
        "--task-repo",
        metavar="URL",
        help="fetch the /ovsperf tasks from URL#beaker_tasks/<task> instead of Beaker's task library",
    )
    group.add_argument(
        "--inventory",
        metavar="PATH",
        help="host inventory for the tasks (INVENTORY), relative to the task repository root or absolute",
    )
    group.add_argument(
        "--catalog", type=Path, metavar="FILE", help="scenario catalog (default: the packaged one)"
    )
    # Accepted so that existing job definitions keep working; jobcreator now runs in-process.
    group.add_argument("--jobcreator", help=argparse.SUPPRESS)
    group.add_argument(
        "--job-xml-dir",
        type=Path,
        help="keep each rendered Beaker job as DIR/<scenario>.xml (watch: DIR/<repo>/)",
    )


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of ``ovsperf-koji``."""
    parser = argparse.ArgumentParser(
        prog="ovsperf-koji",
        description="Turn new OVS/DPDK Koji builds into a yum repo and Beaker perf jobs.",
        epilog=EPILOG,
    )
    add_verbosity_options(parser)
    sub = parser.add_subparsers(dest="command", required=True)

    prep = sub.add_parser(
        "prepare-repo",
        help="download a build's RPMs, createrepo_c, publish; print the repo URL",
        epilog=EPILOG,
    )
    which = prep.add_mutually_exclusive_group(required=True)
    which.add_argument("--build", help="Koji build id or NVR")
    which.add_argument("--task", help="Koji build task id (scratch builds: the task's RPMs)")
    which.add_argument(
        "--latest-tagged", metavar="TAG", help="latest build of each --package in TAG (nightly)"
    )
    which.add_argument(
        "--ci-message-file", type=Path, help="JSON Koji message (Jenkins CI_MESSAGE) naming the build"
    )
    prep.add_argument(
        "--package",
        action="append",
        help="watched package (repeatable or a list); required with "
        "--latest-tagged, otherwise the build must be one of them",
    )
    prep.add_argument("--owner", help="the build must be owned by this Koji user")
    prep.add_argument("--tag", help="the build must be tagged into this tag (else exit 3)")
    prep.add_argument(
        "--tag-wait-s", type=float, default=0.0, help="wait this long for the build to be tagged [s]"
    )
    prep.add_argument(
        "--output-json", type=Path, help="also write the repo URL, path, builds and RPMs as JSON"
    )
    _add_koji(prep)
    _add_publish(prep)

    sub_p = sub.add_parser(
        "submit",
        help="submit one Beaker job per scenario (as 'jobcreator --autosubmit'); print job ids",
        epilog=EPILOG,
    )
    sub_p.add_argument("--repo", action="append", help="kick repo URL (repeatable)")
    sub_p.add_argument(
        "--repo-json",
        type=Path,
        metavar="FILE",
        help="repo record of 'prepare-repo --output-json': its URL is a kick repo (after any --repo) "
        "and its build NVRs are recorded with the job ids",
    )
    sub_p.add_argument("--tag", default="ovsperf", help="Beaker whiteboard text (default 'ovsperf')")
    sub_p.add_argument("--ids-file", type=Path, help="write the submitted job ids as JSON here")
    _add_lab(sub_p)

    watch = sub.add_parser("watch", help="poll Koji for new builds and test each once", epilog=EPILOG)
    watch.add_argument("--tag", required=True, help="watched Koji tag")
    watch.add_argument(
        "--package", action="append", required=True, help="watched package (repeatable or a list)"
    )
    watch.add_argument("--owner", help="only builds owned by this Koji user")
    watch.add_argument("--state-file", type=Path, required=True, help="JSON file remembering tested builds")
    watch.add_argument("--interval-s", type=float, default=300.0, help="time between polls [s] (default 300)")
    watch.add_argument("--max-polls", type=int, default=1, help="polls before exiting (default 1: one pass)")
    watch.add_argument(
        "--retry-initial-s", type=float, default=10.0, help="first back-off after a hub error [s]"
    )
    watch.add_argument("--retry-max-s", type=float, default=600.0, help="longest back-off [s]")
    watch.add_argument(
        "--max-hub-failures", type=int, default=6, help="consecutive failed polls before giving up"
    )
    watch.add_argument("--whiteboard", default="ovsperf-koji watch", help="prefix of the Beaker whiteboard")
    watch.add_argument(
        "--ids-dir",
        type=Path,
        help="write each build's job ids (as 'submit --ids-file') to DIR/<repo name>.json, "
        "for 'ovsperf-beaker track'",
    )
    _add_koji(watch)
    _add_publish(watch)
    _add_lab(watch)
    return parser


def _client(args: argparse.Namespace) -> KojiClient:
    from kojiwatch.koji_client import KojiClient, resolve_server  # koji, requests: ovsperf[koji]

    server = resolve_server(args.profile, args.hub, args.topurl, args.koji_timeout_s, args.ca_bundle)
    return KojiClient(server)


def _request(
    args: argparse.Namespace,
    repo_urls: tuple[str, ...],
    tag: str,
    builds: tuple[str, ...] = (),
    koji_tag: str | None = None,
) -> SubmitRequest:
    hosts = args.host
    if len(hosts) != 2:
        raise KojiWatchError(f"Give exactly two --host (generator, DUT), got {len(hosts)}: {hosts}.")
    return SubmitRequest(
        repo_urls=repo_urls,
        generator_host=hosts[0],
        dut_host=hosts[1],
        distro=args.distro,
        scenarios=_split(args.scenario),
        tag=tag,
        baseline=args.baseline,
        reserve_h=args.reserve,
        job_xml_dir=args.job_xml_dir,
        builds=builds,
        koji_tag=koji_tag,
        collector=args.collector,
        task_repo=args.task_repo,
        inventory=args.inventory,
        catalog_path=args.catalog,
    )


def _selection(args: argparse.Namespace) -> BuildSelection:
    packages = tuple(dict.fromkeys(_split(args.package)))
    common = {"packages": packages, "owner": args.owner, "tag": args.tag}
    if args.build is not None:
        return BuildSelection(kind=SelectionKind.BUILD, ref=args.build, **common)
    if args.task is not None:
        return BuildSelection(kind=SelectionKind.TASK, ref=args.task, **common)
    if args.latest_tagged is not None:
        return BuildSelection(
            kind=SelectionKind.LATEST_TAGGED, ref=args.latest_tagged, packages=packages, owner=args.owner
        )
    message = read_message_file(args.ci_message_file)
    if message.new_state is not None and message.new_state is not BuildState.COMPLETE:
        raise BuildRejectedError(
            f"Message '{args.ci_message_file}' announces build {message.build_id} as "
            f"{message.new_state.value}, "
            "not COMPLETE; nothing to test."
        )
    log.info("CI message names build %d (%s).", message.build_id, message.name or "package not given")
    return BuildSelection(kind=SelectionKind.BUILD, ref=str(message.build_id), **common)


def _prepare(args: argparse.Namespace) -> int:
    from kojiwatch.repo import prepare_repo, write_repo_record  # koji: ovsperf[koji]

    selection = _selection(args)
    client = _client(args)
    try:
        repo = prepare_repo(
            client,
            selection,
            args.publish_dir,
            args.base_url,
            arches=_split(args.arch) or DEFAULT_ARCHES,
            tag_wait_s=args.tag_wait_s,
        )
    finally:
        client.close()
    if args.output_json is not None:
        write_repo_record(args.output_json, repo)
    print(one_line(repo.url))
    return ExitCode.OK


def _print_ids(job_ids: Iterable[str]) -> None:
    for job_id in job_ids:
        print(job_id)


def _submit(args: argparse.Namespace) -> int:
    from kojiwatch.repo import read_repo_record  # koji: ovsperf[koji]
    from kojiwatch.submit import submit_scenarios, write_job_ids  # jobcreator: ovsperf[beaker]

    repos = tuple(args.repo or ())
    record = None if args.repo_json is None else read_repo_record(args.repo_json)
    if record is not None:
        repos = tuple(dict.fromkeys((*repos, record.url)))
    request = _request(
        args,
        repos,
        args.tag,
        () if record is None else record.builds,
        None if record is None else record.koji_tag,
    )
    try:
        jobs = submit_scenarios(request)
    except BatchSubmitError as err:
        done = [SubmittedJob(scenario=s, job_id=j) for s, j in err.submitted]
        if args.ids_file is not None and done:
            write_job_ids(args.ids_file, request, done)
        _print_ids(job.job_id for job in done)
        raise
    if args.ids_file is not None:
        write_job_ids(args.ids_file, request, jobs)
    _print_ids(job.job_id for job in jobs)
    return ExitCode.OK


def _watch(args: argparse.Namespace) -> int:
    from kojiwatch.submit import job_options, write_job_ids  # koji, jobcreator: ovsperf[koji]
    from kojiwatch.watch import Watcher

    config = WatchConfig(
        tag=args.tag,
        packages=tuple(dict.fromkeys(_split(args.package))),
        owner=args.owner,
        state_path=args.state_file,
        interval_s=args.interval_s,
        max_polls=args.max_polls,
        retry=RetryPolicy(
            initial_s=args.retry_initial_s, max_s=args.retry_max_s, max_failures=args.max_hub_failures
        ),
    )
    # Fail on bad lab arguments before touching Koji: the request's own checks, then every
    # jobcreator option (--collector's rsync destination, --task-repo, --inventory, hosts).
    job_options(_request(args, ("http://placeholder.invalid/",), args.whiteboard))
    ids_dir: Path | None = args.ids_dir
    if ids_dir is not None and not ids_dir.is_dir():
        raise KojiWatchError(f"--ids-dir '{ids_dir}' is not a directory.")
    prepare = functools.partial(
        _prepare_bound,
        publish_dir=args.publish_dir,
        base_url=args.base_url,
        arches=_split(args.arch) or DEFAULT_ARCHES,
    )

    def request_for(repo: PreparedRepo) -> SubmitRequest:
        nvrs = " ".join(b.nvr for b in repo.builds)
        builds = tuple(b.nvr for b in repo.builds)
        request = _request(args, (repo.url,), f"{args.whiteboard} {nvrs}".strip(), builds, args.tag)
        if request.job_xml_dir is None:
            return request
        return dataclasses.replace(request, job_xml_dir=request.job_xml_dir / repo.path.name)

    def write_ids(request: SubmitRequest, jobs: list[SubmittedJob]) -> None:
        if ids_dir is not None:
            name = request.repo_urls[0].rstrip("/").rsplit("/", 1)[-1]
            write_job_ids(ids_dir / f"{name}.json", request, jobs)

    client = _client(args)
    watcher = Watcher(client, config, prepare, request_for, on_jobs=write_ids)
    try:
        watcher.run()
    finally:
        client.close()
        _print_ids(job_id for _, job_id in watcher.submitted)
    if watcher.failures:
        raise KojiWatchError(f"{len(watcher.failures)} build(s) failed: " + "; ".join(watcher.failures))
    return ExitCode.OK


def _prepare_bound(
    client: KojiClient,
    selection: BuildSelection,
    *,
    publish_dir: Path,
    base_url: str,
    arches: tuple[str, ...],
) -> PreparedRepo:
    from kojiwatch.repo import prepare_repo

    return prepare_repo(client, selection, publish_dir, base_url, arches=arches)


def _run(args: argparse.Namespace) -> int:
    """Run the sub-command; a build not in the watched tag exits 3 (``NotTaggedError``)."""
    commands = {"prepare-repo": _prepare, "submit": _submit, "watch": _watch}
    return commands[args.command](args)


def main(argv: list[str] | None = None) -> int:
    """Run ``ovsperf-koji``; return the process exit code (see ``--help``)."""
    return run_command(build_parser(), _run, argv)


if __name__ == "__main__":
    sys.exit(main())
