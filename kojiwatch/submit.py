"""Submit one Beaker job per scenario by running ``jobcreator ... --autosubmit``; collect the job ids.

The documented jobcreator CLI (issue 2): ``jobcreator --host GEN --host DUT --config NAME
--distro DISTRO --kickrepo URL... --tag TEXT [--reserve HOURS] --autosubmit`` prints ``J:<id>`` on
stdout and exits 0. Scenario names are checked against the catalog before the first submission,
so a typo submits nothing. A failing submission does not stop the others (they are valid runs),
but the batch then fails with every failure listed.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from jobcreator.catalog import load_catalog
from jobcreator.errors import JobCreatorError
from kojiwatch.errors import SubmitError
from kojiwatch.model import SubmitRequest, SubmittedJob
from ovsperf_common.atomicio import atomic_write_text

log = logging.getLogger(__name__)

JOBCREATOR_TIMEOUT_S = 600.0
"""Longest time one ``jobcreator --autosubmit`` may take (render, validate, upload) [s]."""
_JOB_ID = re.compile(r"^J:\d+$")


def check_scenarios(scenarios: Iterable[str], catalog_path: Path | None = None) -> None:
    """Check every scenario name against the scenario catalog before anything is submitted.

    :raises SubmitError: listing the unknown names (and the catalog's message with the valid ones).
    """
    try:
        catalog = load_catalog(catalog_path)
        for name in scenarios:
            catalog.get(name)
    except JobCreatorError as err:
        raise SubmitError(f"Nothing submitted: {err}") from err


def jobcreator_argv(request: SubmitRequest, scenario: str) -> list[str]:
    """Return the jobcreator command line for ``scenario`` (without the executable)."""
    argv = [
        "--host",
        request.generator_host,
        "--host",
        request.dut_host,
        "--config",
        scenario,
        "--distro",
        request.distro,
    ]
    for url in request.repo_urls:
        argv += ["--kickrepo", url]
    argv += ["--tag", request.tag]
    if request.reserve_h is not None:
        argv += ["--reserve", f"{request.reserve_h:g}"]  # 2 -> "2", 1.5 -> "1.5", as jobcreator takes
    if request.job_xml_dir is not None:
        argv += ["--output", str(request.job_xml_dir / f"{scenario}.xml")]
    argv.append("--autosubmit")
    return argv


def find_jobcreator(name: str) -> str | None:
    """Return the jobcreator executable: ``name`` on PATH, else next to this Python's console scripts.

    The fallback is the environment ovsperf-koji itself was installed in, so
    ``/opt/ovsperf/.venv/bin/ovsperf-koji watch`` from a systemd unit (whose PATH lacks the venv)
    finds the ``jobcreator`` installed with it.
    """
    return shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))


def _run_jobcreator(exe: str, argv: list[str], scenario: str) -> str:
    """Run jobcreator once; return the job id it printed.

    :raises SubmitError: with a one-line reason when it fails or prints no single ``J:<id>``.
    """
    try:
        proc = subprocess.run(
            [exe, *argv], capture_output=True, text=True, timeout=JOBCREATOR_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as err:
        raise SubmitError(f"jobcreator did not finish in {JOBCREATOR_TIMEOUT_S:.0f} s") from err
    except OSError as err:
        raise SubmitError(f"cannot run '{exe}': {err.strerror}") from err
    for line in proc.stderr.splitlines():  # its log (hub, validation) belongs in the build's log too
        if line.strip():
            log.info("jobcreator (%s): %s", scenario, line.rstrip())
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        raise SubmitError(f"jobcreator exited {proc.returncode}: {lines[-1] if lines else 'no message'}")
    ids = [line.strip() for line in proc.stdout.splitlines() if _JOB_ID.match(line.strip())]
    if len(ids) != 1:
        raise SubmitError(
            f"jobcreator printed {len(ids)} job ids (expected one 'J:<id>' line) for '{scenario}'"
        )
    return ids[0]


def submit_scenarios(
    request: SubmitRequest,
    *,
    already_submitted: Iterable[str] = (),
    on_submitted: Callable[[SubmittedJob], None] | None = None,
    catalog_path: Path | None = None,
) -> list[SubmittedJob]:
    """Submit ``request.scenarios`` in order; return the jobs submitted now.

    ``already_submitted`` names scenarios to skip (a resumed watch run); ``on_submitted`` is called
    right after each success so a caller can record it before the next submission.

    :raises SubmitError: before any submission when a scenario is unknown or jobcreator is not
        installed; after the loop when any submission failed (``failed`` and ``submitted`` set).
    """
    check_scenarios(request.scenarios, catalog_path)
    exe = find_jobcreator(request.jobcreator)
    if exe is None:
        raise SubmitError(
            f"Nothing submitted: '{request.jobcreator}' not found on PATH. "
            f"(Also looked in {Path(sys.executable).parent}.)"
        )
    if request.job_xml_dir is not None:
        try:
            request.job_xml_dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise SubmitError(f"Nothing submitted: no dir '{request.job_xml_dir}': {err.strerror}.") from err
    skip = set(already_submitted)
    jobs: list[SubmittedJob] = []
    failed: dict[str, str] = {}
    for scenario in request.scenarios:
        if scenario in skip:
            log.info("Scenario '%s' was already submitted; skipping.", scenario)
            continue
        try:
            job_id = _run_jobcreator(exe, jobcreator_argv(request, scenario), scenario)
        except SubmitError as err:
            log.error("Submission of scenario '%s' failed: %s", scenario, err)
            failed[scenario] = str(err)
            continue
        job = SubmittedJob(scenario=scenario, job_id=job_id)
        log.info("Submitted job '%s' for scenario '%s'.", job_id, scenario)
        jobs.append(job)
        if on_submitted is not None:
            on_submitted(job)
    if failed:
        raise SubmitError(
            f"{len(failed)} of {len(request.scenarios)} submissions failed: "
            + "; ".join(f"'{name}': {reason}" for name, reason in failed.items()),
            failed=failed,
            submitted=tuple((job.scenario, job.job_id) for job in jobs),
        )
    return jobs


def write_job_ids(path: Path, request: SubmitRequest, jobs: Iterable[SubmittedJob]) -> None:
    """Write the submitted jobs as JSON (atomically): repos, baseline, distro, hosts, and per scenario its id.

    Shape: ``{"repos": [url], "baseline": str|null, "distro": str, "hosts": [gen, dut],
    "tag": str, "jobs": [{"scenario": str, "job_id": "J:<id>"}]}``.

    :raises SubmitError: when the file cannot be written.
    """
    record = {
        "repos": list(request.repo_urls),
        "baseline": request.baseline,
        "distro": request.distro,
        "hosts": [request.generator_host, request.dut_host],
        "tag": request.tag,
        "jobs": [{"scenario": job.scenario, "job_id": job.job_id} for job in jobs],
    }
    try:
        atomic_write_text(path, json.dumps(record, indent=2) + "\n")
    except OSError as err:
        raise SubmitError(f"Cannot write job ids to '{path}': {err.strerror}.") from err
