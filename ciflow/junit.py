"""Write one ``process-ci-results`` pass as JUnit XML for Jenkins' ``junit`` publisher.

Format: JUnit XML as :mod:`reporting.junit` writes it (``<testsuites>`` → ``<testsuite>`` →
``<testcase>``). In name order:

* every processed result: its report's suite (``<reports>/<name>/junit.xml``): a ``<failure>``
  per REGRESSION cell, an ``<error>`` per INVALID cell;
* every result that went to ``ci_failed`` or was left in ``ci_in`` by an error: a suite
  ``<scenario>.<name>`` with one test case ``delivery`` holding an ``<error>``: type
  ``INFRASTRUCTURE`` for an infrastructure failure (Beaker job aborted, cancelled, killed, no
  results tarball), ``REJECTED`` for a delivery that cannot be compared, ``NOT_PROCESSED`` for one
  left in ``ci_in``. Never a ``<failure>``: a failure is a measured regression;
* the pass's own problems (store down, overview or trend pages not written): a suite
  ``process-ci-results`` with one test case ``pass`` holding an ``<error>`` (type ``PASS``).

Results still being copied (deferred) are not listed: the next pass takes them.
"""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from ciflow.model import OutcomeKind, ResultOutcome, failed_reason_file
from ovsperf_common.atomicio import atomic_write_bytes
from reporting.junit import xml_text

log = logging.getLogger(__name__)

PASS_SUITE = "process-ci-results"
"""Suite (and test case class) of the pass's own problems."""


def _error_suite(parent: ET.Element, suite: str, case_class: str, case: str, kind: str, message: str) -> None:
    """Append a suite with one test case holding one ``<error>`` of ``kind``."""
    element = ET.SubElement(
        parent,
        "testsuite",
        name=xml_text(suite),
        tests="1",
        failures="0",
        errors="1",
        skipped="0",
        time="0",
    )
    testcase = ET.SubElement(element, "testcase", classname=xml_text(case_class), name=case, time="0")
    ET.SubElement(testcase, "error", message=xml_text(message), type=kind).text = xml_text(message)


def _outcome_error(parent: ET.Element, outcome: ResultOutcome) -> None:
    """Append the error suite of a result that was not processed (module docstring)."""
    suite = f"{outcome.scenario or 'unknown'}.{outcome.name}"
    build = f" (build {outcome.build})" if outcome.build else ""
    if outcome.kind is OutcomeKind.FAILED:
        where = f"moved to '{outcome.location}', reason in '{failed_reason_file(outcome.location)}'"
        if outcome.infrastructure_failure:
            kind, text = "INFRASTRUCTURE", f"{outcome.reason}{build}; {where}"
        else:
            kind, text = "REJECTED", f"not processed: {outcome.reason}{build}; {where}"
    else:
        kind, text = "NOT_PROCESSED", f"left in ci_in for the next pass: {outcome.reason}"
    _error_suite(parent, suite, suite, "delivery", kind, text)


def write_pass_junit(path: Path | None, outcomes: Sequence[ResultOutcome], problems: list[str]) -> None:
    """Write the pass's JUnit XML to ``path`` (nothing when None), atomically; see the module docstring.

    A report's JUnit that cannot be read, or a file that cannot be written, adds to ``problems``.
    """
    if path is None:
        return
    root = ET.Element("testsuites", name=PASS_SUITE)
    for outcome in sorted(outcomes, key=lambda o: o.name):
        if outcome.kind is OutcomeKind.PROCESSED and outcome.junit is not None:
            try:
                suites = ET.parse(outcome.junit).getroot()
            except (OSError, ET.ParseError) as err:
                problems.append(f"Cannot read the JUnit XML of '{outcome.name}' ({outcome.junit}): {err}")
                log.error("%s", problems[-1])
                continue
            for suite in suites.iter("testsuite"):
                root.append(suite)
        elif outcome.kind in (OutcomeKind.FAILED, OutcomeKind.ERROR):
            _outcome_error(root, outcome)
    if problems:
        _error_suite(root, PASS_SUITE, PASS_SUITE, "pass", "PASS", " ".join(problems))
    ET.indent(root)
    try:
        atomic_write_bytes(path, ET.tostring(root, encoding="utf-8", xml_declaration=True))
    except OSError as err:
        problems.append(f"Cannot write the JUnit XML '{path}': {err}")
        log.error("%s", problems[-1])
