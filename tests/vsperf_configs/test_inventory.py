from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from tests.fifoguard import fifo_watchdog
from vsperf_configs.errors import CpuOverlapError, InventoryError
from vsperf_configs.inventory import (
    cpu_mask,
    format_cpu_list,
    host_environment,
    load_inventory,
    normalize_pci,
    parse_cpu_list,
)
from vsperf_configs.model import HostRole


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("2-5,8", (2, 3, 4, 5, 8)), ([3, 1], (3, 1)), (7, (7,)), ("0", (0,)), (" 1 , 3-4", (1, 3, 4))],
)
def test_parse_cpu_list(raw: object, expected: tuple[int, ...]) -> None:
    assert parse_cpu_list(raw, key="k") == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("5-2", "runs backwards"),
        ("1,1", "listed twice"),
        ("a-b", "not a cpulist"),
        (True, "not a CPU list"),
        ([1.5], "not a CPU id"),
        ("9999", "outside 0..4095"),
        ({}, "not a CPU list"),
    ],
)
def test_parse_cpu_list_rejects(raw: object, message: str) -> None:
    with pytest.raises(InventoryError, match=message):
        parse_cpu_list(raw, key="cpus.pmd")


def test_format_and_mask() -> None:
    assert format_cpu_list((8, 2, 3, 4, 5, 10)) == "2-5,8,10"
    assert format_cpu_list(()) == ""
    assert cpu_mask((2, 4, 6, 8)) == "154"
    assert cpu_mask((0,)) == "1"
    assert cpu_mask((40,)) == "10000000000"


def test_normalize_pci() -> None:
    assert normalize_pci("03:00.1", key="nics") == "0000:03:00.1"
    assert normalize_pci("0000:AF:00.0", key="nics") == "0000:af:00.0"
    with pytest.raises(InventoryError, match="'eth0' is not a PCI address"):
        normalize_pci("eth0", key="nics")


def test_example_inventory(example_inventory: Path) -> None:
    inventory = load_inventory(example_inventory)
    dut = inventory.get("DUT01.example.com")
    assert dut.role is HostRole.DUT
    assert dut.isolated_cpus == (2, 4, 6, 8, 10, 12, 14, 16, 18)
    assert dut.moongen is not None and dut.moongen.ports == (0, 1)
    tg = inventory.get("moongen01.example.com")
    env = host_environment(tg)
    assert env["ROLE"] == "trafficgen"
    assert env["TEST_NICS"] == "0000:81:00.0 0000:81:00.1"
    assert env["ISOLATED_CPUS"] == "12-23"
    assert env["MOONGEN_CPUS"] == "12,13,14,15,16,17"
    assert host_environment(dut)["PMD_CPUS"] == "2,4,6,8"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "inv.yaml"
    path.write_text(text)
    return path


