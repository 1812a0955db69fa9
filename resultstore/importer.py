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

import logging
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ovsperf_common.metadata import METADATA_FILE, MetadataError
from ovsperf_common.metadata import read as read_metadata
from ovsperf_common.resultdir import fingerprint
from reporting.errors import ReportingError
from reporting.load import find_results_dirs, load_results_dir
from resultstore.errors import ResultStoreError, StoreDatabaseError
from resultstore.model import ResultStatus
from resultstore.samples import build_info, samples_from_sets
from resultstore.store import ResultStore

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


def import_dirs(
    store: ResultStore,
    paths: Sequence[Path],
    *,
    scenario: str | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> ImportOutcome:
    """Record every result found under ``paths`` with its samples.

    A result that cannot be imported goes to :attr:`ImportOutcome.failed` and the import goes on.

    :param scenario: scenario for results whose metadata names none (bare VSperf directories).
    :param progress: called as ``progress(done, total, name)`` after each result imported.

    :raises ReportingError: when a given path does not exist or cannot be listed.
    :raises StoreDatabaseError: when the database fails (what was recorded before stays).
    """
    outcome = ImportOutcome()
    units: list[_Unit] = []
    for path in paths:
        found, skipped = _units(Path(path))
        units.extend(found)
        outcome.skipped.extend(skipped)
    for done, unit in enumerate(units, start=1):
        try:
            name = _import_unit(store, unit, scenario, outcome)
        except StoreDatabaseError:
            raise  # the database itself failed: nothing more can be recorded
        except Exception as err:  # the per-result boundary, as process-ci-results': never stop the import
            log.debug("Importing '%s' failed.", unit.root, exc_info=True)
            reason = f"unexpected error while importing it ({type(err).__name__}: {err})"
            outcome.failed.append((unit.root, reason))
            continue
        if name is not None and progress is not None:
            progress(done, len(units), name)
    return outcome


def _import_unit(store: ResultStore, unit: _Unit, scenario: str | None, outcome: ImportOutcome) -> str | None:
    """Record ``unit`` and its samples in ``store``, noting it in ``outcome``; return its name.

    Returns None when it was skipped (no valid number) or failed (a name that is not UTF-8).

    :raises StoreDatabaseError: when the database fails.
    """
    problem = _non_utf8_name(unit.root)
    if problem is not None:
        outcome.failed.append((unit.root, problem))
        return None
    try:
        sets = [load_results_dir(d) for d in unit.results_dirs]
    except ReportingError as err:
        outcome.skipped.append((unit.root, str(err)))
        return None
    samples = samples_from_sets(sets)
    if not samples:
        outcome.skipped.append((unit.root, "no valid throughput, latency or loss number in it"))
        return None
    digest = fingerprint(unit.root)
    existing = store.result_by_fingerprint(digest)
    if existing is not None:
        name = existing.name
        outcome.refreshed.append(name)
    else:
        name = _result_name(unit.root)
        if unit.scenario is None and scenario is None:
            log.warning(
                "'%s' holds no %s and no --scenario was given: recorded without a scenario "
                "('-' on the trend pages).",
                unit.root,
                METADATA_FILE,
            )
        other = store.result(name)
        if other is not None:
            name = f"{name[:140]}-{digest[:8]}"
        try:
            store.record_result(
                name=name,
                scenario=unit.scenario or scenario,
                location=unit.root.resolve(),
                vsperf_dirs=[d.resolve() for d in unit.results_dirs],
                status=ResultStatus.PROCESSED,
                metadata=unit.metadata,
                fingerprint=digest,
            )
        except StoreDatabaseError:
            raise
        except ResultStoreError as err:
            outcome.skipped.append((unit.root, str(err)))
            return None
        outcome.recorded.append(name)
    outcome.samples += store.record_samples(name, build_info(sets, unit.metadata), samples)
    return name
