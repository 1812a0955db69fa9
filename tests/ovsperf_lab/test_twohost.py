"""The two-host engine for real: ``ovsperf-lab run`` in a DUT namespace, the generator over SSH in a TG one.

Both hosts are network namespaces with a real sshd (``twohost_env.py``); the data links are two veth
pairs, opened as DPDK ``net_af_packet`` ports by OVS-DPDK (the distribution's, sandboxed, in the DUT
namespace) and by ``ovsperf-trafficgen`` (started by ``ssh`` from the DUT namespace, so its
JSON-lines protocol crosses a real SSH channel). Trials are short (0.5 s final trials, 2 s per
load, 0.5 s latency trials) to keep the suite fast.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram

from ovsperf_common.labfiles import LATENCY_FILE, TRIALS_FILE
from ovsperf_common.metadata import METADATA_FILE
from ovsperf_lab.generators.dpdk import DpdkTrafficGenerator
from ovsperf_lab.generators.dpdk_config import GeneratorConfig
from ovsperf_lab.generators.sshhost import SshTarget
from ovsperf_lab.state import HUGEPAGE_DIR
from tests.ovsperf_lab import tg_harness as h
from tests.ovsperf_lab.twohost_env import LAB, TwoHosts, two_hosts

pytestmark = [pytest.mark.dpdk, pytest.mark.slow]

SHORT = [
    "--final-trial-duration", "0.5",
    "--duration-sum", "2",
    "--goal-width", "5",
    "--search-duration-max", "120",
    "--latency-loads", "0,90",
    "--latency-time", "0.5",
    "--ring-size", "1024",
    "--no-progress",
]  # fmt: skip
"""MLRsearch and latency options that keep a search under a minute."""


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[TwoHosts]:
    h.build_generator()
    with two_hosts(tmp_path / "lab") as pair:
        yield pair


def lab_run(
    hosts: TwoHosts,
    state_root: Path,
    out: Path,
    *extra: str,
    crossed: bool = False,
    config: str = "OVS_DPDK1q",
    test: str = "phy2phy_tput",
) -> subprocess.CompletedProcess[str]:
    """Run ``ovsperf-lab run`` of ``config``'s ``test`` in the DUT namespace, the generator on the TG."""
    cpus = h.cpus()
    argv = [
        str(LAB), "--state-dir", str(state_root), "run", "--config", config, "--test", test,
        "--output", str(out),
        *hosts.dut_ports(), *hosts.tg_ports(crossed=crossed), *hosts.ssh_options(),
        "--tg-binary", str(h.BINARY), "--tg-cpus", str(cpus[0]), "--tg-memory-mb", "128",
        "--pmd-cpus", str(cpus[-1]), "--lcore-cpu", str(cpus[0]), "--socket-mem-mb", "256",
        *extra,
    ]  # fmt: skip
    return hosts.run_on_dut(argv, timeout_s=400)


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def no_leftovers(state_root: Path, before_huge: set[str]) -> list[str]:
    """Return what a run left: state files, hugepage files, processes naming the state root or its prefix."""
    found = [str(p) for p in state_root.rglob("*")]
    found += sorted(set(os.listdir(HUGEPAGE_DIR)) - before_huge)
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    found += [
        line
        for line in out.splitlines()
        if str(state_root) in line or ("ovsperf-lab-2" in line and "-tg" in line)
    ]
    return found


def test_two_hosts_mlrsearch_latency_and_counters_agree(
    hosts: TwoHosts, state_root: Path, tmp_path: Path
) -> None:
    before = set(os.listdir(HUGEPAGE_DIR))
    done = lab_run(hosts, state_root, tmp_path / "out", "--frame-sizes", "64,1518", *SHORT)
    (tmp_path / "stderr.log").write_text(done.stderr)
    assert done.returncode == 0, done.stderr[-4000:]
    [results] = [Path(line) for line in done.stdout.splitlines()]
    assert results.parent == tmp_path / "out"
    rows = read_rows(results / "result_0_phy2phy_tput_p2p.csv")
    assert [int(r["packet_size"]) for r in rows] == [64, 1518]
    for row in rows:
        ndr, pdr = float(row["throughput_rx_fps"]), float(row["pdr_throughput_rx_fps"])
        assert ndr > 0 and pdr > 0 and ndr <= pdr * 1.01, row
        assert float(row["min_latency_ns"]) > 0
    latency = json.loads((results / LATENCY_FILE).read_text())["results"]
    assert len(latency) == 2
    for entry in latency:
        assert [lv["percent_of_pdr"] for lv in entry["levels"]] == [0.0, 90.0]
        for level in entry["levels"]:
            merged = level["all"]
            assert HdrHistogram.decode(merged["hdrh"]).get_total_count() == merged["rx_packets"] > 0
    # Every search trial carries OVS's port counters; in each loss-free one they agree with the
    # generator's frame counts: what it sent arrived at OVS, what OVS sent arrived at it.
    trials = json.loads((results / TRIALS_FILE).read_text())["trials"]
    search = [t for t in trials if t["kind"] == "search"]
    assert search and all("crosscheck" in t for t in search)
    clean = [t for t in search if t["valid"] and not any(t["loss_ratios"])]
    assert len(clean) >= 2, [(t["load_pps_per_direction"], t["loss_ratios"]) for t in search]
    for trial in clean:
        check = trial["crosscheck"]
        assert check["ok"] is True, check
        sent = 2 * trial["intended_packets_per_direction"]
        assert sum(check["ovs_rx_packets"].values()) == pytest.approx(sent, abs=16), check
        assert sum(check["ovs_tx_packets"].values()) == pytest.approx(sum(trial["rx_packets"]), abs=16), check
    meta = json.loads((results / METADATA_FILE).read_text())
    assert meta["complete"] is True
    assert meta["engine"] == "ovsperf"
    two = meta["two_host"]
    assert two["tg_host"] == f"root@{hosts.tg.address}"
    assert two["dut_ports"] == hosts.dut_ports()[1::2] and two["tg_ports"] == hosts.tg_ports()[1::2]
    assert two["dut_ports"][0].startswith(f"net_af_packet0,iface={hosts.dut_ifaces[0]},")
    assert "measured on the TG" in two["clock"]
    assert "Cabling checked" in done.stderr
    assert no_leftovers(state_root, before) == []


