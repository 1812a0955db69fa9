"""The engine choice: the catalog's ``engine`` and ``jobcreator --engine`` (docs/engines.md).

Jobs of the engine ``ovsperf`` are rendered for every scenario and validated against Beaker's own
``beaker-job.rng``; the engine ``vsperf`` (the default) renders exactly what it rendered before.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

from jobcreator.cli import main
from jobcreator.errors import JobCreatorError
from jobcreator.render import OVSPERF_END, TRAFFICGEN_READY, ovsperf_run_budget_s, render_job, sync_timeouts_s
from jobcreator.validate import validate_job
from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.errors import CatalogError
from ovsperf_catalog.model import Engine
from ovsperf_common.exitcodes import ExitCode
from tests.jobcreator.conftest import DUT, TG, make_options
from tests.jobcreator.test_render import _recipe, _tasks

CATALOG = load_catalog()
SCENARIOS = CATALOG.names()
INVENTORY = ("INVENTORY", "lab/inventory.yaml")


@pytest.mark.parametrize("name", SCENARIOS)
def test_ovsperf_engine_job_is_schema_valid_with_its_tasks_and_parameters(name: str) -> None:
    scenario = CATALOG.get(name)
    options = make_options(
        engine=Engine.OVSPERF, inventory=INVENTORY[1], collector="ci@collector.example.com:/srv/ci_in"
    )
    job = validate_job(render_job(scenario, options)).getroot()
    assert not job.xpath("//guestrecipe"), "the lab boots its own guest: no Beaker guest recipe"
    timeouts = sync_timeouts_s(scenario)
    assert _tasks(_recipe(job, "TRAFFICGEN")) == [
        ("/distribution/check-install", {}),
        ("/ovsperf/build_trafficgen", {}),
        ("/ovsperf/setup_dpdk", dict([INVENTORY])),
        (
            "/ovsperf/perf_synchronization",
            {
                "SYNC_ACTION": "wait",
                "SYNC_STATE": "DUT_SSH_KEY",
                "SYNC_PEER": DUT,
                "SYNC_TIMEOUT_S": str(timeouts["DUT_SSH_KEY"]),
                "SYNC_DATA": "ssh-pubkey",
            },
        ),
        (
            "/ovsperf/perf_synchronization",
            {"SYNC_ACTION": "set", "SYNC_STATE": TRAFFICGEN_READY, "SYNC_DATA": "ssh-hostkey"},
        ),
        (
            "/ovsperf/perf_synchronization",
            {
                "SYNC_ACTION": "wait",
                "SYNC_STATE": OVSPERF_END,
                "SYNC_PEER": DUT,
                "SYNC_TIMEOUT_S": str(timeouts[OVSPERF_END]),
            },
        ),
    ]
    assert _tasks(_recipe(job, "DUT")) == [
        ("/distribution/check-install", {}),
        ("/ovsperf/ovsperf_test", {"OVSPERF_ACTION": "setup", **dict([INVENTORY])}),
        ("/ovsperf/setup_dpdk", dict([INVENTORY])),
        (
            "/ovsperf/perf_synchronization",
            {"SYNC_ACTION": "set", "SYNC_STATE": "DUT_SSH_KEY", "SYNC_DATA": "ssh-pubkey"},
        ),
        (
            "/ovsperf/perf_synchronization",
            {
                "SYNC_ACTION": "wait",
                "SYNC_STATE": TRAFFICGEN_READY,
                "SYNC_PEER": TG,
                "SYNC_TIMEOUT_S": str(timeouts[TRAFFICGEN_READY]),
                "SYNC_DATA": "ssh-hostkey",
            },
        ),
        (
            "/ovsperf/ovsperf_test",
            {
                "OVSPERF_ACTION": "run",
                "SCENARIO": name,
                **dict([INVENTORY]),
                "COLLECTOR": "ci@collector.example.com:/srv/ci_in",
                "OVSPERF_TIMEOUT_S": str(ovsperf_run_budget_s(scenario)),
            },
        ),
        ("/ovsperf/perf_synchronization", {"SYNC_ACTION": "set", "SYNC_STATE": OVSPERF_END}),
    ]
    text = etree.tostring(job, encoding="unicode")
    assert "MOONGEN_READY" not in text and "build_moongen" not in text and "/ovsperf/vsperf_test" not in text


@pytest.mark.parametrize("name", [n for n in SCENARIOS if CATALOG.get(n).engine is Engine.VSPERF])
def test_vsperf_engine_given_explicitly_renders_exactly_the_default_job(name: str) -> None:
    scenario = CATALOG.get(name)
    assert scenario.engine is Engine.VSPERF
    default = render_job(scenario, make_options())
    assert render_job(scenario, make_options(engine=Engine.VSPERF)) == default
    assert "/ovsperf/vsperf_test" in default and "ovsperf_test" not in default.replace("vsperf_test", "")


def _catalog_with_engine(tmp_path: Path, engine: str) -> Path:
    text = CATALOG.path.read_text().replace(
        "  OVS_DPDK1q:\n    description:", f"  OVS_DPDK1q:\n    engine: {engine}\n    description:"
    )
    path = tmp_path / "scenarios.yaml"
    path.write_text(text)
    return path


def test_the_scenario_chooses_the_engine_and_engine_overrides_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = _catalog_with_engine(tmp_path, "ovsperf")
    assert load_catalog(catalog).get("OVS_DPDK1q").engine is Engine.OVSPERF
    argv = [
        "--host",
        TG,
        "--host",
        DUT,
        "--config",
        "OVS_DPDK1q",
        "--distro",
        "RHEL-9.4.0",
        "--catalog",
        str(catalog),
    ]
    assert main(argv) == ExitCode.OK
    assert "/ovsperf/ovsperf_test" in capsys.readouterr().out
    assert main([*argv, "--engine", "vsperf"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "/ovsperf/vsperf_test" in out and "/ovsperf/ovsperf_test" not in out
    assert main([*argv[:-2], "--engine", "OVSPERF"]) == ExitCode.OK  # any case, as every SpecEnum
    assert "/ovsperf/build_trafficgen" in capsys.readouterr().out


def test_an_unknown_engine_is_refused_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "--host",
        TG,
        "--host",
        DUT,
        "--config",
        "OVS_DPDK1q",
        "--distro",
        "RHEL-9.4.0",
        "--engine",
        "trex",
    ]
    assert main(argv) == ExitCode.ERROR
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (
        "Option '--engine': 'trex' is not a valid engine; expected one of 'vsperf', 'ovsperf'."
        in captured.err
    )
    with pytest.raises(CatalogError, match=r"field 'engine'.*'moongen' is not a valid engine"):
        load_catalog(_catalog_with_engine(tmp_path, "moongen"))
    with pytest.raises(JobCreatorError, match="Option '--engine'"):
        make_options(engine="trex")
