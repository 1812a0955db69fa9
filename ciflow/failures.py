"""Move a delivery that cannot be compared to ``ci_failed``, say why beside it, and record it.

Beside ``ci_failed/<name>`` the pass writes ``<name>.FAILED.txt`` (for people) and
``<name>.FAILED.json`` (``name``, ``moved_to``, ``reason``, ``scenario``, ``build``,
``infrastructure_failure``, ``beaker_job_id``, ``beaker_status``, ``failed_at``, ``retry``).
An infrastructure failure (``"infrastructure_failure": true`` in the metadata: a Beaker job
aborted, cancelled or killed, or no usable results tarball) fails the same way, marked so that
the JUnit and the mail call it an infrastructure failure, never a regression.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path

from ciflow.errors import MoveError, StoreUnavailableError
from ciflow.model import CiConfig, InboxEntry, OutcomeKind, ResultOutcome, failed_reason_file
from ciflow.moves import free_destination, move_result
from ovsperf_common.atomicio import atomic_write_text
from ovsperf_common.metadata import RunMetadata
from ovsperf_common.runner import one_line
from resultstore.errors import InvalidRecordError, ResultStoreError
from resultstore.model import ResultStatus
from resultstore.samples import build_note
from resultstore.store import ResultStore

log = logging.getLogger(__name__)


def infrastructure_reason(metadata: RunMetadata) -> str:
    """Return why an infrastructure-failure delivery holds no results, naming the Beaker job."""
    job = one_line(metadata.beaker_job_id or "(job id not given)")[:80]
    status = f" ended {one_line(metadata.beaker_status)[:80]}" if metadata.beaker_status else ""
    # The producer's words: one line (no forged log or mail lines), bounded.
    why = one_line(metadata.incomplete_reason or "the producer marked it an infrastructure failure")[:500]
    return (
        f"infrastructure failure: Beaker job {job}{status}: {why}; "
        "nothing was measured, the build is not judged."
    )


def build_of(metadata: RunMetadata) -> str | None:
    """Return what the delivery says it tested (:func:`resultstore.samples.build_note`), when known."""
    note = build_note((), metadata.to_json())
    return None if note is None else note.name


def fail(
    config: CiConfig,
    store: ResultStore,
    entry: InboxEntry,
    reason: str,
    metadata: RunMetadata | None,
    *,
    infrastructure: bool = False,
) -> ResultOutcome:
    """Move ``entry`` to ``ci_failed`` and write why beside it; record it in the store when possible.

    ``infrastructure``: the delivery says the lab failed (:func:`infrastructure_reason`); the
    outcome is marked so that JUnit and the mail call it an infrastructure failure.
    """
    scenario = None if metadata is None else metadata.scenario
    build = None if metadata is None else build_of(metadata)
    try:
        destination = free_destination(config.ci_failed, entry.name)
        move_result(entry.path, destination)
    except MoveError as err:
        log.error("Cannot move failed result '%s' (left in ci_in): %s", entry.name, err)
        return ResultOutcome(
            entry.name,
            OutcomeKind.ERROR,
            entry.path,
            reason=f"{reason}; {err}",
            infrastructure_failure=infrastructure,
            scenario=scenario,
            build=build,
        )
    log.error("Result '%s' failed, moved to '%s': %s", entry.name, destination, reason)
    failed_at = datetime.now(UTC)
    details = {
        "name": entry.name,
        "moved_to": str(destination),
        "reason": reason,
        "scenario": scenario,
        "build": build,
        "infrastructure_failure": infrastructure,
        "beaker_job_id": None if metadata is None else metadata.beaker_job_id,
        "beaker_status": None if metadata is None else metadata.beaker_status,
        "failed_at": failed_at.isoformat(),
        "retry": f"fix the cause, then move '{destination}' back to '{config.ci_in}/'.",
    }
    reason_file = failed_reason_file(destination)
    try:
        atomic_write_text(
            reason_file,
            f"{entry.name} could not be processed at {failed_at.isoformat()}:\n{reason}\n\n"
            f"To retry: {details['retry']}\n",
        )
        atomic_write_text(failed_reason_file(destination, ".json"), json.dumps(details, indent=2) + "\n")
    except OSError as err:
        log.error("Cannot write the reason file '%s': %s.", reason_file, err.strerror)
    _record_failure(store, entry, destination, reason, metadata)
    return ResultOutcome(
        entry.name,
        OutcomeKind.FAILED,
        destination,
        reason=reason,
        infrastructure_failure=infrastructure,
        scenario=scenario,
        build=build,
    )


def _record_failure(
    store: ResultStore, entry: InboxEntry, destination: Path, reason: str, metadata: RunMetadata | None
) -> None:
    """Record a failed result, unless its name is unsafe or a processed result already has it."""
    try:
        existing = store.result(entry.name)
        if existing is not None and existing.status is ResultStatus.PROCESSED:
            log.info(
                "Not recording failed '%s': the store already holds a processed result of that name.",
                entry.name,
            )
            return
        store.record_result(
            name=entry.name,
            scenario=None if metadata is None else metadata.scenario,
            location=destination,
            vsperf_dirs=(),
            status=ResultStatus.FAILED,
            failure_reason=reason,
            metadata={} if metadata is None else metadata.to_json(),
        )
    except InvalidRecordError as err:
        log.debug("Not recording '%s' in the store: %s", entry.name, err)
    except ResultStoreError as err:
        raise StoreUnavailableError(
            f"Results store failed while recording failed '{entry.name}': {err}"
        ) from err