def test_crossed_links_are_named(hosts: TwoHosts, state_root: Path, tmp_path: Path) -> None:
    before = set(os.listdir(HUGEPAGE_DIR))
    done = lab_run(hosts, state_root, tmp_path / "out", "--frame-sizes", "64", *SHORT, crossed=True)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "TG port 0 is cabled to DUT port 1 ('dpdk1') and TG port 1 to DUT port 0 ('dpdk0')" in done.stderr
    assert done.stdout == ""  # an error prints nothing on stdout
    [results] = (tmp_path / "out").iterdir()  # the partial results are kept, marked incomplete
    meta = json.loads((results / METADATA_FILE).read_text())
    assert meta["complete"] is False and "cabled to DUT port 1" in meta["incomplete_reason"]
    assert no_leftovers(state_root, before) == []


def test_unreachable_tg_and_missing_binary_are_named_before_anything_starts(
    hosts: TwoHosts, state_root: Path, tmp_path: Path
) -> None:
    missing = lab_run(hosts, state_root, tmp_path / "out", "--tg-binary", "/nonexistent/ovsperf-trafficgen")
    assert missing.returncode == 2 and missing.stdout == ""
    assert (
        f"TG host 'root@{hosts.tg.address}' has no traffic generator '/nonexistent/ovsperf-trafficgen'"
        in missing.stderr
    ), missing.stderr[-2000:]
    argv = [
        a if a != f"root@{hosts.tg.address}" else f"root@{hosts.tg.address}:2" for a in hosts.ssh_options()
    ]
    unreachable = hosts.run_on_dut(
        [str(LAB), "--state-dir", str(state_root), "run", "--config", "OVS_DPDK1q", "--output",
         str(tmp_path / "out"), *hosts.dut_ports(), *hosts.tg_ports(), *argv],
        timeout_s=60,
    )  # fmt: skip
    assert unreachable.returncode == 2 and unreachable.stdout == ""
    assert f"Cannot reach TG host 'root@{hosts.tg.address}:2' over SSH" in unreachable.stderr, (
        unreachable.stderr
    )
    assert not (tmp_path / "out").exists() and list(state_root.iterdir()) == []  # nothing started


def test_a_generator_that_ignores_quit_is_ended_on_the_tg_by_pid(
    hosts: TwoHosts, caplog: pytest.LogCaptureFixture
) -> None:
    target = SshTarget(hosts.tg.address, "root", None, hosts.key, hosts.known_hosts)
    prefix = h.unique_prefix("ssh")
    config = GeneratorConfig(
        vdevs=tuple(hosts.tg_ports()[1::2]),
        lcores=h.generator_cpu(),
        memory_mb=128,
        file_prefix=prefix,
        binary=h.BINARY,
        ssh=target,
    )
    with h.no_leftovers(prefix):
        generator = DpdkTrafficGenerator(config)
        try:
            assert generator.host == f"root@{hosts.tg.address}" and generator.remote_pid is not None
            remote = Path(f"/proc/{generator.remote_pid}")  # the TG namespace shares this PID namespace
            assert prefix in (remote / "cmdline").read_bytes().decode().split("\0")
            assert [p.name for p in generator.ports()] == ["net_af_packet0", "net_af_packet1"]
            os.kill(generator.remote_pid, signal.SIGSTOP)  # it can no longer answer 'quit'
        finally:
            generator.close()
        assert not remote.exists() or "Z" in (remote / "stat").read_text().split(")")[1][:3]
        assert generator.returncode is not None
    stopped = f"PID {generator.remote_pid} on TG host 'root@{hosts.tg.address}' was stopped by signal"
    assert f"Traffic generator {stopped}" in caplog.text


