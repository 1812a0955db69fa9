"""Tests of the scenario catalog loader against the shipped catalog and malformed copies."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
import yaml

from ovsperf_catalog.catalog import default_catalog_path, load_catalog
from ovsperf_catalog.errors import CatalogError
from ovsperf_catalog.model import MAX_FLOWS, GuestLoopback, Topology, TunnelType, VsperfTest, Vswitch

DESIGN_SCENARIOS = {
    # name: (vswitch, topologies, queues, guest loopback, dpdk in host, dpdk in guest)
    "OVS_DPDK1q_GUEST_DPDK1q": (
        Vswitch.OVS_DPDK,
        (Topology.P2P, Topology.PVP),
        1,
        GuestLoopback.TESTPMD,
        True,
        True,
    ),
    "OVS_VANILLA_GUEST_linuxbridge": (
        Vswitch.OVS_VANILLA,
        (Topology.P2P, Topology.PVP),
        1,
        GuestLoopback.LINUX_BRIDGE,
        False,
        False,
    ),
    "OVS_DPDK1q_GUEST_linuxbridge": (
        Vswitch.OVS_DPDK,
        (Topology.P2P, Topology.PVP),
        1,
        GuestLoopback.LINUX_BRIDGE,
        True,
        False,
    ),
    "OVS_DPDK2q": (Vswitch.OVS_DPDK, (Topology.P2P,), 2, None, True, False),
    "OVS_DPDK4q": (Vswitch.OVS_DPDK, (Topology.P2P,), 4, None, True, False),
    "OVS_DPDK2q_GUEST_DPDK2q": (
        Vswitch.OVS_DPDK,
        (Topology.P2P, Topology.PVP),
        2,
        GuestLoopback.TESTPMD,
        True,
        True,
    ),
}


@pytest.mark.parametrize("name", sorted(DESIGN_SCENARIOS))
def test_design_scenarios_have_the_designed_shape(name: str) -> None:
    scenario = load_catalog().get(name)
    vswitch, topologies, queues, loopback, dpdk_host, dpdk_guest = DESIGN_SCENARIOS[name]
    assert scenario.vswitch is vswitch
    assert scenario.topologies == topologies
    assert (scenario.rx_queues, scenario.tx_queues) == (queues, queues)
    assert (scenario.guest.loopback if scenario.guest else None) is loopback
    assert scenario.dpdk_in_host is dpdk_host
    assert scenario.dpdk_in_guest is dpdk_guest
    assert scenario.frame_sizes_bytes == (64, 576, 1280, 1500)


def test_loss_limits_follow_the_original_measurements() -> None:
    catalog = load_catalog()
    assert catalog.get("OVS_DPDK1q_GUEST_DPDK1q").loss_ratio_limit == 0.0
    vanilla = catalog.get("OVS_VANILLA_GUEST_linuxbridge")
    assert vanilla.loss_ratio_limit == pytest.approx(1e-5)
    assert vanilla.loss_percent_limit == pytest.approx(0.001)


def test_kernel_options_carry_hugepages_and_iommu() -> None:
    scenario = load_catalog().get("OVS_DPDK2q")
    assert scenario.all_kernel_options == (
        "default_hugepagesz=1G",
        "hugepagesz=1G",
        "hugepages=16",
        "intel_iommu=on",
        "iommu=pt",
    )


def test_unknown_scenario_lists_valid_names() -> None:
    with pytest.raises(CatalogError) as err:
        load_catalog().get("OVS_DPDK8q")
    assert "'OVS_DPDK8q'" in str(err.value)
    assert "OVS_DPDK1q_GUEST_DPDK1q" in str(err.value)


def _write_variant(tmp_path: Path, edit: dict[str, object], name: str = "OVS_DPDK2q") -> Path:
    data = yaml.safe_load(default_catalog_path().read_text())
    data["scenarios"][name].update(edit)
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("edit", "key", "fragment"),
    [
        ({"vswitch": "OvsDpdk"}, "vswitch", "'OvsDpdkVhost'"),
        ({"tests": ["phy2phy_tput", "bogus"]}, "tests", "'bogus'"),
        ({"queues": 0}, "queues", "positive integer"),
        ({"frame_sizes_bytes": [60]}, "frame_sizes_bytes", "64..1518"),
        ({"acceptable_loss_percent": -1}, "acceptable_loss_percent", "percentage"),
        ({"tests": ["pvp_tput"]}, "guest", "needs a 'guest'"),
        ({"hugepages": {"size": "4K", "count": 2}}, "hugepages.size", "'4K'"),
        ({"queus": 2}, "queus", "unknown field"),
    ],
)
def test_malformed_entry_names_file_entry_and_field(
    tmp_path: Path, edit: dict[str, object], key: str, fragment: str
) -> None:
    path = _write_variant(tmp_path, edit)
    with pytest.raises(CatalogError) as err:
        load_catalog(path)
    message = str(err.value)
    assert str(path) in message
    assert "scenario 'OVS_DPDK2q'" in message
    assert f"field '{key}'" in message
    assert fragment in message
    assert err.value.field == key


def test_unreadable_and_non_yaml_catalogs(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="cannot read"):
        load_catalog(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("scenarios: [unclosed\n")
    with pytest.raises(CatalogError, match="not valid YAML"):
        load_catalog(bad)


def test_a_fifo_as_catalog_is_refused_not_waited_on(tmp_path: Path) -> None:
    """Issue 25 item 14: only regular files are read where a file is read."""
    from tests.fifoguard import fifo_watchdog

    fifo = tmp_path / "catalog.yaml"
    with fifo_watchdog(fifo, timeout_s=5) as freed:
        with pytest.raises(CatalogError, match=r"cannot read the scenario catalog: .*it is a FIFO"):
            load_catalog(fifo)
    assert freed == []


def test_rfc2544_keyword_selects_the_rfc_sizes(tmp_path: Path) -> None:
    path = _write_variant(tmp_path, {"frame_sizes_bytes": "rfc2544"})
    assert load_catalog(path).get("OVS_DPDK2q").frame_sizes_bytes == (64, 128, 256, 512, 1024, 1280, 1518)


def test_tests_keep_vsperf_order() -> None:
    scenario = load_catalog().get("OVS_DPDK1q_GUEST_DPDK1q")
    assert scenario.tests == (VsperfTest.PHY2PHY_TPUT, VsperfTest.PVP_TPUT)


def test_the_example_of_contributing_md_is_a_new_valid_scenario(tmp_path: Path) -> None:
    """CONTRIBUTING.md "Adding a scenario": its entry, added to the shipped catalog, loads as it says."""
    guide = (Path(__file__).resolve().parents[2] / "CONTRIBUTING.md").read_text(encoding="utf-8")
    found = re.search(r"^## Adding a scenario$.*?```yaml\n(.*?)```", guide, re.MULTILINE | re.DOTALL)
    assert found is not None
    entry = yaml.safe_load(textwrap.dedent(found.group(1)))
    data = yaml.safe_load(default_catalog_path().read_text())
    assert set(entry) == {"OVS_DPDK2q_PDR"} and not set(entry) & set(data["scenarios"])
    data["scenarios"].update(entry)
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    scenario = load_catalog(path).get("OVS_DPDK2q_PDR")
    assert (scenario.vswitch, scenario.guest) == (Vswitch.OVS_DPDK, None)
    assert scenario.tests == (VsperfTest.PHY2PHY_TPUT,)
    assert (scenario.rx_queues, scenario.tx_queues, scenario.loss_ratio_limit) == (2, 2, pytest.approx(0.005))
    assert scenario.frame_sizes_bytes == (64, 576, 1280, 1500)  # from 'defaults:'


def test_issue28_scenarios_have_their_tests_tunnel_and_flows() -> None:
    catalog = load_catalog()
    pvvp = catalog.get("OVS_DPDK1q_PVVP")
    assert pvvp.tests == (VsperfTest.PVVP_TPUT,) and pvvp.topologies == (Topology.PVVP,)
    assert [
        catalog.get(n).guest_count for n in ("OVS_DPDK1q_PVVP", "OVS_DPDK1q_GUEST_DPDK1q", "OVS_DPDK1q_CT")
    ] == [
        2,
        1,
        0,
    ]
    assert pvvp.guest is not None and (pvvp.guest.loopback, pvvp.guest.vcpus) == (GuestLoopback.TESTPMD, 2)
    for name, tunnel in (("OVS_DPDK1q_VXLAN", TunnelType.VXLAN), ("OVS_DPDK1q_GENEVE", TunnelType.GENEVE)):
        overlay = catalog.get(name)
        assert overlay.tests == (VsperfTest.OVERLAY_P2P_DECAP_TPUT, VsperfTest.OVERLAY_P2P_TPUT)
        assert (overlay.topologies, overlay.tunnel_type, overlay.guest) == ((Topology.OP2P,), tunnel, None)
        assert overlay.frame_sizes_bytes == (114, 576, 1280, 1468)
        assert overlay.flows == (1,)
    ct = catalog.get("OVS_DPDK1q_CT")
    assert ct.tests == (VsperfTest.PHY2PHY_CT_TPUT, VsperfTest.PHY2PHY_CT_NAT_TPUT)
    assert (ct.topologies, ct.tunnel_type, ct.guest, ct.flows) == (
        (Topology.P2P,),
        None,
        None,
        (1, 1000, 100000),
    )
    # Every earlier scenario keeps its shape: no tunnel, one flow.
    for name in DESIGN_SCENARIOS:
        assert (catalog.get(name).tunnel_type, catalog.get(name).flows) == (None, (1,))


def test_test_properties_follow_vsperf_and_the_contract() -> None:
    assert {t: t.tunnel_operation for t in VsperfTest if t.tunnel_operation} == {
        VsperfTest.OVERLAY_P2P_TPUT: "encapsulation",
        VsperfTest.OVERLAY_P2P_DECAP_TPUT: "decapsulation",
    }
    assert {t: t.conntrack for t in VsperfTest if t.conntrack} == {
        VsperfTest.PHY2PHY_CT_TPUT: "commit",
        VsperfTest.PHY2PHY_CT_NAT_TPUT: "commit,nat",
    }
    assert [t for t in VsperfTest if not t.bidirectional] == [
        VsperfTest.OVERLAY_P2P_TPUT,
        VsperfTest.OVERLAY_P2P_DECAP_TPUT,
    ]
    assert [TunnelType.from_spec("VXLAN"), TunnelType.from_spec("geneve")] == [
        TunnelType.VXLAN,
        TunnelType.GENEVE,
    ]
    assert {t.overhead_bytes for t in TunnelType} == {50}
    assert MAX_FLOWS == 1 << 20  # TG_MAX_FLOWS, trafficgen/src/trafficgen.h


@pytest.mark.parametrize(
    ("name", "edit", "key", "fragment"),
    [
        ("OVS_DPDK1q_VXLAN", {"tunnel_type": None}, "tunnel_type", "need a tunnel type"),
        ("OVS_DPDK1q_VXLAN", {"tunnel_type": "gre"}, "tunnel_type", "'gre'"),
        ("OVS_DPDK2q", {"tunnel_type": "vxlan"}, "tunnel_type", "no test uses it"),
        ("OVS_DPDK1q_CT", {"tunnel_type": "geneve"}, "tunnel_type", "no test uses it"),
        ("OVS_DPDK1q_VXLAN", {"tests": ["overlay_p2p_tput", "phy2phy_tput"]}, "tests", "--integration"),
        ("OVS_DPDK1q_VXLAN", {"frame_sizes_bytes": [64, 576]}, "frame_sizes_bytes", "at least 114 B"),
        ("OVS_DPDK1q_GENEVE", {"frame_sizes_bytes": [114, 1500]}, "frame_sizes_bytes", "above 1468 B"),
        ("OVS_DPDK1q_CT", {"vswitch": "OvsVanilla"}, "tests", "use vswitch 'OvsDpdkVhost'"),
        ("OVS_DPDK1q_VXLAN", {"vswitch": "OvsVanilla"}, "tests", "userspace datapath"),
        ("OVS_DPDK1q_CT", {"flows": []}, "flows", "non-empty list"),
        ("OVS_DPDK1q_CT", {"flows": 1000}, "flows", "non-empty list"),
        ("OVS_DPDK1q_CT", {"flows": [0]}, "flows", "positive integer"),
        (
            "OVS_DPDK1q_CT",
            {"flows": [1, (1 << 20) + 1]},
            "flows",
            "1048577 flows per direction are more than the traffic generator tells apart (1048576).",
        ),
        ("OVS_DPDK1q_CT", {"flows": [1, "many"]}, "flows", "'many'"),
        ("OVS_DPDK1q_CT", {"flows": [1000, 1000]}, "flows", "listed twice"),
        ("OVS_DPDK1q_CT", {"guest": {"loopback": "testpmd"}}, "guest", "no test uses it"),
        ("OVS_DPDK1q_VXLAN", {"guest": {"loopback": "testpmd"}}, "guest", "no test uses it"),
        ("OVS_DPDK1q_PVVP", {"guest": None}, "guest", "needs a 'guest'"),
        (
            "OVS_DPDK1q_PVVP",
            {"hugepages": {"size": "1G", "count": 8}},
            "hugepages.count",
            "8 x 1G hugepages (8192 MiB) cannot back 2 guest(s) x 4096 MiB",
        ),
    ],
)
def test_bad_issue28_entries_name_the_field(
    tmp_path: Path, name: str, edit: dict[str, object], key: str, fragment: str
) -> None:
    data = yaml.safe_load(default_catalog_path().read_text())
    for field, value in edit.items():
        if value is None:
            data["scenarios"][name].pop(field)
        else:
            data["scenarios"][name][field] = value
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(CatalogError) as err:
        load_catalog(path)
    message = str(err.value)
    assert f"scenario '{name}'" in message
    assert f"field '{key}'" in message
    assert fragment in message
    assert err.value.field == key
