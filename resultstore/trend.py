"""Trend verdicts from the results store's history: every series analysed, each build judged.

A series is one (scenario, test, deployment, frame size, metric) over builds in build order
(:meth:`resultstore.store.ResultStore.series`); :func:`reporting.changepoints.analyse` splits it
into groups with FD.io CSIT's ``jumpavg``. A build is judged with the builds up to it only (what
was known when it arrived), by these rules (docs/trending.md):

* a worse group starts at the build → REGRESSION (size of the step, confidence);
* a better group starts at it → PROGRESSION;
* otherwise, when the group the build belongs to started with a regression, that regression is
  still **open** → REGRESSION "since <build>", until performance recovers (a better group) or a
  tester marks it expected (``ovsperf-results expect``) → EXPECTED, never re-alarmed;
* a build far off its group (of a short jumpavg group, outside the group's band) → OUTLIER;
  anything else NORMAL; the first build NO_HISTORY.

Only throughput metrics (NDR, PDR, MRR) are judged; latency and loss series are stored and
drawn, not judged (on a shared machine their tails are the scheduler's).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ovsperf_common.metadata import MetadataError
from ovsperf_common.metadata import read as read_metadata
from reporting.api import TrendKey
from reporting.changepoints import (
    RULES,
    ChangePointVerdict,
    SeriesAnalysis,
    analyse,
    analyse_many,
    extend,
    extension_cut,
)
from reporting.load import find_results_dirs, load_results_dir
from reporting.metrics import THROUGHPUT_METRICS, higher_is_better, metric
from reporting.model import TrendCell, TrendVerdict
from reporting.resultmodel import ResultSet
from resultstore.model import Series, SeriesKey, SeriesPoint, TrendMark
from resultstore.samples import build_info, samples_from_sets
from resultstore.store import ResultStore

log = logging.getLogger(__name__)

PARALLEL_FROM = 16
"""Series count from which the analysis runs in worker processes (one per CPU)."""

MarkIndex = Mapping[tuple[str, str, str, int, str, str], TrendMark]
"""(result name, test, deployment, frame size, metric) → the tester's mark (ResultStore.trend_marks)."""


@dataclass(frozen=True)
class SeriesTrend:
    """A series, its analysis over every build, and the verdict of its newest build."""

    series: Series
    analysis: SeriesAnalysis
    last: TrendCell
    """The newest build's trend verdict (as :func:`judge` gives it)."""
    marks: tuple[TrendMark | None, ...]
    """Per build, the tester's mark on a change starting there (None when none)."""


def _amount(value: float, name: str) -> str:
    """Return ``value`` of metric ``name`` as shown: ``7.0000 Mpps`` (``Metric.text``)."""
    return metric(name).text(value)


def _values(points: Sequence[SeriesPoint]) -> list[tuple[float, ...]]:
    return [p.values for p in points]


def _mark(marks: MarkIndex, point: SeriesPoint, key: SeriesKey) -> TrendMark | None:
    return marks.get((point.result_name, key.test, key.deployment, key.frame_size, key.traffic, key.metric))


def _mark_text(mark: TrendMark) -> str:
    parts = [p for p in (mark.bug_id, mark.comment) if p]
    who = f" by {mark.tester}" if mark.tester else ""
    return f"marked expected{who}: {'; '.join(parts)}"


