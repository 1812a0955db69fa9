from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import Topology
from vsperf_configs.errors import CpuOverlapError, InventoryError, VsperfConfigError
from vsperf_configs.generate import DEFAULT_FLOWS, DEFAULT_GUEST_DPDK_DIR, generate_config
from vsperf_configs.testcases import needs_integration

from .vsperf_loader import VSPERF_DEFAULTS, load_like_vsperf

DUT = "dut01.example.com"
ALL_SCENARIOS = load_catalog().names()


def _generate(tmp_path: Path, inventory: Path, scenario: str) -> dict[str, object]:
    config = generate_config(scenario, DUT, inventory)
    conf = tmp_path / f"{scenario}.conf"
    conf.write_text(config.text, encoding="utf-8")
    return load_like_vsperf(conf, integration=needs_integration(load_catalog().get(scenario)))


@pytest.mark.parametrize("scenario", ALL_SCENARIOS)
def test_every_scenario_loads_like_vsperf_with_key_values(
    tmp_path: Path, example_inventory: Path, scenario: str
) -> None:
    spec = load_catalog().get(scenario)
    settings = _generate(tmp_path, example_inventory, scenario)

    # MoonGen traps (vsperf.md §3.1, §7.5, §8).
    assert settings["TRAFFICGEN"] == "Moongen"
    assert settings["TRAFFICGEN_MOONGEN_LINE_SPEED_GBPS"] == "10"
    assert settings["TRAFFICGEN_MOONGEN_HOST_IP_ADDR"] == "192.0.2.10"
    assert settings["TRAFFICGEN_MOONGEN_BASE_DIR"] == "/root/lua-trafficgen"
    assert settings["TRAFFICGEN_MOONGEN_PORTS"] == "{0,1}"
    assert settings["TRAFFICGEN_PKT_SIZES"] == spec.frame_sizes_bytes
    assert isinstance(settings["TRAFFICGEN_PKT_SIZES"], tuple)
    assert settings["TRAFFICGEN_DURATION"] == spec.search_trial_s
    assert settings["TRAFFICGEN_LOSSRATE"] == pytest.approx(spec.loss_ratio_limit * 100)
    # TRAFFIC keys were changed one by one: VSperf's other defaults survive.
    traffic = settings["TRAFFIC"]
    assert isinstance(traffic, dict)
    assert traffic["multistream"] == DEFAULT_FLOWS >= 1
    assert traffic["bidir"] == "True"
    assert set(VSPERF_DEFAULTS["TRAFFIC"]) <= set(traffic)
    assert traffic["l3"]["dstip"] == "90.90.90.90"
    # Packaged binaries.
    paths = settings["PATHS"]
    assert isinstance(paths, dict)
    assert paths["dpdk"]["type"] == paths["qemu"]["type"] == "bin"
    assert paths["vswitch"][spec.vswitch.value]["type"] == "bin"
    assert paths["vswitch"][spec.vswitch.value]["bin"] == {"ovs-vswitchd": "ovs-vswitchd"}
    # Scenario and inventory layers.
    assert settings["VSWITCH"] == spec.vswitch.value
    assert settings["WHITELIST_NICS"] == ["0000:03:00.0", "0000:03:00.1"]
    assert settings["HUGEPAGE_RAM_ALLOCATION"] == 16 * 1048576
    if spec.dpdk_in_host:
        assert settings["VSWITCH_PMD_CPU_MASK"] == "154"  # CPUs 2,4,6,8
        assert settings["VSWITCHD_DPDK_CONFIG"] == {"dpdk-init": "true", "dpdk-lcore-mask": "0x1"}
        assert settings["DPDK_SOCKET_MEM"] == ["1024", "0"]
        assert settings["VSWITCH_DPDK_MULTI_QUEUES"] == spec.rx_queues
    else:
        assert settings["VSWITCH_PMD_CPU_MASK"] == "30"  # untouched VSperf default
        assert "DPDK_SOCKET_MEM" not in settings
    if spec.guest is None:
        assert settings["GUEST_IMAGE"] == [""]
        assert "VNF" not in settings
    else:
        vcpus = spec.guest.vcpus
        vms = 2 if Topology.PVVP in spec.topologies else 1
        guest_cpus = ("10", "12", "14", "16", "18")
        assert settings["VNF"] == ("QemuDpdkVhostUser" if spec.dpdk_in_host else "QemuVirtioNet")
        assert settings["GUEST_IMAGE"] == ["/var/lib/libvirt/images/ovsperf-guest.qcow2"] * vms
        assert settings["GUEST_LOOPBACK"] == [spec.guest.loopback.value] * vms
        assert settings["GUEST_SMP"] == [str(vcpus)] * vms
        assert settings["GUEST_CORE_BINDING"] == [
            guest_cpus[vm * vcpus : (vm + 1) * vcpus] for vm in range(vms)
        ]
        if spec.dpdk_in_guest:
            assert settings["GUEST_DPDK_BIND_DRIVER"] == ["vfio_no_iommu"] * vms
            params = settings["GUEST_TESTPMD_PARAMS"]
            assert isinstance(params, list) and len(params) == vms
            assert f"--nb-cores={vcpus - 1}" in params[0]
            assert f"--rxq={spec.rx_queues}" in params[0]


