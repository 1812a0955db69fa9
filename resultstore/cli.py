"""Command line entry point ``ovsperf-results``: comparisons and verdicts, history import, trend pages."""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ovsperf_common.errorfmt import located
from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.framemix import TrafficKey, read_packet_size
from ovsperf_common.runner import one_line, run_command
from ovsperf_common.secrets import mask_tree
from reporting.metrics import OPTIONS, THROUGHPUT_METRICS
from resultstore.connect import DB_ENV_VAR, database_url, default_database_path
from resultstore.errors import ResultStoreError
from resultstore.model import ComparisonRecord, ReviewDecision, SeriesKey

if TYPE_CHECKING:
    from resultstore.store import ResultStore

log = logging.getLogger(__name__)

EPILOG = f"""\
database: --db URL, else ${DB_ENV_VAR}, else the SQLite file {default_database_path()}.
  A plain path means an SQLite file; a shared store is e.g. postgresql+psycopg://user@host/ovsperf.
<comparison> is a comparison id (first column of 'list') or a result name (its newest comparison).
exit codes: 0 OK; 2 error (unknown comparison, scenario or metric, invalid bug id or comment,
  database down, or the report/overview could not be re-rendered: the verdict is stored then,
  retry with 'render'; 'import': a result could not be imported, the others were); 3 'list'
  matched nothing, 'import' found no result, 'trend' found no
  series (empty store, or filters that match nothing).
import: every layout generate-report reads; a result already recorded (same files) is not
  recorded twice, its samples are refreshed.
trend: one page per (scenario, test, frame size) and an index, openable offline (docs/trending.md).
culprit: the bisection's bisect.json is checked before anything is written: one that did not FIND
  one first bad build, or measured another frame size or flow count, is refused naming the file
  and field (exit 2). The series' trend page then marks the result with the culprit build.
"""


