"""Describe what the results store holds: results, comparisons and tester verdicts (frozen records).

These records are what :class:`resultstore.store.ResultStore` returns; the database tables behind
them live in :mod:`resultstore.schema` and never leave the store.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from resultstore.errors import InvalidRecordError

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+@=,-]{0,199}")
"""Accepted result and scenario names: one path component, no leading dot, no '..' (checked apart)."""


def check_name(value: object, field: str) -> str:
    """Return ``value`` if it is a safe result or scenario name (usable as one path component).

    Safe: 1..200 characters from ``A-Za-z0-9._+@=,-``, not starting with a dot or dash and not
    containing ``..``; so it cannot climb out of a directory, hide as a dotfile or break a log line.

    :raises InvalidRecordError: naming ``field`` when it is not.
    """
    if not isinstance(value, str) or NAME_PATTERN.fullmatch(value) is None or ".." in value:
        raise InvalidRecordError(
            f"{field} {value!r} is not a safe name: use 1-200 characters from A-Z a-z 0-9 . _ + @ = , - "
            "starting with a letter or digit, without '..'.",
            field=field,
            value=value,
        )
    return value


_E = TypeVar("_E", bound="SpecEnum")


class SpecEnum(enum.Enum):
    """An Enum with string values and a ``from_spec`` that lists the valid values on rejection."""

    @classmethod
    def from_spec(cls: type[_E], spec: object) -> _E:
        """Return the member whose value is ``spec`` (case-insensitive, surrounding blanks ignored).

        :raises InvalidRecordError: listing the valid values when ``spec`` is none of them.
        """
        if isinstance(spec, str):
            for member in cls:
                if str(member.value).lower() == spec.strip().lower():
                    return member
        valid = ", ".join(f"'{m.value}'" for m in cls)
        raise InvalidRecordError(
            f"{spec!r} is not a valid {cls.__name__}; expected one of {valid}.",
            field=cls.__name__,
            value=spec,
        )


class Decision(SpecEnum):
    """A tester's decision on one comparison (the role CQE had)."""

    PASS = "PASS"
    """The comparison is acceptable; its current result may serve as a baseline."""
    FAIL = "FAIL"
    """The comparison shows a real problem (usually with a bug id)."""


class ResultStatus(SpecEnum):
    """Where ``process-ci-results`` put a result."""

    PROCESSED = "processed"
    """Compared and moved to ``ci_processed``."""
    FAILED = "failed"
    """Could not be compared; moved to ``ci_failed`` with the reason."""


@dataclass(frozen=True)
class ResultRecord:
    """One result directory ``process-ci-results`` took from ``ci_in``."""

    id: int
    """Database id."""
    name: str
    """Directory name in ``ci_in`` (unique in the store)."""
    scenario: str | None
    """Scenario name from ``ovsperf-metadata.json``; None when it could not be read."""
    location: Path
    """Where the result directory is now (under ``ci_processed`` or ``ci_failed``)."""
    vsperf_dirs: tuple[Path, ...]
    """VSperf ``results_<timestamp>`` directories inside ``location`` (absolute)."""
    status: ResultStatus
    """Processed or failed."""
    failure_reason: str | None
    """Why it failed; None when processed."""
    metadata: Mapping[str, Any]
    """The parsed ``ovsperf-metadata.json`` (versions, job id, hosts), empty when unreadable."""
    received_at: datetime
    """When the pass took it (timezone-aware UTC)."""
    fingerprint: str | None = None
    """SHA-256 (hex) of the delivery's file list and data files; tells a re-run of the same
    delivery from a different delivery under the same name. None when not computed."""


@dataclass(frozen=True)
class VerdictRecord:
    """A tester's decision on one comparison; the newest one per comparison counts."""

    id: int
    """Database id (grows with time)."""
    comparison_id: int
    """The comparison decided on."""
    decision: Decision
    """PASS or FAIL."""
    bug_id: str | None
    """Bug tracker id, e.g. ``RHBZ#1234567``; None when not given."""
    comment: str | None
    """Free text; None when not given."""
    tester: str | None
    """Who decided (login name); None when unknown."""
    recorded_at: datetime
    """When (timezone-aware UTC)."""


@dataclass(frozen=True)
class ComparisonRecord:
    """One report: a current result compared with a baseline, and the tester's latest verdict."""

    id: int
    """Database id; what ``ovsperf-results show|verdict`` take."""
    result_name: str
    """Name of the current result."""
    scenario: str | None
    """Scenario of the current result."""
    baseline_result_name: str | None
    """Name of the stored result used as baseline; None when the baseline came from a directory."""
    baseline_dirs: tuple[Path, ...]
    """Baseline VSperf result directories the report was generated from."""
    current_dirs: tuple[Path, ...]
    """Current VSperf result directories (at their location after the move)."""
    report_dir: Path
    """Directory holding ``index.html`` and ``report.json``."""
    title: str | None
    """Page title given to the report generator."""
    overall: str
    """Overall verdict of the report: PASS, REGRESSION, INVALID or NO_RESULTS."""
    counts: Mapping[str, int]
    """Verdict name → number of (test, frame size) cells."""
    warnings: tuple[str, ...]
    """Warnings of the report generator (each names a file and row)."""
    thresholds: Mapping[str, float]
    """The report generator's thresholds, by field name ([%] or [1] as named there)."""
    created_at: datetime
    """When the comparison was first recorded (timezone-aware UTC)."""
    verdict: VerdictRecord | None
    """The newest tester verdict; None while nobody has decided."""
