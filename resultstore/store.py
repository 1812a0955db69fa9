"""Read and write the results store: results, comparisons and tester verdicts in one database.

The default is an SQLite file (:func:`default_database_path`); a team sharing one store gives a
PostgreSQL URL (``postgresql+psycopg://user@host/db``, psycopg 3). The same code runs on both
through SQLAlchemy 2.0. Every public method runs in its own transaction and returns frozen records
(:mod:`resultstore.model`); database failures become :class:`StoreDatabaseError` naming the URL
with its password masked.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from sqlalchemy import Engine, create_engine, event, func, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from resultstore.errors import (
    InvalidRecordError,
    SchemaVersionError,
    StoreDatabaseError,
    UnknownComparisonError,
)
from resultstore.model import (
    ComparisonRecord,
    Decision,
    ResultRecord,
    ResultStatus,
    VerdictRecord,
    check_name,
)
from resultstore.schema import (
    SCHEMA_VERSION,
    Base,
    ComparisonRow,
    ResultRow,
    SchemaInfoRow,
    VerdictRow,
)

log = logging.getLogger(__name__)

DB_ENV_VAR = "OVSPERF_RESULTS_DB"
"""Environment variable naming the database (URL or SQLite file path) when ``--db`` is not given."""

SQLITE_BUSY_TIMEOUT_S = 30.0
"""How long an SQLite writer waits for another one to finish [s]."""

_URL_HINT = "give e.g. 'sqlite:////path/results.sqlite' or 'postgresql+psycopg://user@host/db'."
_IN_CHUNK = 500
_MAX_SHORT_TEXT = 255
_MAX_COMMENT = 10_000
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def default_database_path() -> Path:
    """Return the default SQLite file: ``$XDG_DATA_HOME/ovsperf/results.sqlite``.

    ``$XDG_DATA_HOME`` defaults to ``~/.local/share`` (XDG Base Directory specification).
    """
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "ovsperf" / "results.sqlite"


def database_url(spec: str | Path | None) -> str:
    """Turn a ``--db`` value into an SQLAlchemy URL.

    ``None`` → ``$OVSPERF_RESULTS_DB`` or the default SQLite file; a value containing ``://`` is a
    URL and used as it is; anything else is an SQLite file path (made absolute).
    """
    if spec is None or str(spec) == "":
        spec = os.environ.get(DB_ENV_VAR) or default_database_path()
    text = str(spec)
    if "://" in text:
        return text
    return f"sqlite:///{Path(text).expanduser().absolute()}"


def masked_url(url: str) -> str:
    """Return ``url`` with any password replaced by ``***`` (safe for logs and messages)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparsable database URL>"


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _clean_text(value: str | None, field: str, limit: int, *, single_line: bool) -> str | None:
    """Strip ``value``; None/empty → None; reject over-long or (single-line) control characters."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if len(text) > limit:
        raise InvalidRecordError(
            f"{field} is {len(text)} characters long; at most {limit} are allowed.", field=field, value=value
        )
    if single_line and _CONTROL.search(text):
        raise InvalidRecordError(
            f"{field} {text!r} contains control characters (e.g. a newline); give one line.",
            field=field,
            value=value,
        )
    return text


def _set_sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """Enable foreign keys, WAL and a busy timeout on every new SQLite connection."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()


