"""Load VSperf results directories into :class:`~reporting.model.ResultSet` records.

Knows which files of a results directory hold what (reference: VSperf ``testcases/testcase.py``
``write_result_to_file``, ``tools/report/report.py``): each result CSV is read by
:func:`reporting.load_csv.load_csv`, the lab's side files by ``load_latency``/``load_telemetry``
(names: :mod:`ovsperf_common.labfiles`), logs and reports by ``load_text``. Every degraded input
becomes a :class:`~reporting.model.LoadWarning` naming the file and line; only an unreadable
directory raises.

Supported layouts: current (``result_<idx>_<test>_<deployment>.csv``, logs inside the results
directory, VSperf ≥ Hunter) and pre-Fraser (``result_<test>_<deployment>.csv``, logs such as
``overall.log`` beside the results directory, VSperf danube).
"""

from __future__ import annotations

import fnmatch
import logging
from dataclasses import replace
from pathlib import Path

from ovsperf_common import resultdir
from ovsperf_common.secrets import mask_pair
from reporting import load_text
from reporting.errors import load_error
from reporting.load_csv import load_csv
from reporting.load_latency import load_latency
from reporting.load_telemetry import load_telemetry
from reporting.resultmodel import LoadWarning, ResultSet, TestRun

log = logging.getLogger(__name__)

LEGACY_LOG_NAMES = ("overall.log", "host-cmds.log", "traffic-gen.log")
"""Pre-Hunter logs written to ``LOG_DIR`` beside the results directory."""

LOG_PATTERNS = (
    "vsperf-overall_*.log",
    "host-cmds_*.log",
    "traffic-gen_*.log",
    "vswitchd_*.log",
    "qemu*_*.log",
    "guest-cmds*_*.log",
)
"""Logs VSperf writes inside the results directory (VSperf ≥ Hunter, VSPERF-600)."""


def find_results_dirs(path: Path) -> tuple[tuple[Path, ...], tuple[LoadWarning, ...]]:
    """Return the VSperf results directories at ``path``: itself, or the ones below it.

    Discovery is :func:`ovsperf_common.resultdir.find_results_dirs`; this adds the reporting
    package's error and warning records.

    :returns: (directories sorted by path, warnings for skipped symbolic links); directories may
        be empty.
    :raises ReportingError: when ``path`` does not exist or is not a readable directory.
    """
    try:
        found = resultdir.find_results_dirs(path)
    except FileNotFoundError as err:
        raise load_error("No such results directory.", path) from err
    except NotADirectoryError as err:
        raise load_error("Not a directory; expected a VSperf 'results_<timestamp>' directory.", path) from err
    except OSError as err:
        raise load_error(f"Cannot list directory: {err.strerror}.", path) from err
    warnings = tuple(
        LoadWarning(link, None, "Skipped a symbolic link named like a results directory.")
        for link in found.skipped_links
    )
    return found.dirs, warnings


def load_results_dir(path: Path) -> ResultSet:
    """Read one VSperf ``results_<timestamp>`` directory.

    Reads every ``result_*.csv`` (test runs, one row per frame size), the environment from the
    per-test ``.rst`` (else ``.md``), the ``pidstat_<test>.log`` averages, archived MoonGen
    raw logs (``moongen-run*.log`` anywhere below), and the overall log for tests that ran
    but wrote no CSV.

    :raises ReportingError: when the directory cannot be listed.
    """
    try:
        names = sorted(p.name for p in path.iterdir())
    except OSError as err:
        raise load_error(f"Cannot list directory: {err.strerror}.", path) from err
    warnings: list[LoadWarning] = []
    runs: list[TestRun] = []
    for name in names:
        match = resultdir.parse_result_csv_name(name)
        file = path / name
        if not match:
            continue
        if file.is_symlink() or not file.is_file():
            warnings.append(LoadWarning(file, None, "Not a regular file (symbolic link?); not read."))
            continue
        run = load_csv(file, match, warnings)
        if run is not None:
            runs.append(run)
    logs = _find_logs(path, names)
    failed = _failed_tests(path, logs, runs, warnings)
    environment = _environment(path, names, warnings)
    moongen = load_text.moongen_logs(path, warnings)
    latency = load_latency(path, warnings)
    telemetry = load_telemetry(path, warnings)
    all_tests = frozenset(r.test for r in runs)
    runs = [
        replace(
            _attach_extras(path, run, moongen, all_tests, warnings),
            latency=latency.get(run.csv_path.name, ()),
            telemetry=telemetry.get(run.csv_path.name, ()),
        )
        for run in runs
    ]
    report = next((path / n for n in names if n.endswith("_test_report.rst") and (path / n).is_file()), None)
    return ResultSet(
        path=path,
        runs=tuple(runs),
        environment=environment,
        vsperf_report=report,
        logs=logs,
        failed_tests=failed,
        warnings=tuple(warnings),
    )


