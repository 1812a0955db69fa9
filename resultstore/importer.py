"""``ovsperf-results import``: backfill the store's history from existing VSperf results directories.

A directory given is one of the layouts ``generate-report`` reads: a VSperf ``results_<ts>``
directory, a directory holding several, a delivery (a directory with ``ovsperf-metadata.json``
and its results directories, as ``process-ci-results`` keeps them in ``ci_processed``), or a
directory of deliveries. Each delivery, or each bare results directory, is one result (one build).

Idempotent: a result is identified by the fingerprint of its files
(:func:`ovsperf_common.resultdir.fingerprint`); importing it again, or a result
``process-ci-results`` already recorded, refreshes its samples and records nothing twice.

Each result is contained as ``process-ci-results`` contains a delivery: one that cannot be
imported (a name that is not UTF-8, an unexpected error) is reported in
:attr:`ImportOutcome.failed` and the import goes on with the others; only a database failure
stops it.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ovsperf_common.metadata import METADATA_FILE, MetadataError
from ovsperf_common.metadata import read as read_metadata
from ovsperf_common.resultdir import fingerprint
from reporting.errors import ReportingError
from reporting.load import find_results_dirs, load_results_dir
from resultstore.errors import StoreDatabaseError
from resultstore.samples import build_info, samples_from_sets
from resultstore.store import ResultImport, ResultStore

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9._+@=,-]+")


@dataclass
class ImportOutcome:
    """What an import did."""

    recorded: list[str] = field(default_factory=list)
    """Names of results recorded for the first time."""
    refreshed: list[str] = field(default_factory=list)
    """Names of results already in the store (same fingerprint) whose samples were refreshed."""
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    """(directory, why) of directories that hold no result."""
    failed: list[tuple[Path, str]] = field(default_factory=list)
    """(directory, why) of results that could not be imported (the others were)."""
    samples: int = 0
    """Samples written."""


@dataclass(frozen=True)
class _Unit:
    root: Path
    """The delivery directory, or the bare results directory."""
    results_dirs: tuple[Path, ...]
    scenario: str | None
    metadata: dict[str, object]


def _result_name(root: Path) -> str:
    name = _UNSAFE.sub("_", root.name).strip("._-")[:150] or "result"
    name = name.replace("..", "_")
    return name if name[0].isalnum() else f"r{name}"


def _delivery_root(results_dir: Path, top: Path) -> Path | None:
    """Return the nearest directory holding ``ovsperf-metadata.json``: ``results_dir`` or an ancestor.

    The search stops at the parent of ``top`` (the path given to import): a results directory
    given on its own still finds the delivery around it (``ci_processed/<name>/results_<ts>``).
    """
    stop = top.parent
    for candidate in (results_dir, *results_dir.parents):
        if (candidate / METADATA_FILE).is_file():
            return candidate
        if candidate == stop:
            break
    return None


def _units(path: Path) -> tuple[list[_Unit], list[tuple[Path, str]]]:
    """Return the results found at ``path`` and (directory, why) for what was skipped.

    Every VSperf results directory found at any depth ``generate-report`` searches belongs to the
    delivery whose ``ovsperf-metadata.json`` is nearest above it (or inside it: the Beaker task
    and ``ovsperf-lab`` write it into the results directory), and takes that delivery's scenario;
    only a results directory without one anywhere above is a bare result without a scenario.
    """
    skipped: list[tuple[Path, str]] = []
    found, _ = find_results_dirs(path)
    by_root: dict[Path, list[Path]] = {}
    bare: list[Path] = []
    for results_dir in found:
        root = _delivery_root(results_dir, path)
        if root is None:
            bare.append(results_dir)
        else:
            by_root.setdefault(root, []).append(results_dir)
    if (path / METADATA_FILE).is_file():
        marked = [path]
    else:
        marked = sorted(p.parent for p in path.glob(f"*/{METADATA_FILE}") if p.parent.is_dir())
    for root in marked:
        if root not in by_root:
            by_root[root] = []
    units: list[_Unit] = []
    for root, results_dirs in sorted(by_root.items()):
        try:
            meta = read_metadata(root)
        except MetadataError as err:
            skipped.append((root, f"unreadable {METADATA_FILE}: {err}"))
            continue
        if not results_dirs:
            skipped.append((root, "no VSperf results directory in this delivery"))
            continue
        units.append(_Unit(root, tuple(results_dirs), meta.scenario, meta.to_json()))
    units.extend(_Unit(d, (d,), None, {}) for d in bare)
    if not units and not skipped:
        skipped.append((path, "no VSperf results directory (results_<timestamp>) here"))
    return units, skipped


def _non_utf8_name(root: Path) -> str | None:
    """Return why ``root`` or a name below it is not UTF-8 (the store keeps paths as text), or None."""
    for path in (root, *root.rglob("*")):
        try:
            str(path).encode("utf-8")
        except UnicodeEncodeError:
            shown = os.fsencode(path).decode("ascii", "backslashreplace")
            return f"the name '{shown}' is not UTF-8; rename it (the store keeps paths as UTF-8 text)."
    return None


BATCH_RESULTS = 256
"""Results written in one transaction (:meth:`ResultStore.record_imports`) [1]."""
PARALLEL_FROM = 32
"""Results from which they are read in worker processes, one per CPU [1]."""


@dataclass(frozen=True)
class _Read:
    """What :func:`_read` made of one result: the store's item, or why there is none."""

    item: ResultImport | None
    """What the store records of it; None when it failed or was skipped."""
    failed: str | None = None
    """Why it could not be imported (a name that is not UTF-8, an unexpected error)."""
    skipped: str | None = None
    """Why it holds no result (unreadable, no valid number)."""


