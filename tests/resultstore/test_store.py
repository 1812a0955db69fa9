"""The results store API, run identically on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from ovsperf_common.errors import FieldError
from resultstore.connect import database_url, masked_url
from resultstore.errors import (
    InvalidRecordError,
    ResultStoreError,
    SchemaVersionError,
    StoreDatabaseError,
)
from resultstore.model import ResultStatus, ReviewDecision
from resultstore.store import ResultStore

T0 = datetime(2026, 11, 20, 3, 0, tzinfo=UTC)


def add_result(store: ResultStore, name: str, scenario: str = "OVS_DPDK2q", hours: int = 0) -> None:
    store.record_result(
        name=name,
        scenario=scenario,
        location=Path("/srv/ci_processed") / name,
        vsperf_dirs=[Path("/srv/ci_processed") / name / "results_x"],
        status=ResultStatus.PROCESSED,
        metadata={"ovs_version": "3.1.0", "hosts": ["dut1", "tg1"]},
        received_at=T0 + timedelta(hours=hours),
    )


def add_comparison(store: ResultStore, name: str, overall: str = "PASS", baseline: str | None = None) -> int:
    return store.record_comparison(
        result_name=name,
        baseline_result_name=baseline,
        baseline_dirs=[Path("/srv/baselines/b1")],
        current_dirs=[Path("/srv/ci_processed") / name / "results_x"],
        report_dir=Path("/srv/reports") / name,
        title=f"{name} vs b1",
        overall=overall,
        counts={"PASS": 13, "REGRESSION": 1} if overall == "REGRESSION" else {"PASS": 14},
        warnings=["'/x/result_0.csv' row 3: zero throughput"],
        thresholds={"regression_percent": 5.0, "alpha": 0.05},
    ).id


def test_results_round_trip_and_update_in_place(store_url: str) -> None:
    with ResultStore.open(store_url) as store:
        add_result(store, "night-1")
        first = store.result("night-1")
        assert first is not None
        assert first.scenario == "OVS_DPDK2q"
        assert first.vsperf_dirs == (Path("/srv/ci_processed/night-1/results_x"),)
        assert first.metadata == {"ovs_version": "3.1.0", "hosts": ["dut1", "tg1"]}
        assert first.received_at == T0 and first.received_at.tzinfo is not None
        store.record_result(
            name="night-1",
            scenario=None,
            location=Path("/srv/ci_failed/night-1"),
            vsperf_dirs=[],
            status=ResultStatus.FAILED,
            failure_reason="no CSV",
        )
        again = store.result("night-1")
        assert again is not None
        assert (again.id, again.status, again.failure_reason) == (first.id, ResultStatus.FAILED, "no CSV")
        assert store.result("night-2") is None


def test_comparison_upsert_keeps_id_and_verdicts(store_url: str) -> None:
    with ResultStore.open(store_url) as store:
        add_result(store, "night-1")
        cid = add_comparison(store, "night-1", "REGRESSION")
        store.add_verdict(cid, decision=ReviewDecision.FAIL, bug_id="RHBZ#1", tester="qe")
        assert add_comparison(store, "night-1", "PASS") == cid  # same result + report dir: updated
        record = store.comparison(cid)
        assert record.overall == "PASS"
        assert record.counts == {"PASS": 14}
        assert record.warnings == ("'/x/result_0.csv' row 3: zero throughput",)
        assert record.thresholds == {"regression_percent": 5.0, "alpha": 0.05}
        assert record.verdict is not None and record.verdict.bug_id == "RHBZ#1"
        assert [c.id for c in store.comparisons()] == [cid]


def test_comparison_lookup_by_id_or_result_name(store_url: str) -> None:
    with ResultStore.open(store_url) as store:
        add_result(store, "night-1")
        cid = add_comparison(store, "night-1")
        assert store.comparison(str(cid)).result_name == "night-1"
        assert store.comparison(cid).id == cid
        assert store.comparison("night-1").id == cid
        for ref in ("999", "night-9"):
            with pytest.raises(ResultStoreError, match="ovsperf-results list"):
                store.comparison(ref)
        with pytest.raises(InvalidRecordError, match="No result 'ghost'"):
            add_comparison(store, "ghost")


def test_verdict_history_newest_wins(store_url: str) -> None:
    with ResultStore.open(store_url) as store:
        add_result(store, "night-1")
        cid = add_comparison(store, "night-1", "REGRESSION")
        store.add_verdict(
            cid, decision=ReviewDecision.FAIL, bug_id="RHBZ#7", comment="real drop\nin pvp 64 B"
        )
        store.add_verdict(
            cid, decision=ReviewDecision.PASS, comment="lab noise, re-run was fine", tester="ana"
        )
        history = store.verdict_history(cid)
        assert [v.decision for v in history] == [ReviewDecision.FAIL, ReviewDecision.PASS]
        assert history[0].comment == "real drop\nin pvp 64 B"
        current = store.comparison(cid).verdict
        assert current is not None
        assert (current.decision, current.tester, current.bug_id) == (ReviewDecision.PASS, "ana", None)
        assert current.recorded_at.tzinfo is not None
        with pytest.raises(ResultStoreError):
            store.add_verdict(cid + 100, decision=ReviewDecision.PASS)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("bug_id", "RHBZ#1\nRHBZ#2", "control characters"),
        ("bug_id", "x" * 256, "at most 255"),
        ("tester", "a\tb", "control characters"),
        ("comment", "y" * 10_001, "at most 10000"),
    ],
)
def test_verdict_fields_are_validated(store_url: str, field: str, value: str, message: str) -> None:
    with ResultStore.open(store_url) as store:
        add_result(store, "night-1")
        cid = add_comparison(store, "night-1")
        with pytest.raises(InvalidRecordError, match=message):
            store.add_verdict(cid, decision=ReviewDecision.FAIL, **{field: value})
        assert store.verdict_history(cid) == []


def test_latest_passed_result_follows_newest_verdicts(store_url: str) -> None:
    with ResultStore.open(store_url) as store:
        for hours, name in enumerate(["n1", "n2", "n3"]):
            add_result(store, name, hours=hours)
        add_result(store, "other", scenario="OVS_DPDK4q", hours=9)
        c1, c2, c3 = (add_comparison(store, n) for n in ("n1", "n2", "n3"))
        c_other = add_comparison(store, "other")
        assert store.latest_passed_result("OVS_DPDK2q") is None
        store.add_verdict(c1, decision=ReviewDecision.PASS)
        store.add_verdict(c_other, decision=ReviewDecision.PASS)
        store.add_verdict(c3, decision=ReviewDecision.FAIL, bug_id="RHBZ#3")
        store.add_verdict(c2, decision=ReviewDecision.PASS)
        found = store.latest_passed_result("OVS_DPDK2q")
        assert found is not None and found.name == "n2"
        store.add_verdict(
            c2, decision=ReviewDecision.FAIL, comment="changed my mind"
        )  # newest verdict counts
        found = store.latest_passed_result("OVS_DPDK2q")
        assert found is not None and found.name == "n1"
        assert store.latest_passed_result("OVS_DPDK2q", exclude_name="n1") is None
        store.add_verdict(c3, decision=ReviewDecision.PASS)
        found = store.latest_passed_result("OVS_DPDK2q")
        assert found is not None and found.name == "n3"


def test_comparisons_filters(store_url: str) -> None:
    with ResultStore.open(store_url) as store:
        add_result(store, "a", "OVS_DPDK2q")
        add_result(store, "b", "OVS_DPDK4q")
        add_result(store, "c", "OVS_DPDK2q")
        ca, _cb, cc = (add_comparison(store, n) for n in "abc")
        store.add_verdict(ca, decision=ReviewDecision.PASS)
        assert [c.result_name for c in store.comparisons()] == ["c", "b", "a"]
        assert [c.result_name for c in store.comparisons(scenario="OVS_DPDK2q")] == ["c", "a"]
        assert [c.result_name for c in store.comparisons(undecided_only=True)] == ["c", "b"]
        assert [c.id for c in store.comparisons(limit=1)] == [cc]


def test_times_are_stored_as_utc(store_url: str) -> None:
    with ResultStore.open(store_url) as store:
        add_result(store, "n1")
        cid = add_comparison(store, "n1")
        prague = timezone(timedelta(hours=1))
        verdict = store.add_verdict(
            cid, decision=ReviewDecision.PASS, recorded_at=datetime(2026, 11, 21, 9, 30, tzinfo=prague)
        )
        stored = store.verdict_history(cid)[0].recorded_at
        assert stored == verdict.recorded_at == datetime(2026, 11, 21, 8, 30, tzinfo=UTC)
        assert stored.utcoffset() == timedelta(0)


@pytest.mark.parametrize("name", ["../x", ".hidden", "a/b", "", "x" * 201, "a..b"])
def test_unsafe_result_names_are_refused(store_url: str, name: str) -> None:
    with ResultStore.open(store_url) as store, pytest.raises(InvalidRecordError, match="not a safe name"):
        add_result(store, name)


def test_reopen_keeps_data_and_newer_schema_is_refused(store_url: str) -> None:
    with ResultStore.open(store_url) as store:
        add_result(store, "n1")
    with ResultStore.open(store_url) as store:
        assert store.result("n1") is not None
    engine = create_engine(store_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE ovsperf_schema SET version = 99"))
    engine.dispose()
    with pytest.raises(SchemaVersionError, match="schema version 99 is newer"):
        ResultStore.open(store_url)


def test_database_url_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OVSPERF_RESULTS_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert database_url(None) == f"sqlite:///{tmp_path / 'xdg' / 'ovsperf' / 'results.sqlite'}"
    monkeypatch.setenv("OVSPERF_RESULTS_DB", "postgresql+psycopg://u@h/db")
    assert database_url(None) == "postgresql+psycopg://u@h/db"
    monkeypatch.chdir(tmp_path)
    assert database_url("rel.sqlite") == f"sqlite:///{tmp_path / 'rel.sqlite'}"
    assert masked_url("postgresql+psycopg://u:secret@h/db") == "postgresql+psycopg://u:***@h/db"


def test_unreachable_server_error_masks_password(tmp_path: Path) -> None:
    url = f"postgresql+psycopg://ovsperf:s3cret@/ovsperf?host={tmp_path}&connect_timeout=2"
    with pytest.raises(StoreDatabaseError) as err:
        ResultStore.open(url)
    assert "s3cret" not in str(err.value)
    assert "ovsperf:***@" in str(err.value)


def test_bad_url_and_unwritable_sqlite_location(tmp_path: Path) -> None:
    for url in ("nonsense://", "::not a url"):
        with pytest.raises(StoreDatabaseError, match=r"give e\.g\. 'sqlite:////path"):
            ResultStore.open(url)
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StoreDatabaseError, match="cannot create its directory"):
        ResultStore.open(f"sqlite:///{blocker / 'sub' / 'results.sqlite'}")


@pytest.mark.parametrize(
    ("enum_cls", "spec", "expected"),
    [
        (ReviewDecision, " pass ", ReviewDecision.PASS),
        (ReviewDecision, "FAIL", ReviewDecision.FAIL),
        (ResultStatus, "Failed", ResultStatus.FAILED),
    ],
)
def test_from_spec_accepts_any_case(
    enum_cls: type[ReviewDecision] | type[ResultStatus], spec: str, expected: object
) -> None:
    assert enum_cls.from_spec(spec) is expected


@pytest.mark.parametrize("spec", ["maybe", 1, None])
def test_from_spec_lists_valid_values(spec: object) -> None:
    with pytest.raises(FieldError, match="expected one of 'PASS', 'FAIL'"):
        ReviewDecision.from_spec(spec)


def test_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    junk = tmp_path / "results.sqlite"
    junk.write_bytes(b"this is a CSV, not SQLite\n" * 100)
    with pytest.raises(StoreDatabaseError, match="not a database"):
        ResultStore.open(database_url(str(junk)))
    assert junk.read_bytes().startswith(b"this is a CSV")  # left as it was
