"""The remote plan is the Beaker job's plan: for every catalog scenario, each host's steps are the
``/ovsperf/*`` tasks of its recipe in the rendered job XML, in order, with the same parameters."""

from __future__ import annotations

import pytest
from lxml import etree

from jobcreator.jobmodel import JobOptions
from jobcreator.render import render_job
from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import Engine
from remote.cli import main
from remote.executor import REPO_ROOT, upload_files
from remote.plan import remote_plan

CATALOG = load_catalog()
TG, DUT = "tg01.example.com", "dut01.example.com"
INVENTORY = "vsperf_configs/inventory.example.yaml"
COLLECTOR = "ci@collector.example.com:/srv/ci_in"


def xml_tasks(scenario_name: str, role: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """(task, params) of the /ovsperf/* tasks of one host recipe of the rendered job, in order."""
    options = JobOptions(
        trafficgen_host=TG, dut_host=DUT, distro="RHEL-9.4", inventory=INVENTORY, collector=COLLECTOR
    )
    job = etree.fromstring(render_job(CATALOG.get(scenario_name), options).encode())
    (recipe,) = [r for r in job.iter("recipe") if r.get("role") == role]
    out = []
    for task in recipe.findall("task"):
        name = task.get("name")
        if name.startswith("/ovsperf/") and name != "/ovsperf/sleeper":
            params = [(p.get("name"), p.get("value")) for p in task.iter("param")]
            out.append((name.removeprefix("/ovsperf/"), params))
    return out


@pytest.mark.parametrize("scenario", sorted(CATALOG.scenarios))
def test_each_host_runs_its_beaker_recipe_s_tasks(scenario: str) -> None:
    tg, dut = remote_plan(CATALOG.get(scenario), TG, DUT, inventory=INVENTORY, collector=COLLECTOR)
    for plan, role in ((tg, "TRAFFICGEN"), (dut, "DUT")):
        assert plan.role == role
        assert [(s.task, list(s.params)) for s in plan.steps] == xml_tasks(scenario, role)
        assert any("check-install" in note for note in plan.skipped)
    assert (dut.steps[-2].task, dict(dut.steps[-2].params)["VSPERF_ACTION"]) == ("vsperf_test", "run")


def test_guest_scenarios_say_what_is_not_run(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["plan", "--config", "OVS_DPDK1q_GUEST_DPDK1q", "--tg", TG, "--dut", DUT, "--inventory", INVENTORY]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"TRAFFICGEN {TG}:\n  1. build_moongen MOONGEN_COMMIT=")
    assert f"DUT {DUT}:\n  1. vsperf_test VSPERF_ACTION=setup SCENARIO=OVS_DPDK1q_GUEST_DPDK1q" in out
    assert "(not run: /distribution/virt/install: Beaker's guest install;" in out
    assert (
        "(not run: guest recipe (vsperf_test setup GUEST=1): run it inside the guest image beforehand.)"
        in out
    )


def test_bad_plan_input_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--config", "NO_SUCH", "--tg", TG, "--dut", DUT]) == 2
    assert "NO_SUCH" in capsys.readouterr().err
    assert main(["plan", "--config", "OVS_DPDK1q", "--tg", TG, "--dut", TG]) == 2
    assert "both 'tg01.example.com'" in capsys.readouterr().err


@pytest.mark.parametrize("scenario", sorted(CATALOG.scenarios))
def test_the_ovsperf_engine_plan_is_its_beaker_job_s(scenario: str) -> None:
    options = JobOptions(
        trafficgen_host=TG,
        dut_host=DUT,
        distro="RHEL-9.4",
        inventory=INVENTORY,
        collector=COLLECTOR,
        engine=Engine.OVSPERF,
    )
    job = etree.fromstring(render_job(CATALOG.get(scenario), options).encode())
    tg, dut = remote_plan(
        CATALOG.get(scenario), TG, DUT, inventory=INVENTORY, collector=COLLECTOR, engine=Engine.OVSPERF
    )
    for plan in (tg, dut):
        (recipe,) = [r for r in job.iter("recipe") if r.get("role") == plan.role]
        expected = [
            (
                t.get("name").removeprefix("/ovsperf/"),
                [(p.get("name"), p.get("value")) for p in t.iter("param")],
            )
            for t in recipe.findall("task")
            if t.get("name").startswith("/ovsperf/")
        ]
        assert [(s.task, list(s.params)) for s in plan.steps] == expected
        assert not any("guest" in note for note in plan.skipped)
    assert [s.task for s in tg.steps][:2] == ["build_trafficgen", "setup_dpdk"]
    assert (dut.steps[-2].task, dict(dut.steps[-2].params)["OVSPERF_ACTION"]) == ("ovsperf_test", "run")


def test_plan_engine_option(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["plan", "--config", "OVS_DPDK1q", "--tg", TG, "--dut", DUT, "--inventory", INVENTORY]
    assert main([*args, "--engine", "ovsperf"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"TRAFFICGEN {TG}:\n  1. build_trafficgen\n  2. setup_dpdk INVENTORY=")
    assert f"DUT {DUT}:\n  1. ovsperf_test OVSPERF_ACTION=setup INVENTORY=" in out
    assert main([*args, "--engine", "moongen"]) == 2
    assert "field '--engine'" in capsys.readouterr().err


def test_each_task_uploads_what_it_needs() -> None:
    vsperf = {
        str(p.relative_to(REPO_ROOT)) for p in upload_files(REPO_ROOT, ["build_moongen", "vsperf_test"])
    }
    assert vsperf == {str(p.relative_to(REPO_ROOT)) for p in upload_files(REPO_ROOT)}
    assert not any(f.startswith(("ovsperf_lab/", "trafficgen/", "templates/")) for f in vsperf)
    tg = {str(p.relative_to(REPO_ROOT)) for p in upload_files(REPO_ROOT, ["build_trafficgen", "setup_dpdk"])}
    assert "trafficgen/Makefile" in tg and not any(f.startswith("trafficgen/build/") for f in tg)
    dut = {str(p.relative_to(REPO_ROOT)) for p in upload_files(REPO_ROOT, ["ovsperf_test", "setup_dpdk"])}
    assert {
        "ovsperf_lab/cli.py",
        "pyproject.toml",
        "packaging/constraints.txt",
        "templates/__init__.py",
    } <= dut
    assert dut >= vsperf and "vsperf_configs/labargs.py" in dut
