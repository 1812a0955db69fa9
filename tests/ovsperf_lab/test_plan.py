"""The planner: CPU assignment and refusals before anything starts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import VsperfTest
from ovsperf_lab.errors import LabError, RefusedScenarioError
from ovsperf_lab.machine import MachineFacts, probe_machine
from ovsperf_lab.plan import LabOptions, SearchMethod, VnfKind, plan_run

CATALOG = load_catalog()


@pytest.fixture(scope="module")
def here() -> MachineFacts:
    return probe_machine()


def facts(here: MachineFacts, **kw: object) -> MachineFacts:
    base = dict(
        cpus=(0, 1),
        is_root=True,
        hugetlbfs_mounted=True,
        hugepages_2m_free=4096,
        testpmd="/usr/bin/dpdk-testpmd",
    )
    base.update(kw)
    return dataclasses.replace(here, **base)  # type: ignore[arg-type]


def test_p2p_on_two_cpus(here: MachineFacts) -> None:
    plan = plan_run(CATALOG.get("OVS_DPDK1q"), facts(here), LabOptions(frame_sizes_bytes=(1518, 64)))
    assert plan.cpus.generator_cpu == 0 and plan.cpus.pmd_cpus == (1,)
    assert plan.frame_sizes_bytes == (64, 1518)
    assert plan.vnf is None and plan.warnings == ()
    assert plan.loss_ratio_limit == 0.0
    assert plan.search_trial_s == 30 and plan.validation_trial_s == 120


def test_options_override_scenario(here: MachineFacts) -> None:
    opts = LabOptions(search_trial_s=1, validation_trial_s=2, loss_percent=0.5, search=SearchMethod.BINARY)
    plan = plan_run(CATALOG.get("OVS_DPDK1q"), facts(here), opts)
    assert (plan.search_trial_s, plan.validation_trial_s, plan.loss_ratio_limit) == (1, 2, 0.005)


def test_multiqueue_uses_more_pmds_when_cores_allow(here: MachineFacts) -> None:
    plan = plan_run(CATALOG.get("OVS_DPDK2q"), facts(here, cpus=(0, 1, 2, 3)), LabOptions())
    assert plan.cpus.pmd_cpus == (1, 2) and plan.queues == 2
    small = plan_run(CATALOG.get("OVS_DPDK2q"), facts(here), LabOptions())
    assert small.cpus.pmd_cpus == (1,) and small.queues == 2


def test_pvp_testpmd_shares_pmd_cpu_with_warning(here: MachineFacts) -> None:
    plan = plan_run(CATALOG.get("OVS_DPDK1q_GUEST_DPDK1q"), facts(here), LabOptions())
    assert plan.vnf is VnfKind.TESTPMD
    assert plan.cpus.vnf_cpu == 1
    assert "shares CPU 1 with an OVS PMD thread" in plan.warnings[0]
    roomy = plan_run(CATALOG.get("OVS_DPDK1q_GUEST_DPDK1q"), facts(here, cpus=(0, 1, 2)), LabOptions())
    assert roomy.cpus.vnf_cpu == 2 and roomy.warnings == ()


@pytest.mark.parametrize(
    "scenario,kw,options,expected",
    [
        (
            "OVS_VANILLA_GUEST_linuxbridge",
            {"kernel_ovs_module": False},
            {},
            "needs the kernel 'openvswitch' module",
        ),
        ("OVS_DPDK1q", {}, {"pmd_cores": 2}, "2 OVS PMD threads need 3 CPUs"),
        ("OVS_DPDK1q", {"cpus": (0,)}, {}, "at least 2 CPUs"),
        ("OVS_DPDK1q_GUEST_linuxbridge", {}, {}, "'linux_bridge' guest needs a guest image"),
        ("OVS_DPDK1q", {"is_root": False}, {}, "DPDK needs root"),
        ("OVS_DPDK1q", {"hugepages_2m_free": 10}, {}, "free 2 MB hugepages are needed"),
        ("OVS_DPDK1q", {"ovs_vswitchd_dpdk": None}, {}, "install 'openvswitch-switch-dpdk'"),
        ("OVS_DPDK1q_GUEST_DPDK1q", {"testpmd": None}, {}, "PVP needs 'dpdk-testpmd'"),
        (
            "OVS_DPDK1q_GUEST_DPDK1q",
            {"qemu": None},
            {"guest_image": Path("/nonexistent.qcow2")},
            "QEMU is missing",
        ),
    ],
)
def test_refusals(
    here: MachineFacts, scenario: str, kw: dict[str, object], options: dict[str, object], expected: str
) -> None:
    with pytest.raises(RefusedScenarioError, match=expected) as info:
        plan_run(CATALOG.get(scenario), facts(here, **kw), LabOptions(**options))  # type: ignore[arg-type]
    assert info.value.scenario == scenario
    assert str(info.value).startswith(f"Scenario '{scenario}' cannot run on this machine:")


def test_all_reasons_listed_at_once(here: MachineFacts) -> None:
    with pytest.raises(RefusedScenarioError) as info:
        plan_run(
            CATALOG.get("OVS_VANILLA_GUEST_linuxbridge"),
            facts(here, kernel_ovs_module=False, is_root=False),
            LabOptions(),
        )
    assert len(info.value.reasons) == 3


def test_unknown_test_and_bad_options(here: MachineFacts) -> None:
    with pytest.raises(LabError, match="has no test pvp_tput"):
        plan_run(CATALOG.get("OVS_DPDK1q"), facts(here), LabOptions(tests=(VsperfTest.PVP_TPUT,)))
    with pytest.raises(LabError, match="--frame-sizes"):
        LabOptions(frame_sizes_bytes=(63,))
    with pytest.raises(LabError, match="--loss"):
        LabOptions(loss_percent=100, search=SearchMethod.BINARY)
    with pytest.raises(LabError, match="--search-time"):
        LabOptions(search_trial_s=0, search=SearchMethod.BINARY)
    for bad in (100, 128, 6000, 65536):
        with pytest.raises(LabError, match=r"--ring-size' must be a power of two in \[256, 32768\]"):
            LabOptions(ring_size=bad)
    assert LabOptions(ring_size=256).ring_size == 256 and LabOptions().ring_size == 8192
    for bad in (0, 1_048_577):
        with pytest.raises(
            LabError, match=r"--flows' must be in \[1, 1048576\] \(the most flows per direction"
        ):
            LabOptions(flows=bad)
    assert LabOptions(flows=1_048_576).flows == 1_048_576
    # --tunnel-option: one OVS option of plain text; what OVS's database syntax would split (quotes,
    # braces, commas, blanks) or what would break a log line is refused before OVS sees it.
    good = (("remote_ip", "198.19.254.2"), ("dst_port", "4790"), ("csum", "true"), ("remote_ip", "fd00::2"))
    assert LabOptions(tunnel_options=good).tunnel_options == good
    for key, value in (("remote_ip", 'x",key="1'), ("key", "{a=b}"), ("csum", "true,x"), ("csum", "a b"),
                       ("csum", "line\nbreak"), ("Remote_ip", "1.2.3.4"), ("", "1"), ("csum", ""),
                       ("rémote", "1"), ("csum", "é")):  # fmt: skip
        with pytest.raises(LabError, match="Option '--tunnel-option' must be KEY=VALUE") as caught:
            LabOptions(tunnel_options=((key, value),))
        assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"loss_percent": 1.0}, "'--loss' applies to '--search binary'"),
        ({"search_trial_s": 1.0}, "'--search-time' applies to '--search binary'"),
        ({"validation_trial_s": 1.0}, "'--validation-time' applies to '--search binary'"),
        ({"goals_percent": ()}, "'--goal' must be given once or twice"),
        ({"goals_percent": (0.0, 0.1, 0.5)}, "'--goal' must be given once or twice"),
        ({"goals_percent": (0.5, 0.5)}, "with different values"),
        ({"goals_percent": (0.0, 100.0)}, r"'--goal' must be loss percentages in \[0, 100\)"),
        ({"goals_percent": (-1.0,)}, "'--goal' must be loss percentages"),
        ({"goals_percent": (float("nan"),)}, "'--goal' must be loss percentages"),
        ({"goal_width_percent": 0.0}, "'--goal-width'"),
        ({"exceed_ratio": 1.0}, "'--exceed-ratio'"),
        ({"exceed_ratio": -0.1}, "'--exceed-ratio'"),
        ({"final_trial_s": 0.0}, "'--final-trial-duration'"),
        ({"final_trial_s": 1e6}, "'--final-trial-duration'"),
        ({"duration_sum_s": 0.5}, "initial <= final <= duration sum"),
        ({"search_duration_max_s": float("inf")}, "'--search-duration-max'"),
        ({"latency_levels_percent": (50.0, 150.0)}, "'--latency-loads'"),
        ({"latency_levels_percent": (50.0, 50.0)}, "'--latency-loads'"),
        ({"latency_trial_s": 0.0}, "'--latency-time'"),
    ],
)
def test_mlr_options_are_checked_and_name_the_option(changes: dict[str, object], message: str) -> None:
    with pytest.raises(LabError, match=message):
        LabOptions(**changes)  # type: ignore[arg-type]


def test_mlr_is_the_default_with_csits_parameters() -> None:
    options = LabOptions()
    assert options.search is SearchMethod.MLR
    config = options.mlr_config(64, 14_880_952.0)
    assert config.loss_ratio_goals == (0.0, 0.005)
    assert (config.exceed_ratio, config.relative_width) == (0.5, 0.005)
    assert (config.initial_trial_s, config.final_trial_s, config.duration_sum_s) == (1.0, 1.0, 21.0)
    assert config.search_duration_max_s == 1200.0 and config.min_rate_pps == 9001.0
    assert options.latency_levels_percent == (0.0, 10.0, 50.0, 90.0)
    # Goals are searched in ascending order whatever order they were given in.
    assert LabOptions(goals_percent=(0.5, 0.0)).mlr_config(64, 1e6).loss_ratio_goals == (0.0, 0.005)
    short = LabOptions(final_trial_s=0.5, duration_sum_s=2.0).mlr_config(64, 1e6)
    assert (short.initial_trial_s, short.final_trial_s) == (0.5, 0.5)


def test_a_dut_with_isolated_cpus_runs_pmds_outside_this_process_s_affinity(here: MachineFacts) -> None:
    """tuned cpu-partitioning keeps the lab on CPU 0; the inventory's PMD CPU 1 is isolated but pinnable."""
    from ovsperf_lab.generators.sshhost import SshTarget

    isolated = facts(here, cpus=(0,), pinnable_cpus=(0, 1))
    wire = {"dut_ports": ("0000:03:00.0", "0000:03:00.1"), "tg_ports": ("0000:04:00.0", "0000:04:00.1")}
    options = LabOptions(pmd_cpus=(1,), lcore_cpu=0, tg_ssh=SshTarget("tg"), **wire)  # type: ignore[arg-type]
    plan = plan_run(CATALOG.get("OVS_DPDK1q"), isolated, options)
    assert (plan.cpus.pmd_cpus, plan.cpus.ovs_lcore_cpu) == ((1,), 0)
    # A CPU outside the cpuset is refused, naming it and what the cpuset has.
    with pytest.raises(
        RefusedScenarioError, match=r"name CPUs 2 this process may not pin threads to \(its cpuset has 0,1\)"
    ):
        plan_run(CATALOG.get("OVS_DPDK1q"), isolated, dataclasses.replace(options, pmd_cpus=(2,)))
    # A generator that runs here still needs a CPU beside the PMD's count.
    with pytest.raises(RefusedScenarioError, match="The lab needs at least 2 CPUs"):
        plan_run(CATALOG.get("OVS_DPDK1q"), isolated, LabOptions(pmd_cores=1))


