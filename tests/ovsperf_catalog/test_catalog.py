"""Tests of the scenario catalog loader against the shipped catalog and malformed copies."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
import yaml

from ovsperf_catalog.catalog import default_catalog_path, load_catalog
from ovsperf_catalog.errors import CatalogError
from ovsperf_catalog.model import GuestLoopback, Topology, VsperfTest, Vswitch

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
