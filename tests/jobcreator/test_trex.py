"""``--generator trex``: the TG installs and runs TRex (setup_trex) instead of building MoonGen."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

from jobcreator.cli import main
from jobcreator.errors import JobCreatorError
from jobcreator.render import plan_job, render_job
from jobcreator.validate import load_schema, validate_job
from ovsperf_catalog.catalog import Catalog, load_catalog
from ovsperf_catalog.model import Engine, VsperfTrafficgen
from ovsperf_common.exitcodes import ExitCode
from tests.jobcreator.conftest import DUT, TG, make_options
from tests.vsperf_configs.trexinv import TREX_DUT, TREX_TG, write_trex_inventory

REPO = Path(__file__).resolve().parents[2]

SCENARIOS = load_catalog().names()
INVENTORY = "lab/inventory.yaml"


def _tasks(recipe: etree._Element) -> list[tuple[str, dict[str, str]]]:
    return [
        (t.get("name", ""), {p.get("name", ""): p.get("value", "") for p in t.iterfind("params/param")})
        for t in recipe.iterfind("task")
    ]


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_trex_job_is_schema_valid_with_setup_trex_in_place_of_build_moongen(
    catalog: Catalog, name: str
) -> None:
    scenario = catalog.get(name)
    options = make_options(generator=VsperfTrafficgen.TREX, inventory=INVENTORY, engine=Engine.VSPERF)
    xml = render_job(scenario, options)
    assert load_schema().validate(etree.fromstring(xml.encode())), load_schema().error_log
    job = validate_job(xml).getroot()
    (tg,) = job.xpath("/job/recipeSet/recipe[@role='TRAFFICGEN']")
    (dut,) = job.xpath("/job/recipeSet/recipe[@role='DUT']")
    inv = {"INVENTORY": INVENTORY}
    tg_tasks = _tasks(tg)
    names = [n for n, _ in tg_tasks]
    assert "/ovsperf/build_moongen" not in names
    assert names[:8] == [
        "/distribution/check-install",
        "/ovsperf/setup_trex",
        "/ovsperf/setup_dpdk",
        "/ovsperf/setup_trex",
        "/ovsperf/perf_synchronization",
        "/ovsperf/perf_synchronization",
        "/ovsperf/perf_synchronization",
        "/ovsperf/setup_trex",
    ]
    assert tg_tasks[1][1] == inv
    assert tg_tasks[2][1] == inv
    assert tg_tasks[3][1] == {"SETUP_TREX_ACTION": "start", **inv}
    assert tg_tasks[4][1]["SYNC_STATE"] == "DUT_SSH_KEY"
    assert tg_tasks[5][1]["SYNC_STATE"] == "MOONGEN_READY"
    assert tg_tasks[6][1]["SYNC_STATE"] == "VSPERF_END"
    assert tg_tasks[7][1] == {"SETUP_TREX_ACTION": "stop", **inv}
    dut_names = [n for n, _ in _tasks(dut)]
    setup = dut_names.index("/ovsperf/vsperf_test")
    assert dut_names[setup + 1] == "/ovsperf/setup_trex"
    assert dut_names.count("/ovsperf/setup_trex") == 1
    assert dut_names.index("/ovsperf/setup_trex") < dut_names.index("/ovsperf/vsperf_test", setup + 1)


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_moongen_job_has_no_trex_task(catalog: Catalog, name: str) -> None:
    explicit = render_job(catalog.get(name), make_options(generator=VsperfTrafficgen.MOONGEN))
    assert explicit == render_job(catalog.get(name), make_options())
    assert "setup_trex" not in explicit


def test_trex_with_the_ovsperf_engine_is_refused(catalog: Catalog) -> None:
    with pytest.raises(JobCreatorError, match="Option '--generator': 'trex' is what VSperf drives"):
        plan_job(
            catalog.get("OVS_DPDK1q"), make_options(generator=VsperfTrafficgen.TREX, engine=Engine.OVSPERF)
        )


def test_the_command_line_takes_generator_trex(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--host", TG, "--host", DUT, "--config", "OVS_DPDK1q", "--distro", "RHEL-9.2"]
    argv += ["--inventory", "lab/no-such-local-inventory.yaml"]  # a path on the hosts: not read here
    assert main([*argv, "--generator", "trex", "--engine", "vsperf"]) == ExitCode.OK
    xml = capsys.readouterr().out
    validate_job(xml)
    assert xml.count('name="/ovsperf/setup_trex"') == 4
    assert main([*argv, "--generator", "ixia"]) == ExitCode.ERROR
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("jobcreator: error: Option '--generator':") and "'moongen', 'trex'" in line


def _argv(*extra: str, tg: str = TREX_TG, dut: str = TREX_DUT) -> list[str]:
    return ["--host", tg, "--host", dut, "--config", "OVS_DPDK1q", "--distro", "RHEL-9.2", *extra]


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    return line


def test_generator_trex_without_an_inventory_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_argv("--generator", "trex")) == ExitCode.ERROR
    assert _error(capsys) == (
        "jobcreator: error: Option '--generator': 'trex' needs --inventory: setup_trex installs TRex from "
        "the traffic generator's 'trex:' record there (url, sha256, install_dir, ports)."
    )


def test_a_local_inventory_decides_and_a_mismatch_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inventory = write_trex_inventory(tmp_path / "inventory.yaml")
    # Without --generator: the inventory's (trex).
    assert main(_argv("--inventory", str(inventory))) == ExitCode.OK
    xml = capsys.readouterr().out
    assert xml.count('name="/ovsperf/setup_trex"') == 4 and "build_moongen" not in xml
    # --generator moongen against it: refused, naming the field.
    assert main(_argv("--inventory", str(inventory), "--generator", "moongen")) == ExitCode.ERROR
    line = _error(capsys)
    assert line.startswith("jobcreator: error: Option '--generator': 'moongen' disagrees with the inventory")
    assert f"its DUT '{TREX_DUT}' has 'trafficgen.generator: trex'" in line
    # A MoonGen inventory and --generator trex: refused the other way round.
    example = REPO / "vsperf_configs" / "inventory.example.yaml"
    argv = _argv(
        "--inventory",
        str(example),
        "--generator",
        "trex",
        tg="moongen01.example.com",
        dut="dut01.example.com",
    )
    assert main(argv) == ExitCode.ERROR
    assert "'trex' disagrees with the inventory" in _error(capsys)
    # And agreeing: the same job as without --generator.
    assert main(_argv("--inventory", str(inventory), "--generator", "trex")) == ExitCode.OK
    assert capsys.readouterr().out == xml


def test_the_moongen_job_is_unchanged_by_a_moongen_inventory(capsys: pytest.CaptureFixture[str]) -> None:
    example = str(REPO / "vsperf_configs" / "inventory.example.yaml")
    hosts = {"tg": "moongen01.example.com", "dut": "dut01.example.com"}
    assert main(_argv("--inventory", example, **hosts)) == ExitCode.OK
    followed = capsys.readouterr().out
    assert main(_argv("--inventory", example, "--generator", "moongen", **hosts)) == ExitCode.OK
    assert capsys.readouterr().out == followed
    assert "build_moongen" in followed and "setup_trex" not in followed