def judge(series: Series, index: int, marks: MarkIndex, analysis: SeriesAnalysis | None = None) -> TrendCell:
    """Return the trend verdict of build ``index`` of ``series`` from the builds up to it.

    :param analysis: the analysis of ``series.points[: index + 1]`` when the caller has it.
    :raises IndexError: when ``index`` is outside the series.
    """
    points = series.points
    key = series.key
    if index == 0:
        return TrendCell(TrendVerdict.NO_HISTORY, 0, "the first build of this series: no trend possible yet")
    if analysis is None:
        analysis = analyse(_values(points[: index + 1]), higher_is_better=higher_is_better(key.metric))
    group = analysis.group_of(index)
    change = next((c for c in reversed(analysis.changes) if c.index <= index), None)
    verdict = analysis.verdicts[index]
    if verdict is ChangePointVerdict.OUTLIER:
        return TrendCell(
            TrendVerdict.OUTLIER,
            index,
            f"a build far off its group (group average {_amount(group.average, key.metric)}, "
            f"stdev {_amount(group.stdev, key.metric)})",
        )
    if change is None:
        return TrendCell(
            TrendVerdict.NORMAL,
            index,
            f"no change point in {index + 1} builds (average {_amount(group.average, key.metric)}, "
            f"stdev {_amount(group.stdev, key.metric)})",
        )
    start = points[change.index]
    mark = _mark(marks, start, key)
    change_group = next(g for g in analysis.groups if g.start == change.index)
    position = analysis.groups.index(change_group)
    previous = analysis.groups[position - 1] if position > 0 else change_group
    described = (
        f"{change.step_percent:+.2f} % (group average {_amount(change_group.average, key.metric)} "
        f"vs {_amount(previous.average, key.metric)}, "
        f"confidence {change.confidence:.3f})"
    )
    build = start.build

    def cell(verdict: TrendVerdict, reason: str) -> TrendCell:
        return TrendCell(
            verdict,
            index,
            reason,
            step_percent=change.step_percent,
            confidence=change.confidence,
            since=start.result_name,
            since_build=build,
        )

    if change.verdict is ChangePointVerdict.PROGRESSION:
        if change.index == index:
            return cell(TrendVerdict.PROGRESSION, f"a better group starts here: {described}")
        return TrendCell(
            TrendVerdict.NORMAL,
            index,
            f"in the group since build {build} (after a progression of {described})",
        )
    if mark is not None:
        return cell(TrendVerdict.EXPECTED, f"regression since build {build}, {described}; {_mark_text(mark)}")
    if change.index == index:
        return cell(TrendVerdict.REGRESSION, f"a worse group starts here: {described}")
    return cell(
        TrendVerdict.REGRESSION,
        f"regression since build {build}, {described}, still open "
        f"(fix it, or mark it expected with 'ovsperf-results expect {start.result_name}')",
    )


_Job = tuple[list[tuple[float, ...]], bool, SeriesAnalysis | None]
"""(values per build, higher is better, the cached analysis of its first builds or None)."""


def _analyse_batch(jobs: Sequence[_Job]) -> list[SeriesAnalysis]:
    """Analyse the jobs in one process, all together (:func:`analyse_many`).

    A cold series is analysed whole; an extended one its tail (:func:`extension_cut`), which
    :func:`extend` joins to its cached analysis.
    """
    cuts = [0 if earlier is None else extension_cut(earlier, values) for values, _, earlier in jobs]
    parts = analyse_many(
        [values[max(cut, 0) :] for (values, _, _), cut in zip(jobs, cuts, strict=True)],
        [job[1] for job in jobs],
    )
    return [
        part if earlier is None else extend(earlier, values, higher_is_better=better, tail=part)
        for (values, better, earlier), cut, part in zip(jobs, cuts, parts, strict=True)
    ]


def _chunks(jobs: Sequence[_Job], count: int) -> list[list[int]]:
    """Split job indexes into ``count`` chunks of like lengths: sorted by builds, dealt in turn.

    Each chunk then holds series of the same lengths, which :func:`analyse_many` classifies as one
    program (its interpreter steps shared), and the chunks cost about the same.
    """
    ordered = sorted(range(len(jobs)), key=lambda i: len(jobs[i][0]))
    return [chunk for chunk in (ordered[c::count] for c in range(count)) if chunk]


def series_digest(series: Series, builds: int | None = None) -> str:
    """Return the SHA-256 (hex) of a series' first ``builds`` builds (default all), values and rules."""
    digest = hashlib.sha256(RULES.encode())
    digest.update(series.key.metric.encode())
    for point in series.points[:builds]:
        digest.update(json.dumps([point.result_name, list(point.values)]).encode())
    return digest.hexdigest()