def _find_logs(path: Path, names: list[str]) -> tuple[Path, ...]:
    """Return VSperf's logs for this run: inside the directory, else pre-Hunter ones beside it.

    :param names: the directory's entries (``path.glob`` of each pattern, without listing it again).
    """
    matched = {n for pattern in LOG_PATTERNS for n in fnmatch.filter(names, pattern)}
    inside = sorted({path / n for n in matched if (path / n).is_file()})
    if inside:
        return tuple(inside)
    beside = [path.parent / n for n in LEGACY_LOG_NAMES if (path.parent / n).is_file()]
    overall = path.parent / "overall.log"
    if overall.is_file() and not load_text.log_mentions_dir(overall, path.name):
        return ()
    return tuple(beside)


def _failed_tests(
    path: Path, logs: tuple[Path, ...], runs: list[TestRun], warnings: list[LoadWarning]
) -> tuple[str, ...]:
    """Return tests the overall log names as run (or failed) that have no CSV; warn for each."""
    overall = [p for p in logs if p.name.startswith("vsperf-overall_") or p.name == "overall.log"]
    have = {r.test for r in runs}
    failed: list[str] = []
    for log_path in overall:
        for test, line, failed_msg in load_text.tests_in_log(log_path, warnings):
            if test in have or test in failed:
                continue
            failed.append(test)
            why = "the log says 'Failed to run test'" if failed_msg else "the test started but wrote no CSV"
            warnings.append(
                LoadWarning(
                    log_path,
                    line,
                    f"Test '{test}' is named in the log but '{path.name}' has no result CSV for it "
                    f"({why}); its cells are INVALID.",
                )
            )
    return tuple(failed)


def _environment(path: Path, names: list[str], warnings: list[LoadWarning]) -> tuple[tuple[str, str], ...]:
    """Merge the environment blocks of every ``result_*.rst`` (else ``.md``), first value wins.

    Values are masked where they enter (``ovsperf_common.secrets.mask_pair``): the page's
    environment table and ``report.json`` never show a password, token or URL credential.
    """
    merged: dict[str, str] = {}
    for suffix in (".rst", ".md"):
        for name in names:
            if name.startswith("result_") and name.endswith(suffix) and (path / name).is_file():
                for key, value in load_text.environment_block(path / name, warnings):
                    merged.setdefault(key, mask_pair(key, value))
        if merged:
            break
    return tuple(merged.items())


def _attach_extras(
    path: Path,
    run: TestRun,
    moongen: list[load_text.MoongenLog],
    all_tests: frozenset[str],
    warnings: list[LoadWarning],
) -> TestRun:
    """Add pidstat averages and MoonGen cross-checks to ``run``."""
    pidstat = path / f"pidstat_{run.test}.log"
    processes = load_text.pidstat(pidstat, warnings) if pidstat.is_file() else ()
    checks = load_text.cross_check(run, moongen, path, all_tests, warnings)
    return replace(run, processes=processes, moongen_checks=checks)
