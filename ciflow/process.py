"""Run one ``process-ci-results`` pass: report, record and move every complete result in ``ci_in``.

For each complete result (see :mod:`ciflow.inbox`), in name order:

1. read its ``ovsperf-metadata.json`` and find the scenario's baseline (fixed directories, or the
   newest result of that scenario a tester marked PASS);
2. generate the report into ``<reports>/<name>/`` (written atomically by the report generator);
   with each cell's trend verdict from the store's history of the scenario (resultstore.trend)
   and JUnit XML beside it (``<reports>/<name>/junit.xml``);
3. record the result, every measured number of it (samples, for the trends) and the comparison
   in the results store (paths as they will be after 4);
4. move the result to ``ci_processed/<name>`` (one atomic rename);

and at the end rewrite the trend pages (``trend_pages:``; each report cell links its series
page, named by :mod:`resultstore.trendlinks`) and the overview page ``<reports>/index.html`` from
the store, write the pass's JUnit XML when asked (:mod:`ciflow.junit`), and mail a summary of the
regressions and infrastructure failures when ``mail:`` is configured (a mail server that is down
never fails the pass).

A result that cannot be compared, and a delivery that says the lab failed
(``"infrastructure_failure": true``), go to ``ci_failed/<name>`` with ``<name>.FAILED.txt`` and
``<name>.FAILED.json`` beside it saying why (:mod:`ciflow.failures`). Trouble of our own
(disk full, database down) leaves the result in ``ci_in`` for the next pass. A crash between
steps is safe: the result is still in ``ci_in``, and the next pass overwrites the report and
updates (never duplicates) the store records.
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import os
from collections.abc import Callable
from pathlib import Path

from ciflow.errors import CiflowError, MoveError, ResultRejectedError, StoreUnavailableError
from ciflow.failures import fail, infrastructure_reason
from ciflow.inbox import pass_lock, scan
from ciflow.junit import write_pass_junit
from ciflow.model import (
    BaselineSource,
    CiConfig,
    EntryState,
    InboxEntry,
    OutcomeKind,
    PassSummary,
    ResultOutcome,
    ScenarioConfig,
)
from ciflow.moves import move_result, sweep_temporaries
from ciflow.notify import MailOutcome, send_regression_mail
from ciflow.resultdir import read_metadata, relocate, vsperf_result_dirs
from ovsperf_common.atomicio import TEMPORARY_SUFFIXES
from ovsperf_common.metadata import RunMetadata
from ovsperf_common.resultdir import fingerprint, result_csvs
from ovsperf_common.runner import one_line
from reporting.api import TesterVerdict, generate_report
from reporting.errors import ReportingError
from reporting.render import JUNIT_NAME
from resultstore.errors import ResultStoreError
from resultstore.model import ResultStatus
from resultstore.overview import OVERVIEW_HREF, write_overview
from resultstore.samples import build_info, build_note, samples_from_sets
from resultstore.store import ResultStore
from resultstore.trend import load_sets, trend_for_sets
from resultstore.trendlinks import link_cells, record_pages
from resultstore.trendpages import write_store_pages
from resultstore.verdicts import tester_verdict, thresholds_to_record

log = logging.getLogger(__name__)

INFRASTRUCTURE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO})
"""``OSError`` numbers that mean "our disk is in trouble", not "the result is bad"."""


REPORT_TEMPORARY_AGE_S = 3600.0
"""A hidden report temporary older than this is left from a killed writer and removed [s]."""


def run_pass(
    config: CiConfig,
    *,
    now: float | None = None,
    stop_requested: Callable[[], bool] | None = None,
    junit: Path | None = None,
) -> PassSummary:
    """Process every complete result in ``config.ci_in`` once; return what happened to each.

    Returns at once with ``lock_busy=True`` when another pass is running. ``now`` is the time the
    quiet period is judged against (default: now) [s since epoch]. ``stop_requested`` is asked
    before each result (e.g. after SIGTERM from a Jenkins abort): the result in hand is finished,
    the rest stays in ``ci_in``, and ``problems`` says so; while the regression mail is being sent
    it is asked every ~0.1 s, and a stop abandons the mail (``problems`` says so).

    A results store that cannot be opened, or fails mid-pass, stops the pass: what was handled
    is in the summary, the rest stays in ``ci_in``, and ``problems`` says why.

    ``junit``: write one JUnit XML file there holding every processed result's test cases (one
    ``<testsuite>`` per result), for Jenkins' ``junit`` publisher; written even when nothing was
    processed (an empty ``<testsuites>``), so the publisher never finds a stale file.

    :raises CiflowError: when a directory cannot be created or listed, or the lock file opened.
    :raises StoreUnavailableError: when the results store cannot be opened (nothing was touched).
    """
    for directory in (config.ci_processed, config.ci_failed, config.reports_dir):
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise CiflowError(f"Cannot create '{directory}': {err.strerror}.") from err
    with pass_lock(config.lock_path) as locked:
        if not locked:
            write_pass_junit(junit, [], [])
            return PassSummary(lock_busy=True)
        for directory in (config.ci_in, config.ci_processed, config.ci_failed):
            sweep_temporaries(directory)
        sweep_temporaries(config.reports_dir, TEMPORARY_SUFFIXES, min_age_s=REPORT_TEMPORARY_AGE_S)
        entries = scan(
            config.ci_in,
            quiet_period_s=config.quiet_period_s,
            marker_timeout_s=config.marker_timeout_s,
            now=now,
        )
        busy = [e for e in entries if e.state is EntryState.BUSY]
        todo = [e for e in entries if e.state is not EntryState.BUSY]
        outcomes = [ResultOutcome(e.name, OutcomeKind.DEFERRED, e.path, reason=e.reason) for e in busy]
        for entry in busy:
            log.info("Leaving '%s' for the next pass: %s.", entry.name, entry.reason)
        if not todo:
            log.info("Nothing to process in '%s' (%d still arriving).", config.ci_in, len(busy))
            problems_none: list[str] = []
            write_pass_junit(junit, outcomes, problems_none)
            return PassSummary(outcomes=tuple(outcomes), problems=tuple(problems_none))
        try:
            store = ResultStore.open(config.database_url)
        except ResultStoreError as err:
            raise StoreUnavailableError(f"Results store unavailable, nothing processed: {err}") from err
        problems: list[str] = []
        with store:
            for position, entry in enumerate(todo, start=1):
                if stop_requested is not None and stop_requested():
                    left = len(todo) - position + 1
                    problems.append(f"Stopped on request; {left} result(s) left in ci_in for the next pass.")
                    log.error("%s", problems[-1])
                    break
                log.info("Processing '%s' (%d/%d).", entry.name, position, len(todo))
                try:
                    outcomes.append(_handle(config, store, entry))
                except StoreUnavailableError as err:
                    left = len(todo) - position + 1
                    problems.append(f"{err} Stopped; {left} result(s) left in ci_in for the next pass.")
                    log.error("%s", problems[-1])
                    break
                except Exception as err:  # the per-result boundary: one delivery never stops the pass
                    log.error(
                        "Result '%s' hit an unexpected error: %s",
                        one_line(entry.name),
                        err,
                        exc_info=True,
                    )
                    reason = f"unexpected error while processing it ({type(err).__name__}: {err})"
                    outcomes.append(fail(config, store, entry, reason, None))
            trend_index = None
            if any(o.kind is OutcomeKind.PROCESSED for o in outcomes):
                if config.trend_pages is not None:
                    trend_index = _write_trend_pages(store, config.trend_pages, config.reports_dir, problems)
                try:
                    write_overview(store, config.reports_dir)
                except ResultStoreError as err:  # OverviewError or the database
                    problems.append(str(err))
                    log.error("%s", err)
    outcomes.sort(key=lambda o: o.name)
    write_pass_junit(junit, outcomes, problems)
    if config.mail is not None:
        mailed = send_regression_mail(
            config.mail,
            outcomes,
            config.reports_dir,
            overview=config.reports_dir / "index.html",
            trend_index=trend_index,
            stop_requested=stop_requested,
        )
        if mailed is MailOutcome.STOPPED:
            problems.append("Stopped on request while sending the regression mail; it was not sent.")
            log.error("%s", problems[-1])
    return PassSummary(outcomes=tuple(outcomes), problems=tuple(problems), trend_index=trend_index)


def _write_trend_pages(
    store: ResultStore, pages_dir: Path, reports_dir: Path, problems: list[str]
) -> Path | None:
    """Rewrite the trend pages in ``pages_dir`` and record them for ``reports_dir``; return their index.

    Every scenario's pages are written, so the index stays whole; the series of scenarios this
    pass did not touch come from the store's analysis cache unchanged. A failure adds to
    ``problems`` (the previous pages stay) and returns None.
    """
    try:
        written = write_store_pages(store, pages_dir)
        if written is None:
            return None
        record_pages(reports_dir, pages_dir)
    except (OSError, ResultStoreError) as err:
        problems.append(f"Cannot write the trend pages '{pages_dir}': {err}")
        log.error("%s", problems[-1])
        return None
    return written[0].index_html


def preview(config: CiConfig, *, now: float | None = None) -> list[InboxEntry]:
    """Return what a pass would do with each entry of ``ci_in``, changing nothing (``--dry-run``).

    A ready entry whose metadata a pass would reject (unreadable, no scenario, a scenario without a
    baseline, no result CSV) is predicted as rejected, with the reason the pass would write.

    :raises CiflowError: when ``ci_in`` cannot be listed.
    """
    entries = scan(
        config.ci_in, quiet_period_s=config.quiet_period_s, marker_timeout_s=config.marker_timeout_s, now=now
    )
    return [_predict(config, e) if e.state is EntryState.READY else e for e in entries]


def _predict(config: CiConfig, entry: InboxEntry) -> InboxEntry:
    """Return ``entry`` as rejected when the checks a pass makes before comparing would reject it."""
    try:
        metadata = read_metadata(entry.path)
        if metadata.infrastructure_failure:
            return dataclasses.replace(
                entry, state=EntryState.REJECTED, reason=infrastructure_reason(metadata)
            )
        _scenario_of(config, entry, metadata)
        _current_dirs(entry)
    except ResultRejectedError as err:
        return dataclasses.replace(entry, state=EntryState.REJECTED, reason=err.reason)
    except OSError as err:
        return dataclasses.replace(entry, state=EntryState.REJECTED, reason=f"cannot be read: {err}")
    return entry


def _scenario_of(config: CiConfig, entry: InboxEntry, metadata: RunMetadata) -> ScenarioConfig:
    """Return the configured scenario of a delivery.

    :raises ResultRejectedError: when the configuration has no baseline for it.
    """
    scenario = config.scenarios.get(metadata.scenario)
    if scenario is None:
        raise ResultRejectedError(
            f"scenario '{metadata.scenario}' has no baseline in '{config.path}'; add it under 'scenarios:'.",
            name=entry.name,
        )
    return scenario


def _current_dirs(entry: InboxEntry) -> tuple[Path, ...]:
    """Return the VSperf results directories of a delivery.

    :raises ResultRejectedError: when none holds a result CSV.
    """
    dirs = vsperf_result_dirs(entry.path)
    if not any(result_csvs(d) for d in dirs):
        raise ResultRejectedError(
            f"no VSperf result CSV (result_*.csv) in '{entry.path}' or its subdirectories.", name=entry.name
        )
    return dirs


def _stored_build(store: ResultStore, name: str) -> str | None:
    """Return what the stored result ``name`` tested, from its recorded metadata, when known."""
    try:
        record = store.result(name)
    except ResultStoreError as err:
        raise StoreUnavailableError(f"Results store failed while reading '{name}': {err}") from err
    if record is None:
        return None
    note = build_note((), record.metadata)
    return None if note is None else note.name


def _handle(config: CiConfig, store: ResultStore, entry: InboxEntry) -> ResultOutcome:
    if entry.state is EntryState.REJECTED:
        return fail(config, store, entry, entry.reason or "rejected", None)
    metadata: RunMetadata | None = None
    try:
        metadata = read_metadata(entry.path)
        if metadata.infrastructure_failure:
            return fail(config, store, entry, infrastructure_reason(metadata), metadata, infrastructure=True)
        return _compare_record_move(config, store, entry, metadata)
    except ResultRejectedError as err:
        return fail(config, store, entry, err.reason, metadata)


def _compare_record_move(
    config: CiConfig, store: ResultStore, entry: InboxEntry, metadata: RunMetadata
) -> ResultOutcome:
    destination = config.ci_processed / entry.name
    try:
        delivered = fingerprint(entry.path)
    except OSError as err:
        raise ResultRejectedError(f"cannot read the delivery: {err}.", name=entry.name) from err
    _refuse_duplicate(store, entry.name, destination, delivered)
    scenario = _scenario_of(config, entry, metadata)
    if metadata.incomplete_reason is not None:
        log.warning(
            "'%s' is incomplete: %s; the report covers what it holds.", entry.name, metadata.incomplete_reason
        )
    baseline_dirs, baseline_name = _baseline(store, scenario, entry.name)
    current_dirs = _current_dirs(entry)
    report_dir = config.reports_dir / entry.name
    try:
        sets = load_sets(current_dirs)
    except ReportingError as err:
        raise ResultRejectedError(f"cannot read the results: {err}", name=entry.name) from err
    note = build_note(sets, metadata.to_json())
    build = None if note is None else note.name
    if baseline_name is not None:
        baseline_build = _stored_build(store, baseline_name)
        baseline_label = f"{baseline_build} ({baseline_name})" if baseline_build else baseline_name
    else:
        baseline_label = ", ".join(p.name for p in scenario.baseline_dirs)
    current_label = f"{build} ({entry.name})" if build else entry.name
    title = f"{scenario.name}: {current_label} vs {baseline_label}"
    try:
        trend = trend_for_sets(
            store, sets, scenario=scenario.name, name=entry.name, metadata=metadata.to_json()
        )
    except ResultStoreError as err:
        raise StoreUnavailableError(
            f"Results store failed while reading the history of '{entry.name}' (left in ci_in): {err}"
        ) from err
    if config.trend_pages is not None:
        # The pages are rewritten at the end of the pass, with this result's build in them.
        trend = link_cells(trend, scenario=scenario.name, pages_dir=config.trend_pages, from_dir=report_dir)
    try:
        report = generate_report(
            list(baseline_dirs),
            list(current_dirs),
            report_dir,
            thresholds=scenario.thresholds,
            tester_verdict=_previous_verdict(store, entry.name, report_dir),
            title=title,
            # The page names the result where it will be: the move follows the report.
            display_paths={entry.path: destination},
            overview_href=OVERVIEW_HREF,
            trend=trend,
            junit_suite=f"{scenario.name}.{entry.name}",
            build=note,
        )
    except (ReportingError, OSError) as err:
        if _is_infrastructure(err):
            log.error("Report for '%s' failed for lack of disk (left in ci_in): %s", entry.name, err)
            return ResultOutcome(
                entry.name,
                OutcomeKind.ERROR,
                entry.path,
                reason=f"report could not be written: {err}",
                scenario=scenario.name,
                build=build,
            )
        raise ResultRejectedError(f"report generation failed: {err}", name=entry.name) from err

    final_dirs = relocate(current_dirs, entry.path, destination)
    try:
        store.record_result(
            name=entry.name,
            scenario=scenario.name,
            location=destination,
            vsperf_dirs=final_dirs,
            status=ResultStatus.PROCESSED,
            metadata=metadata.to_json(),
            fingerprint=delivered,
        )
        store.record_samples(entry.name, build_info(sets, metadata.to_json()), samples_from_sets(sets))
        comparison = store.record_comparison(
            result_name=entry.name,
            baseline_result_name=baseline_name,
            baseline_dirs=baseline_dirs,
            current_dirs=final_dirs,
            report_dir=report_dir,
            title=title,
            overall=report.overall,
            counts=report.counts,
            warnings=report.warnings,
            thresholds=thresholds_to_record(scenario.thresholds),
        )
    except ResultStoreError as err:
        raise StoreUnavailableError(
            f"Results store failed while recording '{entry.name}' (left in ci_in): {err}"
        ) from err
    try:
        move_result(entry.path, destination)
    except MoveError as err:
        log.error("%s", err)
        return ResultOutcome(
            entry.name, OutcomeKind.ERROR, entry.path, reason=str(err), scenario=scenario.name, build=build
        )
    log.info(
        "Processed '%s': %s, %d warning(s), report '%s', comparison %d.",
        entry.name,
        report.overall,
        len(report.warnings),
        report.index_html,
        comparison.id,
    )
    return ResultOutcome(
        entry.name,
        OutcomeKind.PROCESSED,
        destination,
        overall=report.overall,
        report_index=report.index_html,
        comparison_id=comparison.id,
        regressions=report.regressions,
        junit=report_dir / JUNIT_NAME,
        scenario=scenario.name,
        build=build,
    )


def _refuse_duplicate(store: ResultStore, name: str, destination: Path, delivered: str) -> None:
    """Reject a delivery whose name was processed before (never overwrite a result or its verdicts).

    A stored, processed result with the same ``delivered`` fingerprint whose directory is not in
    ``ci_processed`` is this very delivery after a pass crashed before its move: it is processed
    again (the store records are updated, its verdicts kept).

    :raises ResultRejectedError: when ``name`` is a duplicate delivery.
    :raises StoreUnavailableError: when the store fails.
    """
    if os.path.lexists(destination):
        raise ResultRejectedError(
            f"a result named '{name}' was already processed ('{destination}'); this is a duplicate delivery.",
            name=name,
        )
    try:
        existing = store.result(name)
    except ResultStoreError as err:
        raise StoreUnavailableError(f"Results store failed while checking '{name}': {err}") from err
    if (
        existing is not None
        and existing.status is ResultStatus.PROCESSED
        and existing.fingerprint != delivered
    ):
        raise ResultRejectedError(
            f"a different result named '{name}' was already processed (recorded at "
            f"{existing.location}, {existing.received_at:%Y-%m-%d %H:%M} UTC); this is a duplicate delivery.",
            name=name,
        )


def _previous_verdict(store: ResultStore, name: str, report_dir: Path) -> TesterVerdict | None:
    """Return the verdict already recorded on this result's comparison (a repeated pass keeps it shown)."""
    try:
        for comparison in store.comparisons(result_name=name):
            if comparison.report_dir == report_dir and comparison.verdict is not None:
                return tester_verdict(comparison.verdict)
    except ResultStoreError as err:
        raise StoreUnavailableError(f"Results store failed while reading '{name}': {err}") from err
    return None


