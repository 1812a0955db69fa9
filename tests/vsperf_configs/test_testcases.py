"""VSperf's settings of the PVVP, overlay and conntrack scenarios, loaded as VSperf loads them."""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import VsperfTest
from ovsperf_lab import conntrack as lab_conntrack
from ovsperf_lab import overlay as lab_overlay
from vsperf_configs.cli import main
from vsperf_configs.generate import DEFAULT_FLOWS, generate_config
from vsperf_configs.testcases import NAT_SOURCES, conntrack_flows, needs_integration

from .vsperf_loader import INTEGRATION_DEFAULTS, VSPERF_DEFAULTS, load_like_vsperf

DUT = "dut01.example.com"


def _load(tmp_path: Path, inventory: Path, scenario: str, catalog: Path | None = None) -> dict[str, Any]:
    conf = tmp_path / f"{scenario}.conf"
    conf.write_text(generate_config(scenario, DUT, inventory, catalog).text, encoding="utf-8")
    return load_like_vsperf(conf, integration=needs_integration(load_catalog(catalog).get(scenario)))


def _flow_key(flow: dict[str, Any]) -> str:
    """Spell a flow as VSperf's ``src/ovs/ofctl.py`` ``flow_key`` does (fields, then ``action=``)."""
    fields = ",".join(f"{k}={v}" for k, v in flow.items() if k != "actions")
    return f"{fields},action={','.join(flow['actions'])}"


def test_pvvp_boots_two_guests_each_on_its_own_cpus(tmp_path: Path, example_inventory: Path) -> None:
    settings = _load(tmp_path, example_inventory, "OVS_DPDK1q_PVVP")
    assert settings["VNF"] == "QemuDpdkVhostUser"
    assert settings["GUEST_LOOPBACK"] == ["testpmd", "testpmd"]
    assert settings["GUEST_SMP"] == ["2", "2"]
    assert settings["GUEST_MEMORY"] == ["4096", "4096"]
    assert settings["GUEST_NICS_NR"] == [2, 2]
    assert settings["GUEST_CORE_BINDING"] == [("10", "12"), ("14", "16")]
    assert settings["GUEST_IMAGE"] == ["/var/lib/libvirt/images/ovsperf-guest.qcow2"] * 2
    assert (
        settings["GUEST_TESTPMD_PARAMS"]
        == ["-l 0-1 -n 4 --socket-mem 1024 -- --burst=64 -i --nb-cores=1 --rxq=1 --txq=1"] * 2
    )
    assert generate_config("OVS_DPDK1q_PVVP", DUT, example_inventory).tests == ((0, "pvvp_tput", "pvvp"),)


@pytest.mark.parametrize(
    ("scenario", "frames", "absent"),
    [("OVS_DPDK1q_VXLAN", "VXLAN", "GENEVE"), ("OVS_DPDK1q_GENEVE", "GENEVE", "VXLAN")],
)
def test_overlay_scenarios_write_the_tunnel_settings_by_value(
    tmp_path: Path, example_inventory: Path, scenario: str, frames: str, absent: str
) -> None:
    settings = _load(tmp_path, example_inventory, scenario)
    tunnel = frames.lower()
    assert settings["TUNNEL_TYPE"] == tunnel
    assert settings["TUNNEL_INTEGRATION_BRIDGE"] == "vsperf-br0"
    assert settings["TUNNEL_EXTERNAL_BRIDGE"] == "vsperf-br-ext"
    assert settings["TUNNEL_EXTERNAL_BRIDGE_IP"] == "198.19.254.1/24"
    assert settings["VTEP_IP1"] == "198.18.253.1/24"
    assert (settings["VTEP_IP2"], settings["VTEP_IP2_SUBNET"]) == ("198.19.254.2", "198.19.254.0/24")
    assert (settings["TRAFFICGEN_PORT1_IP"], settings["TRAFFICGEN_PORT2_IP"]) == (
        "198.19.254.2",
        "198.19.128.1",
    )
    assert settings["TRAFFICGEN_PORT2_MAC"] == "02:00:00:00:fe:02"
    # Frame dicts changed key by key: VSperf's other keys survive.
    l3 = INTEGRATION_DEFAULTS[f"{frames}_FRAME_L3"]
    assert settings[f"{frames}_FRAME_L3"] == {**l3, "srcip": "198.19.254.2", "dstip": "198.19.254.1"}
    l4 = settings[f"{frames}_FRAME_L4"]
    assert (l4["inner_srcip"], l4["inner_dstip"]) == ("198.18.0.1", "198.19.128.1")
    assert l4["dstport"] == (4789 if tunnel == "vxlan" else 6081)
    if tunnel == "vxlan":
        assert settings["VXLAN_VNI"] == l4["vni"] == "99"
    else:
        assert l4["geneve_vni"] == 0
    # The other tunnel type's frames stay VSperf's; the test lists stay VSperf's.
    assert settings[f"{absent}_FRAME_L3"] == INTEGRATION_DEFAULTS[f"{absent}_FRAME_L3"]
    assert settings["INTEGRATION_TESTS"] == INTEGRATION_DEFAULTS["INTEGRATION_TESTS"]
    assert settings["PERFORMANCE_TESTS"] == VSPERF_DEFAULTS["PERFORMANCE_TESTS"]
    assert settings["TRAFFICGEN_PKT_SIZES"] == (114, 576, 1280, 1468)
    config = generate_config(scenario, DUT, example_inventory)
    assert config.tests == ((0, "overlay_p2p_decap_tput", "op2p"), (1, "overlay_p2p_tput", "op2p"))
    assert "vsperf_test runs them with --integration." in config.text
    assert f"NOTE: VSperf's Moongen driver ignores {frames}_FRAME_*" in config.text


