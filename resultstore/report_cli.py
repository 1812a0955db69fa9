"""Command line of ``generate-report``: parse arguments, call :func:`generate_report`, exit.

It lives in ``resultstore`` (not ``reporting``) because ``--db`` reads the trend verdicts from the
results store; the report itself knows nothing of the store (docs/architecture.md).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from ovsperf_common.runner import one_line, run_command
from reporting.model import TREND_MIN_HISTORY, Thresholds

log = logging.getLogger(__name__)

EPILOG = f"""\
Each DIR is a VSperf results directory (results_<YYYY-mm-dd_HH-MM-SS>/ with
result_<i>_<test>_<deployment>.csv, .md, .rst and logs; pre-Fraser result_<test>_<deployment>.csv
too) or a directory holding one or more. Several directories on a side, or the same test
repeated in one directory, are pooled as repeats: the report then gives mean, standard
deviation, a confidence interval and a Welch t-test per frame size; with one run per side it
gives the % of baseline against the thresholds. Throughput is VSperf's Rx rate summed over
both directions; Mbit/s are L1 (fps x (frame + 20 B) x 8); frame sizes include the FCS.

OUT receives index.html (open it in a browser), report.json (every number on the page),
graphs/ and text copies of VSperf's report and logs under sources/. An existing OUT is
replaced only if generate-report wrote it; it must not overlap any input directory.

verdicts per (test, frame size): PASS, REGRESSION, IMPROVEMENT (never a failure), UNSTABLE
(repeats too noisy to decide), INVALID (0, missing or unparsable throughput, a frame size
the current results lack, a test the baseline has but the current results lack) and NO_BASELINE
(a new test, or a frame size the intact baseline never measured: shown, not compared, does not
change the exit code).

exit codes:
  0  report written, no regression (IMPROVEMENT, UNSTABLE and NO_BASELINE cells allowed)
  1  report written, at least one REGRESSION
  2  report written with INVALID cells and no regression (OUT/index.html printed on stdout),
     or error, no report (nothing on stdout)
  3  no results found (no result CSV on a side)

trend (--db): each current cell is also judged against its series in the results store
(scenario x test x frame size x metric over builds; change points by FD.io CSIT's jumpavg).
With at least {TREND_MIN_HISTORY} earlier builds the trend verdict decides the cell: a trend
REGRESSION fails it, a baseline REGRESSION the history does not confirm passes. With fewer the
baseline verdict decides. The current results need not be in the store (they are judged as the
newest build); docs/trending.md.

Whenever a report was written its path (OUT/index.html) is printed on stdout, whatever the
exit code; nothing is printed on stdout when no report was written. Logs go to stderr.
"""


_THRESHOLD_OPTIONS = (
    (
        "--threshold-regression",
        "regression_percent",
        "PCT",
        "a drop of at least PCT %% is a REGRESSION; with repeats it must also be significant",
    ),
    (
        "--threshold-improvement",
        "improvement_percent",
        "PCT",
        "a rise of at least PCT %% is an IMPROVEMENT, never a failure",
    ),
    ("--threshold-warning", "warning_percent", "PCT", "colour changes of at least PCT %% as a warning"),
    ("--alpha", "alpha", "P", "significance level of the t-tests with repeats"),
)
"""(option, :class:`Thresholds` field, metavar, help) of the threshold options."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="generate-report",
        description="Compare VSperf RFC 2544 throughput results against a baseline and write an HTML report.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--baseline",
        action="append",
        required=True,
        type=Path,
        metavar="DIR",
        help="baseline results directory; repeat for several baseline runs",
    )
    parser.add_argument(
        "--output-dir",
        required=True,
        type=Path,
        metavar="OUT",
        help="report directory, created or replaced atomically (a failed write keeps the old one)",
    )
    for option, field, metavar, text in _THRESHOLD_OPTIONS:
        parser.add_argument(
            option,
            dest=field,
            type=float,
            default=getattr(Thresholds, field),
            metavar=metavar,
            help=f"{text} (default %(default)s)",
        )
    parser.add_argument("--title", metavar="T", help="page title (default: the compared versions)")
    parser.add_argument(
        "--junit",
        type=Path,
        metavar="FILE",
        help="also write JUnit XML: one test case per (test, frame size, metric), failures for regressions",
    )
    parser.add_argument(
        "--db",
        metavar="URL",
        help="results store (URL or SQLite file) whose history gives each cell a trend verdict",
    )
    parser.add_argument(
        "--scenario",
        metavar="S",
        help="scenario of the current results in the store (default: from their ovsperf-metadata.json)",
    )
    parser.add_argument(
        "result_dirs",
        nargs="+",
        type=Path,
        metavar="RESULT_DIR",
        help="current results directory; several are pooled as repeats (each also gets its own column)",
    )
    return parser


def _run(args: argparse.Namespace) -> int:
    """Write the report; print its index.html path; return the overall verdict's exit code."""
    from reporting.api import generate_report  # matplotlib, scipy, Jinja2: ovsperf[report]

    thresholds = Thresholds(**{field: getattr(args, field) for _, field, _, _ in _THRESHOLD_OPTIONS})
    trend = None
    if args.db:
        from resultstore.connect import database_url  # SQLAlchemy, Alembic, jumpavg: ovsperf[report]
        from resultstore.store import ResultStore
        from resultstore.trend import trend_for_dirs

        with ResultStore.open(database_url(args.db), create_directory=False) as store:
            trend = trend_for_dirs(store, args.result_dirs, scenario=args.scenario)
    elif args.scenario:
        log.warning("--scenario is used only with --db; ignored.")
    outcome = generate_report(
        args.baseline,
        args.result_dirs,
        args.output_dir,
        thresholds=thresholds,
        title=args.title,
        trend=trend,
        junit=args.junit,
    )
    print(one_line(outcome.index_html))
    counts = ", ".join(f"{k} {v}" for k, v in outcome.counts.items() if v)
    log.info("Overall %s (%s); %d warning(s).", outcome.overall, counts, len(outcome.warnings))
    return int(outcome.exit_code)


def main(argv: list[str] | None = None) -> int:
    """Run ``generate-report``; return the exit code (see the epilog)."""
    return run_command(_parser(), _run, argv)
