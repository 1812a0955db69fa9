"""Write the results overview page ``<reports>/index.html``: every comparison and its verdicts.

This is the page testers open every morning. It lists the newest comparisons whose report
directories lie directly in one reports directory, links each report and the trend pages, and
counts those still awaiting a verdict. It is derived from the store and rewritten atomically after every
``process-ci-results`` pass and every ``ovsperf-results verdict``.
"""

from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

# mypy cannot follow setuptools' package-dir mapping of templates/ in an editable install.
import jinja2
from ovsperf_templates import environment  # type: ignore[import-not-found, unused-ignore]

from ovsperf_common.atomicio import atomic_write_text
from resultstore.errors import OverviewError
from resultstore.model import ComparisonRecord
from resultstore.store import ResultStore
from resultstore.trendlinks import INDEX_NAME, recorded_pages, relative_href

log = logging.getLogger(__name__)

OVERVIEW_NAME = "index.html"
"""File name of the overview page inside the reports directory."""

OVERVIEW_HREF = f"../{OVERVIEW_NAME}"
"""Link from a report page (``<reports>/<name>/index.html``) back to the overview."""

MAX_ROWS = 1000
"""The page lists at most this many comparisons, newest first [1]."""


@dataclass(frozen=True)
class _Row:
    id: int
    result: str
    href: str
    scenario: str | None
    overall: str
    counts: str
    baseline: str
    created_at: str
    verdict: str | None
    bug_id: str | None
    tester: str | None
    comment: str | None


def _dir_label(path: Path) -> str:
    """Name a VSperf directory for people: ``<parent>/results_<ts>`` (the parent says which build)."""
    return f"{path.parent.name}/{path.name}" if path.name.startswith("results_") else path.name


def _row(record: ComparisonRecord, reports_dir: Path) -> _Row:
    verdict = record.verdict
    baseline = record.baseline_result_name or ", ".join(_dir_label(p) for p in record.baseline_dirs)
    return _Row(
        id=record.id,
        result=record.result_name,
        href=os.path.relpath(record.report_dir / "index.html", reports_dir),
        scenario=record.scenario,
        overall=record.overall,
        counts=", ".join(f"{name} {count}" for name, count in sorted(record.counts.items()) if count),
        baseline=baseline,
        created_at=record.created_at.strftime("%Y-%m-%d %H:%M"),
        verdict=None if verdict is None else verdict.decision.value,
        bug_id=None if verdict is None else verdict.bug_id,
        tester=None if verdict is None else verdict.tester,
        comment=None if verdict is None else verdict.comment,
    )


@functools.cache
def _overview_template() -> jinja2.Template:
    """Return the compiled overview template, built once per process (shared, immutable)."""
    template: jinja2.Template = environment("ciflow", autoescape=True).get_template("overview.html.j2")
    return template


def write_overview(store: ResultStore, reports_dir: Path) -> Path:
    """Rewrite ``<reports_dir>/index.html`` from the store; return its path.

    The page links the trend pages recorded for ``reports_dir``
    (:func:`resultstore.trendlinks.recorded_pages`), when there are some.

    :raises OverviewError: when the page cannot be written (the previous page is unchanged).
    :raises StoreDatabaseError: when the database fails.
    """
    reports_dir = Path(reports_dir)
    records = [c for c in store.comparisons(report_prefix=reports_dir) if c.report_dir.parent == reports_dir]
    undecided = [c for c in records if c.verdict is None]
    pages = recorded_pages(reports_dir)
    page = _overview_template().render(
        trend_href=None if pages is None else relative_href(pages / INDEX_NAME, reports_dir),
        rows=[_row(c, reports_dir) for c in records[:MAX_ROWS]],
        total=len(records),
        truncated=len(records) > MAX_ROWS,
        undecided=len(undecided),
        undecided_regressions=sum(1 for c in undecided if c.overall == "REGRESSION"),
        generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )
    path = reports_dir / OVERVIEW_NAME
    try:
        atomic_write_text(path, page)
    except OSError as err:
        raise OverviewError(
            f"Cannot write the overview '{path}': {err.strerror or err}; the previous page is unchanged."
        ) from err
    log.info("Overview '%s': %d comparison(s), %d awaiting a verdict.", path, len(records), len(undecided))
    return path