def analyse_series(
    series: Sequence[Series],
    marks: MarkIndex,
    *,
    cache: Mapping[SeriesKey, tuple[str, Mapping[str, Any]]] | None = None,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[SeriesTrend], dict[SeriesKey, tuple[str, dict[str, Any]]]]:
    """Analyse every series over all its builds and judge its newest build.

    A series whose digest (:func:`series_digest`) matches its entry in ``cache`` is not analysed
    again; one that only gained builds since is extended (:func:`reporting.changepoints.extend`:
    its last builds analysed again, the cost bounded). The others run in ``workers`` processes
    (default: one per CPU) from :data:`PARALLEL_FROM` series on, one chunk of series of like
    lengths per process, classified together (:func:`reporting.changepoints.analyse_many`);
    ``progress(done, total)`` is called as chunks finish.

    :returns: the trends (series without builds are left out) and the new cache entries
        (key → digest, analysis document) for the series analysed now.
    """
    cache = cache or {}
    digests = [series_digest(s) for s in series]
    analyses: dict[int, SeriesAnalysis] = {}
    todo: list[int] = []
    earlier: dict[int, SeriesAnalysis] = {}
    for i, (s, digest) in enumerate(zip(series, digests, strict=True)):
        cached = cache.get(s.key)
        if cached is None:
            todo.append(i)
            continue
        try:
            analysis = SeriesAnalysis.from_json(cached[1])
        except (KeyError, TypeError, ValueError):
            log.debug("Cached analysis of %s unreadable; analysing again.", s.key.label)
            todo.append(i)
            continue
        done = len(analysis.verdicts)
        if cached[0] == digest:
            analyses[i] = analysis
        elif done < len(s.points) and cached[0] == series_digest(s, done):
            earlier[i] = analysis  # the same builds and more: only the tail is analysed again
            todo.append(i)
        else:
            todo.append(i)
    log.debug("%d series cached, %d to analyse (%d extended).", len(analyses), len(todo), len(earlier))
    jobs = [(_values(series[i].points), higher_is_better(series[i].key.metric), earlier.get(i)) for i in todo]
    workers = workers or os.cpu_count() or 1
    parallel = len(jobs) >= PARALLEL_FROM and workers > 1
    chunks = _chunks(jobs, workers if parallel else 1)
    batches = [[jobs[i] for i in chunk] for chunk in chunks]
    by_job: dict[int, SeriesAnalysis] = {}
    if parallel:
        pool = ProcessPoolExecutor(max_workers=workers)
        try:
            results = _reported(pool.map(_analyse_batch, batches), len(jobs), progress)
            for chunk, analysed in zip(chunks, results, strict=True):
                by_job.update(zip(chunk, analysed, strict=True))
        finally:
            pool.shutdown(cancel_futures=True)
    else:
        for chunk, analysed in zip(
            chunks, _reported(map(_analyse_batch, batches), len(jobs), progress), strict=True
        ):
            by_job.update(zip(chunk, analysed, strict=True))
    fresh = [by_job[i] for i in range(len(jobs))]
    new_cache: dict[SeriesKey, tuple[str, dict[str, Any]]] = {}
    for i, analysis in zip(todo, fresh, strict=True):
        analyses[i] = analysis
        new_cache[series[i].key] = (digests[i], analysis.to_json())
    out = []
    for i, s in enumerate(series):
        if not s.points:
            continue
        last = judge(s, len(s.points) - 1, marks, analyses[i])
        out.append(SeriesTrend(s, analyses[i], last, tuple(_mark(marks, p, s.key) for p in s.points)))
    return out, new_cache


def analyse_store_series(
    store: ResultStore, series: Sequence[Series], *, progress: Callable[[int, int], None] | None = None
) -> list[SeriesTrend]:
    """Analyse ``series`` with the store's cached analyses and marks; cache what was analysed now.

    :raises StoreDatabaseError: when the database fails.
    """
    trends, new_cache = analyse_series(
        series, store.trend_marks(), cache=store.cached_analyses(), progress=progress
    )
    store.cache_analyses(new_cache)
    return trends


def _reported(
    batches: Iterable[list[SeriesAnalysis]], total: int, progress: Callable[[int, int], None] | None
) -> Iterable[list[SeriesAnalysis]]:
    done = 0
    for batch in batches:
        done += len(batch)
        if progress is not None:
            progress(done, total)
        yield batch


def _pdr_goals(sets: Sequence[ResultSet]) -> dict[tuple[str, str, int, str], float]:
    """Return (test, deployment, frame size, traffic) → the non-zero loss goal its PDR rows have [%]."""
    goals = {}
    for result_set in sets:
        for run in result_set.runs:
            for row in run.rows:
                if row.loss_goal_percent:
                    key = (run.test, run.deployment, row.frame_size_bytes, row.traffic.store_label)
                    goals[key] = row.loss_goal_percent
    return goals


def _trend_key(key: SeriesKey, goals: Mapping[tuple[str, str, int, str], float]) -> TrendKey | None:
    if key.metric in ("ndr_fps", "mrr_fps"):
        return (key.test, key.deployment, key.frame_size, key.traffic, 0.0)
    if key.metric == "pdr_fps":
        goal = goals.get((key.test, key.deployment, key.frame_size, key.traffic))
        return None if goal is None else (key.test, key.deployment, key.frame_size, key.traffic, goal)
    return None