def test_pvp_on_nic_ports_through_the_testpmd_forwarder(
    hosts: TwoHosts, state_root: Path, tmp_path: Path
) -> None:
    before = set(os.listdir(HUGEPAGE_DIR))
    done = lab_run(
        hosts, state_root, tmp_path / "out", "--frame-sizes", "512", *SHORT, "--latency-loads", "",
        config="OVS_DPDK1q_GUEST_DPDK1q", test="pvp_tput",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    [results] = [Path(line) for line in done.stdout.splitlines()]
    [row] = read_rows(results / "result_0_pvp_tput_pvp.csv")
    assert float(row["throughput_rx_fps"]) > 0 and row["guest_loopback_app"] == "testpmd"
    assert "ports dpdk0=1, dpdk1=2, vm0=3, vm1=4" in done.stderr
    assert no_leftovers(state_root, before) == []


def _bridge_devices(ns: str | None) -> dict[str, str]:
    """Return the lab bridges' devices (``olab*``, ``olp*``) in ``ns`` (``None``: this one) → address."""
    argv = ["ip", "-o", "addr", "show"] if ns is None else ["ip", "-n", ns, "-o", "addr", "show"]
    links = ["ip", "-o", "link", "show"] if ns is None else ["ip", "-n", ns, "-o", "link", "show"]
    found: dict[str, str] = {}
    for line in subprocess.run(links, capture_output=True, text=True, check=True).stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        if name.startswith(("olab", "olp")):
            found[name] = ""
    for line in subprocess.run(argv, capture_output=True, text=True, check=True).stdout.splitlines():
        fields = line.split()
        if fields[1] in found and fields[2] == "inet":
            found[fields[1]] = fields[3]
    return found


def test_vxlan_decap_and_encap_on_nic_ports_with_the_vtep_in_the_dut_namespace(
    hosts: TwoHosts, state_root: Path, tmp_path: Path
) -> None:
    before = set(os.listdir(HUGEPAGE_DIR))
    host_before = set(_bridge_devices(None))
    seen_dut: dict[str, str] = {}
    seen_host: set[str] = set()
    stop = threading.Event()

    def watch() -> None:  # the bridges' tap devices while the run lasts, in both namespaces
        while not stop.wait(0.3):
            for name, address in _bridge_devices(hosts.dut.ns).items():
                seen_dut[name] = seen_dut.get(name) or address
            seen_host.update(set(_bridge_devices(None)) - host_before)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        done = lab_run(
            hosts, state_root, tmp_path / "out", "--frame-sizes", "114", *SHORT, "--latency-loads", "",
            "--test", "overlay_p2p_tput", config="OVS_DPDK1q_VXLAN", test="overlay_p2p_decap_tput",
        )  # fmt: skip
    finally:
        stop.set()
        watcher.join(timeout=10)
    (tmp_path / "stderr.log").write_text(done.stderr)
    assert done.returncode == 0, done.stderr[-4000:]
    [results] = [Path(line) for line in done.stdout.splitlines()]
    trials = json.loads((results / TRIALS_FILE).read_text())["trials"]
    for index, test in enumerate(("overlay_p2p_decap_tput", "overlay_p2p_tput")):
        [row] = read_rows(results / f"result_{index}_{test}_op2p.csv")
        assert row["tunnel_type"] == "vxlan" and row["packet_size"] == "114" and row["deployment"] == "op2p"
        assert float(row["throughput_rx_fps"]) > 0, row
        search = [t for t in trials if t["test"] == test and t["kind"] == "search"]
        assert search and all(len(t["rx_packets"]) == 1 for t in search), "one direction only"
        clean = [t for t in search if t["rx_packets"][0] == t["intended_packets_per_direction"] > 0]
        assert clean, [(t["load_pps_per_direction"], t["rx_packets"]) for t in search]
        for trial in clean:
            check = trial["crosscheck"]
            assert check["ok"] is True, check
            sent = trial["intended_packets_per_direction"]
            assert check["ovs_rx_packets"]["0"] == sent == check["ovs_tx_packets"]["1"], check
    meta = json.loads((results / METADATA_FILE).read_text())
    assert meta["complete"] is True and meta["engine"] == "ovsperf"
    assert [t["tunnel_type"] for t in meta["tests"]] == ["vxlan", "vxlan"]
    assert "Cabling checked" in done.stderr and "the DUT's namespace" in done.stderr
    # The underlay bridge's tap device held the VTEP address in the DUT's namespace while the run
    # lasted; none of its bridges' devices appeared in this (the host's) namespace (other jobs'
    # runs on this machine make theirs here); none is left in either.
    underlays = {name: address for name, address in seen_dut.items() if name.startswith("olp")}
    assert underlays and set(underlays.values()) == {"198.19.254.1/24"}, seen_dut
    assert {name[3:] for name in underlays} == {name[4:] for name in seen_dut if name.startswith("olab")}
    assert not seen_host & set(seen_dut), (seen_host, seen_dut)
    assert _bridge_devices(hosts.dut.ns) == {}
    assert not set(_bridge_devices(None)) & set(seen_dut)
    assert no_leftovers(state_root, before) == []