class ResultStore:
    """The results store behind one database URL; open with :meth:`open`, close with :meth:`close`."""

    def __init__(self, engine: Engine, url: str) -> None:
        """Wrap an engine whose schema is already created (use :meth:`open`)."""
        self._engine = engine
        self.url = masked_url(url)
        """The database URL with the password masked."""

    @classmethod
    def open(cls, url: str) -> ResultStore:
        """Connect to ``url``, create missing tables and check the schema version.

        An SQLite file's parent directory is created when missing.

        :raises StoreDatabaseError: when the URL is invalid or the database cannot be reached.
        :raises SchemaVersionError: when the database was written by a newer schema.
        """
        shown = masked_url(url)
        try:
            parsed = make_url(url)
        except ArgumentError as err:
            raise StoreDatabaseError(f"not a database URL; {_URL_HINT}", url=shown) from err
        is_sqlite = parsed.get_backend_name() == "sqlite"
        if is_sqlite and parsed.database not in (None, "", ":memory:"):
            try:
                Path(str(parsed.database)).parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise StoreDatabaseError(f"cannot create its directory: {err.strerror}.", url=shown) from err
        try:
            engine = create_engine(url, pool_pre_ping=not is_sqlite)
        except (ArgumentError, ImportError, SQLAlchemyError) as err:
            raise StoreDatabaseError(f"cannot use this URL ({err}); {_URL_HINT}", url=shown) from err
        if is_sqlite:
            event.listen(engine, "connect", _set_sqlite_pragmas)
        store = cls(engine, url)
        try:
            store._create_schema()
        except BaseException:
            engine.dispose()
            raise
        log.debug("Opened results store %s.", shown)
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
        for attempt in (1, 2):
            try:
                with self._session() as session:
                    Base.metadata.create_all(session.connection())
                    row = session.scalar(select(SchemaInfoRow).order_by(SchemaInfoRow.id))
                    if row is None:
                        session.add(SchemaInfoRow(id=1, version=SCHEMA_VERSION))
                    elif row.version > SCHEMA_VERSION:
                        raise SchemaVersionError(
                            f"schema version {row.version} is newer than this ovsperf's "
                            f"({SCHEMA_VERSION}); upgrade ovsperf.",
                            url=self.url,
                        )
                return
            except StoreDatabaseError as err:
                # Two processes creating the tables of a new database at once: one loses the race
                # on CREATE TABLE or on the version row; the second attempt sees the winner's work.
                if attempt == 2 or isinstance(err, SchemaVersionError):
                    raise
                log.debug("Retrying schema creation after: %s", err)

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
                    return _result_record(row)
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
            return None if row is None else _result_record(row)

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
                VerdictRow.decision == Decision.PASS.value,
                ResultRow.scenario == scenario,
                ResultRow.status == ResultStatus.PROCESSED.value,
            )
            .order_by(ResultRow.received_at.desc(), ResultRow.id.desc())
        )
        if exclude_name is not None:
            query = query.where(ResultRow.name != exclude_name)
        with self._session() as session:
            row = session.scalars(query.limit(1)).first()
            return None if row is None else _result_record(row)

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

        :raises UnknownComparisonError: when there is no such comparison.
        :raises StoreDatabaseError: when the database fails.
        """
        with self._session() as session:
            row = session.get(ComparisonRow, comparison_id)
            if row is None:
                raise UnknownComparisonError(str(comparison_id))
            row.overall = overall
            row.counts = {str(k): int(v) for k, v in counts.items()}
            row.warnings = [str(w) for w in warnings]
            row.updated_at = _utcnow()
            session.flush()
            return self._comparison_record(session, row)

    def comparison(self, ref: str | int) -> ComparisonRecord:
        """Return the comparison with id ``ref``, or the newest one of the result named ``ref``.

        :raises UnknownComparisonError: when nothing matches.
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
                raise UnknownComparisonError(text)
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
            return self._comparison_records(session, rows)

    # ---- verdicts ------------------------------------------------------------------------

    def add_verdict(
        self,
        comparison_id: int,
        *,
        decision: Decision,
        bug_id: str | None = None,
        comment: str | None = None,
        tester: str | None = None,
        recorded_at: datetime | None = None,
    ) -> VerdictRecord:
        """Record a tester's decision on comparison ``comparison_id``; earlier ones stay as history.

        :raises UnknownComparisonError: when there is no such comparison.
        :raises InvalidRecordError: when bug id or tester is longer than 255 characters or not one
            line, or the comment is longer than 10000 characters.
        :raises StoreDatabaseError: when the database fails.
        """
        row = VerdictRow(
            comparison_id=comparison_id,
            decision=decision.value,
            bug_id=_clean_text(bug_id, "Bug id", _MAX_SHORT_TEXT, single_line=True),
            comment=_clean_text(comment, "Comment", _MAX_COMMENT, single_line=False),
            tester=_clean_text(tester, "Tester", _MAX_SHORT_TEXT, single_line=True),
            recorded_at=recorded_at or _utcnow(),
        )
        with self._session() as session:
            if session.get(ComparisonRow, comparison_id) is None:
                raise UnknownComparisonError(str(comparison_id))
            session.add(row)
            session.flush()
            return _verdict_record(row)

    def verdict_history(self, comparison_id: int) -> list[VerdictRecord]:
        """Return every verdict on comparison ``comparison_id``, oldest first.

        :raises StoreDatabaseError: when the database fails.
        """
        with self._session() as session:
            rows = session.scalars(
                select(VerdictRow).where(VerdictRow.comparison_id == comparison_id).order_by(VerdictRow.id)
            )
            return [_verdict_record(row) for row in rows]

    # ---- helpers -------------------------------------------------------------------------

    @staticmethod
    def _result_row(session: Session, name: str, field: str) -> ResultRow:
        row = session.scalar(select(ResultRow).where(ResultRow.name == name))
        if row is None:
            raise InvalidRecordError(f"No result '{name}' in the results store.", field=field, value=name)
        return row

    @staticmethod
    def _comparison_record(session: Session, row: ComparisonRow) -> ComparisonRecord:
        return ResultStore._comparison_records(session, [row])[0]

    @staticmethod
    def _comparison_records(session: Session, rows: Sequence[ComparisonRow]) -> list[ComparisonRecord]:
        """Build records for ``rows`` with a fixed number of queries per 500 rows (no N+1)."""
        results: dict[int, ResultRow] = {}
        verdicts: dict[int, VerdictRow] = {}
        for start in range(0, len(rows), _IN_CHUNK):
            chunk = rows[start : start + _IN_CHUNK]
            ids = {r.result_id for r in chunk} | {r.baseline_result_id for r in chunk if r.baseline_result_id}
            results.update((r.id, r) for r in session.scalars(select(ResultRow).where(ResultRow.id.in_(ids))))
            newest = (
                select(func.max(VerdictRow.id))
                .where(VerdictRow.comparison_id.in_([r.id for r in chunk]))
                .group_by(VerdictRow.comparison_id)
            )
            verdicts.update(
                (v.comparison_id, v)
                for v in session.scalars(select(VerdictRow).where(VerdictRow.id.in_(newest)))
            )
        records = []
        for row in rows:
            result = results[row.result_id]  # present: guaranteed by the foreign key
            baseline = results.get(row.baseline_result_id) if row.baseline_result_id else None
            verdict = verdicts.get(row.id)
            records.append(
                ComparisonRecord(
                    id=row.id,
                    result_name=result.name,
                    scenario=result.scenario,
                    baseline_result_name=None if baseline is None else baseline.name,
                    baseline_dirs=tuple(Path(p) for p in row.baseline_dirs),
                    current_dirs=tuple(Path(p) for p in row.current_dirs),
                    report_dir=Path(row.report_dir),
                    title=row.title,
                    overall=row.overall,
                    counts=dict(row.counts),
                    warnings=tuple(row.warnings),
                    thresholds=dict(row.thresholds),
                    created_at=row.created_at,
                    verdict=None if verdict is None else _verdict_record(verdict),
                )
            )
        return records


def _result_record(row: ResultRow) -> ResultRecord:
    return ResultRecord(
        id=row.id,
        name=row.name,
        scenario=row.scenario,
        location=Path(row.location),
        vsperf_dirs=tuple(Path(p) for p in row.vsperf_dirs),
        status=ResultStatus.from_spec(row.status),
        failure_reason=row.failure_reason,
        metadata=dict(row.metadata_json),
        received_at=row.received_at,
        fingerprint=row.fingerprint,
    )


def _verdict_record(row: VerdictRow) -> VerdictRecord:
    return VerdictRecord(
        id=row.id,
        comparison_id=row.comparison_id,
        decision=Decision.from_spec(row.decision),
        bug_id=row.bug_id,
        comment=row.comment,
        tester=row.tester,
        recorded_at=row.recorded_at,
    )
