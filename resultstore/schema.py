"""Declare the database tables of the results store (SQLAlchemy 2.0 ORM; SQLite and PostgreSQL).

Only :mod:`resultstore.store` uses these classes; callers get the frozen records of
:mod:`resultstore.model`. Column types are portable: ``JSON`` maps to SQLite text and PostgreSQL
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
    ForeignKey,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

SCHEMA_VERSION = 1
"""Version of the table layout below; stored in ``ovsperf_schema`` and checked on open."""


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