def _series_options(parser: argparse.ArgumentParser, result_help: str) -> None:
    """Add the options naming one series at one result (``expect``, ``culprit``)."""
    parser.add_argument("result", help=result_help)
    parser.add_argument("--test", required=True, help="VSperf test, e.g. phy2phy_tput")
    parser.add_argument("--deployment", help="VSperf deployment (default: the test's only one)")
    parser.add_argument(
        "--frame-size", required=True, metavar="B", help="frame size incl. FCS [B], or a mix's name (imix)"
    )
    parser.add_argument(
        "--flows",
        type=int,
        metavar="N",
        help="flows per direction of the series, when not one (a flow sweep)",
    )
    parser.add_argument("--metric", choices=sorted(OPTIONS), default="ndr", help="metric (default ndr)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ovsperf-results",
        description="Browse the results store of process-ci-results and record tester verdicts.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--db", metavar="URL", help="database URL or SQLite file (see below)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    lst = sub.add_parser("list", help="list comparisons, newest first")
    lst.add_argument("--scenario", help="only this scenario")
    lst.add_argument("--undecided", action="store_true", help="only comparisons without a verdict")
    lst.add_argument("--limit", type=int, default=50, help="at most this many (default 50; 0 = all)")
    lst.add_argument("--json", action="store_true", help="print JSON instead of a table")

    show = sub.add_parser("show", help="show one comparison and its verdict history")
    show.add_argument("comparison", help="comparison id or result name")
    show.add_argument("--json", action="store_true", help="print JSON instead of text")

    verdict = sub.add_parser("verdict", help="record a tester verdict and re-render the report page")
    verdict.add_argument("comparison", help="comparison id or result name")
    decision = verdict.add_mutually_exclusive_group(required=True)
    decision.add_argument(
        "--pass",
        dest="decision",
        action="store_const",
        const=ReviewDecision.PASS,
        help="acceptable (no regression)",
    )
    decision.add_argument(
        "--fail",
        dest="decision",
        action="store_const",
        const=ReviewDecision.FAIL,
        help="a real problem (give --bug)",
    )
    verdict.add_argument(
        "--bug",
        metavar="ID",
        help="bug tracker id: PREFIX#NUMBER or PREFIX-NUMBER, e.g. RHBZ#2001234, FDP-123",
    )
    verdict.add_argument("--comment", metavar="TEXT", help="free text shown on the page")
    verdict.add_argument("--tester", metavar="NAME", help="who decides (default: login name)")

    imp = sub.add_parser("import", help="record existing VSperf results directories and their samples")
    imp.add_argument(
        "dirs", nargs="+", type=Path, metavar="DIR", help="results directory, delivery, or a parent"
    )
    imp.add_argument(
        "--scenario", help="scenario of results whose metadata names none (bare VSperf directories)"
    )

    trend = sub.add_parser(
        "trend", help="write the trend pages (graphs over builds, change points, verdicts)"
    )
    trend.add_argument(
        "--output-dir", required=True, type=Path, metavar="DIR", help="pages directory (replaced)"
    )
    trend.add_argument("--scenario", help="only this scenario")
    trend.add_argument(
        "--metric", choices=sorted(OPTIONS), action="append", help="only this metric (repeatable)"
    )
    trend.add_argument(
        "--since", metavar="YYYY-MM-DD", help="only builds measured on or after this day (UTC)"
    )
    trend.add_argument("--title", default="OVS/DPDK performance trends", help="page title")

    expect = sub.add_parser(
        "expect", help="mark the trend change of one series at one result as expected (no more alarms)"
    )
    _series_options(expect, "result name (where the change starts: 'since' on the pages)")
    expect.add_argument("--bug", metavar="ID", help="bug tracker id, e.g. RHBZ#2001234")
    expect.add_argument("--comment", metavar="TEXT", help="why it is expected")
    expect.add_argument("--tester", metavar="NAME", help="who decides")

    culprit = sub.add_parser(
        "culprit",
        help="link the trend regression of one series at one result to the bisection that found its "
        "first bad build (shown on the trend page and by 'show')",
    )
    _series_options(culprit, "result where the regression shows ('since' on the pages)")
    culprit.add_argument(
        "--bisect",
        required=True,
        type=Path,
        metavar="DIR",
        help="an 'ovsperf-lab bisect' directory (bisect_<timestamp>/) or its bisect.json; it must "
        "have FOUND the first bad build",
    )
    culprit.add_argument("--tester", metavar="NAME", help="who links it")

    render = sub.add_parser(
        "render", help="re-render a comparison's report page and the overview (e.g. after a failure)"
    )
    render.add_argument("comparison", help="comparison id or result name")
    return parser


def _verdict_json(record: ComparisonRecord) -> dict[str, Any] | None:
    v = record.verdict
    if v is None:
        return None
    return {
        "verdict": v.decision.value,
        "bug_id": v.bug_id,
        "comment": v.comment,
        "tester": v.tester,
        "recorded_at": v.recorded_at.isoformat(),
    }


def _comparison_json(record: ComparisonRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "result": record.result_name,
        "scenario": record.scenario,
        "overall": record.overall,
        "counts": dict(record.counts),
        "report": str(record.report_dir / "index.html"),
        "baseline_result": record.baseline_result_name,
        "baseline_dirs": [str(p) for p in record.baseline_dirs],
        "current_dirs": [str(p) for p in record.current_dirs],
        "warnings": list(record.warnings),
        "created_at": record.created_at.isoformat(),
        "tester_verdict": _verdict_json(record),
    }


def _print_table(records: Sequence[ComparisonRecord]) -> None:
    header = ("ID", "RESULT", "SCENARIO", "PROCESSED_UTC", "OVERALL", "VERDICT", "BUG", "REPORT")
    rows = [
        (
            str(r.id),
            r.result_name,
            r.scenario or "n/a",
            r.created_at.strftime("%Y-%m-%dT%H:%MZ"),
            r.overall,
            r.verdict.decision.value if r.verdict else "-",
            (r.verdict.bug_id if r.verdict and r.verdict.bug_id else "-"),
            str(r.report_dir / "index.html"),
        )
        for r in records
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True)]
        print("  ".join([*cells, row[-1]]))


