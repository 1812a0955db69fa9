"""Generate a baseline comparison report: the library entry point of ``generate-report``.

``ciflow`` (process-ci-results) and ``resultstore`` call :func:`generate_report`; names here are a
contract (docs/reporting.md). Load (``load.py``) → compare (``compare.py``) → render
(``render.py``) into a sibling temporary directory that replaces ``output_dir`` atomically.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ovsperf_common.atomicio import atomic_directory, atomic_write_bytes, check_replaceable
from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.goals import goal_label
from ovsperf_common.resultdir import fingerprint
from ovsperf_common.verdict import Overall
from reporting.compare import compare
from reporting.document import PathDisplay
from reporting.errors import NoResultsError, ReportingError, write_error
from reporting.junit import write_junit
from reporting.load import find_results_dirs, load_results_dir
from reporting.model import (
    BuildNote,
    Comparison,
    TestComparison,
    TesterVerdict,
    Thresholds,
    TrendCell,
    Verdict,
)
from reporting.render import JUNIT_NAME, MARKER_NAME, REPORT_ENTRIES, write_report
from reporting.resultmodel import ResultSet

__all__ = [
    "BuildNote",
    "NoResultsError",
    "ReportOutcome",
    "ReportingError",
    "TesterVerdict",
    "Thresholds",
    "TrendCell",
    "TrendKey",
    "generate_report",
]

log = logging.getLogger(__name__)

TrendKey = tuple[str, str, int, str, float]
"""(test, deployment, frame size [B], traffic, loss goal [%]) of a cell, the key of
``generate_report(trend=)``; traffic is :attr:`ovsperf_common.framemix.TrafficKey.store_label`."""


@dataclass(frozen=True)
class ReportOutcome:
    """What :func:`generate_report` wrote and decided."""

    exit_code: ExitCode
    """OK, REGRESSION (any REGRESSION cell), ERROR (INVALID cells, no regression), NO_RESULTS.
    NO_BASELINE cells (tests only the current side has) do not change it."""
    overall: Overall
    """The page's overall verdict; its ``exit_code`` is :attr:`exit_code`."""
    index_html: Path
    """OUT/index.html."""
    report_json: Path
    """OUT/report.json."""
    counts: Mapping[str, int]
    """Verdict name → number of (test, frame size) cells; every verdict, zeros included (PASS,
    REGRESSION, IMPROVEMENT, UNSTABLE, INVALID, NO_BASELINE)."""
    warnings: tuple[str, ...]
    """Each names the file and row (or the test and frame size)."""
    regressions: tuple[str, ...] = ()
    """One line per cell whose deciding verdict is REGRESSION: test, frame size, metric, the change
    and, when the trend decides, its reason (for mails and logs)."""


