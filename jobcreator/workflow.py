"""Run one ``jobcreator`` request: catalog → render → validate → write/submit.

The one function ``cli.py`` calls. An invalid job never leaves this module: validation runs
before the XML is written, returned for printing, or submitted.
"""

from __future__ import annotations

import logging

from jobcreator.errors import JobCreatorError, SubmitError
from jobcreator.jobmodel import JobOutcome, JobRequest
from jobcreator.render import render_job
from jobcreator.validate import validate_job
from ovsperf_catalog.catalog import load_catalog
from ovsperf_common.atomicio import atomic_write_text

log = logging.getLogger(__name__)


def create_job(request: JobRequest) -> JobOutcome:
    """Render the job of ``request``, validate it, write it and submit it as asked.

    :returns: the validated XML, where it was written and the submitted job id.
    :raises ovsperf_catalog.errors.CatalogError: when the catalog is unreadable or the scenario unknown.
    :raises JobValidationError: when the rendered job is invalid (nothing is written or sent).
    :raises JobCreatorError: when ``--output`` cannot be written (the old file is left intact).
    :raises SubmitError: when submission fails (the ``--output`` file, if any, stays).
    """
    scenario = load_catalog(request.catalog_path).get(request.scenario_name)
    xml = render_job(scenario, request.options)
    validate_job(xml)
    log.debug("Job for '%s' is valid against beaker-job.rng.", scenario.name)

    if request.output is not None:
        try:
            atomic_write_text(request.output, xml)
        except OSError as err:
            raise JobCreatorError(f"Cannot write the job to '{request.output}': {err}") from err
        log.info("Wrote the job for '%s' to '%s'.", scenario.name, request.output)

    job_id = None
    if request.autosubmit and request.dry_run:
        log.info("Dry run: the job for '%s' is valid and was not submitted.", scenario.name)
    elif request.autosubmit:
        try:  # imported here so rendering works where beaker-client (gssapi) cannot be installed
            from jobcreator.submit import submit_job
        except ImportError as err:
            raise SubmitError(
                f"Cannot submit: beaker-client is not usable ({err}); install 'beaker-client'."
            ) from err
        job_id = submit_job(xml, request.hub)
        log.info("Submitted job '%s' for scenario '%s'.", job_id, scenario.name)
    return JobOutcome(xml=xml, written_to=request.output, job_id=job_id)
