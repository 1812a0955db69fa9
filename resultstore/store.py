"""Read and write the results store: results, comparisons and tester verdicts in one database.

The default is an SQLite file (:func:`resultstore.connect.default_database_path`); a team sharing
one store gives a PostgreSQL URL (``postgresql+psycopg://user@host/db``, psycopg 3). The same code
runs on both through SQLAlchemy 2.0. Every public method runs in its own transaction and returns
frozen records (:mod:`resultstore.model`); database failures become :class:`StoreDatabaseError`
naming the URL with its password masked.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar, cast

from sqlalchemy import Connection, Engine, Table, delete, func, insert, select, text, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from ovsperf_common.metadata import BUILD_KEY, MetadataError, build_record
from resultstore.bisectlink import BisectCulprit, CulpritRecord
from resultstore.connect import masked_url, open_engine
from resultstore.errors import (
    InvalidRecordError,
    ResultStoreError,
    SchemaVersionError,
    StoreDatabaseError,
)
from resultstore.migrate import upgrade
from resultstore.model import (
    ComparisonRecord,
    ResultRecord,
    ResultStatus,
    ReviewDecision,
    Series,
    SeriesKey,
    SeriesPoint,
    TrendMark,
    VerdictRecord,
    check_name,
)
from resultstore.records import comparison_records, result_record, verdict_record
from resultstore.samples import BuildInfo, Sample
from resultstore.schema import (
    SCHEMA_VERSION,
    ComparisonRow,
    CulpritRow,
    ResultRow,
    SampleRow,
    SchemaInfoRow,
    TrendCacheRow,
    TrendMarkRow,
    VerdictRow,
)

log = logging.getLogger(__name__)

_T = TypeVar("_T")

_MAX_SHORT_TEXT = 255
_MAX_COMMENT = 10_000
_MAX_HOSTS_TEXT = 1024
"""Length of the ``results.hosts`` column (schema 2)."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CONTROL_BUT_LINES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
"""Control characters a multi-line comment may not hold (newline and tab are allowed)."""


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _unknown_comparison(ref: str) -> ResultStoreError:
    """Return the error for a comparison id or result name ``ref`` that matches nothing."""
    return ResultStoreError(
        f"No comparison '{ref}' in the results store; 'ovsperf-results list' shows the ids."
    )