def generate_report(
    baseline_dirs: Sequence[Path],
    current_dirs: Sequence[Path],
    output_dir: Path,
    thresholds: Thresholds = Thresholds(),  # noqa: B008 - frozen dataclass, safe default
    tester_verdict: TesterVerdict | None = None,
    title: str | None = None,
    *,
    display_paths: Mapping[Path, Path] | None = None,
    overview_href: str | None = None,
    trend: Mapping[TrendKey, TrendCell] | None = None,
    junit: Path | None = None,
    junit_suite: str | None = None,
    build: BuildNote | None = None,
) -> ReportOutcome:
    """Load, compare and render; write OUT atomically (a failed write leaves the previous report).

    Each directory is a VSperf ``results_<timestamp>`` directory or a directory holding one or
    more. All directories of a side are pooled as samples of that side (repeats); the same
    directory given twice, or two directories with identical result CSVs, count once.

    :param display_paths: directory as read → directory to show instead, for a caller that moves
        the results right after (``process-ci-results``: ``ci_in/<name>`` → ``ci_processed/<name>``).
        Paths inside a mapped directory are shown inside its replacement on the page, in
        ``report.json`` (``path``; ``read_from`` keeps where it was read) and in the warnings
        (page, ``report.json`` and :attr:`ReportOutcome.warnings`). Default: paths as read.
    :param overview_href: URL of a page listing all reports, relative to ``output_dir``
        (``process-ci-results``: ``../index.html``); the page links it at the top. Default: no link.
    :param trend: each cell's trend verdict from the build history (resultstore.trend); shown beside
        the baseline verdict, and deciding the cell when the series is long enough
        (:attr:`reporting.model.Cell.decision`). Default: no trend.
    :param junit: also write the JUnit XML here (every report holds it as ``junit.xml``;
        :func:`reporting.junit.write_junit`), atomically.
    :param junit_suite: the JUnit suite name (default: the title).
    :param build: what the current side tested (Koji build, tag, Jenkins build), shown under the
        title and in ``report.json`` (``build``). Default: not shown.

    :raises NoResultsError: (subclass of ReportingError) when no result CSV is found on a side.
    :raises ReportingError: on unreadable input or unwritable output.
    """
    warnings: list[str] = []
    baseline_seen: dict[str, Path] = {}
    current_seen: dict[str, Path] = {}
    baseline = _load_side("baseline", baseline_dirs, baseline_seen, warnings)
    current = _load_side("current", current_dirs, current_seen, warnings)
    for key in baseline_seen.keys() & current_seen.keys():
        warnings.append(
            f"'{current_seen[key]}' holds the same result CSVs as baseline '{baseline_seen[key]}'; "
            "every change is 0 %."
        )
    _check_versions("current", current, warnings)
    _check_versions("baseline", baseline, warnings)
    comparison = compare(baseline, current, thresholds)
    if trend:
        comparison = replace(comparison, tests=tuple(_with_trend(t, trend) for t in comparison.tests))
    warnings.extend(comparison.warnings)
    output_dir = Path(output_dir)
    _check_output(output_dir, [*baseline_dirs, *current_dirs])
    if junit is not None:
        try:
            check_replaceable(Path(junit))
        except OSError as err:
            raise write_error(f"cannot write JUnit XML there: {err.strerror or err}.", Path(junit)) from err
    if title is None:
        title = _default_title(baseline, current)
    display = PathDisplay.of(display_paths)
    warnings = [display.text(w) for w in warnings]
    for message in warnings:
        log.warning("%s", message)
    log.info("Rendering %d test(s) into '%s'.", len(comparison.tests), output_dir)
    try:
        with atomic_directory(output_dir) as tmp:
            # Before the page: write_report's marker lists every entry present when it finishes.
            write_junit(
                tmp / JUNIT_NAME, comparison, suite=junit_suite or title, report=output_dir / "index.html"
            )
            copy_warnings = write_report(
                tmp,
                comparison,
                baseline,
                current,
                warnings,
                tester_verdict,
                title,
                display=display,
                overview_href=overview_href,
                build=build,
            )
    except OSError as err:
        raise write_error(
            f"{err.strerror or err}; the previous report (if any) is unchanged.", output_dir
        ) from err
    for message in copy_warnings:
        log.warning("%s", message)
    warnings.extend(copy_warnings)
    overall = comparison.overall
    log.info("Report written: '%s' (overall %s).", output_dir / "index.html", overall)
    if junit is not None:
        try:
            atomic_write_bytes(Path(junit), (output_dir / JUNIT_NAME).read_bytes())
        except OSError as err:
            raise write_error(f"cannot write JUnit XML: {err.strerror or err}.", Path(junit)) from err
        log.info("JUnit XML written: '%s'.", junit)
    return ReportOutcome(
        exit_code=overall.exit_code,
        overall=overall,
        index_html=output_dir / "index.html",
        report_json=output_dir / "report.json",
        counts=comparison.counts,
        warnings=tuple(warnings),
        regressions=_regressions(comparison),
    )


def _regressions(comparison: Comparison) -> tuple[str, ...]:
    """Return one line per REGRESSION cell (:attr:`ReportOutcome.regressions`)."""
    lines = []
    for test in comparison.tests:
        for cell in test.cells:
            if cell.decision is not Verdict.REGRESSION:
                continue
            size = cell.frame_size_bytes
            where = f"{test.test}/{test.deployment} {size} B {goal_label(cell.loss_goal_percent)}"
            change = (
                "" if cell.rel_change_percent is None else f"{cell.rel_change_percent:+.2f} % vs baseline"
            )
            if cell.trend is not None and cell.trend.decides:
                lines.append(f"{where}: trend {cell.trend.reason}" + (f" ({change})" if change else ""))
            else:
                lines.append(f"{where}: {change or cell.reason}")
    return tuple(lines)


def _with_trend(test: TestComparison, trend: Mapping[TrendKey, TrendCell]) -> TestComparison:
    """Return ``test`` with each cell's trend verdict attached (cells without one unchanged)."""
    cells = tuple(
        replace(
            cell,
            trend=trend.get(
                (
                    test.test,
                    test.deployment,
                    cell.frame_size_bytes,
                    cell.traffic.store_label,
                    cell.loss_goal_percent,
                )
            ),
        )
        for cell in test.cells
    )
    return replace(test, cells=cells)