@pytest.mark.parametrize("scenario", ALL_SCENARIOS)
def test_conf_file_holds_only_upper_case_assignments_of_literals(
    example_inventory: Path, scenario: str
) -> None:
    text = generate_config(scenario, DUT, example_inventory).text
    for node in ast.parse(text).body:
        assert isinstance(node, ast.Assign), ast.dump(node)
        (target,) = node.targets
        while isinstance(target, ast.Subscript):
            assert isinstance(target.slice, ast.Constant)
            target = target.value
        assert isinstance(target, ast.Name) and target.id.isupper(), ast.dump(node)
        value = node.value
        if isinstance(value, ast.BinOp):  # a list appended to: NAME = NAME + [literal]
            assert isinstance(value.op, ast.Add) and isinstance(value.left, ast.Name), ast.dump(node)
            assert value.left.id == target.id == "PERFORMANCE_TESTS", ast.dump(node)
            assert isinstance(ast.literal_eval(value.right), list)
        else:
            ast.literal_eval(value)
    assert not [
        line
        for line in text.splitlines()
        if line.startswith(("TRAFFIC =", "PATHS =", "VSWITCHD_DPDK_CONFIG ="))
    ]


def test_tests_carry_vsperf_result_index(example_inventory: Path) -> None:
    config = generate_config("OVS_DPDK1q_GUEST_DPDK1q", DUT, example_inventory)
    assert config.tests == ((0, "phy2phy_tput", "p2p"), (1, "pvp_tput", "pvp"))


def test_two_queue_guest_pins_five_vcpus(tmp_path: Path, example_inventory: Path) -> None:
    settings = _generate(tmp_path, example_inventory, "OVS_DPDK2q_GUEST_DPDK2q")
    assert settings["GUEST_CORE_BINDING"] == [("10", "12", "14", "16", "18")]
    assert settings["GUEST_NIC_QUEUES"] == [2]
    assert settings["VSWITCH_DPDK_MULTI_QUEUES"] == 2


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_pmd_on_ovs_lcore_is_a_clear_error(example_inventory: Path) -> None:
    _edit(example_inventory, 'pmd: "2,4,6,8"', 'pmd: "0,2,4"')
    with pytest.raises(CpuOverlapError) as info:
        generate_config("OVS_DPDK1q", DUT, example_inventory)
    assert info.value.cpus == (0,)
    assert info.value.field == "cpus.pmd"
    message = str(info.value)
    assert f"'{example_inventory}'" in message and f"host '{DUT}'" in message
    assert "CPU(s) 0 also appear in the OVS lcore CPU list 'cpus.ovs_lcore'" in message


def test_guest_cpus_on_ovs_lcore_is_a_clear_error(example_inventory: Path) -> None:
    _edit(example_inventory, 'guest: "10,12,14,16,18"', 'guest: "0-2"')
    with pytest.raises(CpuOverlapError, match=r"field 'cpus.guest'.*CPU\(s\) 0 also appear in the OVS lcore"):
        generate_config("OVS_DPDK1q_GUEST_DPDK1q", DUT, example_inventory)