def import_dirs(
    store: ResultStore,
    paths: Sequence[Path],
    *,
    scenario: str | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    workers: int | None = None,
) -> ImportOutcome:
    """Record every result found under ``paths`` with its samples.

    The results are read (parsed, fingerprinted) in ``workers`` processes (default: one per CPU;
    from :data:`PARALLEL_FROM` results on) and written :data:`BATCH_RESULTS` at a time, each batch
    in one transaction of a few statements (:meth:`ResultStore.record_imports`). A result that
    cannot be imported goes to :attr:`ImportOutcome.failed` and the import goes on.

    :param scenario: scenario for results whose metadata names none (bare VSperf directories).
    :param progress: called as ``progress(done, total, name)`` after each result imported (as its
        batch is committed).
    :param workers: processes reading the results (default: one per CPU; 1: read in this one).

    :raises ReportingError: when a given path does not exist or cannot be listed.
    :raises StoreDatabaseError: when the database fails (the batches committed before stay).
    """
    outcome = ImportOutcome()
    units: list[_Unit] = []
    for path in paths:
        found, skipped = _units(Path(path))
        units.extend(found)
        outcome.skipped.extend(skipped)
    workers = workers or os.cpu_count() or 1
    pool = ProcessPoolExecutor(max_workers=workers) if workers > 1 and len(units) >= PARALLEL_FROM else None
    try:
        read_one = functools.partial(_read, scenario=scenario)
        reads = pool.map(read_one, units, chunksize=16) if pool else map(read_one, units)
        batch: list[tuple[int, _Unit, ResultImport]] = []
        for done, (unit, read) in enumerate(zip(units, reads, strict=True), start=1):
            if read.failed is not None:
                outcome.failed.append((unit.root, read.failed))
            elif read.skipped is not None:
                outcome.skipped.append((unit.root, read.skipped))
            elif read.item is not None:
                batch.append((done, unit, read.item))
            if len(batch) == BATCH_RESULTS or (done == len(units) and batch):
                _record(store, batch, len(units), outcome, progress)
                batch = []
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return outcome


def _read(unit: _Unit, scenario: str | None) -> _Read:
    """Read one result for the store: its samples, build information and fingerprint.

    :param scenario: the scenario of a result whose metadata names none.
    """
    try:
        problem = _non_utf8_name(unit.root)
        if problem is not None:
            return _Read(None, failed=problem)
        try:
            sets = [load_results_dir(d) for d in unit.results_dirs]
        except ReportingError as err:
            return _Read(None, skipped=str(err))
        samples = samples_from_sets(sets)
        if not samples:
            return _Read(None, skipped="no valid throughput, latency or loss number in it")
        digest = fingerprint(unit.root)
        name = _result_name(unit.root)
        item = ResultImport(
            name=name,
            alternative=f"{name[:140]}-{digest[:8]}",
            scenario=unit.scenario or scenario,
            location=unit.root.resolve(),
            vsperf_dirs=tuple(d.resolve() for d in unit.results_dirs),
            metadata=unit.metadata,
            fingerprint=digest,
            build=build_info(sets, unit.metadata),
            samples=tuple(samples),
        )
    except Exception as err:  # the per-result boundary, as process-ci-results': never stop the import
        log.debug("Importing '%s' failed.", unit.root, exc_info=True)
        return _Read(None, failed=f"unexpected error while importing it ({type(err).__name__}: {err})")
    return _Read(item)


def _record(
    store: ResultStore,
    batch: Sequence[tuple[int, _Unit, ResultImport]],
    total: int,
    outcome: ImportOutcome,
    progress: Callable[[int, int, str], None] | None,
) -> None:
    """Write one batch; a result the store fails on (not the database) is failed alone, the others kept.

    :raises StoreDatabaseError: when the database fails.
    """
    try:
        done = store.record_imports([item for _, _, item in batch])
    except StoreDatabaseError:
        raise  # the database itself failed: nothing more can be recorded
    except Exception as err:  # the per-result boundary: the batch again, one result at a time
        if len(batch) > 1:
            for one in batch:
                _record(store, [one], total, outcome, progress)
            return
        log.debug("Importing '%s' failed.", batch[0][1].root, exc_info=True)
        outcome.failed.append(
            (batch[0][1].root, f"unexpected error while importing it ({type(err).__name__}: {err})")
        )
        return
    for (index, unit, item), result in zip(batch, done, strict=True):
        if result.name is None:
            outcome.skipped.append((unit.root, result.refused or ""))
            continue
        if result.refreshed:
            outcome.refreshed.append(result.name)
        else:
            if item.scenario is None:
                log.warning(
                    "'%s' holds no %s and no --scenario was given: recorded without a scenario "
                    "('-' on the trend pages).",
                    unit.root,
                    METADATA_FILE,
                )
            outcome.recorded.append(result.name)
        outcome.samples += len(item.samples)
        if progress is not None:
            progress(index, total, result.name)