def _baseline(store: ResultStore, scenario: ScenarioConfig, name: str) -> tuple[tuple[Path, ...], str | None]:
    """Return (baseline VSperf directories, stored result name or None) for a result of ``scenario``."""
    if scenario.source is BaselineSource.LATEST_PASS:
        try:
            passed = store.latest_passed_result(scenario.name, exclude_name=name)
        except ResultStoreError as err:
            raise StoreUnavailableError(f"Results store failed looking up a baseline: {err}") from err
        if passed is not None:
            log.info("Baseline of '%s': result '%s' (tester PASS).", name, passed.name)
            return passed.vsperf_dirs, passed.name
        if not scenario.baseline_dirs:
            raise ResultRejectedError(
                f"scenario '{scenario.name}' takes the newest tester-passed result as baseline, but none "
                "exists yet and no 'fallback' is configured; mark a comparison PASS with "
                "'ovsperf-results verdict <id> --pass' or configure a fallback, "
                "then move this back to ci_in.",
                name=name,
            )
    dirs: list[Path] = []
    for directory in scenario.baseline_dirs:
        dirs.extend(vsperf_result_dirs(directory) or (directory,))
    return tuple(dirs), None


def _is_infrastructure(err: BaseException) -> bool:
    """Return whether ``err`` or its causes is an ``OSError`` saying our disk is full or broken."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in INFRASTRUCTURE_ERRNOS:
            return True
        current = current.__cause__ or current.__context__
    return False
