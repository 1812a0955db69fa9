"""Command line entry point ``ovsperf-results``: list comparisons, show one, record a tester verdict."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.runner import one_line, run_command
from resultstore.connect import DB_ENV_VAR, database_url, default_database_path
from resultstore.model import ComparisonRecord, Decision
from resultstore.store import ResultStore
from resultstore.verdicts import record_verdict, refresh_pages

EPILOG = f"""\
database: --db URL, else ${DB_ENV_VAR}, else the SQLite file {default_database_path()}.
  A plain path means an SQLite file; a shared store is e.g. postgresql+psycopg://user@host/ovsperf.
<comparison> is a comparison id (first column of 'list') or a result name (its newest comparison).
exit codes: 0 OK; 2 error (unknown comparison, invalid bug id or comment, database down, or the
  report/overview could not be re-rendered: the verdict is stored then, retry with 'render');
  3 'list' matched nothing.
"""


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
        const=Decision.PASS,
        help="acceptable (no regression)",
    )
    decision.add_argument(
        "--fail",
        dest="decision",
        action="store_const",
        const=Decision.FAIL,
        help="a real problem (give --bug)",
    )
    verdict.add_argument(
        "--bug",
        metavar="ID",
        help="bug tracker id: PREFIX#NUMBER or PREFIX-NUMBER, e.g. RHBZ#2001234, FDP-123",
    )
    verdict.add_argument("--comment", metavar="TEXT", help="free text shown on the page")
    verdict.add_argument("--tester", metavar="NAME", help="who decides (default: login name)")

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
        for key in ("beaker_job_id", "job_id", "hosts", "kernel", "status", "missing_tests", "complete"):
            if key in result.metadata:
                print(f"{key + ':':<12} {json.dumps(result.metadata[key], sort_keys=True)}")
    history = store.verdict_history(record.id)
    if not history:
        print("verdict:     none yet")
    for v in history:
        print(
            f"verdict:     {v.decision.value} by {v.tester or 'n/a'} at {v.recorded_at.isoformat()}"
            f" bug {v.bug_id or '-'}" + (f" ({v.comment})" if v.comment else "")
        )


def _run(args: argparse.Namespace) -> int:
    """Open the store and run the sub-command; return 0, or 3 when 'list' matched nothing."""
    with ResultStore.open(database_url(args.db), create_directory=False) as store:
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
                data["result_metadata"] = None if result is None else dict(result.metadata)
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
                print(json.dumps(data, indent=2))
            else:
                _print_show(store, record)
            return int(ExitCode.OK)
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
