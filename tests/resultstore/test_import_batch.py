"""``ovsperf-results import`` in batches stores exactly what the one-result-at-a-time path stored.

The reference is the path the import took before its batches (issue 31), one result at a time
(tests/resultstore/onebyone.py). Both import the same deliveries
— new results, a copy of one (same fingerprint), two with the same name in different directories,
bare results directories with and without ``--scenario``, a scenario that is not a safe name, more
results than one batch, read in worker processes — and then the same again (refresh); every
column of every result (but the time it was received) and every sample must be equal.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select

import resultstore.importer as importer
from resultstore.schema import ResultRow, SampleRow
from resultstore.store import ResultStore
from tests.ciflow.helpers import BASELINE, CANDIDATE, deliver
from tests.resultstore.onebyone import import_one_by_one


def _contents(url: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Return every results row (without ``received_at``) and every sample, by result name."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            columns = [c for c in ResultRow.__table__.columns if c.name != "received_at"]
            results = [
                tuple(json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v for v in row)
                for row in connection.execute(select(*columns).order_by(ResultRow.id))
            ]
            samples = sorted(
                connection.execute(
                    select(
                        ResultRow.name,
                        SampleRow.test,
                        SampleRow.deployment,
                        SampleRow.frame_size,
                        SampleRow.traffic,
                        SampleRow.metric,
                        SampleRow.repeat,
                        SampleRow.value,
                    ).join(ResultRow, SampleRow.result_id == ResultRow.id)
                ).all()
            )
    finally:
        engine.dispose()
    return results, [tuple(s) for s in samples]


def _lab(root: Path) -> tuple[Path, Path]:
    """Write the deliveries (module docstring) under ``root``; return (deliveries, bare results)."""
    inbox = root / "in"
    for number in range(40):  # more than one batch, read in worker processes
        deliver(inbox, f"night{number:02}", CANDIDATE if number % 2 else BASELINE, metadata={"n": number})
    deliver(inbox, "copy-of-night00", BASELINE, metadata={"n": 0})  # night00's files: its fingerprint
    deliver(inbox / "a", "twin", CANDIDATE)
    deliver(inbox / "b", "twin", BASELINE)  # the same name, other files: the name with its digest
    deliver(inbox, "unsafe", CANDIDATE, scenario="no spaces allowed")
    bare = root / "bare"
    for source in (CANDIDATE, BASELINE):
        results = next(source.glob("results_*"))
        shutil.copytree(results, bare / source.name / results.name)
    return inbox, bare


@pytest.mark.timeout(600)
def test_batched_import_stores_what_the_one_by_one_path_stored(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importer, "BATCH_RESULTS", 7)
    inbox, bare = _lab(tmp_path)
    (tmp_path / "old").mkdir()
    old_url = f"sqlite:///{tmp_path / 'old' / 'results.sqlite'}"
    outcomes = []
    for _ in range(2):  # the second time: every result refreshed
        with ResultStore.open(old_url) as store:
            old = import_one_by_one(store, [inbox / "a", inbox / "b", inbox], None)
            old_bare = import_one_by_one(store, [bare], "OVS_DPDK1q")
        with ResultStore.open(store_url) as store:
            new = importer.import_dirs(store, [inbox / "a", inbox / "b", inbox], workers=2)
            new_bare = importer.import_dirs(store, [bare], scenario="OVS_DPDK1q", workers=2)
        for before, after in ((old, new), (old_bare, new_bare)):
            assert after.recorded == before.recorded
            assert after.refreshed == before.refreshed
            assert after.skipped == before.skipped
            assert after.failed == before.failed
            assert after.samples == before.samples
        outcomes.append(new)
    first, again = outcomes
    nights = [f"night{n:02}" for n in range(1, 40)]
    assert first.recorded == ["twin", "twin-6f6b5f93", "copy-of-night00", *nights]
    assert first.refreshed == ["twin", "twin-6f6b5f93", "copy-of-night00"]  # inbox holds a/ and b/; night00
    assert [root.name for root, _ in first.skipped] == ["unsafe"]  # its metadata is refused
    assert again.recorded == [] and len(again.refreshed) == 45
    old_rows, old_samples = _contents(old_url)
    new_rows, new_samples = _contents(store_url)
    assert len(new_rows) == 44 and len(new_samples) == 44 * 14
    assert new_rows == old_rows
    assert new_samples == old_samples


def test_a_scenario_the_store_refuses_is_skipped_as_one_by_one_skipped_it(tmp_path: Path) -> None:
    """A bare results directory imported with an unsafe --scenario: refused by the store, as before."""
    _, bare = _lab(tmp_path)
    url = f"sqlite:///{tmp_path / 'new.sqlite'}"
    old_url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    with ResultStore.open(old_url) as store:
        old = import_one_by_one(store, [bare], "no spaces")
    with ResultStore.open(url) as store:
        new = importer.import_dirs(store, [bare], scenario="no spaces", workers=1)
    assert new.skipped == old.skipped
    assert [why for _, why in new.skipped] == [
        "field 'Scenario': Scenario 'no spaces' is not a safe name: use 1-200 characters from "
        "A-Z a-z 0-9 . _ + @ = , - starting with a letter or digit, without '..'."
    ] * 2
    assert new.recorded == [] and new.samples == 0
    assert _contents(url) == _contents(old_url) == ([], [])


def test_a_result_the_store_fails_on_fails_alone_and_its_batch_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unexpected error for one item fails its batch: the batch is written again result by result."""
    for name in ("a1", "a2", "bad", "a3"):
        deliver(tmp_path / "in", name, CANDIDATE, metadata={"name": name})
    real = ResultStore.record_imports

    def record_imports(self: ResultStore, items: Any) -> Any:
        if any(item.name == "bad" for item in items):
            raise TypeError("cannot store this one")
        return real(self, items)

    monkeypatch.setattr(ResultStore, "record_imports", record_imports)
    with ResultStore.open(f"sqlite:///{tmp_path / 'store.sqlite'}") as store:
        outcome = importer.import_dirs(store, [tmp_path / "in"], workers=1)
        assert outcome.recorded == ["a1", "a2", "a3"]
        assert outcome.failed == [
            (
                tmp_path / "in" / "bad",
                "unexpected error while importing it (TypeError: cannot store this one)",
            )
        ]
        assert store.result("bad") is None and store.sample_count() == 3 * 14
