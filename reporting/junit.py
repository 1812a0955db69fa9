"""Write a comparison as JUnit XML so that Jenkins lists each (test, frame size) and fails regressions.

Format: the JUnit XML that Jenkins' ``junit`` publisher reads (``<testsuites>`` → ``<testsuite>`` →
``<testcase classname name time>`` with ``<failure>``, ``<error>`` or ``<skipped>``; the schema
jenkinsci/xunit-plugin ships as ``junit-10.xsd``). One test case per (test, deployment, frame
size, metric); its outcome follows the verdict that decides the cell
(:attr:`reporting.model.Cell.decision`):

* REGRESSION → ``<failure>`` (message: the change and, when the trend decides, the trend's reason);
* INVALID → ``<error>`` (the numbers cannot be compared);
* NO_BASELINE → ``<skipped>`` (new: nothing to compare with);
* anything else passes; the baseline and trend verdicts are in ``<system-out>``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from ovsperf_common.atomicio import atomic_write_bytes
from ovsperf_common.goals import goal_label
from reporting.model import Cell, Comparison, Verdict

_NOT_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
"""Characters XML 1.0 cannot hold (ElementTree would write them and Jenkins' parser would fail),
and lone surrogates, which UTF-8 cannot encode (ElementTree's ``tostring`` raises on them)."""


def _replacement(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte of a non-UTF-8 file name (os.fsdecode's surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return "\N{REPLACEMENT CHARACTER}"


def xml_text(text: str) -> str:
    r"""Return ``text`` with the characters XML 1.0 cannot hold replaced by U+FFFD.

    A byte of a non-UTF-8 file name (a lone surrogate U+DC80…U+DCFF, as Python decodes such a
    path) is written as ``\xNN``: ``/r/caf\udce9`` becomes ``/r/caf\xe9``.
    """
    return _NOT_XML.sub(_replacement, text)


def _case_name(cell: Cell, with_flows: bool) -> str:
    """Return a case's name: ``64B NDR``, ``imix PDR``; with a flow sweep ``64B 1000fl NDR``."""
    traffic = cell.traffic
    frame = traffic.mix or f"{traffic.frame_size_bytes}B"
    flows = f" {traffic.flows}fl" if with_flows and traffic.flows is not None else ""
    return xml_text(f"{frame}{flows} {goal_label(cell.loss_goal_percent)}")


def _case_text(cell: Cell) -> str:
    lines = [f"baseline verdict: {cell.verdict.value} ({cell.reason})"]
    if cell.rel_change_percent is not None:
        lines.append(f"change vs baseline: {cell.rel_change_percent:+.2f} %")
    if cell.trend is not None:
        decides = "decides" if cell.trend.decides else "shown only"
        lines.append(
            f"trend verdict: {cell.trend.verdict.value} ({decides}; {cell.trend.history} earlier builds): "
            f"{cell.trend.reason}"
        )
    lines.append(f"decision: {cell.decision.value}")
    return xml_text("\n".join(lines))


def junit_document(comparison: Comparison, *, suite: str, report: Path | None = None) -> ET.Element:
    """Return the ``<testsuites>`` element for ``comparison`` (one ``<testsuite>`` named ``suite``).

    :param report: the HTML report, named in each case's ``<system-out>`` for a click from Jenkins.
    """
    suite = xml_text(suite)
    root = ET.Element("testsuites", name=suite)
    cases = [(test, cell) for test in comparison.tests for cell in test.cells]
    failures = sum(1 for _, c in cases if c.decision is Verdict.REGRESSION)
    errors = sum(1 for _, c in cases if c.decision is Verdict.INVALID)
    skipped = sum(1 for _, c in cases if c.decision is Verdict.NO_BASELINE)
    element = ET.SubElement(
        root,
        "testsuite",
        name=suite,
        tests=str(len(cases)),
        failures=str(failures),
        errors=str(errors),
        skipped=str(skipped),
        time="0",
    )
    for test, cell in cases:
        case = ET.SubElement(
            element,
            "testcase",
            classname=xml_text(f"{test.test}.{test.deployment}"),
            name=_case_name(cell, test.has_flow_counts),
            time="0",
        )
        text = _case_text(cell)
        decision = cell.decision
        if decision is Verdict.REGRESSION:
            if cell.trend is not None and cell.trend.decides:
                message = f"trend REGRESSION: {cell.trend.reason}"
            else:
                message = f"REGRESSION vs baseline: {cell.reason}"
            ET.SubElement(case, "failure", message=xml_text(message), type="REGRESSION").text = text
        elif decision is Verdict.INVALID:
            ET.SubElement(
                case, "error", message=xml_text(f"INVALID: {cell.reason}"), type="INVALID"
            ).text = text
        elif decision is Verdict.NO_BASELINE:
            ET.SubElement(case, "skipped", message=xml_text(f"no baseline: {cell.reason}"))
        out = text if report is None else xml_text(f"{text}\nreport: {report}")
        ET.SubElement(case, "system-out").text = out
    return root


def write_junit(path: Path, comparison: Comparison, *, suite: str, report: Path | None = None) -> None:
    """Write :func:`junit_document` to ``path`` atomically (UTF-8, XML declaration).

    :raises OSError: when the file cannot be written (the previous file, if any, is unchanged).
    """
    root = junit_document(comparison, suite=suite, report=report)
    ET.indent(root)
    data = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    atomic_write_bytes(Path(path), data)