def test_overlay_addresses_are_the_local_labs(tmp_path: Path, example_inventory: Path) -> None:
    settings = _load(tmp_path, example_inventory, "OVS_DPDK1q_VXLAN")
    assert settings["TUNNEL_EXTERNAL_BRIDGE_IP"] == f"{lab_overlay.VTEP_IP}/{lab_overlay.VTEP_PREFIX}"
    assert settings["VTEP_IP2"] == lab_overlay.REMOTE_IP
    assert settings["TRAFFICGEN_PORT2_MAC"] == lab_overlay.REMOTE_MAC
    assert settings["VXLAN_VNI"] == str(lab_overlay.VNI)


def test_decap_with_moongen_is_flagged_in_the_log(
    example_inventory: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="vsperf_configs.testcases"):
        generate_config("OVS_DPDK1q_GENEVE", DUT, example_inventory)
    assert [r.getMessage() for r in caplog.records] == [
        "Scenario 'OVS_DPDK1q_GENEVE': VSperf's Moongen driver sends no geneve frames (only IxNetwork "
        "builds GENEVE_FRAME_*); its 'overlay_p2p_decap_tput' does not measure decapsulation. "
        "The engine 'ovsperf' does."
    ]


def test_a_scenario_without_overlay_or_conntrack_writes_none_of_their_keys(example_inventory: Path) -> None:
    for name in ("OVS_DPDK1q", "OVS_DPDK1q_GUEST_DPDK1q", "OVS_DPDK1q_PVVP"):
        text = generate_config(name, DUT, example_inventory).text
        assert not [
            line
            for line in text.splitlines()
            if line.startswith(("TUNNEL", "VTEP", "VXLAN", "GENEVE", "PERFORMANCE"))
        ]
        assert "--integration" not in text


