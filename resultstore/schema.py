"""Declare the database tables of the results store (SQLAlchemy 2.0 ORM; SQLite and PostgreSQL).

Only :mod:`resultstore.store` and :mod:`resultstore.history` use these classes; callers get frozen
records. The tables are created and upgraded by the Alembic migrations in
``resultstore/migrations`` (:mod:`resultstore.migrate`), never by ``create_all``: a migration
must accompany every change here. Column types are portable: ``JSON`` maps to SQLite text and PostgreSQL
``json``; times are stored as UTC and always returned timezone-aware (:class:`UTCDateTime`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    CheckConstraint,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

SCHEMA_VERSION = 4
"""Version of the table layout below; stored in ``ovsperf_schema`` so that an ovsperf older than
the store refuses it (the Alembic revision says the same to this one). 1: results, comparisons,
verdicts; 2: build versions on results, per-cell samples, tester marks on trend changes; 3: the
traffic (mix, flows) of a series cell beside its frame size; 4: culprit builds (bisections)
linked to a series' regression."""


class UTCDateTime(TypeDecorator[datetime]):
    """Store aware datetimes as UTC and return them aware (SQLite itself drops the zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Convert an aware datetime to UTC; reject naive ones (their zone is unknown)."""
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"Naive datetime {value!r} given to the results store; use UTC.")
        converted = value.astimezone(UTC)
        return converted.replace(tzinfo=None) if dialect.name == "sqlite" else converted

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Return the stored time as an aware UTC datetime."""
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    """Declarative base of the store's tables."""


class SchemaInfoRow(Base):
    """One row holding the schema version of this database."""

    __tablename__ = "ovsperf_schema"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[int] = mapped_column(Integer)


class ResultRow(Base):
    """A result directory taken from ``ci_in`` (see :class:`resultstore.model.ResultRecord`)."""

    __tablename__ = "results"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    scenario: Mapped[str | None] = mapped_column(String(255), index=True)
    location: Mapped[str] = mapped_column(Text)
    vsperf_dirs: Mapped[list[str]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16))
    failure_reason: Mapped[str | None] = mapped_column(Text)
    metadata_json: Mapped[dict[str, Any]] = mapped_column(JSON)
    fingerprint: Mapped[str | None] = mapped_column(String(64))
    received_at: Mapped[datetime] = mapped_column(UTCDateTime())
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    """When the measurement started (build time order of the trend series); schema 2."""
    ovs_version: Mapped[str | None] = mapped_column(String(255), nullable=True)
    dpdk_version: Mapped[str | None] = mapped_column(String(255), nullable=True)
    qemu_version: Mapped[str | None] = mapped_column(String(255), nullable=True)
    hosts: Mapped[str | None] = mapped_column(String(1024), nullable=True)
    """Host names, comma-separated; schema 2."""

    __table_args__ = (CheckConstraint("status IN ('processed', 'failed')", name="ck_results_status"),)