BUG_ID_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.]{0,31}[#-][0-9]{1,12}$")
"""A bug id as trackers write them: a tracker prefix, ``#`` or ``-``, a number (``RHBZ#2001234``,
``FDP-123``, ``OVS-42``)."""


def _series_columns(key: SeriesKey) -> dict[str, Any]:
    """Return the columns that name series ``key`` in a per-series row (trend marks, culprits)."""
    return {
        "test": key.test,
        "deployment": key.deployment,
        "frame_size": key.frame_size,
        "traffic": key.traffic,
        "metric": key.metric,
    }


def _bug_id(value: str | None) -> str | None:
    """Return the stripped bug id, None when empty.

    :raises InvalidRecordError: when it is not ``PREFIX#NUMBER`` or ``PREFIX-NUMBER`` (:data:`BUG_ID_RE`).
    """
    text = _clean_text(value, "Bug id", _MAX_SHORT_TEXT, single_line=True)
    if text is not None and not BUG_ID_RE.match(text):
        raise InvalidRecordError(
            f"Bug id {text!r} is not PREFIX#NUMBER or PREFIX-NUMBER (e.g. RHBZ#2001234, FDP-123).",
            field="bug",
        )
    return text


def _short(value: str | None, limit: int = _MAX_SHORT_TEXT) -> str | None:
    """Return ``value`` cut to the ``limit`` characters its column holds (versions: 255, hosts: 1024)."""
    return None if value is None else value[:limit]


def _build_columns(build: BuildInfo) -> dict[str, Any]:
    """Return the results columns :meth:`ResultStore.record_samples` sets from ``build``."""
    return {
        "started_at": build.started_at,
        "ovs_version": _short(build.ovs_version),
        "dpdk_version": _short(build.dpdk_version),
        "qemu_version": _short(build.qemu_version),
        "hosts": _short(",".join(build.hosts), _MAX_HOSTS_TEXT) if build.hosts else None,
    }


_SAMPLES = cast(Table, SampleRow.__table__)
"""The samples table, for Core inserts."""
_SAMPLE_COLUMNS = ("result_id", "test", "deployment", "frame_size", "traffic", "metric", "repeat", "value")
"""The columns :meth:`ResultStore.record_imports` writes of a sample (the id is the database's)."""

_IN_LIST = 500
"""Values in one SQL ``IN (…)`` list (SQLite's default limit of bound parameters: 32,766)."""


def _chunked(values: Sequence[_T]) -> Iterator[Sequence[_T]]:
    """Yield ``values`` in slices of at most :data:`_IN_LIST`."""
    for start in range(0, len(values), _IN_LIST):
        yield values[start : start + _IN_LIST]


@dataclass(frozen=True)
class ResultImport:
    """One result for :meth:`ResultStore.record_imports`: what ``ovsperf-results import`` read of it."""

    name: str
    """Name for a new result."""
    alternative: str
    """Name for a new result when ``name`` is taken."""
    scenario: str | None
    """Its scenario, or None."""
    location: Path
    """The delivery, or the bare results directory."""
    vsperf_dirs: tuple[Path, ...]
    """Its VSperf results directories."""
    metadata: Mapping[str, Any]
    """Its ``ovsperf-metadata.json`` as a JSON object (empty without one)."""
    fingerprint: str
    """:func:`ovsperf_common.resultdir.fingerprint` of its files."""
    build: BuildInfo
    """Its build information."""
    samples: tuple[Sample, ...]
    """Its samples."""


@dataclass(frozen=True)
class ImportedResult:
    """What :meth:`ResultStore.record_imports` did with one item."""

    name: str | None
    """The stored result's name; None when it was refused (``refused`` says why)."""
    refreshed: bool
    """True when a result of the same fingerprint was stored already (its samples replaced)."""
    refused: str | None
    """Why the result was not recorded (a name or scenario that is not safe), or None."""


def _clean_text(value: str | None, field: str, limit: int, *, single_line: bool) -> str | None:
    """Strip ``value``; None/empty → None; reject over-long or (single-line) control characters."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if len(text) > limit:
        raise InvalidRecordError(
            f"{field} is {len(text)} characters long; at most {limit} are allowed.", field=field
        )
    if single_line and _CONTROL.search(text):
        raise InvalidRecordError(
            f"{field} {text!r} contains control characters (e.g. a newline); give one line.",
            field=field,
        )
    if not single_line and _CONTROL_BUT_LINES.search(text):
        raise InvalidRecordError(
            f"{field} contains control characters other than newlines and tabs "
            f"({_CONTROL_BUT_LINES.search(text).group()!r}); remove them.",  # type: ignore[union-attr]
            field=field,
        )
    return text


_SCHEMA_LOCK_KEY = 0x6F7673706572  # "ovsper"
"""PostgreSQL advisory lock key held while a process creates or upgrades the store's schema."""


class ResultStore:
    """The results store behind one database URL; open with :meth:`open`, close with :meth:`close`."""

    def __init__(self, engine: Engine, url: str) -> None:
        """Wrap an engine whose schema is already created (use :meth:`open`)."""
        self._engine = engine
        self.url = masked_url(url)
        """The database URL with the password masked."""

    @classmethod
    def open(cls, url: str, *, create_directory: bool = True) -> ResultStore:
        """Connect to ``url``, create or upgrade the tables (:mod:`resultstore.migrate`), check the version.

        An SQLite file's parent directory is created when missing, unless ``create_directory`` is
        false (``ovsperf-results``: a mistyped ``--db`` must not create an empty store).

        :raises StoreDatabaseError: when the URL is invalid, the database cannot be reached, or the
            SQLite directory is missing and may not be created.
        :raises SchemaVersionError: when the database was written by a newer schema.
        """
        engine = open_engine(url, create_directory=create_directory)
        store = cls(engine, url)
        try:
            store._create_schema()
        except BaseException:
            engine.dispose()
            raise
        log.debug("Opened results store %s.", store.url)
        return store

    def close(self) -> None:
        """Release all connections."""
        self._engine.dispose()

    def __enter__(self) -> ResultStore:
        """Return self (use in ``with``; closes on exit)."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the store."""
        self.close()

    @contextlib.contextmanager
    def _session(self) -> Iterator[Session]:
        """Yield a session in a transaction; commit on success; map DB errors to our own."""
        try:
            with Session(self._engine, expire_on_commit=False) as session, session.begin():
                yield session
        except SQLAlchemyError as err:
            detail = str(getattr(err, "orig", None) or err).strip().splitlines()[0]
            raise StoreDatabaseError(f"{type(err).__name__}: {detail}", url=self.url) from err

    def _create_schema(self) -> None:
        """Create or upgrade the tables and check the version, one opening process at a time.

        Several processes may open a new store at once (a cron pass, ``ovsperf-results``, a
        report): the first creates the tables, the others must see either nothing or all of it.
        The whole check-and-upgrade is one transaction that holds the database's write lock from
        its start (:meth:`_schema_transaction`): the others wait for it (SQLite's busy timeout,
        PostgreSQL's advisory lock) and then find the schema complete. Without it, pysqlite ran
        each ``CREATE TABLE`` in its own implicit transaction and a second process could find the
        tables without their version row (one of three first openers failed about 1 time in 4).
        """
        for attempt in (1, 2):
            try:
                with self._schema_transaction() as connection:
                    upgrade(connection, self.url)
                    version = connection.scalar(select(SchemaInfoRow.version).order_by(SchemaInfoRow.id))
                    if version is not None and version > SCHEMA_VERSION:
                        raise SchemaVersionError(
                            f"schema version {version} is newer than this ovsperf's "
                            f"({SCHEMA_VERSION}); upgrade ovsperf.",
                            url=self.url,
                        )
                return
            except StoreDatabaseError as err:
                # PostgreSQL without the advisory lock's effect (e.g. a pooler in transaction mode):
                # the loser of a CREATE TABLE race sees the winner's work on the second attempt.
                if attempt == 2 or isinstance(err, SchemaVersionError):
                    raise
                log.debug("Retrying schema creation after: %s", err)

    @contextlib.contextmanager
    def _schema_transaction(self) -> Iterator[Connection]:
        """Yield a connection in a transaction that holds the database's write lock from its start.

        SQLite: the connection runs in pysqlite's autocommit mode (no implicit ``BEGIN``, no commit
        before DDL) and the transaction is ``BEGIN IMMEDIATE``: the write lock at once, waiting up
        to the busy timeout for another opener, and the DDL inside the transaction.
        PostgreSQL: ``pg_advisory_xact_lock`` (released at commit or rollback).

        :raises StoreDatabaseError: when the database fails (the transaction is rolled back).
        """
        try:
            with self._engine.connect() as connection:
                sqlite = connection.dialect.name == "sqlite"
                if sqlite:
                    connection.execution_options(isolation_level="AUTOCOMMIT")
                with connection.begin():
                    if sqlite:
                        connection.exec_driver_sql("BEGIN IMMEDIATE")
                    elif connection.dialect.name == "postgresql":
                        connection.execute(
                            text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SCHEMA_LOCK_KEY}
                        )
                    yield connection
        except SQLAlchemyError as err:
            detail = str(getattr(err, "orig", None) or err).strip().splitlines()[0]
            raise StoreDatabaseError(f"{type(err).__name__}: {detail}", url=self.url) from err

    # ---- results -------------------------------------------------------------------------

    def record_result(
        self,
        *,
        name: str,
        scenario: str | None,
        location: Path,
        vsperf_dirs: Sequence[Path],
        status: ResultStatus,
        failure_reason: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        received_at: datetime | None = None,
        fingerprint: str | None = None,
    ) -> ResultRecord:
        """Insert the result called ``name``, or update it when it is already stored.

        Updating (not duplicating) makes a pass that crashed after recording safe to repeat.

        :raises InvalidRecordError: when ``name`` or ``scenario`` is not a safe name.
        :raises StoreDatabaseError: when the database fails.
        """
        check_name(name, "Result name")
        if scenario is not None:
            check_name(scenario, "Scenario")
        values: dict[str, Any] = {
            "scenario": scenario,
            "location": str(location),
            "vsperf_dirs": [str(p) for p in vsperf_dirs],
            "status": status.value,
            "failure_reason": failure_reason,
            "metadata_json": dict(metadata or {}),
            "received_at": received_at or _utcnow(),
            "fingerprint": fingerprint,
        }
        for attempt in (1, 2):
            try:
                with self._session() as session:
                    row = session.scalar(select(ResultRow).where(ResultRow.name == name))
                    if row is None:
                        row = ResultRow(name=name, **values)
                        session.add(row)
                    else:
                        for key, value in values.items():
                            setattr(row, key, value)
                    session.flush()
                    return result_record(row)
            except StoreDatabaseError as err:
                if attempt == 2 or not isinstance(err.__cause__, IntegrityError):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def result(self, name: str) -> ResultRecord | None:
        """Return the stored result called ``name``, or None.

        :raises StoreDatabaseError: when the database fails.
        """
        with self._session() as session:
            row = session.scalar(select(ResultRow).where(ResultRow.name == name))
            return None if row is None else result_record(row)

    def latest_passed_result(self, scenario: str, *, exclude_name: str | None = None) -> ResultRecord | None:
        """Return the newest processed result of ``scenario`` whose comparison a tester passed.

        "Passed" means the newest verdict of one of its comparisons is PASS. Newest = latest
        ``received_at``. ``exclude_name`` (the result being processed) is never returned.

        :raises StoreDatabaseError: when the database fails.
        """
        latest = (
            select(VerdictRow.comparison_id, func.max(VerdictRow.id).label("verdict_id"))
            .group_by(VerdictRow.comparison_id)
            .subquery()
        )
        query = (
            select(ResultRow)
            .join(ComparisonRow, ComparisonRow.result_id == ResultRow.id)
            .join(latest, latest.c.comparison_id == ComparisonRow.id)
            .join(VerdictRow, VerdictRow.id == latest.c.verdict_id)
            .where(
                VerdictRow.decision == ReviewDecision.PASS.value,
                ResultRow.scenario == scenario,
                ResultRow.status == ResultStatus.PROCESSED.value,
            )
            .order_by(ResultRow.received_at.desc(), ResultRow.id.desc())
        )
        if exclude_name is not None:
            query = query.where(ResultRow.name != exclude_name)
        with self._session() as session:
            row = session.scalars(query.limit(1)).first()
            return None if row is None else result_record(row)

    # ---- comparisons ---------------------------------------------------------------------

    def record_comparison(
        self,
        *,
        result_name: str,
        baseline_result_name: str | None,
        baseline_dirs: Sequence[Path],
        current_dirs: Sequence[Path],
        report_dir: Path,
        title: str | None,
        overall: str,
        counts: Mapping[str, int],
        warnings: Sequence[str],
        thresholds: Mapping[str, float],
    ) -> ComparisonRecord:
        """Record the report comparing result ``result_name`` with a baseline; return it.

        A comparison is identified by (current result, report directory): recording the same pair
        again updates it (keeping its id and verdicts) instead of adding a duplicate.

        :raises InvalidRecordError: when ``result_name`` or ``baseline_result_name`` is not stored.
        :raises StoreDatabaseError: when the database fails.
        """
        now = _utcnow()
        values: dict[str, Any] = {
            "baseline_dirs": [str(p) for p in baseline_dirs],
            "current_dirs": [str(p) for p in current_dirs],
            "title": title,
            "overall": overall,
            "counts": {str(k): int(v) for k, v in counts.items()},
            "warnings": [str(w) for w in warnings],
            "thresholds": {str(k): float(v) for k, v in thresholds.items()},
            "updated_at": now,
        }
        with self._session() as session:
            result = self._result_row(session, result_name, "result_name")
            baseline_id = None
            if baseline_result_name is not None:
                baseline_id = self._result_row(session, baseline_result_name, "baseline_result_name").id
            row = session.scalar(
                select(ComparisonRow).where(
                    ComparisonRow.result_id == result.id, ComparisonRow.report_dir == str(report_dir)
                )
            )
            if row is None:
                row = ComparisonRow(result_id=result.id, report_dir=str(report_dir), created_at=now, **values)
                session.add(row)
            else:
                for key, value in values.items():
                    setattr(row, key, value)
            row.baseline_result_id = baseline_id
            session.flush()
            return self._comparison_record(session, row)

    def update_outcome(
        self, comparison_id: int, *, overall: str, counts: Mapping[str, int], warnings: Sequence[str]
    ) -> ComparisonRecord:
        """Store the outcome of re-rendering comparison ``comparison_id``.

        :raises ResultStoreError: when there is no such comparison.
        :raises StoreDatabaseError: when the database fails.
        """
        with self._session() as session:
            row = session.get(ComparisonRow, comparison_id)
            if row is None:
                raise _unknown_comparison(str(comparison_id))
            row.overall = overall
            row.counts = {str(k): int(v) for k, v in counts.items()}
            row.warnings = [str(w) for w in warnings]
            row.updated_at = _utcnow()
            session.flush()
            return self._comparison_record(session, row)

    def comparison(self, ref: str | int) -> ComparisonRecord:
        """Return the comparison with id ``ref``, or the newest one of the result named ``ref``.

        :raises ResultStoreError: when nothing matches.
        :raises StoreDatabaseError: when the database fails.
        """
        text = str(ref).strip()
        with self._session() as session:
            row: ComparisonRow | None
            if text.isdigit():
                row = session.get(ComparisonRow, int(text))
            else:
                row = session.scalars(
                    select(ComparisonRow)
                    .join(ResultRow, ComparisonRow.result_id == ResultRow.id)
                    .where(ResultRow.name == text)
                    .order_by(ComparisonRow.id.desc())
                ).first()
            if row is None:
                raise _unknown_comparison(text)
            return self._comparison_record(session, row)

    def comparisons(
        self,
        *,
        scenario: str | None = None,
        result_name: str | None = None,
        report_prefix: Path | None = None,
        undecided_only: bool = False,
        limit: int | None = None,
    ) -> list[ComparisonRecord]:
        """Return comparisons, newest first.

        ``scenario`` keeps that scenario's only; ``result_name`` those of that current result;
        ``report_prefix`` those whose report directory lies under that directory;
        ``undecided_only`` those without a verdict; ``limit`` caps the number returned.

        :raises StoreDatabaseError: when the database fails.
        """
        query = select(ComparisonRow).join(ResultRow, ComparisonRow.result_id == ResultRow.id)
        if scenario is not None:
            query = query.where(ResultRow.scenario == scenario)
        if result_name is not None:
            query = query.where(ResultRow.name == result_name)
        if report_prefix is not None:
            query = query.where(ComparisonRow.report_dir.startswith(f"{report_prefix}/", autoescape=True))
        if undecided_only:
            query = query.where(~ComparisonRow.id.in_(select(VerdictRow.comparison_id)))
        query = query.order_by(ComparisonRow.id.desc())
        if limit is not None:
            query = query.limit(limit)
        with self._session() as session:
            rows = list(session.scalars(query))
            return comparison_records(session, rows)

    # ---- verdicts ------------------------------------------------------------------------

    def add_verdict(
        self,
        comparison_id: int,
        *,
        decision: ReviewDecision,
        bug_id: str | None = None,
        comment: str | None = None,
        tester: str | None = None,
        recorded_at: datetime | None = None,
    ) -> VerdictRecord:
        """Record a tester's decision on comparison ``comparison_id``; earlier ones stay as history.

        :raises ResultStoreError: when there is no such comparison.
        :raises InvalidRecordError: when bug id or tester is longer than 255 characters or not one
            line, or the comment is longer than 10000 characters.
        :raises StoreDatabaseError: when the database fails.
        """
        row = VerdictRow(
            comparison_id=comparison_id,
            decision=decision.value,
            bug_id=_bug_id(bug_id),
            comment=_clean_text(comment, "Comment", _MAX_COMMENT, single_line=False),
            tester=_clean_text(tester, "Tester", _MAX_SHORT_TEXT, single_line=True),
            recorded_at=recorded_at or _utcnow(),
        )
        with self._session() as session:
            if session.get(ComparisonRow, comparison_id) is None:
                raise _unknown_comparison(str(comparison_id))
            session.add(row)
            session.flush()
            return verdict_record(row)

    def verdict_history(self, comparison_id: int) -> list[VerdictRecord]:
        """Return every verdict on comparison ``comparison_id``, oldest first.

        :raises StoreDatabaseError: when the database fails.
        """
        with self._session() as session:
            rows = session.scalars(
                select(VerdictRow).where(VerdictRow.comparison_id == comparison_id).order_by(VerdictRow.id)
            )
            return [verdict_record(row) for row in rows]

    # ---- samples and trends ----------------------------------------------------------------

    def result_by_fingerprint(self, fingerprint: str) -> ResultRecord | None:
        """Return the oldest stored result whose directories have ``fingerprint``, or None.

        :raises StoreDatabaseError: when the database fails.
        """
        with self._session() as session:
            row = session.scalars(
                select(ResultRow).where(ResultRow.fingerprint == fingerprint).order_by(ResultRow.id)
            ).first()
            return None if row is None else result_record(row)

    def record_samples(self, result_name: str, build: BuildInfo, samples: Sequence[Sample]) -> int:
        """Store the samples and build information of result ``result_name``, replacing earlier ones.

        Replacing (not adding) makes recording the same result again harmless.

        :returns: the number of samples stored.
        :raises InvalidRecordError: when no result is called ``result_name``.
        :raises StoreDatabaseError: when the database fails.
        """
        with self._session() as session:
            result = self._result_row(session, result_name, "result_name")
            for column, value in _build_columns(build).items():
                setattr(result, column, value)
            session.execute(delete(SampleRow).where(SampleRow.result_id == result.id))
            if samples:  # one executemany, not an ORM object per sample (import of history: 71,540)
                session.execute(
                    insert(SampleRow),
                    [
                        {
                            "result_id": result.id,
                            "test": s.test,
                            "deployment": s.deployment,
                            "frame_size": s.frame_size,
                            "traffic": s.traffic,
                            "metric": s.metric,
                            "repeat": s.repeat,
                            "value": s.value,
                        }
                        for s in samples
                    ],
                )
            return len(samples)

    def record_imports(self, items: Sequence[ResultImport]) -> list[ImportedResult]:
        """Record results with their samples as ``ovsperf-results import`` does, all in one transaction.

        Each item ends as the one-by-one path (:meth:`result_by_fingerprint`, :meth:`result`,
        :meth:`record_result`, :meth:`record_samples`) leaves it: a result whose fingerprint is
        stored (or an earlier item's) keeps its name and gets its samples and build information
        replaced; a new one is stored as ``name``, or as ``alternative`` when ``name`` is taken
        (a row of that name updated, as :meth:`record_result` updates it). The statements: one
        SELECT of the fingerprints and one of the names, one INSERT … RETURNING of the new results,
        one DELETE of the refreshed results' samples, one UPDATE of their build information and
        one INSERT of every sample (executemany), so a batch costs a few round trips and one commit.

        :returns: per item, in order, what became of it.
        :raises StoreDatabaseError: when the database fails (nothing of the batch is recorded).
        """
        for attempt in (1, 2):
            try:
                with self._session() as session:
                    return self._record_imports(session, items)
            except StoreDatabaseError as err:  # another writer took a name first: its row is seen now
                if attempt == 2 or not isinstance(err.__cause__, IntegrityError):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _record_imports(session: Session, items: Sequence[ResultImport]) -> list[ImportedResult]:
        """Do :meth:`record_imports` in ``session``."""
        by_fingerprint: dict[str, str] = {}  # fingerprint → name of its oldest result
        for chunk in _chunked(sorted({i.fingerprint for i in items})):
            rows = session.execute(
                select(ResultRow.name, ResultRow.fingerprint)
                .where(ResultRow.fingerprint.in_(chunk))
                .order_by(ResultRow.id)
            )
            for stored_name, digest in rows:
                if digest is not None:
                    by_fingerprint.setdefault(digest, stored_name)
        stored: dict[str, int | None] = {}  # name → id (None: inserted by this batch)
        for names in _chunked(sorted({n for i in items for n in (i.name, i.alternative)})):
            rows_by_name = session.execute(
                select(ResultRow.name, ResultRow.id).where(ResultRow.name.in_(names))
            )
            stored.update((stored_name, row_id) for stored_name, row_id in rows_by_name)
        outcomes: list[ImportedResult] = []
        new_rows: dict[str, dict[str, Any]] = {}  # name → values of a result inserted by this batch
        renamed: list[tuple[int, dict[str, Any]]] = []  # (id, values) of rows updated by name
        latest: dict[str, ResultImport] = {}  # name → the item whose samples it keeps
        for item in items:
            name = by_fingerprint.get(item.fingerprint)
            refreshed = name is not None
            if name is None:
                name = item.alternative if item.name in stored else item.name
                try:
                    check_name(name, "Result name")
                    if item.scenario is not None:
                        check_name(item.scenario, "Scenario")
                except InvalidRecordError as err:
                    outcomes.append(ImportedResult(None, False, str(err)))
                    continue
                values: dict[str, Any] = {
                    "scenario": item.scenario,
                    "location": str(item.location),
                    "vsperf_dirs": [str(p) for p in item.vsperf_dirs],
                    "status": ResultStatus.PROCESSED.value,
                    "failure_reason": None,
                    "metadata_json": dict(item.metadata),
                    "received_at": _utcnow(),
                    "fingerprint": item.fingerprint,
                }
                row_id = stored.get(name)
                if row_id is not None:
                    renamed.append((row_id, values))
                else:  # new, or inserted by this batch: record_result would update that row
                    new_rows[name] = values
                    stored[name] = None
                by_fingerprint[item.fingerprint] = name
            latest[name] = item
            outcomes.append(ImportedResult(name, refreshed, None))
        for row_id, values in renamed:
            session.execute(update(ResultRow).where(ResultRow.id == row_id).values(**values))
        if new_rows:  # with the build information of the item whose samples they keep
            inserted = session.execute(
                insert(ResultRow).returning(ResultRow.name, ResultRow.id, sort_by_parameter_order=True),
                [{"name": n, **v, **_build_columns(latest[n].build)} for n, v in new_rows.items()],
            )
            stored.update((name, row_id) for name, row_id in inserted)
        ids = {name: stored[name] for name in latest}
        kept = [name for name in latest if name not in new_rows]  # stored before: samples replaced
        for result_ids in _chunked([ids[name] for name in kept]):
            session.execute(delete(SampleRow).where(SampleRow.result_id.in_(result_ids)))
        if kept:
            session.execute(
                update(ResultRow), [{"id": ids[n], **_build_columns(latest[n].build)} for n in kept]
            )
        # The samples: one executemany of the driver's own, the statement compiled once (SQLAlchemy's
        # per-row parameter processing was half of the batch's time; the columns need no conversion).
        sample_rows = [
            (ids[name], s.test, s.deployment, s.frame_size, s.traffic, s.metric, s.repeat, s.value)
            for name, item in latest.items()
            for s in item.samples
        ]
        if sample_rows:
            connection = session.connection()
            compiled = insert(_SAMPLES).compile(dialect=connection.dialect, column_keys=list(_SAMPLE_COLUMNS))
            if compiled.positional:
                order = [_SAMPLE_COLUMNS.index(key) for key in compiled.positiontup or ()]
                connection.exec_driver_sql(
                    compiled.string, [tuple(row[k] for k in order) for row in sample_rows]
                )
            else:
                connection.exec_driver_sql(
                    compiled.string, [dict(zip(_SAMPLE_COLUMNS, row, strict=True)) for row in sample_rows]
                )
        return outcomes

    def scenarios(self) -> list[str]:
        """Return the scenarios of the stored results, sorted.

        :raises StoreDatabaseError: when the database fails.
        """
        with self._session() as session:
            return sorted(s for s in session.scalars(select(ResultRow.scenario).distinct()) if s)

    def sample_count(self) -> int:
        """Return how many samples the store holds.

        :raises StoreDatabaseError: when the database fails.
        """
        with self._session() as session:
            return int(session.scalar(select(func.count(SampleRow.id))) or 0)

    def series(
        self,
        *,
        scenario: str | None = None,
        since: datetime | None = None,
        metrics: Sequence[str] | None = None,
    ) -> list[Series]:
        """Return every series (scenario × test × frame size × metric) with its builds, oldest first.

        A build's time is its measurement start, else when the store received it; builds with
        equal times are ordered by result name. Only processed results count.

        :param scenario: only this scenario's series.
        :param since: only builds at or after this time (aware).
        :param metrics: only these metrics.
        :raises StoreDatabaseError: when the database fails.
        """
        built = func.coalesce(ResultRow.started_at, ResultRow.received_at)
        query = (
            select(
                ResultRow.id,
                ResultRow.name,
                ResultRow.scenario,
                ResultRow.started_at,
                ResultRow.received_at,
                ResultRow.ovs_version,
                ResultRow.dpdk_version,
                ResultRow.qemu_version,
                SampleRow.test,
                SampleRow.deployment,
                SampleRow.frame_size,
                SampleRow.traffic,
                SampleRow.metric,
                SampleRow.repeat,
                SampleRow.value,
            )
            .join(SampleRow, SampleRow.result_id == ResultRow.id)
            .where(ResultRow.status == ResultStatus.PROCESSED.value)
            .order_by(built, ResultRow.name, SampleRow.repeat)
        )
        if scenario is not None:
            query = query.where(ResultRow.scenario == scenario)
        if since is not None:
            query = query.where(built >= since)
        if metrics is not None:
            query = query.where(SampleRow.metric.in_(list(metrics)))
        with self._session() as session:
            rows = session.execute(query).all()
            reports = self._newest_reports(session, {row.id for row in rows})
            nvrs = self._build_nvrs(session, {row.id for row in rows})
        points: dict[SeriesKey, dict[str, tuple[Any, list[float]]]] = {}
        for row in rows:
            key = SeriesKey(
                row.scenario or "-", row.test, row.deployment, row.frame_size, row.metric, row.traffic
            )
            builds = points.setdefault(key, {})
            if row.name not in builds:
                builds[row.name] = (row, [])
            builds[row.name][1].append(float(row.value))
        out = []
        for key in sorted(points):
            series_points = []
            for name, (row, values) in points[key].items():
                report, decision, bug = reports.get(row.id, (None, None, None))
                series_points.append(
                    SeriesPoint(
                        result_name=name,
                        built_at=row.started_at or row.received_at,
                        values=tuple(values),
                        ovs_version=row.ovs_version,
                        dpdk_version=row.dpdk_version,
                        qemu_version=row.qemu_version,
                        report=report,
                        tester_decision=decision,
                        tester_bug=bug,
                        build_nvrs=nvrs.get(row.id, ()),
                    )
                )
            out.append(Series(key, tuple(series_points)))
        return out

    @staticmethod
    def _build_nvrs(session: Session, result_ids: set[int]) -> dict[int, tuple[str, ...]]:
        """Return result id → the Koji build NVRs its metadata recorded (``build.nvrs``), when any.

        A malformed ``build`` (a store written before it was checked) names no build.
        """
        out: dict[int, tuple[str, ...]] = {}
        ids = sorted(result_ids)
        for start in range(0, len(ids), 500):
            for result_id, metadata in session.execute(
                select(ResultRow.id, ResultRow.metadata_json).where(
                    ResultRow.id.in_(ids[start : start + 500])
                )
            ):
                try:
                    record = build_record((metadata or {}).get(BUILD_KEY))
                except MetadataError:
                    continue
                if record is not None:
                    out[result_id] = record.nvrs
        return out

    @staticmethod
    def _newest_reports(
        session: Session, result_ids: set[int]
    ) -> dict[int, tuple[Path, str | None, str | None]]:
        """Return result id → (newest report's index.html, its newest verdict, bug id)."""
        if not result_ids:
            return {}
        newest = (
            select(func.max(ComparisonRow.id))
            .where(ComparisonRow.result_id.in_(result_ids))
            .group_by(ComparisonRow.result_id)
        )
        comparisons = session.scalars(select(ComparisonRow).where(ComparisonRow.id.in_(newest))).all()
        verdicts: dict[int, VerdictRow] = {}
        if comparisons:
            for verdict in session.scalars(
                select(VerdictRow)
                .where(VerdictRow.comparison_id.in_([c.id for c in comparisons]))
                .order_by(VerdictRow.id)
            ):
                verdicts[verdict.comparison_id] = verdict
        out = {}
        for comparison in comparisons:
            newest_verdict = verdicts.get(comparison.id)
            out[comparison.result_id] = (
                Path(comparison.report_dir) / "index.html",
                newest_verdict.decision if newest_verdict else None,
                newest_verdict.bug_id if newest_verdict else None,
            )
        return out

    def add_trend_mark(
        self,
        result_name: str,
        key: SeriesKey,
        *,
        bug_id: str | None = None,
        comment: str | None = None,
        tester: str | None = None,
    ) -> TrendMark:
        """Record that the change of series ``key`` at result ``result_name`` is expected.

        :raises InvalidRecordError: when there is no such result, neither a bug id nor a comment
            is given, or they are malformed (as for verdicts).
        :raises StoreDatabaseError: when the database fails.
        """
        bug = _bug_id(bug_id)
        text = _clean_text(comment, "Comment", _MAX_COMMENT, single_line=False)
        if bug is None and text is None:
            raise InvalidRecordError(
                "Say why the change is expected: give a bug id or a comment.", field="bug"
            )
        with self._session() as session:
            result = self._result_row(session, result_name, "result_name")
            row = TrendMarkRow(
                result_id=result.id,
                **_series_columns(key),
                bug_id=bug,
                comment=text,
                tester=_clean_text(tester, "Tester", _MAX_SHORT_TEXT, single_line=True),
                recorded_at=_utcnow(),
            )
            session.add(row)
            session.flush()
            return TrendMark(row.id, result.name, key, row.bug_id, row.comment, row.tester, row.recorded_at)

    def cached_analyses(self) -> dict[SeriesKey, tuple[str, dict[str, Any]]]:
        """Return series key → (digest, analysis document) of every cached change-point analysis.

        :raises StoreDatabaseError: when the database fails.
        """
        with self._session() as session:
            return {
                SeriesKey(r.scenario, r.test, r.deployment, r.frame_size, r.metric, r.traffic): (
                    r.digest,
                    dict(r.analysis),
                )
                for r in session.scalars(select(TrendCacheRow))
            }

    def cache_analyses(self, analyses: Mapping[SeriesKey, tuple[str, Mapping[str, Any]]]) -> None:
        """Store (replace) the change-point analyses of the series in ``analyses`` (key → digest, document).

        :raises StoreDatabaseError: when the database fails.
        """
        if not analyses:
            return
        now = _utcnow()
        with self._session() as session:
            existing = {
                (r.scenario, r.test, r.deployment, r.frame_size, r.traffic, r.metric): r
                for r in session.scalars(select(TrendCacheRow))
            }
            for key, (digest, document) in analyses.items():
                ident = (key.scenario, key.test, key.deployment, key.frame_size, key.traffic, key.metric)
                row = existing.get(ident)
                if row is None:
                    session.add(
                        TrendCacheRow(
                            scenario=key.scenario,
                            test=key.test,
                            deployment=key.deployment,
                            frame_size=key.frame_size,
                            traffic=key.traffic,
                            metric=key.metric,
                            digest=digest,
                            analysis=dict(document),
                            analysed_at=now,
                        )
                    )
                else:
                    row.digest, row.analysis, row.analysed_at = digest, dict(document), now

    def trend_marks(self) -> dict[tuple[str, str, str, int, str, str], TrendMark]:
        """Return the newest mark per (result name, test, deployment, frame size, traffic, metric).

        :raises StoreDatabaseError: when the database fails.
        """
        with self._session() as session:
            rows = session.execute(
                select(TrendMarkRow, ResultRow.name, ResultRow.scenario)
                .join(ResultRow, TrendMarkRow.result_id == ResultRow.id)
                .order_by(TrendMarkRow.id)
            ).all()
        out = {}
        for mark, name, scenario in rows:
            key = SeriesKey(
                scenario or "-", mark.test, mark.deployment, mark.frame_size, mark.metric, mark.traffic
            )
            out[(name, mark.test, mark.deployment, mark.frame_size, mark.traffic, mark.metric)] = TrendMark(
                mark.id, name, key, mark.bug_id, mark.comment, mark.tester, mark.recorded_at
            )
        return out

    def add_culprit(
        self, result_name: str, key: SeriesKey, bisection: BisectCulprit, *, tester: str | None = None
    ) -> CulpritRecord:
        """Link the regression of series ``key`` at result ``result_name`` to its culprit build.

        :param bisection: what the bisection found (:func:`resultstore.bisectlink.read_bisect`).
        :raises InvalidRecordError: when there is no such result or the tester is malformed.
        :raises StoreDatabaseError: when the database fails.
        """
        with self._session() as session:
            result = self._result_row(session, result_name, "result_name")
            row = CulpritRow(
                result_id=result.id,
                **_series_columns(key),
                culprit_build=bisection.culprit,
                bisect_page=str(bisection.page),
                bisect_json=str(bisection.report),
                evidence=bisection.evidence(),
                tester=_clean_text(tester, "Tester", _MAX_SHORT_TEXT, single_line=True),
                recorded_at=_utcnow(),
            )
            session.add(row)
            session.flush()
            return CulpritRecord(row.id, result.name, key, bisection, row.tester, row.recorded_at)

    def culprits(
        self, result_name: str | None = None
    ) -> dict[tuple[str, str, str, int, str, str], CulpritRecord]:
        """Return the newest culprit link per (result name, test, deployment, frame size, traffic, metric).

        :param result_name: only this result's links.
        :raises StoreDatabaseError: when the database fails.
        """
        query = (
            select(CulpritRow, ResultRow.name, ResultRow.scenario)
            .join(ResultRow, CulpritRow.result_id == ResultRow.id)
            .order_by(CulpritRow.id)
        )
        if result_name is not None:
            query = query.where(ResultRow.name == result_name)
        with self._session() as session:
            rows = session.execute(query).all()
        out = {}
        for row, name, scenario in rows:
            key = SeriesKey(
                scenario or "-", row.test, row.deployment, row.frame_size, row.metric, row.traffic
            )
            bisection = BisectCulprit.from_stored(
                row.culprit_build, row.bisect_json, row.bisect_page, row.evidence
            )
            out[(name, row.test, row.deployment, row.frame_size, row.traffic, row.metric)] = CulpritRecord(
                row.id, name, key, bisection, row.tester, row.recorded_at
            )
        return out

    # ---- helpers -------------------------------------------------------------------------

    @staticmethod
    def _result_row(session: Session, name: str, field: str) -> ResultRow:
        row = session.scalar(select(ResultRow).where(ResultRow.name == name))
        if row is None:
            raise InvalidRecordError(f"No result '{name}' in the results store.", field=field)
        return row

    @staticmethod
    def _comparison_record(session: Session, row: ComparisonRow) -> ComparisonRecord:
        return comparison_records(session, [row])[0]
