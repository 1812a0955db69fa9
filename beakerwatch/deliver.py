"""Put one collected job into ``ci_in``: its results, or an infrastructure failure saying why there are none.

A delivery is built in a hidden sibling ``ci_in/.incoming-<name>/`` (``process-ci-results``
ignores hidden entries), ``ovsperf-metadata.json`` is written last, and the directory is renamed
to ``ci_in/<name>`` with ``renameat2(RENAME_NOREPLACE)`` (:func:`ovsperf_common.atomicio.rename_no_replace`):
atomic, and never over an existing delivery. Whatever fails on the way removes the hidden
directory, and with it every byte of the tarball.

- Results: ``ci_in/J<id>-<scenario>-results_<ts>/`` holds the unpacked ``results_<ts>/`` and, at
  the top, the task's ``ovsperf-metadata.json`` (moved out of ``results_<ts>/``) with the build
  record (``build``: NVRs, Koji tag, Jenkins build URL) and ``beaker_job_id``, ``beaker_status``,
  ``beaker_recipe_id`` added.
- Infrastructure failure: ``ci_in/J<id>-<scenario>-infrastructure-failure/`` holds only
  ``ovsperf-metadata.json`` with ``"complete": false``, ``"incomplete_reason"`` (one sentence: job,
  status, why), ``"infrastructure_failure": true``, ``beaker_job_id``, ``beaker_status``, the
  scenario and the build record; ``process-ci-results`` routes it to ``ci_failed`` as an
  infrastructure failure, never a regression.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from beakerwatch.errors import BeakerWatchError, UnusableResultsError
from beakerwatch.fetch import Limits
from beakerwatch.model import JobOutcome, JobState, TrackedJob
from beakerwatch.unpack import unpack
from ovsperf_common import metadata
from ovsperf_common.atomicio import rename_no_replace
from ovsperf_common.fields import safe_name
from ovsperf_common.metadata import BUILD_KEY, INFRASTRUCTURE_FAILURE_KEY, METADATA_FILE, RunMetadata
from ovsperf_common.runner import one_line

log = logging.getLogger(__name__)

STAGING_PREFIX = ".incoming-"
"""Prefix of the hidden directory a delivery is built in."""
MAX_REASON_CHARS = 1000
"""Longest reason kept for an infrastructure failure [characters]."""
PRODUCER = "ovsperf-beaker"
"""``producer`` of the infrastructure-failure metadata this module writes."""

Fetcher = Callable[[str, Path], None]
"""Download a URL to a file (:func:`beakerwatch.fetch.download` with its limits bound)."""


@dataclasses.dataclass(frozen=True)
class Delivery:
    """What went into ``ci_in`` for one job."""

    name: str
    """Directory name in ``ci_in``."""
    path: Path
    """``ci_in/<name>``."""
    state: JobState
    """``DELIVERED`` (results) or ``INFRASTRUCTURE_FAILURE``."""
    reason: str | None
    """For an infrastructure failure: why (the ``incomplete_reason``)."""


def results_name(job: TrackedJob, top: str) -> str:
    """Return ``J<id>-<scenario>-results_<ts>``, the name of a results delivery."""
    return safe_name(f"J{job.number}-{job.scenario}-{top}", "delivery name")


def failure_name(job: TrackedJob) -> str:
    """Return ``J<id>-<scenario>-infrastructure-failure``, the name of an infrastructure-failure delivery."""
    return safe_name(f"J{job.number}-{job.scenario}-infrastructure-failure", "delivery name")


@contextlib.contextmanager
def _staging(ci_in: Path, name: str) -> Iterator[Path]:
    """Yield a fresh ``ci_in/.incoming-<name>/``; remove it unless it was renamed away."""
    stage = ci_in / f"{STAGING_PREFIX}{name}"
    if stage.exists() or stage.is_symlink():
        log.warning("Removing '%s', left by an interrupted pass.", stage)
        _remove(stage)
    try:
        stage.mkdir(mode=0o755)
    except OSError as err:
        raise BeakerWatchError(f"Cannot create '{stage}': {err.strerror}; is ci_in writable?") from err
    try:
        yield stage
    finally:
        if stage.exists() or stage.is_symlink():
            _remove(stage)


def _remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink()
    else:
        shutil.rmtree(path)


def _publish(stage: Path, ci_in: Path, name: str) -> Path:
    """Rename ``stage`` to ``ci_in/name``; an existing delivery of that name is kept, never replaced."""
    target = ci_in / name
    try:
        rename_no_replace(stage, target)
    except FileExistsError:
        log.warning(
            "'%s' already exists (delivered by an earlier pass whose state was not saved?); kept as it is.",
            target,
        )
    except OSError as err:
        raise BeakerWatchError(f"Cannot rename '{stage}' to '{target}': {err.strerror}.") from err
    return target


def _common_extra(job: TrackedJob, outcome: JobOutcome) -> dict[str, Any]:
    extra: dict[str, Any] = {"beaker_job_id": job.job_id, "beaker_status": one_line(outcome.beaker_status)}
    if outcome.recipe_id is not None:
        extra["beaker_recipe_id"] = outcome.recipe_id
    if job.build is not None:
        extra[BUILD_KEY] = job.build.to_json()
    return extra


def one_sentence(text: str) -> str:
    """Return ``text`` on one line (control characters escaped) and at most :data:`MAX_REASON_CHARS` long.

    A reason quotes names from the tarball and the hub; it must stay one line in the state file,
    the metadata, the report and the mail.
    """
    line = one_line(" ".join(text.split()))
    return line if len(line) <= MAX_REASON_CHARS else line[: MAX_REASON_CHARS - 1] + "…"


def deliver_failure(ci_in: Path, job: TrackedJob, outcome: JobOutcome, reason: str) -> Delivery:
    """Deliver ``ci_in/J<id>-<scenario>-infrastructure-failure/`` holding only the metadata.

    :raises BeakerWatchError: when ``ci_in`` cannot be written.
    """
    reason = one_sentence(reason)
    name = failure_name(job)
    record = RunMetadata(
        scenario=job.scenario,
        producer=PRODUCER,
        complete=False,
        incomplete_reason=reason,
        extra={INFRASTRUCTURE_FAILURE_KEY: True, **_common_extra(job, outcome)},
    )
    with _staging(ci_in, name) as stage:
        _write_metadata(stage, record)
        path = _publish(stage, ci_in, name)
    log.info(
        "%s (%s): delivered '%s' as an infrastructure failure: %s", job.job_id, job.scenario, path, reason
    )
    return Delivery(name, path, JobState.INFRASTRUCTURE_FAILURE, reason)


def _write_metadata(directory: Path, record: RunMetadata) -> None:
    try:
        metadata.write(directory, record)
    except OSError as err:
        raise BeakerWatchError(f"Cannot write '{directory / METADATA_FILE}': {err.strerror}.") from err


def deliver_results(
    ci_in: Path, job: TrackedJob, outcome: JobOutcome, fetch: Fetcher, limits: Limits
) -> Delivery:
    """Download, check and unpack the job's tarball into ``ci_in``; deliver an unusable one as a failure.

    :param fetch: downloads ``outcome.tarball_url`` to a path (raising
        :class:`~beakerwatch.errors.UnusableResultsError` for a bad file).
    :raises HubError: when the download stays failing transiently (the job stays tracked).
    :raises BeakerWatchError: when ``ci_in`` cannot be written.
    """
    assert outcome.tarball_url is not None and outcome.tarball_name is not None
    top = outcome.tarball_name.removesuffix(".tar.gz")
    name = results_name(job, top)
    try:
        with _staging(ci_in, name) as stage:
            tarball = stage / f".{outcome.tarball_name}.download"
            fetch(outcome.tarball_url, tarball)
            root = unpack(tarball, stage, top, limits, outcome.tarball_name)
            tarball.unlink()
            record = _merged_metadata(root, job, outcome, top)
            (root / METADATA_FILE).unlink()
            _write_metadata(stage, record)
            path = _publish(stage, ci_in, name)
    except UnusableResultsError as err:
        reason = (
            f"Beaker job '{job.job_id}' ({job.scenario}) ended {outcome.beaker_status} but its results "
            f"tarball '{outcome.tarball_name}' is unusable: {err}"
        )
        return deliver_failure(ci_in, job, outcome, reason)
    log.info("%s (%s): delivered '%s'.", job.job_id, job.scenario, path)
    return Delivery(name, path, JobState.DELIVERED, None)


def _merged_metadata(root: Path, job: TrackedJob, outcome: JobOutcome, top: str) -> RunMetadata:
    """Return the task's metadata with the job and build added.

    :raises UnusableResultsError: when the tarball has no readable metadata, or it names another scenario.
    """
    try:
        record = metadata.read(root)
    except metadata.MetadataError as err:
        why = str(err).replace(f"'{root / METADATA_FILE}'", f"'{top}/{METADATA_FILE}'")
        raise UnusableResultsError(f"its metadata is unusable: {why}") from err
    if record.scenario != job.scenario:
        raise UnusableResultsError(
            f"its metadata names scenario '{record.scenario}', but the job was submitted for '{job.scenario}'"
        )
    extra = {k: v for k, v in record.extra.items() if k != INFRASTRUCTURE_FAILURE_KEY}
    extra.update(_common_extra(job, outcome))
    return dataclasses.replace(record, results_dir=top, extra=extra)