@pytest.mark.parametrize(
    ("text", "cpus"), [("0", (0,)), ("0-3,8", (0, 1, 2, 3, 8)), (" 1,3-4\n", (1, 3, 4)), ("2,2", (2,))]
)
def test_cpu_lists_parse_as_linux_writes_them(text: str, cpus: tuple[int, ...]) -> None:
    from ovsperf_lab.machine import parse_cpulist

    assert parse_cpulist(text) == cpus


@pytest.mark.parametrize("text", ["", "a", "3-1", "1;2", "-1", "1-", "123456789012"])
def test_a_cpu_list_that_is_not_one_is_refused(text: str) -> None:
    from ovsperf_lab.machine import parse_cpulist

    with pytest.raises(ValueError, match="is not a CPU list"):
        parse_cpulist(text)


def test_the_minimum_load_reaches_mlrsearch_and_the_latency_levels() -> None:
    from ovsperf_lab.search.latency import level_load_pps

    options = LabOptions(min_load_pps=1000.0)
    assert options.mlr_config(64, 1e6).min_rate_pps == 1000.0
    assert LabOptions().mlr_config(64, 1e6).min_rate_pps == 9001.0  # CSIT's
    assert level_load_pps(0.0, 1500.0, options.min_load_pps) == 1000.0  # not 9001, above the PDR
    with pytest.raises(LabError, match=r"Option '--min-load' must be within 1 and 1e9 pps, got 0\."):
        LabOptions(min_load_pps=0.0)


def test_overlays_need_the_trafficgen_generator_here_or_on_a_tg_host(here: MachineFacts) -> None:
    from ovsperf_lab.generators.sshhost import SshTarget

    scenario = CATALOG.get("OVS_DPDK1q_VXLAN")
    with pytest.raises(
        RefusedScenarioError, match=r"run with the 'trafficgen' generator only .* drop '--generator'"
    ):
        plan_run(scenario, facts(here), LabOptions(generator="trex"))
    wire = {"dut_ports": ("0000:03:00.0", "0000:03:00.1"), "tg_ports": ("0000:04:00.0", "0000:04:00.1")}
    options = LabOptions(pmd_cpus=(1,), lcore_cpu=0, tg_ssh=SshTarget("tg"), **wire)  # type: ignore[arg-type]
    plan = plan_run(scenario, facts(here, pinnable_cpus=(0, 1)), options)
    assert [t.value for t in plan.tests] == ["overlay_p2p_decap_tput", "overlay_p2p_tput"]
    assert plan.frame_sizes_bytes == scenario.frame_sizes_bytes
