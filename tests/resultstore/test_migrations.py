"""Alembic migrations: a store of schema 1 (as ovsperf created it before migrations) is upgraded in
place on SQLite and on a real PostgreSQL, keeping every row; a newer store is refused."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, inspect, text

from resultstore.bisectlink import BisectCulprit, BisectStep
from resultstore.errors import SchemaVersionError
from resultstore.migrate import MIGRATIONS_DIR, PRE_MIGRATION_REVISION, head_revision
from resultstore.model import ResultStatus, ReviewDecision, SeriesKey
from resultstore.samples import BuildInfo, Sample
from resultstore.schema import SCHEMA_VERSION
from resultstore.store import ResultStore

FIXTURES = Path(__file__).with_name("fixtures")
T0 = "2026-01-05 03:00:00"


def _create_v1(url: str) -> None:
    """Create the version-1 tables with the DDL ovsperf used (fixtures), and fill them."""
    dialect = "sqlite" if url.startswith("sqlite") else "postgresql"
    lines = (FIXTURES / f"schema_v1_{dialect}.sql").read_text(encoding="utf-8").splitlines()
    ddl = "\n".join(line for line in lines if not line.startswith("--"))
    statements = [s.strip() for s in ddl.split(";") if s.strip()]
    assert len(statements) == 7  # 4 tables, 3 indexes
    engine = create_engine(url)
    with engine.begin() as conn:
        for statement in statements:
            conn.execute(text(statement))
        conn.execute(text("INSERT INTO ovsperf_schema (id, version) VALUES (1, 1)"))
        for i, name in enumerate(("night-1", "night-2"), start=1):
            conn.execute(
                text(
                    "INSERT INTO results (id, name, scenario, location, vsperf_dirs, status, failure_reason,"
                    " metadata_json, fingerprint, received_at) VALUES (:id, :name, 'OVS_DPDK1q', :loc, :dirs,"
                    " 'processed', NULL, :meta, :fp, :at)"
                ),
                {
                    "id": i,
                    "name": name,
                    "loc": f"/srv/ci_processed/{name}",
                    "dirs": json.dumps([f"/srv/ci_processed/{name}/results_x"]),
                    "meta": json.dumps({"scenario": "OVS_DPDK1q"}),
                    "fp": f"{i:064x}",
                    "at": T0,
                },
            )
        conn.execute(
            text(
                "INSERT INTO comparisons (id, result_id, baseline_result_id, baseline_dirs, current_dirs,"
                " report_dir, title, overall, counts, warnings, thresholds, created_at, updated_at) VALUES"
                " (1, 2, 1, '[]', '[]', '/srv/reports/night-2', 't', 'REGRESSION', :counts, '[]', '{}',"
                " :at, :at)"
            ),
            {"counts": json.dumps({"REGRESSION": 1}), "at": T0},
        )
        conn.execute(
            text(
                "INSERT INTO verdicts (id, comparison_id, decision, bug_id, comment, tester, recorded_at)"
                " VALUES (1, 1, 'FAIL', 'RHBZ#1', 'slow', 'qe', :at)"
            ),
            {"at": T0},
        )
    engine.dispose()


def test_schema_1_store_is_upgraded_in_place_keeping_every_row(store_url: str) -> None:
    _create_v1(store_url)
    with ResultStore.open(store_url) as store:
        assert store.result("night-1") is not None and store.result("night-2") is not None
        comparison = store.comparison("night-2")
        assert comparison.overall == "REGRESSION" and comparison.baseline_result_name == "night-1"
        assert comparison.verdict is not None and comparison.verdict.decision is ReviewDecision.FAIL
        assert comparison.verdict.bug_id == "RHBZ#1"
        # The new tables work on the upgraded store.
        build = BuildInfo(
            datetime(2026, 1, 5, 3, tzinfo=UTC), "3.1.0-1.el9", "22.11.1-1.el9", None, ("dut1",)
        )
        stored = store.record_samples(
            "night-2", build, [Sample("phy2phy_tput", "p2p", 64, "ndr_fps", 0, 7e6)]
        )
        assert stored == 1
        series = store.series()
        assert [s.key for s in series] == [SeriesKey("OVS_DPDK1q", "phy2phy_tput", "p2p", 64, "ndr_fps")]
        assert series[0].points[0].ovs_version == "3.1.0-1.el9"
        assert series[0].points[0].tester_decision == "FAIL"
    engine = create_engine(store_url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == head_revision()
        assert conn.execute(text("SELECT version FROM ovsperf_schema")).scalar() == SCHEMA_VERSION == 4
        tables = set(inspect(conn).get_table_names())
    engine.dispose()
    assert {
        "samples",
        "trend_marks",
        "trend_cache",
        "culprits",
        "results",
        "comparisons",
        "verdicts",
    } <= tables
    # Opening again changes nothing and loses nothing.
    with ResultStore.open(store_url) as store:
        assert store.sample_count() == 1
        assert len(store.comparisons()) == 1


def test_new_store_gets_every_migration(store_url: str) -> None:
    with ResultStore.open(store_url) as store:
        store.record_result(
            name="a", scenario="S", location=Path("/x"), vsperf_dirs=[], status=ResultStatus.PROCESSED
        )
    engine = create_engine(store_url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == head_revision()
        assert conn.execute(text("SELECT version FROM ovsperf_schema")).scalar() == SCHEMA_VERSION == 4
    engine.dispose()


def test_store_of_a_newer_revision_is_refused(store_url: str) -> None:
    with ResultStore.open(store_url):
        pass
    engine = create_engine(store_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0099'"))
    engine.dispose()
    with pytest.raises(SchemaVersionError, match="revision '0099' is newer"):
        ResultStore.open(store_url)


def test_tables_of_unknown_layout_are_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'odd.sqlite'}"
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE ovsperf_schema (id INTEGER PRIMARY KEY, version INTEGER)"))
        conn.execute(text("CREATE TABLE results (id INTEGER PRIMARY KEY)"))
        conn.execute(text("INSERT INTO ovsperf_schema VALUES (1, 7)"))
    engine.dispose()
    with pytest.raises(SchemaVersionError, match="no migration record and schema version 7"):
        ResultStore.open(url)


def test_schema_2_samples_keep_their_series_and_mixes_and_flows_get_their_own(store_url: str) -> None:
    """A store of revision 0002 with samples and a cached analysis upgrades to 0003: the old rows
    get traffic '' (what they measured), and a mix and a flow count then file separate series."""
    _create_v1(store_url)
    engine = create_engine(store_url)
    with engine.begin() as conn:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS_DIR))
        config.attributes["connection"] = conn
        command.stamp(config, PRE_MIGRATION_REVISION)
        command.upgrade(config, "0002")
        conn.execute(
            text(
                "INSERT INTO samples (result_id, test, deployment, frame_size, metric, repeat, value)"
                " VALUES (1, 'phy2phy_tput', 'p2p', 64, 'ndr_fps', 0, 7000000.0)"
            )
        )
        conn.execute(
            text(
                "INSERT INTO trend_cache (scenario, test, deployment, frame_size, metric, digest, analysis,"
                " analysed_at) VALUES ('OVS_DPDK1q', 'phy2phy_tput', 'p2p', 64, 'ndr_fps', 'd', '{}', :at)"
            ),
            {"at": T0},
        )
    engine.dispose()
    with ResultStore.open(store_url) as store:
        [old] = store.series()
        assert old.key == SeriesKey("OVS_DPDK1q", "phy2phy_tput", "p2p", 64, "ndr_fps", "")
        assert old.points[0].values == (7e6,)
        assert list(store.cached_analyses()) == [old.key]
        build = BuildInfo(datetime(2026, 1, 5, 3, tzinfo=UTC), None, None, None, ())
        samples = [
            Sample("phy2phy_tput", "p2p", 64, "ndr_fps", 0, 6e6),
            Sample("phy2phy_tput", "p2p", 64, "ndr_fps", 0, 5e6, "flows=1000"),
            Sample("phy2phy_tput", "p2p", 0, "ndr_fps", 0, 3e6, "imix"),
            Sample("phy2phy_tput", "p2p", 0, "ndr_fps", 0, 2e6, "imix flows=1000"),
        ]
        assert store.record_samples("night-2", build, samples) == 4
        series = {s.key.traffic_key.text(): s for s in store.series()}
        assert sorted(series) == ["64 B", "64 B, 1000 flows", "imix", "imix, 1000 flows"]
        assert [p.values for p in series["64 B"].points] == [(7e6,), (6e6,)]
        assert [p.values for p in series["imix, 1000 flows"].points] == [(2e6,)]
        assert series["imix"].key.label == "OVS_DPDK1q / phy2phy_tput / imix / ndr_fps"


def test_schema_3_store_gets_the_culprits_table_keeping_its_rows(store_url: str, tmp_path: Path) -> None:
    """A store of revision 0003 with a sample and a trend mark upgrades to 0004: both kept, and a
    regression can then be linked to its culprit build."""
    _create_v1(store_url)
    engine = create_engine(store_url)
    with engine.begin() as conn:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS_DIR))
        config.attributes["connection"] = conn
        command.stamp(config, PRE_MIGRATION_REVISION)
        command.upgrade(config, "0003")
        assert "culprits" not in inspect(conn).get_table_names()
        conn.execute(
            text(
                "INSERT INTO samples (result_id, test, deployment, frame_size, traffic, metric, repeat,"
                " value) VALUES (2, 'phy2phy_tput', 'p2p', 64, '', 'ndr_fps', 0, 6300000.0)"
            )
        )
        conn.execute(
            text(
                "INSERT INTO trend_marks (result_id, test, deployment, frame_size, traffic, metric, bug_id,"
                " recorded_at) VALUES (2, 'phy2phy_tput', 'p2p', 64, '', 'ndr_fps', 'FDP-1', :at)"
            ),
            {"at": T0},
        )
    engine.dispose()
    page = tmp_path / "bisect" / "index.html"
    bisection = BisectCulprit(
        "openvswitch3.3-3.3.0-62.el9fdp", "openvswitch3.3-3.3.0-61.el9fdp", "found", "mrr", 64, 1, 9.5,
        page.with_name("bisect.json"), page,
        (BisectStep(1, "openvswitch3.3-3.3.0-62.el9fdp", "bad", "REGRESSION", -9.5, -10.1, -8.9, 1.2, 5),),
    )  # fmt: skip
    with ResultStore.open(store_url) as store:
        [series] = store.series()
        assert series.points[0].values == (6.3e6,) and [k[0] for k in store.trend_marks()] == ["night-2"]
        assert store.culprits() == {}
        link = store.add_culprit("night-2", series.key, bisection, tester="qe")
        [(ident, stored)] = store.culprits().items()
        assert ident == ("night-2", "phy2phy_tput", "p2p", 64, "", "ndr_fps")
        assert stored == link and stored.bisection == bisection and stored.key == series.key
    engine = create_engine(store_url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0004"
        assert conn.execute(text("SELECT version FROM ovsperf_schema")).scalar() == 4
    engine.dispose()