def _print_show(store: ResultStore, record: ComparisonRecord) -> None:
    print(f"comparison:  {record.id}")
    print(f"result:      {record.result_name}")
    print(f"scenario:    {record.scenario or 'n/a'}")
    print(f"overall:     {record.overall}")
    print("counts:      " + (", ".join(f"{k} {v}" for k, v in sorted(record.counts.items())) or "n/a"))
    print(f"report:      {record.report_dir / 'index.html'}")
    print(f"baseline:    {record.baseline_result_name or ', '.join(map(str, record.baseline_dirs))}")
    print(f"current:     {', '.join(map(str, record.current_dirs))}")
    print(f"warnings:    {len(record.warnings)}")
    result = store.result(record.result_name)
    if result is not None:
        print(f"received:    {result.received_at.isoformat()} (now at {result.location})")
        for key in (
            "build",
            "beaker_job_id",
            "job_id",
            "hosts",
            "kernel",
            "status",
            "missing_tests",
            "complete",
        ):
            if key in result.metadata:
                print(f"{key + ':':<12} {json.dumps(mask_tree(result.metadata[key]), sort_keys=True)}")
    for line in _culprit_lines(store, record.result_name):
        print(one_line(line))
    history = store.verdict_history(record.id)
    if not history:
        print("verdict:     none yet")
    for v in history:
        print(
            f"verdict:     {v.decision.value} by {v.tester or 'n/a'} at {v.recorded_at.isoformat()}"
            f" bug {v.bug_id or '-'}" + (f" ({v.comment})" if v.comment else "")
        )


