"""Record a tester's verdict and re-render the comparison's report page so it shows it.

The page is regenerated with :func:`reporting.api.generate_report` from the inputs the store kept
(baseline and current VSperf directories, thresholds, title), with ``tester_verdict`` set; the
report generator writes the page atomically, so a failed re-render leaves the previous page.
"""

from __future__ import annotations

import dataclasses
import getpass
import logging

from reporting.api import ReportOutcome, TesterVerdict, Thresholds, generate_report
from reporting.errors import ReportingError
from resultstore.errors import OverviewError, RenderError
from resultstore.model import ComparisonRecord, ReviewDecision, VerdictRecord
from resultstore.overview import OVERVIEW_HREF, write_overview
from resultstore.samples import build_note
from resultstore.store import ResultStore
from resultstore.trend import load_sets, trend_for_sets
from resultstore.trendlinks import link_cells, recorded_pages

log = logging.getLogger(__name__)


def thresholds_from_record(stored: dict[str, float]) -> Thresholds:
    """Rebuild the report generator's thresholds from their stored field → value mapping.

    Fields the current :class:`reporting.api.Thresholds` does not know are ignored (a store
    written by another version); missing ones take the current defaults.
    """
    known = {f.name for f in dataclasses.fields(Thresholds)}
    return Thresholds(**{k: v for k, v in stored.items() if k in known})


def thresholds_to_record(thresholds: Thresholds) -> dict[str, float]:
    """Return ``thresholds`` as a field → value mapping for the store."""
    return {k: float(v) for k, v in dataclasses.asdict(thresholds).items()}


def tester_verdict(verdict: VerdictRecord) -> TesterVerdict:
    """Translate a stored verdict into the report generator's :class:`TesterVerdict`."""
    return TesterVerdict(
        verdict=verdict.decision.value,
        bug_id=verdict.bug_id,
        comment=verdict.comment,
        tester=verdict.tester,
        recorded_at=verdict.recorded_at,
    )


def render_comparison(store: ResultStore, comparison: ComparisonRecord) -> ComparisonRecord:
    """Regenerate ``comparison``'s report page with its newest verdict; store the new outcome.

    Its trend cells link the series pages recorded for its reports directory, when there are some.

    :raises RenderError: when the report cannot be generated (inputs moved away, disk full); the
        previous page is then unchanged.
    :raises StoreDatabaseError: when the database fails.
    """
    result = store.result(comparison.result_name)
    try:
        # The trend as it was when the result arrived: its series' builds before it.
        sets = load_sets(comparison.current_dirs)
        trend = trend_for_sets(store, sets, scenario=comparison.scenario, name=comparison.result_name)
        pages = recorded_pages(comparison.report_dir.parent)
        if pages is not None:
            trend = link_cells(
                trend, scenario=comparison.scenario, pages_dir=pages, from_dir=comparison.report_dir
            )
        outcome: ReportOutcome = generate_report(
            list(comparison.baseline_dirs),
            list(comparison.current_dirs),
            comparison.report_dir,
            thresholds=thresholds_from_record(dict(comparison.thresholds)),
            tester_verdict=None if comparison.verdict is None else tester_verdict(comparison.verdict),
            title=comparison.title,
            overview_href=OVERVIEW_HREF,  # refresh_pages writes the overview beside the report
            trend=trend,
            junit_suite=f"{comparison.scenario or '-'}.{comparison.result_name}",
            build=build_note(sets, None if result is None else result.metadata),
        )
    except ReportingError as err:
        raise RenderError(
            f"Report '{comparison.report_dir}' of comparison {comparison.id} could not be re-rendered "
            f"(the previous page is unchanged): {err}",
        ) from err
    log.info("Re-rendered '%s' (overall %s).", outcome.index_html, outcome.overall)
    return store.update_outcome(
        comparison.id, overall=outcome.overall, counts=outcome.counts, warnings=outcome.warnings
    )


def record_verdict(
    store: ResultStore,
    ref: str,
    decision: ReviewDecision,
    *,
    bug_id: str | None = None,
    comment: str | None = None,
    tester: str | None = None,
) -> ComparisonRecord:
    """Record ``decision`` on comparison ``ref`` (id or result name); re-render its page and the overview.

    ``tester`` defaults to the login name. The verdict is committed first (the database is the
    record); the pages are re-rendered afterwards (:func:`refresh_pages`).

    :raises ResultStoreError: when ``ref`` matches no comparison.
    :raises InvalidRecordError: when bug id, comment or tester is invalid.
    :raises RenderError: when the verdict was stored but a page could not be re-rendered
        (``ovsperf-results render`` retries).
    :raises StoreDatabaseError: when the database fails.
    """
    comparison = store.comparison(ref)
    if tester is None:
        tester = _login_name()
    verdict = store.add_verdict(
        comparison.id, decision=decision, bug_id=bug_id, comment=comment, tester=tester
    )
    log.info(
        "Recorded verdict %s%s on comparison %d ('%s').",
        verdict.decision.value,
        f" (bug {verdict.bug_id})" if verdict.bug_id else "",
        comparison.id,
        comparison.result_name,
    )
    return refresh_pages(store, store.comparison(comparison.id))


def refresh_pages(store: ResultStore, comparison: ComparisonRecord) -> ComparisonRecord:
    """Re-render ``comparison``'s report page, then rewrite the overview page beside it.

    The overview is rewritten even when the report fails (it shows the verdict from the store).

    :raises RenderError: when the report or the overview could not be written; the message names
        each failure, and the previous pages stay unchanged.
    :raises StoreDatabaseError: when the database fails.
    """
    problems: list[str] = []
    try:
        comparison = render_comparison(store, comparison)
    except RenderError as err:
        problems.append(str(err))
    try:
        write_overview(store, comparison.report_dir.parent)
    except OverviewError as err:
        problems.append(str(err))
    if problems:
        raise RenderError(" ".join(problems))
    return comparison


def _login_name() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None
