"""Submit one Beaker job per scenario through jobcreator, in-process; collect the job ids.

Each scenario becomes a :class:`jobcreator.jobmodel.JobRequest` handed to
:func:`jobcreator.workflow.create_job` (render, validate against ``beaker-job.rng``, submit with
the Beaker client configuration), the same path ``jobcreator --autosubmit`` takes. Scenario names
are checked against the catalog before the first submission, so a typo submits nothing. A failing
submission does not stop the others (they are valid runs), but the batch then fails with every
failure listed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from jobcreator.errors import JobCreatorError
from jobcreator.jobmodel import JobOptions, JobRequest
from jobcreator.workflow import create_job
from kojiwatch.errors import BatchSubmitError
from kojiwatch.model import SubmitRequest, SubmittedJob
from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.errors import CatalogError
from ovsperf_common.atomicio import atomic_write_text

log = logging.getLogger(__name__)


def check_scenarios(scenarios: Iterable[str], catalog_path: Path | None = None) -> None:
    """Check every scenario name against the scenario catalog before anything is submitted.

    :raises BatchSubmitError: listing the unknown names (and the catalog's message with the valid ones).
    """
    try:
        catalog = load_catalog(catalog_path)
        for name in scenarios:
            catalog.get(name)
    except CatalogError as err:
        raise BatchSubmitError(f"Nothing submitted: {err}") from err


def job_options(request: SubmitRequest) -> JobOptions:
    """Return the jobcreator options every scenario of ``request`` is submitted with.

    :raises JobCreatorError: when an option is invalid (host, distro, repository URL, reservation,
        collector, task repository, inventory), naming the jobcreator option.
    """
    return JobOptions(
        trafficgen_host=request.generator_host,
        dut_host=request.dut_host,
        distro=request.distro,
        kick_repos=tuple(request.repo_urls),
        tag=request.tag,
        reserve_hours=request.reserve_h,
        collector=request.collector,
        task_repo=request.task_repo,
        inventory=request.inventory,
    )


def job_request(request: SubmitRequest, scenario: str) -> JobRequest:
    """Return the jobcreator request that submits ``scenario`` for ``request``.

    :raises JobCreatorError: when an option is invalid (see :func:`job_options`).
    """
    output = None if request.job_xml_dir is None else request.job_xml_dir / f"{scenario}.xml"
    return JobRequest(
        scenario_name=scenario,
        options=job_options(request),
        catalog_path=request.catalog_path,
        output=output,
        autosubmit=True,
    )


def submit_scenarios(
    request: SubmitRequest,
    *,
    already_submitted: Iterable[str] = (),
    on_submitted: Callable[[SubmittedJob], None] | None = None,
) -> list[SubmittedJob]:
    """Submit ``request.scenarios`` in order; return the jobs submitted now.

    ``already_submitted`` names scenarios to skip (a resumed watch run); ``on_submitted`` is called
    right after each success so a caller can record it before the next submission.

    :raises BatchSubmitError: before any submission when a scenario is unknown or an option is
        invalid; after the loop when any submission failed (``failed`` and ``submitted`` set).
    """
    check_scenarios(request.scenarios, request.catalog_path)
    try:
        job_options(request)
    except JobCreatorError as err:
        raise BatchSubmitError(f"Nothing submitted: {err}") from err
    if request.job_xml_dir is not None:
        try:
            request.job_xml_dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise BatchSubmitError(
                f"Nothing submitted: no dir '{request.job_xml_dir}': {err.strerror}."
            ) from err
    skip = set(already_submitted)
    jobs: list[SubmittedJob] = []
    failed: dict[str, str] = {}
    for scenario in request.scenarios:
        if scenario in skip:
            log.info("Scenario '%s' was already submitted; skipping.", scenario)
            continue
        try:
            job_id = create_job(job_request(request, scenario)).job_id
        except (CatalogError, JobCreatorError) as err:
            log.error("Submission of scenario '%s' failed: %s", scenario, err)
            failed[scenario] = " ".join(str(err).split())
            continue
        if job_id is None:  # autosubmit without dry run always returns an id; never record None
            failed[scenario] = "jobcreator returned no job id"
            continue
        job = SubmittedJob(scenario=scenario, job_id=job_id)
        log.info("Submitted job '%s' for scenario '%s'.", job_id, scenario)
        jobs.append(job)
        if on_submitted is not None:
            on_submitted(job)
    if failed:
        raise BatchSubmitError(
            f"{len(failed)} of {len(request.scenarios)} submissions failed: "
            + "; ".join(f"'{name}': {reason}" for name, reason in failed.items()),
            failed=failed,
            submitted=tuple((job.scenario, job.job_id) for job in jobs),
        )
    return jobs


def write_job_ids(path: Path, request: SubmitRequest, jobs: Iterable[SubmittedJob]) -> None:
    """Write the submitted jobs as JSON (atomically): repos, builds, hosts, and per scenario its id.

    Shape: ``{"repos": [url], "builds": [nvr], "koji_tag": str|null, "baseline": str|null, "distro": str,
    "hosts": [gen, dut], "tag": str, "collector": str|null, "jobs": [{"scenario": str,
    "job_id": "J:<id>"}]}``; ``builds`` is empty when the NVRs are not known (a scratch task, a
    ``--repo`` given without ``--repo-json``). ``ovsperf-beaker track`` reads this file.

    :raises BatchSubmitError: when the file cannot be written.
    """
    record = {
        "repos": list(request.repo_urls),
        "builds": list(request.builds),
        "koji_tag": request.koji_tag,
        "baseline": request.baseline,
        "distro": request.distro,
        "hosts": [request.generator_host, request.dut_host],
        "tag": request.tag,
        "collector": request.collector,
        "jobs": [{"scenario": job.scenario, "job_id": job.job_id} for job in jobs],
    }
    try:
        atomic_write_text(path, json.dumps(record, indent=2) + "\n")
    except OSError as err:
        raise BatchSubmitError(f"Cannot write job ids to '{path}': {err.strerror}.") from err