def test_guest_cpus_on_pmd_cpus_is_a_clear_error(example_inventory: Path) -> None:
    _edit(example_inventory, 'guest: "10,12,14,16,18"', 'guest: "8-12"')
    with pytest.raises(CpuOverlapError, match=r"CPU\(s\) 8 also appear in the PMD CPU list") as info:
        generate_config("OVS_DPDK1q_GUEST_DPDK1q", DUT, example_inventory)
    assert info.value.cpus == (8,)


def test_missing_host_lists_known_hosts(example_inventory: Path) -> None:
    with pytest.raises(InventoryError) as info:
        generate_config("OVS_DPDK1q", "dut99.example.com", example_inventory)
    assert "host 'dut99.example.com'" in str(info.value)
    assert "'dut01.example.com', 'moongen01.example.com'" in str(info.value)


def test_traffic_generator_is_not_a_dut(example_inventory: Path) -> None:
    with pytest.raises(InventoryError, match="is a traffic generator"):
        generate_config("OVS_DPDK1q", "moongen01.example.com", example_inventory)


def test_too_few_guest_cpus(example_inventory: Path) -> None:
    _edit(example_inventory, 'guest: "10,12,14,16,18"', 'guest: "10,12,14"')
    generate_config("OVS_DPDK1q_GUEST_DPDK1q", DUT, example_inventory)  # 3 vCPUs fit
    with pytest.raises(InventoryError, match=r"1 guest\(s\) x 5 vCPUs = 5 CPUs, but the host lists 3"):
        generate_config("OVS_DPDK2q_GUEST_DPDK2q", DUT, example_inventory)


def test_guest_scenario_needs_image(example_inventory: Path) -> None:
    _edit(example_inventory, "    guest_image: /var/lib/libvirt/images/ovsperf-guest.qcow2", "")
    generate_config("OVS_DPDK1q", DUT, example_inventory)
    with pytest.raises(InventoryError, match="field 'guest_image'"):
        generate_config("OVS_DPDK1q_GUEST_DPDK1q", DUT, example_inventory)


def test_unknown_scenario(example_inventory: Path) -> None:
    with pytest.raises(
        VsperfConfigError, match="Unknown scenario 'NOPE'; valid scenarios are: OVS_DPDK1q_GUEST_DPDK1q"
    ):
        generate_config("NOPE", DUT, example_inventory)


def test_missing_inventory_file(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match=r"nope.yaml': cannot read the host inventory"):
        generate_config("OVS_DPDK1q", DUT, tmp_path / "nope.yaml")


PVVP_CATALOG = """
defaults:
  frame_sizes_bytes: [64]
  search_trial_s: 10
  validation_trial_s: 20
  hugepages: {size: 2M, count: 4096}
  kernel_options: []
  guest: {vcpus: 2, memory_mb: 2048}
scenarios:
  PVVP_DPDK:
    description: Two chained testpmd guests.
    vswitch: OvsDpdkVhost
    tests: [pvp_tput, pvvp_tput]
    queues: 1
    guest: {loopback: testpmd}
    acceptable_loss_percent: 0.5
"""


def test_pvvp_pins_each_guest_to_its_own_cpus(tmp_path: Path, example_inventory: Path) -> None:
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(PVVP_CATALOG)
    config = generate_config("PVVP_DPDK", DUT, example_inventory, catalog)
    conf = tmp_path / "pvvp.conf"
    conf.write_text(config.text)
    settings = load_like_vsperf(conf)
    assert config.tests == ((0, "pvp_tput", "pvp"), (1, "pvvp_tput", "pvvp"))
    assert settings["GUEST_CORE_BINDING"] == [("10", "12"), ("14", "16")]
    assert settings["GUEST_SMP"] == ["2", "2"]
    assert settings["GUEST_IMAGE"] == ["/var/lib/libvirt/images/ovsperf-guest.qcow2"] * 2
    assert (
        settings["GUEST_TESTPMD_PARAMS"]
        == ["-l 0-1 -n 4 --socket-mem 1024 -- --burst=64 -i --nb-cores=1 --rxq=1 --txq=1"] * 2
    )
    assert settings["TRAFFICGEN_LOSSRATE"] == pytest.approx(0.5)
    assert settings["HUGEPAGE_RAM_ALLOCATION"] == 4096 * 2048
    assert settings["TRAFFICGEN_PKT_SIZES"] == (64,)


