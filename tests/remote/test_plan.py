"""The remote plan is the Beaker job's plan: for every catalog scenario, each host's steps are the
``/ovsperf/*`` tasks of its recipe in the rendered job XML, in order, with the same parameters."""

from __future__ import annotations

import pytest
from lxml import etree

from jobcreator.jobmodel import JobOptions
from jobcreator.render import render_job
from ovsperf_catalog.catalog import load_catalog
from remote.cli import main
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
