"""Tests of job validation: Beaker's schema errors and our semantic rules, with line and path."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest
from ovsperf_templates import environment

from jobcreator.errors import JobValidationError
from jobcreator.render import plan_job, render_job
from jobcreator.validate import load_schema, validate_job
from ovsperf_catalog.catalog import load_catalog
from tests.jobcreator.conftest import DUT, TG, make_options

VALID = render_job(load_catalog().get("OVS_DPDK1q_GUEST_DPDK1q"), make_options(reserve_hours=2.0))


def _line_of(xml: str, fragment: str) -> int:
    """Return the 1-based line of the first occurrence of ``fragment``."""
    return xml[: xml.index(fragment)].count("\n") + 1


def _replace_once(old: str, new: str) -> str:
    assert VALID.count(old) >= 1, old
    return VALID.replace(old, new, 1)


def test_the_schema_comes_from_the_installed_beaker_common() -> None:
    import bkr.common

    schema_file = Path(bkr.common.__file__).parent / "schema" / "beaker-job.rng"
    assert schema_file.is_file()
    assert load_schema() is load_schema()  # parsed once


# (mutation of the valid job, fragment located at the error line, expected message fragment)
SCHEMA_BREAKS = [
    ('when="always"', 'when="fail"', 'when="fail"', "Invalid attribute when for element reservesys"),
    ('priority="Normal"', 'priority="normal"', 'priority="normal"', "priority"),
    (' guestargs="', ' guestoptions="', "<guestrecipe", "guestrecipe"),
    (
        '<param name="GUEST" value="1"/>',
        '<param name="GUEST"/>',
        '<param name="GUEST"/>',
        "Element param failed to validate attributes",
    ),
    ("<hostRequires/>", "", "<guestrecipe", "Expecting an element hostRequires"),
    (
        '<task name="/distribution/virt/start" role="STANDALONE"/>',
        '<task role="STANDALONE"/>',
        '<task role="STANDALONE"/>',
        "Expecting an element fetch",
    ),
    ("<whiteboard>", "<extra>x</extra><whiteboard>", "<extra>", "element 'extra' is unknown, misplaced"),
]


@pytest.mark.parametrize(("old", "new", "at", "message"), SCHEMA_BREAKS)
def test_schema_violations_are_rejected_with_line_and_path(
    old: str, new: str, at: str | None, message: str
) -> None:
    broken = _replace_once(old, new)
    with pytest.raises(JobValidationError) as err:
        validate_job(broken)
    assert message in err.value.reason
    assert "beaker-job.rng" in str(err.value)
    assert err.value.line is not None
    if at is not None:
        assert err.value.line == _line_of(broken, at)
        assert err.value.path is not None and err.value.path.startswith("/job/")
    assert f"line {err.value.line}" in str(err.value)


def test_two_whiteboards_are_rejected() -> None:
    broken = _replace_once("<whiteboard>", "<whiteboard>one</whiteboard>\n  <whiteboard>")
    with pytest.raises(JobValidationError, match="whiteboard"):
        validate_job(broken)


def test_params_before_fetch_is_rejected() -> None:
    url = "https://git.example.com/t.tar.gz"
    xml = render_job(load_catalog().get("OVS_DPDK2q"), make_options(task_repo=url))
    fetch = f'<fetch url="{url}#beaker_tasks/build_moongen"/>'
    start = xml.index(fetch)
    params_end = xml.index("</params>", start) + len("</params>")
    swapped = xml[:start] + xml[start + len(fetch) : params_end] + fetch + xml[params_end:]
    with pytest.raises(JobValidationError, match="Element task has extra content: params") as err:
        validate_job(swapped)
    assert err.value.line == _line_of(swapped, "<params>")


def test_not_well_formed_xml_names_the_line() -> None:
    broken = _replace_once("</guestrecipe>", "</guest>")
    with pytest.raises(JobValidationError) as err:
        validate_job(broken)
    assert "not well-formed" in str(err.value)
    assert err.value.line == _line_of(broken, "</guest>")


def test_a_broken_template_is_rejected_with_line_info(tmp_path: Path) -> None:
    """Render through a copy of our templates with the guest's <hostRequires/> dropped."""
    source = Path(
        environment("beaker", autoescape=True).loader.get_source(  # type: ignore[union-attr]
            environment("beaker", autoescape=True), "job.xml.j2"
        )[1]
    )
    for template in source.parent.glob("*.j2"):
        text = template.read_text()
        if template.name == "job.xml.j2":
            assert "        <hostRequires/>\n" in text
            text = text.replace("        <hostRequires/>\n", "")
        (tmp_path / template.name).write_text(text)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(tmp_path),
        undefined=jinja2.StrictUndefined,
        autoescape=True,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    plan = plan_job(load_catalog().get("OVS_DPDK1q_GUEST_DPDK1q"), make_options())
    xml = env.get_template("job.xml.j2").render(plan=plan)
    with pytest.raises(JobValidationError) as err:
        validate_job(xml)
    assert "hostRequires" in err.value.reason
    assert err.value.line == _line_of(xml, "<guestrecipe")
    assert err.value.path == "/job/recipeSet/recipe[2]/guestrecipe"


