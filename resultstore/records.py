"""Turn database rows into the frozen records callers get (:mod:`resultstore.model`).

Comparison records are built for many rows at once with a fixed number of queries per 500 rows
(their results, baseline results and newest verdicts), so listing never issues one query per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from resultstore.model import ComparisonRecord, ResultRecord, ResultStatus, ReviewDecision, VerdictRecord
from resultstore.schema import ComparisonRow, ResultRow, VerdictRow

_IN_CHUNK = 500


def comparison_records(session: Session, rows: Sequence[ComparisonRow]) -> list[ComparisonRecord]:
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
            (v.comparison_id, v) for v in session.scalars(select(VerdictRow).where(VerdictRow.id.in_(newest)))
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
                verdict=None if verdict is None else verdict_record(verdict),
            )
        )
    return records


def result_record(row: ResultRow) -> ResultRecord:
    """Return the record of one results row."""
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


def verdict_record(row: VerdictRow) -> VerdictRecord:
    """Return the record of one verdicts row."""
    return VerdictRecord(
        id=row.id,
        comparison_id=row.comparison_id,
        decision=ReviewDecision.from_spec(row.decision),
        bug_id=row.bug_id,
        comment=row.comment,
        tester=row.tester,
        recorded_at=row.recorded_at,
    )