def _load_side(
    side: str, dirs: Sequence[Path], seen: dict[str, Path], warnings: list[str]
) -> list[ResultSet]:
    """Load every results directory of one side, skipping duplicates with a warning.

    :raises NoResultsError: when no result CSV is found in any of ``dirs``.
    :raises ReportingError: when a directory does not exist or cannot be listed.
    """
    sets: list[ResultSet] = []
    resolved_seen: dict[Path, str] = {}
    found_dirs: list[Path] = []
    for given in dirs:
        found, find_warnings = find_results_dirs(Path(given))
        warnings.extend(str(w) for w in find_warnings)
        if not found:
            warnings.append(f"'{given}': no 'results_<timestamp>' directory or result CSV inside.")
        found_dirs.extend(found)
    total = len(found_dirs)
    for number, path in enumerate(found_dirs, start=1):
        real = path.resolve()
        if real in resolved_seen:
            warnings.append(
                f"'{path}': the same results directory is given twice on the {side} side; used once."
            )
            continue
        resolved_seen[real] = side
        rs = load_results_dir(path)
        log.info("Loaded %s %d/%d: '%s' (%d test run(s)).", side, number, total, path, len(rs.runs))
        warnings.extend(str(w) for w in rs.warnings)
        if not rs.runs:
            continue
        key = fingerprint(rs.path)
        if key in seen:
            warnings.append(
                f"'{path}': same result CSVs as '{seen[key]}' (duplicate results directory); "
                f"not counted again on the {side} side."
            )
            continue
        seen[key] = path
        sets.append(rs)
    if not sets:
        raise NoResultsError(side, tuple(Path(d) for d in dirs))
    return sets


def _check_versions(side: str, sets: Sequence[ResultSet], warnings: list[str]) -> None:
    """Warn when a side pools results of different OVS/DPDK versions (they are not repeats)."""
    versions = {(rs.ovs_version, rs.dpdk_version) for rs in sets}
    if len(versions) > 1:
        shown = ", ".join(f"OVS {o or 'n/a'} / DPDK {d or 'n/a'}" for o, d in sorted(versions, key=str))
        warnings.append(
            f"The {side} side pools results of different versions ({shown}); they are treated as repeats."
        )


def _check_output(output_dir: Path, inputs: Sequence[Path]) -> None:
    """Refuse an output directory that would replace or sit inside a user's results.

    :raises ReportingError: when ``output_dir`` overlaps an input, or exists, is not empty and
        is not a report written by this tool.
    """
    out = output_dir.resolve()
    for given in inputs:
        src = Path(given).resolve()
        if out == src or src.is_relative_to(out) or out.is_relative_to(src):
            raise write_error(
                f"it overlaps the results directory '{given}'; choose a separate output directory.",
                output_dir,
            )
    if output_dir.is_symlink() or (output_dir.exists() and not output_dir.is_dir()):
        raise write_error("it exists and is not a directory.", output_dir)
    if output_dir.is_dir():
        try:
            entries = os.listdir(output_dir)
        except OSError as err:
            raise write_error(f"cannot list it: {err.strerror}.", output_dir) from err
        if entries and MARKER_NAME not in entries:
            raise write_error(
                "it exists, is not empty and is not a report written by generate-report; "
                "refusing to replace it.",
                output_dir,
            )
        foreign = sorted(set(entries) - _written_by_report(output_dir))
        if foreign:
            raise write_error(
                f"it holds files the report did not write ({', '.join(foreign)}); move them away or "
                "choose another output directory (a report never deletes them).",
                output_dir,
            )


def _written_by_report(output_dir: Path) -> frozenset[str]:
    """Return the top-level entries the earlier report in ``output_dir`` wrote (its marker's list)."""
    try:
        lines = (output_dir / MARKER_NAME).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return REPORT_ENTRIES
    listed = frozenset(line.strip() for line in lines[1:] if line.strip())
    return listed | {MARKER_NAME} if listed else REPORT_ENTRIES


def _default_title(baseline: Sequence[ResultSet], current: Sequence[ResultSet]) -> str:
    def label(sets: Sequence[ResultSet]) -> str:
        versions = sorted({f"OVS {rs.ovs_version or 'n/a'}, DPDK {rs.dpdk_version or 'n/a'}" for rs in sets})
        return " / ".join(versions)

    return f"{label(current)} against baseline {label(baseline)}"
