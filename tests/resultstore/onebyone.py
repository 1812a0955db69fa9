"""``ovsperf-results import`` as it was before its batches (issue 31): one result at a time.

Per result ``result_by_fingerprint``, ``result``, ``record_result`` and ``record_samples``, each its
own transaction, with the store's public methods. The reference of tests/resultstore/test_import_batch.py
(the batches must store the same) and the peer of benchmarks/bench_trend.py's import.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import resultstore.importer as importer
from ovsperf_common.resultdir import fingerprint
from reporting.errors import ReportingError
from reporting.load import load_results_dir
from resultstore.errors import ResultStoreError
from resultstore.model import ResultStatus
from resultstore.samples import build_info, samples_from_sets
from resultstore.store import ResultStore


def import_one_by_one(store: ResultStore, paths: list[Path], scenario: str | None) -> importer.ImportOutcome:
    """Import as ``ovsperf-results import`` did before its batches: each result in its own transactions."""
    outcome = importer.ImportOutcome()
    units: list[Any] = []
    for path in paths:
        found, skipped = importer._units(path)
        units.extend(found)
        outcome.skipped.extend(skipped)
    for unit in units:
        problem = importer._non_utf8_name(unit.root)
        if problem is not None:
            outcome.failed.append((unit.root, problem))
            continue
        try:
            sets = [load_results_dir(d) for d in unit.results_dirs]
        except ReportingError as err:
            outcome.skipped.append((unit.root, str(err)))
            continue
        samples = samples_from_sets(sets)
        if not samples:
            outcome.skipped.append((unit.root, "no valid throughput, latency or loss number in it"))
            continue
        digest = fingerprint(unit.root)
        existing = store.result_by_fingerprint(digest)
        if existing is not None:
            name = existing.name
            outcome.refreshed.append(name)
        else:
            name = importer._result_name(unit.root)
            if store.result(name) is not None:
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
            except ResultStoreError as err:
                outcome.skipped.append((unit.root, str(err)))
                continue
            outcome.recorded.append(name)
        outcome.samples += store.record_samples(name, build_info(sets, unit.metadata), samples)
    return outcome