def _tg_task(name: str) -> str:
    return f'<task name="{name}" role="STANDALONE"/>'


# (mutation, expected message fragment, fragment at the error line or None)
SEMANTIC_BREAKS = [
    ('role="DUT"', 'role="TRAFFICGEN"', "two recipes have the role", None),
    ('role="DUT"', 'role="D-U-T"', "not an environment variable name", None),
    (
        f'<hostname op="=" value="{DUT}"/>',
        f'<hostname op="=" value="{TG}"/>',
        "both recipes are pinned",
        None,
    ),
    (
        f'<hostname op="=" value="{DUT}"/>',
        '<system_type op="=" value="Machine"/>',
        "pinned by exactly one",
        None,
    ),
    (
        '<task name="/distribution/virt/start" role="STANDALONE"/>',
        "",
        "needs '/distribution/virt/install'",
        None,
    ),
    (
        '<task name="/distribution/check-install" role="STANDALONE"/>',
        _tg_task("/kernel/unknown"),
        "neither fetched nor a known library task",
        _tg_task("/kernel/unknown"),
    ),
    (
        '<param name="GUEST" value="1"/>',
        '<param name="ROOT_PASSWORD" value="x"/>',
        "looks like a secret",
        '<param name="ROOT_PASSWORD"',
    ),
    (
        '<param name="GUEST" value="1"/>',
        '<param name="KEY" value="-----BEGIN RSA PRIVATE' + ' KEY-----"/>',
        "looks like a secret",
        '<param name="KEY"',
    ),
    ('<param name="GUEST" value="1"/>', '<param name="SCENARIO" value="x"/>', "given twice", None),
    (
        '<param name="GUEST" value="1"/>',
        '<param name="1GUEST" value="1"/>',
        "not an environment variable",
        None,
    ),
    ('url="http://example.com/repos/dpdk', 'url="http://bob:pw@example.com/repos/dpdk', "credentials", None),
    ('duration="7200"', 'duration="2h"', "not a positive integer", 'duration="2h"'),
    (
        f'<param name="SYNC_PEER" value="{DUT}"/>',
        '<param name="SYNC_PEER" value="elsewhere.example.com"/>',
        "is not the other host",
        None,
    ),
    (
        '<param name="SYNC_STATE" value="VSPERF_END"/>\n          <param name="SYNC_PEER"',
        '<param name="SYNC_STATE" value="VSPERF_DONE"/>\n          <param name="SYNC_PEER"',
        "never sets 'VSPERF_DONE'",
        None,
    ),
]


@pytest.mark.parametrize(("old", "new", "message", "at"), SEMANTIC_BREAKS)
def test_semantic_violations_are_rejected(old: str, new: str, message: str, at: str | None) -> None:
    broken = _replace_once(old, new)
    with pytest.raises(JobValidationError) as err:
        validate_job(broken)
    assert message in err.value.reason
    assert err.value.line is not None and err.value.path is not None
    if at is not None:
        assert err.value.line == _line_of(broken, at)


def test_virt_tasks_inside_the_guest_are_rejected() -> None:
    guest_task = (
        '<task name="/ovsperf/vsperf_test" role="STANDALONE">\n          <params>\n'
        '            <param name="VSPERF_ACTION" value="setup"/>\n            <param name="SCENARIO"'
    )
    assert guest_task in VALID
    broken = _replace_once(
        guest_task, '<task name="/distribution/virt/install" role="STANDALONE"/>\n' + guest_task
    )
    with pytest.raises(JobValidationError, match="never in the guest"):
        validate_job(broken)


def test_a_third_recipe_is_rejected() -> None:
    recipes_end = VALID.index("  </recipeSet>")
    first = VALID[VALID.index("    <recipe ") : VALID.index("    </recipe>") + len("    </recipe>\n")]
    broken = VALID[:recipes_end] + first + VALID[recipes_end:]
    with pytest.raises(JobValidationError, match="expected 2 host recipes"):
        validate_job(broken)