def _since(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise ResultStoreError(f"--since {text!r} is not a date YYYY-MM-DD.") from None


def _import(store: ResultStore, args: argparse.Namespace) -> int:
    from resultstore.importer import import_dirs  # HdrHistogram: ovsperf[report]

    def progress(done: int, total: int, name: str) -> None:
        log.info("Imported %d/%d: %s", done, total, name)

    outcome = import_dirs(store, args.dirs, scenario=args.scenario, progress=progress)
    for path, why in outcome.skipped:
        log.warning("Skipped %s: %s", one_line(path), one_line(why))  # names from the file system
    for name in outcome.recorded:
        print(one_line(f"recorded {name}"))
    for name in outcome.refreshed:
        print(one_line(f"already recorded {name} (samples refreshed)"))
    log.info(
        "%d result(s) recorded, %d already there, %d skipped, %d failed; %d sample(s) written.",
        len(outcome.recorded),
        len(outcome.refreshed),
        len(outcome.skipped),
        len(outcome.failed),
        outcome.samples,
    )
    for path, why in outcome.failed:
        log.error("Cannot import %s: %s", one_line(path), one_line(why))
    if outcome.failed:
        return int(ExitCode.ERROR)
    return int(ExitCode.OK if outcome.recorded or outcome.refreshed else ExitCode.NO_RESULTS)


def _trend(store: ResultStore, args: argparse.Namespace) -> int:
    from resultstore.trendpages import write_store_pages  # jumpavg, Plotly: ovsperf[report]

    since = _since(args.since)
    metrics = [OPTIONS[m] for m in args.metric] if args.metric else list(THROUGHPUT_METRICS)
    if args.scenario is not None:
        known = store.scenarios()
        if args.scenario not in known:
            raise ResultStoreError(
                f"--scenario {args.scenario!r} has no results in the store; "
                f"known: {', '.join(known) or 'none'}."
            )

    def progress(done: int, total: int) -> None:
        if done == total or done % 100 == 0:
            log.info("Analysed %d/%d series.", done, total)

    filters = ", ".join(
        f
        for f in (
            f"scenario {args.scenario}" if args.scenario else "",
            f"metrics {', '.join(args.metric)}" if args.metric else "",
            f"since {args.since}" if args.since else "",
        )
        if f
    )
    try:
        written = write_store_pages(
            store,
            args.output_dir,
            scenario=args.scenario,
            since=since,
            metrics=metrics,
            title=args.title,
            filters=filters,
            progress=progress,
        )
    except OSError as err:
        raise ResultStoreError(f"Cannot write the trend pages: {err}") from err
    if written is None:
        log.error("No series in the store for these filters (empty store, or nothing since %s).", args.since)
        return int(ExitCode.NO_RESULTS)
    outcome, trends = written
    regressions = sum(1 for t in trends if t.last.verdict.value == "REGRESSION")
    log.info("%d series, %d with an open regression.", outcome.series, regressions)
    print(one_line(outcome.index_html))
    return int(ExitCode.OK)


def _traffic(frame_size: str, flows: int | None) -> TrafficKey:
    """Return the series' traffic from ``--frame-size`` (a size or a mix's name) and ``--flows``.

    :raises ResultStoreError: naming the option, for a value that is neither.
    """
    try:
        size, mix = read_packet_size(frame_size)
    except ValueError as err:
        raise ResultStoreError(f"Option '--frame-size': {err}.") from err
    if flows is not None and flows < 1:
        raise ResultStoreError(f"Option '--flows' must be >= 1, got {flows}.")
    return TrafficKey(size, mix, flows)


def _series_key(store: ResultStore, args: argparse.Namespace, traffic: TrafficKey) -> SeriesKey:
    """Return the series the options name, of which ``args.result`` has a sample.

    :raises ResultStoreError: when there is no such result, it has no sample of that series, or
        the deployment is ambiguous.
    """
    metric = OPTIONS[args.metric]
    result = store.result(args.result)
    if result is None:
        raise ResultStoreError(f"No result '{args.result}' in the results store.")
    deployments = {
        s.key.deployment
        for s in store.series(scenario=result.scenario, metrics=[metric])
        if s.key.test == args.test
        and (s.key.frame_size, s.key.traffic) == (traffic.frame_size_bytes, traffic.store_label)
        and any(p.result_name == args.result for p in s.points)
    }
    if args.deployment:
        deployments &= {args.deployment}
    if len(deployments) != 1:
        raise ResultStoreError(
            f"Result '{args.result}' has no {args.metric.upper()} sample of test {args.test!r} at "
            f"{traffic.text()}"
            + (f" (deployment {args.deployment})" if args.deployment else "")
            + ("" if not deployments else f"; give --deployment, one of {', '.join(sorted(deployments))}")
            + "."
        )
    return SeriesKey(
        result.scenario or "-",
        args.test,
        deployments.pop(),
        traffic.frame_size_bytes,
        metric,
        traffic.store_label,
    )


def _expect(store: ResultStore, args: argparse.Namespace) -> int:
    key = _series_key(store, args, _traffic(args.frame_size, args.flows))
    mark = store.add_trend_mark(args.result, key, bug_id=args.bug, comment=args.comment, tester=args.tester)
    print(one_line(f"marked expected: {mark.key.label} at {mark.result_name}"))
    return int(ExitCode.OK)


def _culprit(store: ResultStore, args: argparse.Namespace) -> int:
    """Link a series' regression at a result to the bisection in ``--bisect`` (checked before writing)."""
    from resultstore.bisectlink import read_bisect

    traffic = _traffic(args.frame_size, args.flows)
    bisection = read_bisect(args.bisect)
    measured = TrafficKey(bisection.frame_size_bytes, "", bisection.flows)
    if (measured.frame_size_bytes, measured.store_label) != (traffic.frame_size_bytes, traffic.store_label):
        differs = (
            "config.flows"
            if measured.frame_size_bytes == traffic.frame_size_bytes
            else "config.frame_size_bytes"
        )
        raise ResultStoreError(
            located(
                f"the bisection measured {measured.text()}, the series is at {traffic.text()}; "
                "link a bisection of the series' own traffic.",
                bisection.report,
                ("field", differs),
            )
        )
    key = _series_key(store, args, traffic)
    link = store.add_culprit(args.result, key, bisection, tester=args.tester)
    print(one_line(f"culprit {bisection.culprit}: {key.label} at {link.result_name}"))
    print(one_line(bisection.page))
    return int(ExitCode.OK)


def _culprit_lines(store: ResultStore, result_name: str) -> list[str]:
    """Return ``show``'s lines for the culprits linked to a result's regressions."""
    return [
        f"culprit:     {c.bisection.summary()} for {c.key.label}; bisection {c.bisection.page}"
        for c in store.culprits(result_name).values()
    ]


def _culprits_json(store: ResultStore, result_name: str) -> list[dict[str, Any]]:
    """Return ``show --json``'s ``culprits``: each link with its bisection's evidence."""
    return [
        {
            "series": c.key.label,
            "culprit": c.bisection.culprit,
            "page": str(c.bisection.page),
            "bisect_json": str(c.bisection.report),
            **c.bisection.evidence(),
            "tester": c.tester,
            "recorded_at": c.recorded_at.isoformat(),
        }
        for c in store.culprits(result_name).values()
    ]


def _run(args: argparse.Namespace) -> int:
    """Open the store and run the sub-command; return 0, or 3 when nothing was found."""
    from resultstore.store import ResultStore  # SQLAlchemy, Alembic: ovsperf[report]

    with ResultStore.open(database_url(args.db), create_directory=args.command == "import") as store:
        if args.command == "import":
            return _import(store, args)
        if args.command == "trend":
            return _trend(store, args)
        if args.command == "expect":
            return _expect(store, args)
        if args.command == "culprit":
            return _culprit(store, args)
        if args.command == "list":
            records = store.comparisons(
                scenario=args.scenario, undecided_only=args.undecided, limit=args.limit or None
            )
            if args.json:
                print(json.dumps([_comparison_json(r) for r in records], indent=2))
            elif records:
                _print_table(records)
            return int(ExitCode.OK if records else ExitCode.NO_RESULTS)
        if args.command == "show":
            record = store.comparison(args.comparison)
            if args.json:
                data = _comparison_json(record)
                result = store.result(record.result_name)
                # Metadata comes from the delivery: its secrets are masked as in every other output.
                data["result_metadata"] = None if result is None else mask_tree(dict(result.metadata))
                data["verdict_history"] = [
                    {
                        "verdict": v.decision.value,
                        "bug_id": v.bug_id,
                        "comment": v.comment,
                        "tester": v.tester,
                        "recorded_at": v.recorded_at.isoformat(),
                    }
                    for v in store.verdict_history(record.id)
                ]
                data["culprits"] = _culprits_json(store, record.result_name)
                print(json.dumps(data, indent=2))
            else:
                _print_show(store, record)
            return int(ExitCode.OK)
        from resultstore.verdicts import record_verdict, refresh_pages  # the report: matplotlib, scipy

        if args.command == "verdict":
            record = record_verdict(
                store,
                args.comparison,
                args.decision,
                bug_id=args.bug,
                comment=args.comment,
                tester=args.tester,
            )
        else:
            record = refresh_pages(store, store.comparison(args.comparison))
        print(one_line(record.report_dir / "index.html"))
        return int(ExitCode.OK)


def main(argv: list[str] | None = None) -> int:
    """Run ``ovsperf-results``; return the exit code (0 ok, 2 error, 3 nothing listed)."""
    return run_command(_parser(), _run, argv)