@pytest.mark.parametrize("scenario", ALL_SCENARIOS)
def test_dpdk_and_qemu_tools_are_ones_vsperf_finds(
    tmp_path: Path, example_inventory: Path, scenario: str
) -> None:
    # Real VSperf 90ef48d4 (docs/beaker_tasks.md, "Checked with real VSperf") failed every test in
    # PerformanceTestCase.__init__: tools/functions.py settings_update_paths() raised "Path to the
    # bind-tool is not valid: /usr/share/dpdk/tools/dpdk*bind.py." (a glob matching nothing), then
    # "Cannot locate tool testpmd" (not on PATH since DPDK 20.11). These are VSperf's defaults, kept
    # when only the type was set.
    paths = _generate(tmp_path, example_inventory, scenario)["PATHS"]
    assert isinstance(paths, dict)
    assert paths["dpdk"]["bin"] == {
        "bind-tool": "dpdk-devbind.py",
        "modules": ["vfio-pci"],
        "testpmd": "dpdk-testpmd",
    }
    assert paths["qemu"]["bin"] == {"qemu-system": "/usr/libexec/qemu-kvm"}
    rejected = {"/usr/share/dpdk/tools/dpdk*bind.py", "testpmd", "igb_uio", "qemu-system-x86_64"}
    values = [
        *paths["dpdk"]["bin"].values(),
        *paths["dpdk"]["bin"]["modules"],
        paths["qemu"]["bin"]["qemu-system"],
    ]
    assert not rejected & {v for v in values if isinstance(v, str)}
    assert not any(c in v for v in values if isinstance(v, str) for c in "*?[")  # VSperf globs these


@pytest.mark.parametrize("scenario", ALL_SCENARIOS)
def test_only_testpmd_guests_get_the_guest_dpdk_tree(
    tmp_path: Path, example_inventory: Path, scenario: str
) -> None:
    # VSperf 90ef48d4 rsyncs PATHS['dpdk']['src']['path'] into every testpmd guest as DPDK/
    # (testcases/testcase.py _copy_fwd_tools_for_guest) and never checks it otherwise
    # (tools/functions.py settings_update_paths, 'bin' type): other scenarios keep VSperf's default.
    spec = load_catalog().get(scenario)
    paths = _generate(tmp_path, example_inventory, scenario)["PATHS"]
    assert isinstance(paths, dict)
    testpmd = spec.guest is not None and spec.guest.loopback.value == "testpmd"
    testpmd = testpmd and any(t in (Topology.PVP, Topology.PVVP) for t in spec.topologies)
    expected = {"path": DEFAULT_GUEST_DPDK_DIR} if testpmd else VSPERF_DEFAULTS["PATHS"]["dpdk"]["src"]
    assert paths["dpdk"]["src"] == expected
    assert paths["dpdk"]["type"] == "bin"


def test_nightly_pvp_and_pvvp_use_the_guest_dpdk_tree(tmp_path: Path, example_inventory: Path) -> None:
    for scenario, guests in (("OVS_DPDK1q_GUEST_DPDK1q", 1), ("OVS_DPDK1q_PVVP", 2)):
        text = generate_config(scenario, DUT, example_inventory, guest_dpdk_dir="/srv/g").text
        assert "PATHS['dpdk']['src']['path'] = '/srv/g'  # vsperf_test's adapter" in text
        settings = _generate(tmp_path, example_inventory, scenario)
        assert settings["GUEST_LOOPBACK"] == ["testpmd"] * guests
        assert settings["PATHS"]["dpdk"]["src"] == {"path": "/opt/ovsperf/vsperf-guest-dpdk"}  # type: ignore[index]


@pytest.mark.parametrize("bad", ["relative/dir", "/opt/../etc", "/opt/x/", ""])
def test_guest_dpdk_dir_must_be_absolute_and_normalised(example_inventory: Path, bad: str) -> None:
    with pytest.raises(VsperfConfigError) as err:
        generate_config("OVS_DPDK1q", DUT, example_inventory, guest_dpdk_dir=bad)
    assert str(err.value) == f"--guest-dpdk-dir '{bad}' is not an absolute, normalised directory."