TG = "hosts:\n  tg:\n    role: trafficgen\n    nics: ['0000:01:00.0']\n    numa_node: 0\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hosts: [", "not valid YAML"),
        ("- a\n", "expected a mapping with a 'hosts' mapping"),
        (TG + "    cpus: {isolated: '2-3'}\n    colour: red\n", "field 'colour': unknown field"),
        (TG + "    cpus: {}\n", "field 'cpus.isolated': a traffic generator needs its isolated CPUs"),
        (TG + "    cpus: {isolated: '2', pmd: '3'}\n", "field 'cpus.pmd': only a DUT"),
        (
            TG.replace("role: trafficgen", "role: server") + "    cpus: {isolated: '2'}\n",
            "'server' is not a valid role",
        ),
        (TG.replace("numa_node: 0", "numa_node: -1") + "    cpus: {isolated: '2'}\n", "field 'numa_node'"),
        (
            "hosts:\n  d:\n    role: dut\n    nics: ['01:00.0', '01:00.1']\n    numa_node: 0\n"
            "    cpus: {ovs_lcore: 0, pmd: '2-3', isolated: '0-3'}\n    moongen: {host: tg}\n",
            "field 'cpus.isolated': CPU\\(s\\) 0 also appear in the OVS lcore",
        ),
        (
            "hosts:\n  d:\n    role: dut\n    nics: ['01:00.0']\n    numa_node: 0\n"
            "    cpus: {ovs_lcore: 0, pmd: '2-3'}\n    moongen: {host: tg}\n",
            "exactly 2 test NICs",
        ),
        (
            "hosts:\n  d:\n    role: dut\n    nics: ['01:00.0', '01:00.1']\n    numa_node: 0\n"
            "    cpus: {ovs_lcore: 0, pmd: '2-3'}\n",
            "field 'moongen': a DUT needs its MoonGen peer",
        ),
        (
            "hosts:\n  d:\n    role: dut\n    nics: ['01:00.0', '01:00.1']\n    numa_node: 0\n"
            "    cpus: {ovs_lcore: 0, pmd: '2-3'}\n    moongen: {host: tg, ports: [1, 1]}\n",
            "field 'moongen.ports'",
        ),
    ],
)
def test_bad_inventory_names_file_host_and_field(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(InventoryError, match=message) as info:
        load_inventory(path)
    assert str(path) in str(info.value)


def test_overlap_error_type(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "hosts:\n  d:\n    role: dut\n    nics: ['01:00.0', '01:00.1']\n    numa_node: 0\n"
        "    cpus: {ovs_lcore: '0-1', pmd: '1-3'}\n    moongen: {host: tg}\n",
    )
    with pytest.raises(CpuOverlapError) as info:
        load_inventory(path)
    assert info.value.cpus == (1,) and info.value.host == "d"


DUT = (
    "hosts:\n  d:\n    role: dut\n    nics: ['01:00.0', '01:00.1']\n    numa_node: 0\n"
    "    cpus: {ovs_lcore: 0, pmd: '2-3'}\n    moongen: {host: tg}\n"
)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("4000-5000", "CPU id 5000 is outside 0..4095"),  # the bound, not the first id past it
        ("2-300000000", "CPU id 300000000 is outside 0..4095"),
        ("1-" + "9" * 5000, "CPU id 99999999999999999999… is outside"),
        ("0-4095," * 100_000, "a CPU is listed twice"),
        ([10**100], "CPU id 10000000000000000000… is outside"),
    ],
    ids=["bound-of-range", "300-million", "5000-digits", "range-repeated", "googol-in-list"],
)
def test_cpu_ranges_are_bounded_before_they_are_expanded(raw: object, message: str) -> None:
    # Issue 25 item 15: 'cpus.pmd: "2-300000000"' was expanded into 300 million ids first.
    tracemalloc.start()
    try:
        with pytest.raises(InventoryError, match=message):
            parse_cpu_list(raw, key="cpus.pmd")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024 * 1024


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "numa_node: 0\n",
            "numa_node: 0\n    numa_nodes: " + "1" + "0" * 100 + "\n",
            "field 'numa_nodes'.*maximum 1024",
        ),
        ("numa_node: 0\n", "numa_node: 1024\n", "field 'numa_node'.*maximum 1023"),
        (
            "numa_node: 0\n",
            "numa_node: 0\n    socket_mem_mb: 99999999999\n",
            "field 'socket_mem_mb'.*maximum",
        ),
        ("numa_node: 0\n", "numa_node: " + "9" * 5000 + "\n", "numa_node|not a usable inventory"),
    ],
    ids=["numa-nodes-googol", "numa-node-1024", "socket-mem", "int-of-5000-digits"],
)
def test_sizes_from_the_inventory_are_bounded(tmp_path: Path, old: str, new: str, message: str) -> None:
    # numa_nodes sizes VSperf's DPDK_SOCKET_MEM list (one entry per node): 10**100 never finished.
    path = _write(tmp_path, DUT.replace(old, new))
    with pytest.raises(InventoryError, match=message) as info:
        load_inventory(path)
    assert str(path) in str(info.value) and len(str(info.value)) < 400


def test_a_bad_cpulist_is_quoted_short() -> None:
    with pytest.raises(InventoryError) as info:
        parse_cpu_list("x" * 117_000, key="cpus.pmd")
    assert f"'{'x' * 80}…' is not a cpulist" in str(info.value) and len(str(info.value)) < 200


def test_an_inventory_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    with fifo_watchdog(path) as freed, pytest.raises(InventoryError, match="it is a FIFO"):
        load_inventory(path)
    assert freed == []
