"""``python3 -m vsperf_configs.labargs``: the DUT's ovsperf-lab options from the host inventory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ovsperf_common.exitcodes import ExitCode
from vsperf_configs.errors import InventoryError
from vsperf_configs.inventory import dpdk_devargs, load_inventory
from vsperf_configs.labargs import LAB_OPTIONS, lab_options, main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "vsperf_configs" / "inventory.example.yaml"
DUT = "dut01.example.com"
EXPECTED = [
    "--dut-port", "0000:03:00.0", "--dut-port", "0000:03:00.1",
    "--tg-port", "0000:81:00.0", "--tg-port", "0000:81:00.1",
    "--tg-ssh", "root@192.0.2.10", "--tg-cpus", "12-17",
    "--pmd-cpus", "2,4,6,8", "--lcore-cpu", "0", "--socket-mem-mb", "1024",
]  # fmt: skip
BASE = """hosts:
  dut.example.com:
    role: dut
    nics: ["0000:03:00.0", "0000:03:00.1"]
{dut_extra}    numa_node: 0
    cpus: {{ovs_lcore: "1", pmd: "2-3"}}
{peer}
  tg.example.com:
    role: trafficgen
    nics: ["0000:81:00.0", "0000:81:00.1"]
{tg_extra}    numa_node: 0
    cpus: {tg_cpus}