def test_conntrack_tests_are_appended_to_vsperfs_with_their_rules(
    tmp_path: Path, example_inventory: Path
) -> None:
    settings = _load(tmp_path, example_inventory, "OVS_DPDK1q_CT")
    tests = settings["PERFORMANCE_TESTS"]
    assert tests[: len(VSPERF_DEFAULTS["PERFORMANCE_TESTS"])] == VSPERF_DEFAULTS["PERFORMANCE_TESTS"]
    ours = tests[len(VSPERF_DEFAULTS["PERFORMANCE_TESTS"]) :]
    assert [t["Name"] for t in ours] == ["phy2phy_ct_tput", "phy2phy_ct_nat_tput"]
    for test in ours:
        assert test["Deployment"] == "p2p"
        assert test["Parameters"] == {
            "TRAFFIC": {
                "traffic_type": "rfc2544_throughput",
                "bidir": "True",
                "multistream": 1,
                "stream_type": "L4",
            }
        }
        assert test["TestSteps"][0] == ["vswitch", "del_flow", "$VSWITCH_BRIDGE_NAME"]
        assert all(
            step[:3] == ["vswitch", "add_flow", "$VSWITCH_BRIDGE_NAME"] for step in test["TestSteps"][1:]
        )
    plain = [_flow_key(step[3]) for step in ours[0]["TestSteps"][1:]]
    assert plain == [
        "table=0,priority=100,in_port=1,dl_type=0x0800,ct_state=-trk,idle_timeout=0,action=ct(table=1)",
        "table=1,priority=100,in_port=1,dl_type=0x0800,ct_state=+trk+new,idle_timeout=0,action=ct(commit),output:2",
        "table=1,priority=100,in_port=1,dl_type=0x0800,ct_state=+trk+est,idle_timeout=0,action=output:2",
        "table=0,priority=100,in_port=2,dl_type=0x0800,ct_state=-trk,idle_timeout=0,action=ct(table=1)",
        "table=1,priority=100,in_port=2,dl_type=0x0800,ct_state=+trk+new,idle_timeout=0,action=ct(commit),output:1",
        "table=1,priority=100,in_port=2,dl_type=0x0800,ct_state=+trk+est,idle_timeout=0,action=output:1",
    ]
    nat = [_flow_key(step[3]) for step in ours[1]["TestSteps"][1:]]
    assert nat[0].endswith(",action=ct(table=1,nat)")
    assert nat[1].endswith(",action=ct(commit,nat(src=198.18.254.1-198.18.254.254)),output:2")
    assert nat[4].endswith(",action=ct(commit,nat(src=198.19.254.1-198.19.254.254)),output:1")
    # The bridge name VSperf's $-macro resolves to, and the other tests' flow count, stay VSperf's/ours.
    assert settings["VSWITCH_BRIDGE_NAME"] == "vsperf-br0"
    assert settings["TRAFFIC"]["multistream"] == DEFAULT_FLOWS
    config = generate_config("OVS_DPDK1q_CT", DUT, example_inventory)
    assert config.tests == ((0, "phy2phy_ct_tput", "p2p"), (1, "phy2phy_ct_nat_tput", "p2p"))
    assert "PERFORMANCE_TESTS = PERFORMANCE_TESTS + [" in config.text


def test_conntrack_multistream_is_the_scenarios_first_flow_count(
    tmp_path: Path, example_inventory: Path
) -> None:
    catalog = tmp_path / "catalog.yaml"
    text = load_catalog().path.read_text(encoding="utf-8")
    catalog.write_text(text.replace("flows: [1, 1000, 100000]", "flows: [100000, 1]"), encoding="utf-8")
    settings = _load(tmp_path, example_inventory, "OVS_DPDK1q_CT", catalog)
    ours = settings["PERFORMANCE_TESTS"][len(VSPERF_DEFAULTS["PERFORMANCE_TESTS"]) :]
    assert [t["Parameters"]["TRAFFIC"]["multistream"] for t in ours] == [100000, 100000]


@pytest.mark.skipif(
    shutil.which("ovs-ofctl") is None, reason="needs ovs-ofctl (apt-get install openvswitch-switch)"
)
@pytest.mark.parametrize("test", [VsperfTest.PHY2PHY_CT_TPUT, VsperfTest.PHY2PHY_CT_NAT_TPUT])
def test_ovs_parses_every_conntrack_rule_as_vsperf_passes_it(tmp_path: Path, test: VsperfTest) -> None:
    flows = tmp_path / "flows.txt"
    flows.write_text("".join(_flow_key(f) + "\n" for f in conntrack_flows(test)), encoding="utf-8")
    # VSperf runs ovs-ofctl with OVS_OFCTL_ARGS = ['-O', 'OpenFlow13'] (conf/02_vswitch.conf).
    done = subprocess.run(
        ["ovs-ofctl", "-O", "OpenFlow13", "parse-flows", str(flows)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    mods = [line for line in done.stdout.splitlines() if "ADD" in line]
    assert len(mods) == 6
    assert sum("ct(commit" in line for line in mods) == 2
    assert sum("ct_state=+est+trk" in line or "ct_state=+trk+est" in line for line in mods) == 2


def test_nat_ranges_are_the_local_labs() -> None:
    assert NAT_SOURCES == lab_conntrack.NAT_SOURCES


def test_conntrack_flows_refuse_a_test_without_conntrack() -> None:
    with pytest.raises(ValueError, match=r"Test .phy2phy_tput. is no conntrack test\."):
        conntrack_flows(VsperfTest.PHY2PHY_TPUT)


def test_list_tests_prints_the_deployments_the_task_reads(
    example_inventory: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "--scenario",
                "OVS_DPDK1q_VXLAN",
                "--host",
                DUT,
                "--inventory",
                str(example_inventory),
                "--list-tests",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out == "0 overlay_p2p_decap_tput op2p\n1 overlay_p2p_tput op2p\n"
