"""Command line entry point ``process-ci-results``: one pass over ``ci_in`` (run it from cron or Jenkins)."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.runner import one_line, run_command

EPILOG = """\
output: one tab-separated line per result handled, on stdout:
  processed <name> <overall PASS|REGRESSION|INVALID> <report index.html>
  failed    <name> <reason file in ci_failed>
  error     <name> <reason>              (left in ci_in, retried next pass)
the overview of all comparisons is <reports>/index.html; each report has junit.xml beside its
  index.html, and --junit FILE collects those of the pass into one file.
trend: every processed result's numbers are recorded as samples; each cell shows its trend
  verdict (change points over the scenario's builds) beside the baseline verdict. With at least
  10 earlier builds the trend decides the cell (docs/trending.md), else the baseline.
  With 'trend_pages: DIR', every pass that processed a result rewrites the trend pages there;
  report cells and the overview link them.
infrastructure failure: a delivery whose metadata says "infrastructure_failure": true (Beaker job
  aborted, cancelled, killed; no results) goes to ci_failed, is a JUnit <error>, exits 2.
mail: with 'mail:' in the configuration, one summary of the pass's regressions (with report links)
  and infrastructure failures; a mail server that is down or slow only logs a warning (the whole
  exchange is bounded by 'mail.timeout_s').
--dry-run prints "ready|busy|rejected <name> [<reason>]" per entry of ci_in; exit 0 if a pass
  would act on something, 3 if not.
exit codes: 0 all results processed, no regression; 1 at least one regression;
  2 error (a result failed, an infrastructure failure included, or has INVALID rows; disk full,
  bad configuration, database down, overview or trend pages not written);
  3 nothing to do (ci_in empty, results still arriving, or another pass holds the lock).
SIGTERM/SIGINT: the result in hand is finished, the rest stays in ci_in; a regression mail being
  sent is abandoned at once (exit 2).
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="process-ci-results",
        description=(
            "Process new results in ci_in once: generate each report against its scenario's baseline, "
            "record it in the results store, move the result to ci_processed (or ci_failed with the reason)."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--config", required=True, metavar="FILE", help="YAML configuration (see docs/ciflow.md)"
    )
    parser.add_argument(
        "--junit",
        type=Path,
        metavar="FILE",
        help="write JUnit XML of every result handled in this pass (one test case per test, frame size"
        " and metric: failures for regressions, errors for INVALID cells; an error per failed delivery),"
        " for Jenkins' junit publisher",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="list what a pass would do with each entry of ci_in (ready, busy, rejected); change nothing",
    )
    return parser


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[Callable[[], bool]]:
    """Turn SIGTERM and SIGINT into a request to stop after the result in hand; yield the probe.

    The previous handlers are restored on exit.
    """
    received: list[int] = []

    def handler(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)

    previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield lambda: bool(received)
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def _run(args: argparse.Namespace) -> int:
    """Preview (``--dry-run``) or run one pass; print one line per entry; return the exit code."""
    # The report and the store (matplotlib, scipy, SQLAlchemy, ...): ovsperf[report].
    from ciflow.config import load_config
    from ciflow.model import EntryState, OutcomeKind, failed_reason_file
    from ciflow.process import preview, run_pass

    config = load_config(Path(args.config))
    if args.dry_run:
        entries = preview(config)
        for entry in entries:
            print(f"{entry.state.value}\t{one_line(entry.name)}\t{one_line(entry.reason or '')}".rstrip("\t"))
        todo = [e for e in entries if e.state is not EntryState.BUSY]
        return int(ExitCode.OK if todo else ExitCode.NO_RESULTS)
    with _stop_on_signals() as stop_requested:
        summary = run_pass(config, stop_requested=stop_requested, junit=args.junit)
    for problem in summary.problems:
        print(f"process-ci-results: error: {one_line(problem)}", file=sys.stderr)
    for outcome in summary.outcomes:
        name = one_line(outcome.name)
        if outcome.kind is OutcomeKind.PROCESSED:
            print(f"processed\t{name}\t{outcome.overall}\t{one_line(outcome.report_index)}")
        elif outcome.kind is OutcomeKind.FAILED:
            print(f"failed\t{name}\t{one_line(failed_reason_file(outcome.location))}")
        elif outcome.kind is OutcomeKind.ERROR:
            print(f"error\t{name}\t{one_line(outcome.reason)}")
    return int(summary.exit_code)


def main(argv: list[str] | None = None) -> int:
    """Run one pass; return the exit code documented in ``--help``."""
    return run_command(_parser(), _run, argv)
