"""Keep the tracked jobs in a JSON state file: read it strictly, write it atomically, lock it.

The file (``--state``) is one JSON object::

    {"schema": 1,
     "jobs": [{"job_id": "J:4201", "scenario": "OVS_DPDK1q",
               "build": {"nvrs": ["openvswitch3.1-3.1.0-65.el9fdp"], "tag": "fdp-el9",
                         "jenkins_build_url": "https://jenkins.example.com/job/n/7/"} | null,
               "tracked_at": ISO 8601, "state": "tracked" | "delivered" | "infrastructure-failure",
               "beaker_status": null | "Completed" | "Aborted" | "Cancelled",
               "delivery": null | name in ci_in, "finished_at": null | ISO 8601, "reason": null | str}]}

Nothing is ever dropped silently: a file edited by hand into something unreadable, or a file cut
short, is refused with a message naming the file and the field, and left as it is (every job id
in it stays for when it is fixed). Writes go through :func:`ovsperf_common.atomicio.atomic_write_text`,
so a reader never sees a half-written file. Every reader and writer holds :func:`state_lock`
(``<state>.lock``, an ``flock`` that dies with its process) while it reads, changes and writes.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from beakerwatch.errors import StateFileError
from beakerwatch.model import JobState, TrackedJob
from jobcreator.jobmodel import is_job_id
from ovsperf_common import fields
from ovsperf_common.atomicio import atomic_write_text
from ovsperf_common.errors import FieldError
from ovsperf_common.filelock import LockError, LockTimeoutError, exclusive_lock
from ovsperf_common.metadata import BUILD_KEY, MetadataError, build_record
from ovsperf_common.regularfile import NotRegularFileError, read_regular_text

log = logging.getLogger(__name__)

STATE_SCHEMA: Final = 1
"""Version of the state file this module writes and reads."""
MAX_STATE_BYTES: Final = 16 << 20
"""Largest state file read [B]."""
_JOB_KEYS: Final = (
    "job_id",
    "scenario",
    BUILD_KEY,
    "tracked_at",
    "state",
    "beaker_status",
    "delivery",
    "finished_at",
    "reason",
)


def lock_path(state: Path) -> Path:
    """Return the lock file beside ``state`` (``<state>.lock``)."""
    return state.with_name(state.name + ".lock")


@contextlib.contextmanager
def state_lock(state: Path, timeout_s: float) -> Iterator[None]:
    """Hold the exclusive ``flock`` of ``<state>.lock`` while the ``with`` block runs.

    Waits for another ``ovsperf-beaker`` holding it at most ``timeout_s`` [s]; the lock dies with
    its process, so a killed pass never blocks the next one
    (:func:`ovsperf_common.filelock.exclusive_lock`).

    :raises StateFileError: when the lock file cannot be opened, or ``timeout_s`` passes first.
    """
    path = lock_path(state)
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(
                exclusive_lock(
                    path, timeout_s=timeout_s, what=f"the lock '{path}' (another ovsperf-beaker holds it)"
                )
            )
        except LockTimeoutError as err:
            pid = "unknown" if err.holder_pid is None else err.holder_pid
            raise StateFileError(f"{err} Is a collect pass stuck? Its pid: {pid}.") from err
        except LockError as err:
            raise StateFileError(str(err)) from err
        yield


def load(state: Path) -> list[TrackedJob]:
    """Return the jobs in ``state`` in file order; an absent file tracks nothing (``[]``).

    :raises StateFileError: when the file cannot be read, is not a regular file (a FIFO would block
        the collector), is larger than :data:`MAX_STATE_BYTES`,
        is not UTF-8 JSON (cut short, edited badly), has another schema, or a field is wrong or a job
        id appears twice; the message names the file and the field (``jobs[2].job_id``). The file
        is left untouched.
    """
    try:
        text = read_regular_text(state, max_bytes=MAX_STATE_BYTES)
    except FileNotFoundError:
        return []
    except NotRegularFileError as err:
        raise StateFileError(
            f"State file '{state}' is refused: {err.strerror}; is it the right file? It was left as it is."
        ) from err
    except (OSError, UnicodeDecodeError) as err:
        raise StateFileError(f"Cannot read state file '{state}': {err}.") from err
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise StateFileError(
            f"State file '{state}' is not valid JSON ({err.msg} at line {err.lineno} column {err.colno}): "
            "was it cut short or edited by hand? It was left as it is, with every job id in it; "
            "repair it (or restore it) and run again."
        ) from err
    try:
        return _jobs_from_json(data)
    except FieldError as err:
        raise StateFileError(
            f"{err.located(state)} The file was left as it is; repair the field and run again."
        ) from err


def _jobs_from_json(data: object) -> list[TrackedJob]:
    """Return the jobs of a parsed state file.

    :raises FieldError: naming the field that is missing or wrong.
    """
    top = fields.mapping(data)
    fields.reject_unknown(top, ("schema", "jobs"))
    schema = fields.required(top, "schema")
    if schema != STATE_SCHEMA:
        raise FieldError(f"{schema!r} is not schema {STATE_SCHEMA}.", field="schema")
    raw_jobs = fields.required(top, "jobs")
    if not isinstance(raw_jobs, list):
        raise FieldError("Expected a list of jobs.", field="jobs")
    jobs: list[TrackedJob] = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_jobs):
        job = _job_from_json(raw, f"jobs[{index}]")
        if job.job_id in seen:
            raise FieldError(f"job '{job.job_id}' is listed twice.", field=f"jobs[{index}].job_id")
        seen.add(job.job_id)
        jobs.append(job)
    return jobs


def _job_from_json(raw: object, where: str) -> TrackedJob:
    entry = fields.mapping(raw, where)
    fields.reject_unknown(entry, _JOB_KEYS, where)
    job_id = fields.string(fields.required(entry, "job_id", where), f"{where}.job_id")
    if not is_job_id(job_id):
        raise FieldError(f"{job_id!r} is not a Beaker job id 'J:<n>'.", field=f"{where}.job_id")
    scenario = fields.safe_name(fields.required(entry, "scenario", where), f"{where}.scenario")
    try:
        build = build_record(entry.get(BUILD_KEY))
    except MetadataError as err:
        raise FieldError(str(err), field=f"{where}.{BUILD_KEY}") from err
    tracked_at = fields.string(fields.required(entry, "tracked_at", where), f"{where}.tracked_at")
    state = JobState.from_spec(entry.get("state", JobState.TRACKED.value), field=f"{where}.state")
    texts = {
        key: None if entry.get(key) is None else fields.string(entry[key], f"{where}.{key}", max_len=2000)
        for key in ("beaker_status", "delivery", "finished_at", "reason")
    }
    if texts["delivery"] is not None:
        fields.safe_name(texts["delivery"], f"{where}.delivery")
    if state is not JobState.TRACKED and texts["delivery"] is None:
        raise FieldError(f"a job in state '{state}' must name its delivery.", field=f"{where}.delivery")
    return TrackedJob(
        job_id=job_id,
        scenario=scenario,
        build=build,
        tracked_at=tracked_at,
        state=state,
        beaker_status=texts["beaker_status"],
        delivery=texts["delivery"],
        finished_at=texts["finished_at"],
        reason=texts["reason"],
    )


def _job_to_json(job: TrackedJob) -> dict[str, Any]:
    return {
        "job_id": job.job_id,
        "scenario": job.scenario,
        BUILD_KEY: None if job.build is None else job.build.to_json(),
        "tracked_at": job.tracked_at,
        "state": job.state.value,
        "beaker_status": job.beaker_status,
        "delivery": job.delivery,
        "finished_at": job.finished_at,
        "reason": job.reason,
    }


def save(state: Path, jobs: Sequence[TrackedJob]) -> None:
    """Write ``jobs`` to ``state`` atomically (the old file stays whole until the new one is complete).

    :raises StateFileError: when the file cannot be written (the old one is then unchanged).
    """
    text = json.dumps({"schema": STATE_SCHEMA, "jobs": [_job_to_json(j) for j in jobs]}, indent=2) + "\n"
    try:
        atomic_write_text(state, text)
    except OSError as err:
        raise StateFileError(f"Cannot write state file '{state}': {err.strerror or err}.") from err