class ComparisonRow(Base):
    """A report comparing one result with a baseline (see :class:`resultstore.model.ComparisonRecord`)."""

    __tablename__ = "comparisons"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    result_id: Mapped[int] = mapped_column(ForeignKey("results.id", ondelete="CASCADE"), index=True)
    baseline_result_id: Mapped[int | None] = mapped_column(ForeignKey("results.id", ondelete="SET NULL"))
    baseline_dirs: Mapped[list[str]] = mapped_column(JSON)
    current_dirs: Mapped[list[str]] = mapped_column(JSON)
    report_dir: Mapped[str] = mapped_column(Text)
    title: Mapped[str | None] = mapped_column(Text)
    overall: Mapped[str] = mapped_column(String(32))
    counts: Mapped[dict[str, int]] = mapped_column(JSON)
    warnings: Mapped[list[str]] = mapped_column(JSON)
    thresholds: Mapped[dict[str, float]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (UniqueConstraint("result_id", "report_dir", name="uq_comparisons_result_report"),)


class VerdictRow(Base):
    """A tester verdict on a comparison; history is kept, the highest id is the current one."""

    __tablename__ = "verdicts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    comparison_id: Mapped[int] = mapped_column(ForeignKey("comparisons.id", ondelete="CASCADE"), index=True)
    decision: Mapped[str] = mapped_column(String(8))
    bug_id: Mapped[str | None] = mapped_column(String(255))
    comment: Mapped[str | None] = mapped_column(Text)
    tester: Mapped[str | None] = mapped_column(String(255))
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (CheckConstraint("decision IN ('PASS', 'FAIL')", name="ck_verdicts_decision"),)


class CellColumns:
    """The columns naming a cell of a series: test, deployment, frame size [B], traffic, metric."""

    test: Mapped[str] = mapped_column(String(128))
    deployment: Mapped[str] = mapped_column(String(64))
    frame_size: Mapped[int] = mapped_column(Integer)
    traffic: Mapped[str] = mapped_column(String(255), default="", server_default="")
    """Besides the frame size (schema 3): ``''`` for one size at one flow, else the mix's name and/or
    ``flows=N`` (:attr:`ovsperf_common.framemix.TrafficKey.store_label`); a mix has frame size 0."""
    metric: Mapped[str] = mapped_column(String(64))


class SampleRow(CellColumns, Base):
    """One measured number of a result: test × frame size × metric × repeat (schema 2).

    See :class:`resultstore.samples.Sample` for the metric names and units.
    """

    __tablename__ = "samples"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    result_id: Mapped[int] = mapped_column(ForeignKey("results.id", ondelete="CASCADE"), index=True)
    repeat: Mapped[int] = mapped_column(Integer)
    value: Mapped[float] = mapped_column(Float)

    __table_args__ = (
        UniqueConstraint(
            "result_id",
            "test",
            "deployment",
            "frame_size",
            "traffic",
            "metric",
            "repeat",
            name="uq_samples_cell",
        ),
        Index("ix_samples_series", "test", "deployment", "frame_size", "traffic", "metric"),
    )


class TrendMarkRow(CellColumns, Base):
    """A tester's mark on a trend change of one series at one result: expected, with bug or comment."""

    __tablename__ = "trend_marks"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    result_id: Mapped[int] = mapped_column(ForeignKey("results.id", ondelete="CASCADE"), index=True)
    bug_id: Mapped[str | None] = mapped_column(String(255))
    comment: Mapped[str | None] = mapped_column(Text)
    tester: Mapped[str | None] = mapped_column(String(255))
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime())


class CulpritRow(CellColumns, Base):
    """A series' regression at one result linked to the bisection that found its first bad build (schema 4).

    See :class:`resultstore.bisectlink.CulpritRecord`; the newest row per result and cell counts.
    """

    __tablename__ = "culprits"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    result_id: Mapped[int] = mapped_column(ForeignKey("results.id", ondelete="CASCADE"), index=True)
    culprit_build: Mapped[str] = mapped_column(String(255))
    """The first bad build's label (a Koji NVR, or the source as the bisection was given it)."""
    bisect_page: Mapped[str] = mapped_column(Text)
    """The bisection's ``index.html`` (absolute path)."""
    bisect_json: Mapped[str] = mapped_column(Text)
    """Its ``bisect.json`` (absolute path)."""
    evidence: Mapped[dict[str, Any]] = mapped_column(JSON)
    """Last good build, message, metric, frame size, flows, regression sought and every step
    (:meth:`resultstore.bisectlink.BisectCulprit.evidence`)."""
    tester: Mapped[str | None] = mapped_column(String(255))
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime())


class TrendCacheRow(CellColumns, Base):
    """The last change-point analysis of one series, valid while its digest matches (schema 2).

    ``digest`` covers the series' builds and values and the analysis rules
    (:func:`resultstore.trend.series_digest`); a new build changes it and the series is analysed
    again. Only a cache: deleting the rows loses nothing.
    """

    __tablename__ = "trend_cache"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    scenario: Mapped[str] = mapped_column(String(255))
    digest: Mapped[str] = mapped_column(String(64))
    analysis: Mapped[dict[str, Any]] = mapped_column(JSON)
    analysed_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (
        UniqueConstraint(
            "scenario", "test", "deployment", "frame_size", "traffic", "metric", name="uq_trend_cache_series"
        ),
    )
