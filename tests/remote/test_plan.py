"""The remote plan is the Beaker job's plan: for every catalog scenario, each host's steps are the
``/ovsperf/*`` tasks of its recipe in the rendered job XML, in order, with the same parameters."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

from jobcreator.jobmodel import JobOptions
from jobcreator.render import render_job
from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import Engine, VsperfTrafficgen
from ovsperf_common.errors import FieldError
from remote.cli import main
from remote.executor import REPO_ROOT, upload_files
from remote.plan import remote_plan, trex_tarball_url
from tests.vsperf_configs.trexinv import TREX_DUT, TREX_TG, TREX_URL, write_trex_inventory
from vsperf_configs.inventory import Inventory, load_inventory

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
    measuring, action = (
        ("vsperf_test", "VSPERF_ACTION")
        if CATALOG.get(scenario).engine is Engine.VSPERF
        else ("ovsperf_test", "OVSPERF_ACTION")
    )
    assert (dut.steps[-2].task, dict(dut.steps[-2].params)[action]) == (measuring, "run")


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


# ---- TRex (issue 29): the inventory's generator chooses setup_trex in place of build_moongen ----


def _trex_inventory(tmp_path: Path, **fields: str) -> Inventory:
    return load_inventory(write_trex_inventory(tmp_path / "trex-inventory.yaml", **fields))


def _recipe_tasks(job_xml: str, role: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """(task, params) of the /ovsperf/* tasks of one host recipe, Beaker's reservation left out."""
    (recipe,) = [r for r in etree.fromstring(job_xml.encode()).iter("recipe") if r.get("role") == role]
    return [
        (t.get("name").removeprefix("/ovsperf/"), [(p.get("name"), p.get("value")) for p in t.iter("param")])
        for t in recipe.findall("task")
        if t.get("name").startswith("/ovsperf/") and t.get("name") != "/ovsperf/sleeper"
    ]


@pytest.mark.parametrize("chosen_by", ["option", "inventory"])
@pytest.mark.parametrize("scenario", sorted(CATALOG.scenarios))
def test_the_trex_plan_is_its_beaker_job_s(scenario: str, chosen_by: str, tmp_path: Path) -> None:
    """The Beaker job jobcreator renders with ``--generator trex`` and ovsperf-remote's plan, chosen
    by ``--generator trex`` or by the inventory alone, are the same steps with the same parameters."""
    options = JobOptions(
        trafficgen_host=TREX_TG,
        dut_host=TREX_DUT,
        distro="RHEL-9.4",
        inventory=INVENTORY,
        collector=COLLECTOR,
        engine=Engine.VSPERF,
        generator=VsperfTrafficgen.TREX,
    )
    job = render_job(CATALOG.get(scenario), options)
    choice: dict[str, object] = (
        {"generator": VsperfTrafficgen.TREX}
        if chosen_by == "option"
        else {"local_inventory": _trex_inventory(tmp_path)}
    )
    tg, dut = remote_plan(
        CATALOG.get(scenario),
        TREX_TG,
        TREX_DUT,
        inventory=INVENTORY,
        collector=COLLECTOR,
        engine=Engine.VSPERF,
        **choice,  # type: ignore[arg-type]
    )
    for plan in (tg, dut):
        assert [(s.task, list(s.params)) for s in plan.steps] == _recipe_tasks(job, plan.role)
    assert "build_moongen" not in [s.task for s in tg.steps]
    assert [s.task for s in tg.steps].count("setup_trex") == 3
    assert [s.task for s in dut.steps].count("setup_trex") == 1


def test_the_trex_plan_by_value(tmp_path: Path) -> None:
    tg, dut = remote_plan(
        CATALOG.get("OVS_DPDK1q"),
        TREX_TG,
        TREX_DUT,
        inventory=INVENTORY,
        collector=COLLECTOR,
        local_inventory=_trex_inventory(tmp_path),
    )
    inv = ("INVENTORY", INVENTORY)
    assert [(s.task, s.params) for s in tg.steps] == [
        ("setup_trex", (inv,)),
        ("setup_dpdk", (inv,)),
        ("setup_trex", (("SETUP_TREX_ACTION", "start"), inv)),
        (
            "perf_synchronization",
            (
                ("SYNC_ACTION", "wait"),
                ("SYNC_STATE", "DUT_SSH_KEY"),
                ("SYNC_PEER", TREX_DUT),
                ("SYNC_TIMEOUT_S", "14400"),
                ("SYNC_DATA", "ssh-pubkey"),
            ),
        ),
        (
            "perf_synchronization",
            (("SYNC_ACTION", "set"), ("SYNC_STATE", "MOONGEN_READY"), ("SYNC_DATA", "ssh-hostkey")),
        ),
        (
            "perf_synchronization",
            (
                ("SYNC_ACTION", "wait"),
                ("SYNC_STATE", "VSPERF_END"),
                ("SYNC_PEER", TREX_DUT),
                ("SYNC_TIMEOUT_S", "19620"),
            ),
        ),
        ("setup_trex", (("SETUP_TREX_ACTION", "stop"), inv)),
    ]
    assert [(s.task, s.params) for s in dut.steps] == [
        ("vsperf_test", (("VSPERF_ACTION", "setup"), ("SCENARIO", "OVS_DPDK1q"), inv)),
        ("setup_trex", (inv,)),
        (
            "perf_synchronization",
            (("SYNC_ACTION", "set"), ("SYNC_STATE", "DUT_SSH_KEY"), ("SYNC_DATA", "ssh-pubkey")),
        ),
        (
            "perf_synchronization",
            (
                ("SYNC_ACTION", "wait"),
                ("SYNC_STATE", "MOONGEN_READY"),
                ("SYNC_PEER", TREX_TG),
                ("SYNC_TIMEOUT_S", "14400"),
                ("SYNC_DATA", "ssh-hostkey"),
            ),
        ),
        (
            "vsperf_test",
            (
                ("VSPERF_ACTION", "run"),
                ("SCENARIO", "OVS_DPDK1q"),
                inv,
                ("COLLECTOR", COLLECTOR),
                ("VSPERF_TIMEOUT_S", "5220"),
            ),
        ),
        ("perf_synchronization", (("SYNC_ACTION", "set"), ("SYNC_STATE", "VSPERF_END"))),
    ]


def test_the_generator_follows_the_inventory_and_the_option_overrides_only_in_agreement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inventory = str(write_trex_inventory(tmp_path / "inv.yaml"))
    args = ["plan", "--config", "OVS_DPDK1q", "--tg", TREX_TG, "--dut", TREX_DUT, "--inventory", inventory]
    first = (
        f"TRAFFICGEN {TREX_TG}:\n  1. setup_trex INVENTORY={inventory}\n"
        f"  2. setup_dpdk INVENTORY={inventory}\n"
    )
    assert main(args) == 0
    assert capsys.readouterr().out.startswith(first)
    assert main([*args, "--generator", "trex"]) == 0
    assert capsys.readouterr().out.startswith(first)
    assert main([*args, "--generator", "moongen"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"ovsperf-remote: error: field '--generator': 'moongen' disagrees with the inventory '{inventory}': "
        f"its DUT '{TREX_DUT}' has 'trafficgen.generator: trex'. Leave --generator out to follow the "
        "inventory, or change the one that is wrong.\n"
    )
    # The example inventory's DUT drives MoonGen: --generator trex disagrees with it, named likewise.
    example = ["plan", "--config", "OVS_DPDK1q", "--tg", TG, "--dut", DUT, "--inventory", INVENTORY]
    assert main([*example, "--generator", "trex"]) == 2
    assert "'trex' disagrees with the inventory" in capsys.readouterr().err
    assert main([*example, "--generator", "moongen"]) == 0
    assert capsys.readouterr().out.startswith(f"TRAFFICGEN {TG}:\n  1. build_moongen MOONGEN_COMMIT=")
    # An inventory on the hosts is not read here: the option alone chooses.
    on_hosts = ["plan", "--config", "OVS_DPDK1q", "--tg", TG, "--dut", DUT, "--inventory", "/etc/inv.yaml"]
    assert main([*on_hosts, "--generator", "trex"]) == 0
    assert capsys.readouterr().out.startswith(f"TRAFFICGEN {TG}:\n  1. setup_trex INVENTORY=/etc/inv.yaml\n")
    assert main(["plan", "--config", "OVS_DPDK1q", "--tg", TG, "--dut", DUT, "--generator", "t-rex"]) == 2
    assert capsys.readouterr().err == (
        "ovsperf-remote: error: field '--generator': 't-rex' is not a valid vsperf trafficgen; "
        "expected one of 'moongen', 'trex'.\n"
    )


def test_trex_is_refused_with_the_ovsperf_engine_as_jobcreator_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inventory = str(write_trex_inventory(tmp_path / "inv.yaml"))
    args = ["plan", "--tg", TREX_TG, "--dut", TREX_DUT, "--inventory", inventory]
    refusal = (
        "Option '--generator': 'trex' is what VSperf drives (engine 'vsperf'); scenario '{}' runs on the "
        "engine 'ovsperf', whose generator is ovsperf-trafficgen."
    )
    assert main([*args, "--config", "OVS_DPDK1q", "--engine", "ovsperf", "--generator", "trex"]) == 2
    assert capsys.readouterr().err == f"ovsperf-remote: error: {refusal.format('OVS_DPDK1q')}\n"
    assert main([*args, "--config", "OVS_DPDK1q_VXLAN", "--generator", "trex"]) == 2  # its engine: ovsperf
    assert capsys.readouterr().err == f"ovsperf-remote: error: {refusal.format('OVS_DPDK1q_VXLAN')}\n"
    # The inventory's generator is VSperf's: the engine ovsperf runs its own generator, unchanged.
    ovsperf_job = JobOptions(
        trafficgen_host=TREX_TG,
        dut_host=TREX_DUT,
        distro="RHEL-9.4",
        inventory=inventory,
        engine=Engine.OVSPERF,
    )
    for extra in (["--config", "OVS_DPDK1q", "--engine", "ovsperf"], ["--config", "OVS_DPDK1q_VXLAN"]):
        assert main([*args, *extra]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"TRAFFICGEN {TREX_TG}:\n  1. build_trafficgen\n  2. setup_dpdk INVENTORY=")
        scenario = CATALOG.get(extra[1])
        tg, dut = remote_plan(
            scenario, TREX_TG, TREX_DUT, inventory=inventory, local_inventory=load_inventory(Path(inventory)),
            engine=Engine.OVSPERF,
        )  # fmt: skip
        job = render_job(scenario, ovsperf_job)
        assert [(s.task, list(s.params)) for s in tg.steps] == _recipe_tasks(job, "TRAFFICGEN")
        assert [(s.task, list(s.params)) for s in dut.steps] == _recipe_tasks(job, "DUT")


def test_the_tarball_url_comes_from_the_dut_s_peer_on_the_tg_given(tmp_path: Path) -> None:
    inventory = _trex_inventory(tmp_path)
    assert trex_tarball_url(inventory, TREX_TG, TREX_DUT) == TREX_URL
    assert trex_tarball_url(inventory, "192.0.2.20", TREX_DUT) == TREX_URL  # the peer's address
    assert trex_tarball_url(inventory, TREX_TG.upper(), "192.0.2.99") == TREX_URL  # the only DUT
    with pytest.raises(FieldError) as raised:
        trex_tarball_url(inventory, "moongen01.example.com", TREX_DUT)
    assert raised.value.field == "--tg"
    assert raised.value.reason == (
        f"'moongen01.example.com' is not the traffic generator of the DUT '{TREX_DUT}' in "
        f"'{inventory.path}', which drives TRex on '{TREX_TG}' (address '192.0.2.20'): setup_trex would "
        "install another host's TRex."
    )
    example = load_inventory(REPO_ROOT / INVENTORY)  # a MoonGen inventory: no TRex tarball anywhere
    with pytest.raises(FieldError) as raised:
        trex_tarball_url(example, "moongen01.example.com", DUT)
    assert raised.value.field == "--inventory"
    assert raised.value.reason == (
        f"'{example.path}' gives no TRex tarball for the traffic generator 'moongen01.example.com': "
        "setup_trex needs its 'trex:' record (url, sha256, install_dir, ports)."
    )
