"""Tests of the rendered Beaker jobs: schema-valid for every scenario, and the designed structure."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from lxml import etree

from jobcreator.jobmodel import DEFAULT_MOONGEN_COMMIT, DEFAULT_TRAFFICGEN_COMMIT, ReserveMode
from jobcreator.render import (
    HOST_SETUP_BUDGET_S,
    plan_job,
    render_job,
    sync_timeouts_s,
    vsperf_run_budget_s,
)
from jobcreator.validate import load_schema, validate_job
from ovsperf_catalog.catalog import Catalog, load_catalog
from ovsperf_catalog.model import Engine
from tests.jobcreator.conftest import DUT, HUB_PASSWORD, KICK_REPOS, TG, make_options

SCENARIOS = load_catalog().names()
GUEST_SCENARIOS = [n for n in SCENARIOS if load_catalog().get(n).guest is not None]


def _job(catalog: Catalog, name: str, **changes: object) -> etree._Element:
    xml = render_job(catalog.get(name), make_options(**changes))
    return validate_job(xml).getroot()


def _tasks(recipe: etree._Element) -> list[tuple[str, dict[str, str]]]:
    return [
        (t.get("name", ""), {p.get("name", ""): p.get("value", "") for p in t.iterfind("params/param")})
        for t in recipe.iterfind("task")
    ]


def _recipe(job: etree._Element, role: str) -> etree._Element:
    (recipe,) = job.xpath(f"/job/recipeSet/recipe[@role='{role}']")
    return recipe  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_scenario_renders_a_schema_valid_job(catalog: Catalog, name: str) -> None:
    xml = render_job(catalog.get(name), make_options())
    doc = etree.fromstring(xml.encode())
    assert load_schema().validate(doc), load_schema().error_log
    validate_job(xml)  # schema + semantic checks


@pytest.mark.parametrize("name", SCENARIOS)
def test_one_recipe_set_with_tg_then_dut_pinned_to_their_hosts(catalog: Catalog, name: str) -> None:
    job = _job(catalog, name)
    assert len(job.findall("recipeSet")) == 1
    recipes = job.findall("recipeSet/recipe")
    assert [r.get("role") for r in recipes] == ["TRAFFICGEN", "DUT"]
    for recipe, host in zip(recipes, (TG, DUT), strict=True):
        assert recipe.xpath("hostRequires/and/hostname/@value") == [host]
        assert recipe.xpath("hostRequires/and/hostname/@op") == ["="]
        assert recipe.find("hostRequires").get("force") is None


@pytest.mark.parametrize("name", SCENARIOS)
def test_guest_recipe_present_iff_the_scenario_has_a_guest(catalog: Catalog, name: str) -> None:
    scenario = catalog.get(name)
    job = _job(catalog, name)
    guests = job.findall(".//guestrecipe")
    dut_tasks = [n for n, _ in _tasks(_recipe(job, "DUT"))]
    if scenario.guest is None:
        assert guests == []
        assert not any(n.startswith("/distribution/virt/") for n in dut_tasks)
        return
    (guest,) = guests
    assert guest.getparent() is _recipe(job, "DUT")
    assert (
        guest.get("guestargs")
        == f"--ram={scenario.guest.memory_mb} --vcpus={scenario.guest.vcpus} --file-size=20"
    )
    assert guest.find("hostRequires") is not None and len(guest.find("hostRequires")) == 0
    assert _tasks(guest) == [
        ("/distribution/check-install", {}),
        ("/ovsperf/vsperf_test", {"VSPERF_ACTION": "setup", "SCENARIO": name, "GUEST": "1"}),
    ]
    assert dut_tasks.index("/distribution/virt/install") + 1 == dut_tasks.index("/distribution/virt/start")


@pytest.mark.parametrize("name", SCENARIOS)
def test_kick_repos_distro_and_kernel_options_on_every_recipe(catalog: Catalog, name: str) -> None:
    scenario = catalog.get(name)
    job = _job(catalog, name)
    all_recipes = job.findall("recipeSet/recipe") + job.findall(".//guestrecipe")
    assert len(all_recipes) == (3 if scenario.guest else 2)
    for recipe in all_recipes:
        assert recipe.xpath("repos/repo/@url") == list(KICK_REPOS)
        names = recipe.xpath("repos/repo/@name")
        assert len(set(names)) == len(KICK_REPOS)
        assert recipe.xpath("distroRequires/and/distro_name/@value") == ["RHEL-7.3"]
        assert recipe.xpath("distroRequires/and/distro_arch/@value") == ["x86_64"]
        assert recipe.get("ks_meta") == "harness=restraint-rhts"
    for recipe in job.findall("recipeSet/recipe"):
        options = recipe.get("kernel_options_post", "").split()
        assert options == [
            "default_hugepagesz=1G",
            "hugepagesz=1G",
            "hugepages=16",
            "intel_iommu=on",
            "iommu=pt",
        ]


@pytest.mark.parametrize("name", [n for n in SCENARIOS if load_catalog().get(n).engine is Engine.VSPERF])
def test_task_order_and_parameters_follow_the_design(catalog: Catalog, name: str) -> None:
    scenario = catalog.get(name)
    collector = "ovsperf@collector.example.com:/srv/ovsperf/ci_in"
    inventory = "vsperf_configs/inventory.yaml"
    job = _job(catalog, name, collector=collector, inventory=inventory)
    timeouts = sync_timeouts_s(scenario)
    sync = "/ovsperf/perf_synchronization"
    assert _tasks(_recipe(job, "TRAFFICGEN")) == [
        ("/distribution/check-install", {}),
        (
            "/ovsperf/build_moongen",
            {
                "MOONGEN_COMMIT": DEFAULT_MOONGEN_COMMIT,
                "TRAFFICGEN_COMMIT": DEFAULT_TRAFFICGEN_COMMIT,
                "INVENTORY": inventory,
            },
        ),
        ("/ovsperf/setup_dpdk", {"INVENTORY": inventory}),
        (
            sync,
            {
                "SYNC_ACTION": "wait",
                "SYNC_STATE": "DUT_SSH_KEY",
                "SYNC_PEER": DUT,
                "SYNC_TIMEOUT_S": str(HOST_SETUP_BUDGET_S),
                "SYNC_DATA": "ssh-pubkey",
            },
        ),
        (sync, {"SYNC_ACTION": "set", "SYNC_STATE": "MOONGEN_READY", "SYNC_DATA": "ssh-hostkey"}),
        (
            sync,
            {
                "SYNC_ACTION": "wait",
                "SYNC_STATE": "VSPERF_END",
                "SYNC_PEER": DUT,
                "SYNC_TIMEOUT_S": str(timeouts["VSPERF_END"]),
            },
        ),
    ]
    virt = [("/distribution/virt/install", {}), ("/distribution/virt/start", {})] if scenario.guest else []
    assert _tasks(_recipe(job, "DUT")) == [
        ("/distribution/check-install", {}),
        ("/ovsperf/vsperf_test", {"VSPERF_ACTION": "setup", "SCENARIO": name, "INVENTORY": inventory}),
        (sync, {"SYNC_ACTION": "set", "SYNC_STATE": "DUT_SSH_KEY", "SYNC_DATA": "ssh-pubkey"}),
        *virt,
        (
            sync,
            {
                "SYNC_ACTION": "wait",
                "SYNC_STATE": "MOONGEN_READY",
                "SYNC_PEER": TG,
                "SYNC_TIMEOUT_S": str(HOST_SETUP_BUDGET_S),
                "SYNC_DATA": "ssh-hostkey",
            },
        ),
        (
            "/ovsperf/vsperf_test",
            {
                "VSPERF_ACTION": "run",
                "SCENARIO": name,
                "INVENTORY": inventory,
                "COLLECTOR": collector,
                "VSPERF_TIMEOUT_S": str(vsperf_run_budget_s(scenario)),
            },
        ),
        (sync, {"SYNC_ACTION": "set", "SYNC_STATE": "VSPERF_END"}),
    ]
    assert all(t.get("role") == "STANDALONE" for t in job.iter("task"))


def test_optional_parameters_are_left_out_when_not_given(catalog: Catalog) -> None:
    job = _job(catalog, "OVS_DPDK2q", collector=None, inventory=None)
    names = {p for p in job.xpath("//param/@name")}
    assert "INVENTORY" not in names and "COLLECTOR" not in names
    assert "VSPERF_TIMEOUT_S" in names


def test_vsperf_end_timeout_grows_with_the_scenarios_trials(catalog: Catalog) -> None:
    p2p = catalog.get("OVS_DPDK2q")  # 1 test × 4 sizes × (20 × 30 s + 120 s) × 1.5 + 900 s
    assert vsperf_run_budget_s(p2p) == 1 * 4 * (20 * 30 + 120) * 3 // 2 + 900 == 5220
    pvp = catalog.get("OVS_DPDK1q_GUEST_DPDK1q")
    assert vsperf_run_budget_s(pvp) == 2 * 4 * 720 * 3 // 2 + 2 * 900
    assert sync_timeouts_s(pvp)["VSPERF_END"] == HOST_SETUP_BUDGET_S + vsperf_run_budget_s(pvp)


def test_whiteboard_carries_tag_scenario_hosts_and_distro(catalog: Catalog) -> None:
    job = _job(catalog, "OVS_DPDK1q_GUEST_DPDK1q")
    assert job.findtext("whiteboard") == (
        f"[nightly] ovsperf OVS_DPDK1q_GUEST_DPDK1q on RHEL-7.3 x86_64: DUT {DUT}, TG {TG}"
    )
    untagged = _job(catalog, "OVS_DPDK2q", tag=None)
    assert untagged.findtext("whiteboard", "").startswith("ovsperf OVS_DPDK2q on RHEL-7.3")


def test_markup_in_the_tag_is_escaped_and_survives_intact(catalog: Catalog) -> None:
    tag = '<b>O\'Neil & "co"</b> ]]> &amp;'
    job = _job(catalog, "OVS_DPDK2q", tag=tag)
    assert job.findtext("whiteboard", "").startswith(f"[{tag}] ")
    assert job.find(".//b") is None


@pytest.mark.parametrize(("hours", "seconds"), [(99.0, 356400), (4.0, 14400), (0.5, 1800)])
def test_reserve_hours_become_reservesys_seconds_on_both_hosts(
    catalog: Catalog, hours: float, seconds: int
) -> None:
    job = _job(catalog, "OVS_DPDK1q_GUEST_DPDK1q", reserve_hours=hours)
    for recipe in job.findall("recipeSet/recipe"):
        assert recipe.xpath("reservesys/@duration") == [str(seconds)]
        assert recipe.xpath("reservesys/@when") == ["always"]
    assert job.xpath("//guestrecipe/reservesys") == []
    assert "/ovsperf/sleeper" not in job.xpath("//task/@name")


@pytest.mark.parametrize("hours", [None, 0.0])
def test_no_reservation_without_reserve(catalog: Catalog, hours: float | None) -> None:
    job = _job(catalog, "OVS_DPDK2q", reserve_hours=hours)
    assert job.xpath("//reservesys") == []


def test_sleeper_mode_adds_the_sleeper_task_last_on_both_hosts(catalog: Catalog) -> None:
    job = _job(catalog, "OVS_DPDK2q", reserve_hours=1.5, reserve_mode=ReserveMode.SLEEPER)
    assert job.xpath("//reservesys") == []
    for role in ("TRAFFICGEN", "DUT"):
        assert _tasks(_recipe(job, role))[-1] == ("/ovsperf/sleeper", {"SLEEP_HOURS": "1.5"})


def test_family_variant_and_arch_select_the_distro(catalog: Catalog) -> None:
    job = _job(
        catalog, "OVS_DPDK1q_GUEST_DPDK1q", distro="family:CentOSStream9", variant="BaseOS", arch="aarch64"
    )
    for recipe in job.findall("recipeSet/recipe") + job.findall(".//guestrecipe"):
        req = recipe.find("distroRequires/and")
        assert [(e.tag, e.get("value")) for e in req] == [
            ("distro_family", "CentOSStream9"),
            ("distro_variant", "BaseOS"),
            ("distro_arch", "aarch64"),
        ]


def test_task_repo_fetches_our_tasks_and_only_ours(catalog: Catalog) -> None:
    url = "https://git.example.com/ovsperf/archive/main.tar.gz"
    job = _job(catalog, "OVS_DPDK1q_GUEST_DPDK1q", task_repo=url)
    for task in job.iter("task"):
        name = task.get("name", "")
        fetch = task.find("fetch")
        if name.startswith("/ovsperf/"):
            assert (
                fetch is not None
                and fetch.get("url") == f"{url}#beaker_tasks/{name.removeprefix('/ovsperf/')}"
            )
            assert task.index(fetch) == 0  # <fetch> before <params>, as the schema wants
        else:
            assert fetch is None


def test_no_kick_repos_means_no_repos_element(catalog: Catalog) -> None:
    job = _job(catalog, "OVS_DPDK1q_GUEST_DPDK1q", kick_repos=())
    assert job.xpath("//repos") == []


def test_the_job_holds_no_secret(catalog: Catalog) -> None:
    for name in SCENARIOS:
        xml = render_job(catalog.get(name), make_options(collector="ovsperf@c.example.com:/srv/ci_in"))
        assert HUB_PASSWORD not in xml
        lowered = xml.lower()
        for word in ("password", "passwd", "secret", "token", "private key", "begin rsa"):
            assert word not in lowered, (name, word)


def test_plan_is_pure_and_repeatable(catalog: Catalog) -> None:
    scenario = catalog.get("OVS_DPDK2q_GUEST_DPDK2q")
    options = make_options()
    assert plan_job(scenario, options) == plan_job(scenario, options)
    assert render_job(scenario, options) == render_job(scenario, options)


def test_design_example_matches_the_reviewed_golden_job(catalog: Catalog) -> None:
    """The design's example job, reviewed once by hand; any change to it must be deliberate."""
    golden = Path(__file__).parent.parent / "fixtures" / "jobcreator" / "OVS_DPDK1q_GUEST_DPDK1q.xml"
    xml = render_job(
        catalog.get("OVS_DPDK1q_GUEST_DPDK1q"),
        make_options(
            collector="ovsperf@collector.example.com:/srv/ovsperf/ci_in",
            inventory="vsperf_configs/inventory.yaml",
        ),
    )

    def canonical(data: bytes) -> bytes:
        return etree.tostring(etree.fromstring(data), method="c14n2", strip_text=True)

    assert canonical(xml.encode()) == canonical(golden.read_bytes())


def test_a_tiny_reservation_rounds_up_to_a_valid_duration(catalog: Catalog) -> None:
    job = _job(catalog, "OVS_DPDK2q", reserve_hours=0.0001)
    assert job.xpath("//reservesys/@duration") == ["1", "1"]


def test_any_printable_tag_round_trips_through_the_xml(catalog: Catalog) -> None:
    """Deterministic pseudo-random tags over XML-special, non-ASCII and astral characters."""
    rng = random.Random(20181105)
    alphabet = (
        "<>&\"' ]]>?-/\\=;:#%{}$`" + "abcXYZ019" + "äöüßéçñ€µ" + "中文日本語" + "\U0001f680\u00a0\u2028"
    )
    scenario = catalog.get("OVS_DPDK2q")
    checked = 0
    for _ in range(60):
        tag = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60)))
        if not tag.isprintable():  # e.g. U+2028 LINE SEPARATOR: refused by JobOptions
            continue
        job = validate_job(render_job(scenario, make_options(tag=tag))).getroot()
        assert job.findtext("whiteboard", "").startswith(f"[{tag}] "), tag
        checked += 1
    assert checked >= 20
