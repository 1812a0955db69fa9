"""The inventory chooses TRex: its validation, --host-env, and VSperf's TRex keys in the generated config."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import VsperfTrafficgen
from vsperf_configs.cli import main
from vsperf_configs.errors import InventoryError
from vsperf_configs.generate import generate_config
from vsperf_configs.inventory import NO_INSTALL_TOPS, SYSTEM_DIRS, host_environment, load_inventory
from vsperf_configs.testcases import needs_integration

from .trexinv import TREX_DUT, TREX_SHA256, TREX_TG, TREX_URL, trex_inventory_text, write_trex_inventory
from .vsperf_loader import load_like_vsperf

ALL_SCENARIOS = load_catalog().names()


def test_trex_records_load_and_reach_the_tasks(tmp_path: Path) -> None:
    inventory = load_inventory(write_trex_inventory(tmp_path / "inv.yaml"))
    dut = inventory.get(TREX_DUT)
    assert dut.moongen is not None
    assert dut.moongen.generator is VsperfTrafficgen.TREX
    assert dut.moongen.ports == (1, 0)
    tg = inventory.get(TREX_TG)
    assert tg.trex is not None
    assert (tg.trex.url, tg.trex.sha256, tg.trex.install_dir, tg.trex.ports) == (
        TREX_URL,
        TREX_SHA256,
        "/opt/trex",
        (1, 0),
    )
    env = host_environment(tg)
    assert env["GENERATOR"] == "trex"
    assert env["TREX_URL"] == TREX_URL
    assert env["TREX_SHA256"] == TREX_SHA256
    assert env["TREX_INSTALL_DIR"] == "/opt/trex"
    assert env["TREX_INTERFACES"] == "0000:03:00.1 0000:03:00.0"  # TRex's port 0 first
    assert env["GENERATOR_CPUS"] == "2,3,4,5,6"
    dut_env = host_environment(dut)
    assert dut_env["GENERATOR"] == "trex"
    assert dut_env["MOONGEN_HOST"] == TREX_TG
    assert dut_env["TREX_URL"] == ""


def test_the_example_inventory_stays_moongen(example_inventory: Path) -> None:
    inventory = load_inventory(example_inventory)
    dut = inventory.get("dut01.example.com")
    assert dut.moongen is not None and dut.moongen.generator is VsperfTrafficgen.MOONGEN
    assert host_environment(dut)["GENERATOR"] == "moongen"
    tg = inventory.get("moongen01.example.com")
    assert tg.trex is None
    assert host_environment(tg)["GENERATOR"] == host_environment(tg)["TREX_URL"] == ""


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"url": "ftp://example.com/v3.04.tar.gz"}, "trex.url", "is not the URL of a TRex release tarball"),
        ({"url": "'https://x.example/a b.tar.gz'"}, "trex.url", "is not the URL"),
        ({"url": "https://example.com/release/"}, "trex.url", "is not the URL"),
        ({"sha256": "abc123"}, "trex.sha256", "is not a SHA-256"),
        ({"sha256": "g" * 64}, "trex.sha256", "is not a SHA-256"),
        ({"install_dir": "opt/trex"}, "trex.install_dir", "is not an absolute path"),
        ({"install_dir": "/opt/../etc"}, "trex.install_dir", "is not a directory to install TRex into"),
        ({"install_dir": "/"}, "trex.install_dir", "is not a directory to install TRex into"),
        ({"install_dir": "/opt/trex;rm"}, "trex.install_dir", "is not a directory to install TRex into"),
        ({"install_dir": "'/opt/t rex'"}, "trex.install_dir", "is not a directory to install TRex into"),
        ({"install_dir": "/opt"}, "trex.install_dir", "not a system directory"),
        ({"install_dir": "/usr/local"}, "trex.install_dir", "not a system directory"),
        ({"install_dir": "/var/lib/"}, "trex.install_dir", "not a system directory"),
        ({"install_dir": "/home/alice"}, "trex.install_dir", "not a system directory"),
        ({"install_dir": "/etc/trex"}, "trex.install_dir", "nothing under /boot, /dev, /etc"),
        ({"install_dir": "/opt/./trex"}, "trex.install_dir", "no '.' or '..'"),
        ({"install_dir": "/opt//trex"}, "trex.install_dir", "is not a directory to install TRex into"),
        ({"url": "http://h.example:65536/v3.04.tar.gz"}, "trex.url", "a port up to 65535"),
        ({"url": "http://h.example/v3.04.tar.gz;x"}, "trex.url", "is not the URL"),
        ({"tg_ports": "[0, 2]", "peer_ports": "[0, 2]"}, "trex.ports", "is not two distinct indexes"),
        ({"tg_ports": "[1, 1]", "peer_ports": "[0, 1]"}, "trex.ports", "is not two distinct indexes"),
        ({"generator_cpus": '"2-3"'}, "cpus.generator", "TRex needs at least 3 generator CPUs"),
        ({"peer_ports": "[0, 1]"}, "trafficgen.ports", "differ from the traffic generator's 'trex.ports'"),
    ],
)
def test_bad_trex_records_name_the_field(
    tmp_path: Path, fields: dict[str, str], field: str, message: str
) -> None:
    with pytest.raises(InventoryError, match=message) as info:
        load_inventory(write_trex_inventory(tmp_path / "inv.yaml", **fields))
    assert info.value.field == field


def _edited(tmp_path: Path, old: str, new: str) -> Path:
    text = trex_inventory_text()
    assert old in text
    path = tmp_path / "inv.yaml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("old", "new", "host", "field", "message"),
    [
        ("generator: trex", "generator: ixia", TREX_DUT, "trafficgen.generator", "'moongen', 'trex'"),
        (
            "generator: trex",
            "generator: trex\n      base_dir: /root/x",
            TREX_DUT,
            "trafficgen.base_dir",
            "MoonGen's",
        ),
        (
            "      install_dir: /opt/trex\n",
            "      install_dir: /opt/trex\n      mirror: x\n",
            TREX_TG,
            "trex.mirror",
            "unknown field",
        ),
        ("    trex:\n", "    old:\n", TREX_TG, None, "unknown"),
        (
            f"host: {TREX_TG}",
            "host: nowhere.example.com",
            TREX_DUT,
            "trafficgen.host",
            "needs the traffic generator",
        ),
    ],
)
def test_inconsistent_trex_inventories_are_refused(
    tmp_path: Path, old: str, new: str, host: str, field: str | None, message: str
) -> None:
    with pytest.raises(InventoryError, match=message) as info:
        load_inventory(_edited(tmp_path, old, new))
    assert info.value.host == host
    if field is not None:
        assert info.value.field == field


def test_an_unquoted_all_digit_sha256_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = _edited(tmp_path, f'sha256: "{TREX_SHA256}"', "sha256: " + "1" * 64)
    with pytest.raises(InventoryError, match="YAML read it as a number: write the SHA-256 in quotes") as info:
        load_inventory(path)
    assert info.value.field == "trex.sha256"


def test_a_dut_cannot_carry_a_trex_record(tmp_path: Path) -> None:
    path = _edited(tmp_path, "    guest_image:", "    trex: {url: x}\n    guest_image:")
    with pytest.raises(InventoryError, match="only a traffic generator has a TRex installation") as info:
        load_inventory(path)
    assert (info.value.host, info.value.field) == (TREX_DUT, "trex")


@pytest.mark.parametrize("scenario", ALL_SCENARIOS)
def test_every_scenario_with_trex_loads_like_vsperf_with_trex_keys(tmp_path: Path, scenario: str) -> None:
    inventory = write_trex_inventory(tmp_path / "inv.yaml")
    config = generate_config(scenario, TREX_DUT, inventory)
    ast.parse(config.text)  # valid Python (test_injection checks every line is an assignment of literals)
    conf = tmp_path / "trex.conf"
    conf.write_text(config.text, encoding="utf-8")
    settings = load_like_vsperf(conf, integration=needs_integration(load_catalog().get(scenario)))
    assert settings["TRAFFICGEN"] == "Trex"
    assert settings["TRAFFICGEN_TREX_HOST_IP_ADDR"] == "192.0.2.20"
    assert settings["TRAFFICGEN_TREX_USER"] == "root"
    assert settings["TRAFFICGEN_TREX_BASE_DIR"] == "/opt/trex/"  # VSperf appends 't-rex-64'
    assert settings["TRAFFICGEN_TREX_PORT1"] == "0000:03:00.1"
    assert settings["TRAFFICGEN_TREX_PORT2"] == "0000:03:00.0"
    assert settings["TRAFFICGEN_TREX_LATENCY_PPS"] == 1000
    assert settings["TRAFFICGEN_TREX_LEARNING_MODE"] is True
    assert settings["TRAFFICGEN_TREX_LEARNING_DURATION"] == 5
    assert settings["TRAFFICGEN_TREX_RFC2544_MAX_REPEAT"] == 0
    assert settings["TRAFFICGEN_TREX_RFC2544_BINARY_SEARCH_LOSS_VERIFICATION"] is False
    assert settings["TRAFFICGEN_TREX_VERIFICATION_MODE"] is False
    paths = settings["PATHS"]
    assert isinstance(paths, dict)
    assert paths["trafficgen"]["Trex"] == {
        "type": "src",
        "src": {"path": "/opt/trex/automation/trex_control_plane/interactive"},
    }
    # VSperf's other PATHS survive (keys set one by one).
    assert paths["dpdk"]["type"] == "bin"
    # No MoonGen connection keys: VSperf would not read them, a reader would be misled.
    assert not [line for line in config.text.splitlines() if line.startswith("TRAFFICGEN_MOONGEN_HOST")]
    # Only keys VSperf has: every TRAFFICGEN_TREX_* written is one of conf/03_traffic.conf or
    # conf/10_custom.conf (VSperf commit 90ef48d4).
    vsperf_keys = {
        "TRAFFICGEN_TREX_HOST_IP_ADDR",
        "TRAFFICGEN_TREX_USER",
        "TRAFFICGEN_TREX_BASE_DIR",
        "TRAFFICGEN_TREX_PORT1",
        "TRAFFICGEN_TREX_PORT2",
        "TRAFFICGEN_TREX_LATENCY_PPS",
        "TRAFFICGEN_TREX_LEARNING_MODE",
        "TRAFFICGEN_TREX_LEARNING_DURATION",
        "TRAFFICGEN_TREX_RFC2544_MAX_REPEAT",
        "TRAFFICGEN_TREX_RFC2544_BINARY_SEARCH_LOSS_VERIFICATION",
        "TRAFFICGEN_TREX_VERIFICATION_MODE",
    }
    written = {s.target[0] for s in config.settings if s.target[0].startswith("TRAFFICGEN_TREX_")}
    assert written == vsperf_keys


def test_a_hostile_peer_address_cannot_leave_its_literal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The address is validated at load; what passes is written as a repr() literal."""
    path = write_trex_inventory(tmp_path / "inv.yaml", peer_address='"x\'; import os #"')
    with pytest.raises(InventoryError) as info:
        load_inventory(path)
    assert info.value.field == "trafficgen.address"
    assert main(["-q", "--scenario", "OVS_DPDK1q", "--host", TREX_DUT, "--inventory", str(path)]) == 2
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("install_dir", ["/opt/trex", "/opt/trex/v3.04", "/home/alice/trex", "/srv/trex/"])
def test_install_dirs_of_two_components_or_more_are_taken(tmp_path: Path, install_dir: str) -> None:
    inventory = load_inventory(write_trex_inventory(tmp_path / "inv.yaml", install_dir=install_dir))
    trex = inventory.get(TREX_TG).trex
    assert trex is not None and trex.install_dir == install_dir.rstrip("/")


def test_the_task_refuses_the_same_system_directories() -> None:
    """setup_trex's own list (SETUP_TREX_SYSTEM_DIRS, NO_INSTALL_TOPS) is the inventory's."""
    text = (Path(__file__).resolve().parents[2] / "beaker_tasks" / "setup_trex" / "runtest.sh").read_text()
    dirs = text.split("SETUP_TREX_SYSTEM_DIRS=(", 1)[1].split(")", 1)[0].split()
    tops = text.split("SETUP_TREX_NO_INSTALL_TOPS=(", 1)[1].split(")", 1)[0].split()
    assert sorted(dirs) == sorted(SYSTEM_DIRS)
    assert sorted(tops) == sorted(NO_INSTALL_TOPS)