def load_sets(dirs: Sequence[Path]) -> list[ResultSet]:
    """Load every VSperf results directory at or under ``dirs`` (the reader generate-report uses).

    :raises ReportingError: when a directory cannot be read.
    """
    sets: list[ResultSet] = []
    for directory in dirs:
        found, _ = find_results_dirs(Path(directory))
        sets.extend(load_results_dir(d) for d in found)
    return sets


def trend_for_sets(
    store: ResultStore,
    sets: Sequence[ResultSet],
    *,
    scenario: str | None,
    name: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[TrendKey, TrendCell]:
    """Return trend verdicts for loaded results judged as the newest build of their series.

    Each throughput cell of ``sets`` is appended (its values as one build's repeats) to the stored
    series of ``scenario`` (None: the series recorded without a scenario), at its place in build
    order: its history is the stored builds measured before it (its start time from ``metadata``
    or the results, :func:`resultstore.samples.build_info`; unknown: after all of them). A stored
    build named ``name`` (the same result: a pass repeated after a crash, a report re-rendered
    after a tester verdict) and anything after it are not its history: it is judged as when it
    arrived.

    :raises StoreDatabaseError: when the database fails.
    """
    key_scenario = scenario or "-"
    info = build_info(sets, metadata)
    built = info.started_at
    samples = [s for s in samples_from_sets(sets) if s.metric in THROUGHPUT_METRICS]
    stored = {s.key: s for s in store.series(scenario=scenario, metrics=THROUGHPUT_METRICS)}
    marks = store.trend_marks()
    cache = store.cached_analyses()
    goals = _pdr_goals(sets)
    grouped: dict[SeriesKey, list[float]] = {}
    for sample in samples:
        key = SeriesKey(
            key_scenario, sample.test, sample.deployment, sample.frame_size, sample.metric, sample.traffic
        )
        grouped.setdefault(key, []).append(sample.value)
    out: dict[TrendKey, TrendCell] = {}
    for key, values in grouped.items():
        trend_key = _trend_key(key, goals)
        if trend_key is None:
            continue
        history = stored.get(key)
        points = list(history.points) if history is not None else []
        position = next((i for i, p in enumerate(points) if p.result_name == name), None)
        if position is not None:
            points = points[:position]
        if built is not None:
            points = [p for p in points if p.built_at < built]
        current = SeriesPoint(
            result_name=name or "(this report)",
            built_at=built or datetime.now(UTC),
            values=tuple(values),
            ovs_version=info.ovs_version,
            dpdk_version=info.dpdk_version,
            qemu_version=info.qemu_version,
            report=None,
            tester_decision=None,
            tester_bug=None,
            build_nvrs=info.nvrs,
        )
        series = Series(key, (*points, current))
        out[trend_key] = judge(series, len(points), marks, _analysis_with(series, cache.get(key)))
    log.info("Trend verdicts for %d cell(s) from the store's %s series.", len(out), key_scenario)
    return out


def _analysis_with(series: Series, cached: tuple[str, Mapping[str, Any]] | None) -> SeriesAnalysis | None:
    """Return the analysis of ``series`` extended from a cached analysis of its earlier builds, if any.

    None when the cache holds nothing for exactly those builds (then :func:`judge` analyses them).
    """
    if cached is None or len(series.points) < 2:
        return None
    try:
        earlier = SeriesAnalysis.from_json(cached[1])
    except (KeyError, TypeError, ValueError):
        return None
    done = len(earlier.verdicts)
    if done >= len(series.points) or cached[0] != series_digest(series, done):
        return None
    return extend(earlier, _values(series.points), higher_is_better=higher_is_better(series.key.metric))


def trend_for_dirs(
    store: ResultStore, dirs: Sequence[Path], *, scenario: str | None
) -> dict[TrendKey, TrendCell]:
    """Return trend verdicts for results directories judged as the newest build (``generate-report --db``).

    The directories need not be in the store. ``scenario`` defaults to the ``scenario`` of their
    ``ovsperf-metadata.json``, else the series recorded without a scenario.

    :raises ReportingError: when a directory cannot be read.
    :raises StoreDatabaseError: when the database fails.
    """
    if scenario is None:
        for directory in dirs:
            try:
                scenario = read_metadata(Path(directory)).scenario
                break
            except (MetadataError, OSError):
                continue
    return trend_for_sets(store, load_sets(dirs), scenario=scenario)
