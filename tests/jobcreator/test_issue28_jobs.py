"""The Beaker jobs of the PVVP, overlay and conntrack scenarios (issue 28), by value.

The generic tests of ``test_render.py`` and ``test_engine.py`` run every catalog scenario through
the renderer and Beaker's schema; these pin what differs: the guest count, the run budgets and the
tasks' parameters.
"""

from __future__ import annotations

import pytest

from jobcreator.render import (
    HOST_SETUP_BUDGET_S,
    ovsperf_run_budget_s,
    plan_job,
    render_job,
    sync_timeouts_s,
    vsperf_run_budget_s,
)
from jobcreator.validate import validate_job
from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import Engine
from tests.jobcreator.conftest import make_options
from tests.jobcreator.test_render import _recipe, _tasks

CATALOG = load_catalog()

PER_SIZE_S = 20 * 30 + 120
"""MAX_SEARCH_TRIALS x search_trial_s + validation_trial_s of the catalog's defaults [s]."""


def test_pvvp_job_prepares_one_guest_image_that_vsperf_boots_twice() -> None:
    """VSperf boots both PVVP guests from GUEST_IMAGE with QEMU's -snapshot (vnfs/qemu/qemu.py)."""
    scenario = CATALOG.get("OVS_DPDK1q_PVVP")
    job = validate_job(render_job(scenario, make_options())).getroot()
    (guest,) = job.findall(".//guestrecipe")
    assert guest.get("guestargs") == "--ram=4096 --vcpus=2 --file-size=20"
    assert _tasks(guest) == [
        ("/distribution/check-install", {}),
        ("/ovsperf/vsperf_test", {"VSPERF_ACTION": "setup", "SCENARIO": "OVS_DPDK1q_PVVP", "GUEST": "1"}),
    ]
    dut = [name for name, _ in _tasks(_recipe(job, "DUT"))]
    assert dut.count("/distribution/virt/install") == dut.count("/distribution/virt/start") == 1
    assert vsperf_run_budget_s(scenario) == 1 * 4 * PER_SIZE_S * 3 // 2 + 900 == 5220


@pytest.mark.parametrize("name", ["OVS_DPDK1q_VXLAN", "OVS_DPDK1q_GENEVE", "OVS_DPDK1q_CT"])
def test_overlay_and_conntrack_jobs_have_no_guest_and_run_vsperf_on_the_scenario(name: str) -> None:
    scenario = CATALOG.get(name)
    # The overlay scenarios default to the engine ovsperf (VSperf's MoonGen driver sends no tunnel
    # frames); their VSperf job is still what `--engine vsperf` renders.
    options = make_options(inventory="lab/inventory.yaml", engine=Engine.VSPERF)
    job = validate_job(render_job(scenario, options)).getroot()
    assert job.findall(".//guestrecipe") == []
    (run,) = [
        p
        for n, p in _tasks(_recipe(job, "DUT"))
        if n == "/ovsperf/vsperf_test" and p["VSPERF_ACTION"] == "run"
    ]
    # No parameter of its own: vsperf_test reads the deployments from vsperf-config --list-tests
    # and gives VSperf --integration for the overlay ('op2p') tests.
    assert run == {
        "VSPERF_ACTION": "run",
        "SCENARIO": name,
        "INVENTORY": "lab/inventory.yaml",
        "VSPERF_TIMEOUT_S": "10440",
    }
    assert vsperf_run_budget_s(scenario) == 2 * 4 * PER_SIZE_S * 3 // 2 + 2 * 900 == 10440


@pytest.mark.parametrize("name", ["OVS_DPDK1q_VXLAN", "OVS_DPDK1q_GENEVE"])
def test_overlay_scenarios_are_measured_by_the_ovsperf_engine_by_default(name: str) -> None:
    scenario = CATALOG.get(name)
    assert scenario.engine is Engine.OVSPERF
    job = validate_job(render_job(scenario, make_options(inventory="lab/inventory.yaml"))).getroot()
    dut = [n for n, _ in _tasks(_recipe(job, "DUT"))]
    assert "/ovsperf/ovsperf_test" in dut and "/ovsperf/vsperf_test" not in dut


def test_the_ovsperf_engine_budgets_every_flow_count_of_the_conntrack_sweep() -> None:
    scenario = CATALOG.get("OVS_DPDK1q_CT")
    assert scenario.flows == (1, 1000, 100000)
    assert ovsperf_run_budget_s(scenario) == 3 * 10440
    assert sync_timeouts_s(scenario)["OVSPERF_END"] == HOST_SETUP_BUDGET_S + 3 * 10440
    assert sync_timeouts_s(scenario)["VSPERF_END"] == HOST_SETUP_BUDGET_S + 10440  # VSperf: the first only
    plan = plan_job(scenario, make_options(engine=Engine.OVSPERF))
    (run,) = [
        t
        for t in plan.recipes[1].tasks
        if t.name == "/ovsperf/ovsperf_test" and ("OVSPERF_ACTION", "run") in t.params
    ]
    assert ("OVSPERF_TIMEOUT_S", str(3 * 10440)) in run.params
    # One flow count: both engines get the same budget, as before issue 28.
    for name in ("OVS_DPDK1q", "OVS_DPDK1q_GUEST_DPDK1q", "OVS_DPDK1q_VXLAN"):
        assert ovsperf_run_budget_s(CATALOG.get(name)) == vsperf_run_budget_s(CATALOG.get(name))