"""
PEER = "    trafficgen: {host: tg.example.com, address: tg-lab.example.com, user: perf, ports: [1, 0]}"


def _inventory(tmp_path: Path, *, dut_extra: str = "", tg_extra: str = "", peer: str = PEER,
               tg_cpus: str = '{isolated: "4-7", generator: "4-5"}') -> Path:  # fmt: skip
    path = tmp_path / "inventory.yaml"
    path.write_text(BASE.format(dut_extra=dut_extra, tg_extra=tg_extra, peer=peer, tg_cpus=tg_cpus))
    return path


def test_the_example_inventory_gives_the_contract_s_options_one_word_per_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--inventory", str(EXAMPLE), "--host", DUT]) == ExitCode.OK
    assert capsys.readouterr().out.split("\n") == [*EXPECTED, ""]
    assert main(["--inventory", str(EXAMPLE), "--host", DUT, "--null"]) == ExitCode.OK
    assert capsys.readouterr().out.split("\0") == [*EXPECTED, ""]
    assert tuple(dict.fromkeys(EXPECTED[::2])) == LAB_OPTIONS


def test_vdevs_the_trafficgen_name_and_the_peer_s_port_order(tmp_path: Path) -> None:
    path = _inventory(
        tmp_path,
        dut_extra='    dpdk_ports: ["net_af_packet0,iface=veth-d0", "net_af_packet1,iface=veth-d1"]\n',
        tg_extra='    dpdk_ports: ["net_af_xdp0,iface=veth-t0,start_queue=0", "0000:81:00.1,rxq_len=4"]\n',
    )
    words = lab_options(load_inventory(path), "dut.example.com")
    assert list(words) == [
        "--dut-port", "net_af_packet0,iface=veth-d0", "--dut-port", "net_af_packet1,iface=veth-d1",
        # peer ports [1, 0]: the DUT's port 0 is cabled to the generator's port 1
        "--tg-port", "0000:81:00.1,rxq_len=4", "--tg-port", "net_af_xdp0,iface=veth-t0,start_queue=0",
        "--tg-ssh", "perf@tg-lab.example.com", "--tg-cpus", "4-5",
        "--pmd-cpus", "2-3", "--lcore-cpu", "1", "--socket-mem-mb", "1024",
    ]  # fmt: skip


def test_a_script_reads_the_words_without_splitting(tmp_path: Path) -> None:
    path = _inventory(tmp_path, dut_extra='    dpdk_ports: ["net_tap0,iface=a*", "net_tap1,iface=b"]\n')
    with pytest.raises(InventoryError, match="field 'dpdk_ports'"):
        load_inventory(path)  # a glob character never reaches the script
    script = (
        'mapfile -d \'\' -t words < <("$0" -m vsperf_configs.labargs --inventory "$1"'
        " --host dut01.example.com --null); printf '<%s>' \"${words[@]}\""
    )
    out = subprocess.run(
        ["bash", "-c", script, sys.executable, str(EXAMPLE)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    ).stdout
    assert out == "".join(f"<{w}>" for w in EXPECTED)


def _ports(*ports: str) -> dict[str, str]:
    return {"dut_extra": f"    dpdk_ports: [{', '.join(ports)}]\n"}


def _peer(fields: str) -> dict[str, str]:
    return {"peer": f"    trafficgen: {{host: tg.example.com, {fields}}}"}


@pytest.mark.parametrize(
    ("changes", "field", "reason"),
    [
        (_ports('"net_af_packet0,iface=x;reboot"', '"0000:03:00.1"'), "dpdk_ports", "is not DPDK devargs"),
        (_ports('"-a 0000:03:00.0"', '"0000:03:00.1"'), "dpdk_ports", "is not DPDK devargs"),
        (_ports('"net_tap0,iface=a b"', '"net_tap1"'), "dpdk_ports", "is not DPDK devargs"),
        (_ports('"net_tap0"'), "dpdk_ports", "one per test NIC"),
        (_ports('"net_tap0"', '"net_tap0"'), "dpdk_ports", "listed twice"),
        (_peer("address: '-oProxyCommand=x'"), "trafficgen.address", "is not a host name"),
        (_peer("user: 'root x'"), "trafficgen.user", "is not a user name"),
        (
            {"peer": PEER + "\n    moongen: {host: tg.example.com}"},
            "moongen",
            "give the traffic generator peer once",
        ),
        (
            {"tg_cpus": '{isolated: "4-7", generator: "4", moongen: "5"}'},
            "cpus.moongen",
            "the generator's CPUs once",
        ),
    ],
)
def test_bad_values_are_refused_by_the_inventory_naming_the_field(
    tmp_path: Path, changes: dict[str, str], field: str, reason: str
) -> None:
    with pytest.raises(InventoryError, match=f"field '{field}'") as caught:
        load_inventory(_inventory(tmp_path, **changes))
    assert reason in str(caught.value)


@pytest.mark.parametrize(
    ("changes", "host", "message"),
    [
        ({"peer": "    trafficgen: {host: tg.example.com, address: 'fe80::1'}"}, "dut.example.com",
         "field 'trafficgen.address'"),
        ({"peer": "    trafficgen: {host: other.example.com}"}, "dut.example.com",
         "traffic generator 'other.example.com' has no inventory entry"),
        ({"peer": "    trafficgen: {host: tg.example.com, ports: [0, 2]}"}, "dut.example.com",
         "generator port 2 does not exist"),
        ({}, "tg.example.com", "not a DUT"),
        ({}, "nobody.example.com", "no inventory entry for this host"),
    ],
)  # fmt: skip
def test_what_the_options_cannot_be_made_from_is_an_error_with_nothing_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict[str, str], host: str, message: str
) -> None:
    path = _inventory(tmp_path, **changes)
    assert main(["--inventory", str(path), "--host", host]) == ExitCode.ERROR
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err and str(path) in captured.err


def test_devargs_are_normalised_or_refused() -> None:
    assert dpdk_devargs("03:00.1", key="k") == "0000:03:00.1"
    assert dpdk_devargs("0000:AF:00.0,txq_inline=0", key="k") == "0000:af:00.0,txq_inline=0"
    for bad in ("", "eth0", "net_ring0,$x=1", "0000:03:00.0,", "x" * 300, 7):
        with pytest.raises(InventoryError, match="field 'k'"):
            dpdk_devargs(bad, key="k")


def test_it_runs_as_a_module_through_the_runner() -> None:
    tool = [sys.executable, "-m", "vsperf_configs.labargs"]
    helped = subprocess.run([*tool, "--help"], capture_output=True, text=True, check=False, cwd=REPO)
    assert (helped.returncode, helped.stderr) == (0, "")
    assert (
        helped.stdout.startswith("usage: python3 -m vsperf_configs.labargs")
        and "-q, --quiet" in helped.stdout
    )
    bad = subprocess.run(
        [*tool, "--host", DUT, "--inventory", "/nonexistent.yaml"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert (bad.returncode, bad.stdout) == (2, "")
    assert (
        bad.stderr.startswith("python3 -m vsperf_configs.labargs: error: ") and "Traceback" not in bad.stderr
    )


def test_the_nightly_path_s_options_plan_the_overlay_scenario_in_two_host_mode(tmp_path: Path) -> None:
    """What ``ovsperf_test run`` gives ``ovsperf-lab run --config OVS_DPDK1q_VXLAN`` is planned."""
    import dataclasses

    from ovsperf_catalog.catalog import load_catalog
    from ovsperf_catalog.model import Engine, VsperfTest
    from ovsperf_lab.generators.sshhost import SshTarget
    from ovsperf_lab.machine import parse_cpulist, probe_machine
    from ovsperf_lab.plan import LabOptions, plan_run
    from ovsperf_lab.testbed import TestbedConfig

    path = _inventory(
        tmp_path,
        dut_extra='    dpdk_ports: ["net_af_packet0,iface=veth-d0", "net_af_packet1,iface=veth-d1"]\n',
        tg_extra='    dpdk_ports: ["net_af_packet0,iface=veth-t0", "net_af_packet1,iface=veth-t1"]\n',
    )
    done = subprocess.run(
        [sys.executable, "-m", "vsperf_configs.labargs", "--inventory", str(path),
         "--host", "dut.example.com", "--null"],
        capture_output=True, text=True, check=True, cwd=REPO,
    )  # fmt: skip
    words = done.stdout.split("\0")[:-1]
    given: dict[str, list[str]] = {}
    for option, value in zip(words[::2], words[1::2], strict=True):
        given.setdefault(option, []).append(value)
    options = LabOptions(
        dut_ports=tuple(given.pop("--dut-port")),
        tg_ports=tuple(given.pop("--tg-port")),
        tg_ssh=SshTarget.parse(given.pop("--tg-ssh")[0]),
        tg_cpus=given.pop("--tg-cpus")[0],
        pmd_cpus=parse_cpulist(given.pop("--pmd-cpus")[0]),
        lcore_cpu=int(given.pop("--lcore-cpu")[0]),
        ovs_socket_mem_mb=int(given.pop("--socket-mem-mb")[0]),
    )
    assert given == {}
    scenario = load_catalog().get("OVS_DPDK1q_VXLAN")
    assert scenario.engine is Engine.OVSPERF
    facts = dataclasses.replace(
        probe_machine(),
        cpus=tuple(range(4)),
        pinnable_cpus=tuple(range(4)),
        is_root=True,
        hugetlbfs_mounted=True,
        hugepages_2m_free=4096,
    )
    plan = plan_run(scenario, facts, options)
    assert plan.tests == (VsperfTest.OVERLAY_P2P_DECAP_TPUT, VsperfTest.OVERLAY_P2P_TPUT)
    assert plan.frame_sizes_bytes == (114, 576, 1280, 1468) == scenario.frame_sizes_bytes
    assert plan.options.wire and plan.cpus.pmd_cpus == (2, 3)
    # On the DUT, OVS runs in the current namespace: the devargs name its interfaces.
    assert TestbedConfig.for_plan(plan, facts).ovs_netns is False
