"""Our VSperf collector against a real OVS-DPDK: two DPDK ``net_null`` ports forwarding through a PMD.

VSperf's own modules are the stubs in ``vsperf_stub/`` (its settings and its Pidstat, which our class
extends); OVS, its PMD, its counters and ``/proc`` are real. The ``net_null`` vdevs receive packets
as fast as the PMD polls, so the PMD forwards millions of packets per second without any NIC.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ovsperf_common.ovsstats import parse_pmd_stats, pmd_totals
from ovsperf_common.vsperf_telemetry import convert_capture
from ovsperf_lab.ovs import OvsSandbox
from tests.ovsperf_lab.conftest import ovs, run_state, state_root  # noqa: F401 - fixtures

from .shims import REPO, VSPERF_STUB

pytestmark = [pytest.mark.dpdk]

COLLECTOR = REPO / "beaker_tasks" / "vsperf_test" / "collectors" / "ovsperf_telemetry.py"


@pytest.fixture
def vsperf(tmp_path: Path) -> Iterator[tuple[ModuleType, Any]]:
    """Load the collector as VSperf does, over the stub VSperf modules; yield (module, settings)."""
    sys.path.insert(0, str(VSPERF_STUB))
    try:
        from conf import settings  # the stub of VSperf's package

        spec = importlib.util.spec_from_file_location("ovsperf_telemetry", COLLECTOR)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        settings.values.clear()
        settings.values.update({"_TEST_INDEX": 3, "TRAFFICGEN_PKT_SIZES": (64, 1518)})
        yield module, settings
    finally:
        sys.path.remove(str(VSPERF_STUB))
        for name in [n for n in sys.modules if n == "conf" or n.startswith(("conf.", "tools"))]:
            del sys.modules[name]


def _tools(sandbox: OvsSandbox, directory: Path, appctl_body: str | None = None) -> dict[str, str]:
    """Write ``ovs-appctl`` / ``ovs-vsctl`` wrappers aimed at the sandbox (VSperf's TOOLS paths)."""
    appctl = directory / "ovs-appctl"
    appctl.write_text(appctl_body or f'#!/bin/sh\nexec ovs-appctl -t {sandbox.vswitchd_ctl} "$@"\n')
    vsctl = directory / "ovs-vsctl"
    vsctl.write_text(f'#!/bin/sh\nexec ovs-vsctl --db=unix:{sandbox.db_sock} "$@"\n')
    for path in (appctl, vsctl):
        path.chmod(0o755)
    return {"ovs-appctl": str(appctl), "ovs-vsctl": str(vsctl)}


def _forwarding(sandbox: OvsSandbox) -> None:
    """Two net_null ports on a netdev bridge, port 1 → port 2: the PMD forwards what null0 'receives'."""
    bridge = sandbox.bridge
    sandbox.vsctl("add-br", bridge, "--", "set", "bridge", bridge, "datapath_type=netdev")
    for n in (0, 1):
        sandbox.vsctl(
            "add-port", bridge, f"null{n}", "--", "set", "Interface", f"null{n}", "type=dpdk",
            f"options:dpdk-devargs=net_null{n}",
        )  # fmt: skip
    sandbox.wait_bridge(bridge)
    sandbox.ofctl("del-flows", sandbox.bridge_target(bridge))
    sandbox.ofctl("add-flow", sandbox.bridge_target(bridge), "in_port=1,actions=output:2")


def test_collector_captures_a_real_pmd_around_the_test(
    vsperf: tuple[ModuleType, Any],
    ovs: OvsSandbox,  # noqa: F811 - the imported fixture
    tmp_path: Path,
) -> None:
    module, settings = vsperf
    _forwarding(ovs)
    settings.values["TOOLS"] = _tools(ovs, tmp_path)
    results = tmp_path / "results"
    results.mkdir()
    collector = module.OvsperfTelemetry(str(results), "phy2phy_tput")
    collector.start()
    time.sleep(2.0)
    collector.stop()
    # VSperf's pidstat ran around the same window.
    assert (results / "pidstat_phy2phy_tput.log").read_text() == "pidstat start\npidstat stop\n"
    raw = json.loads((results / "ovsperf-telemetry-raw" / "test-3.json").read_text())
    assert raw["test"] == "phy2phy_tput" and raw["frame_sizes_bytes"] == [64, 1518]
    assert 1.9 <= raw["wall_s"] < 10
    entry = convert_capture(raw, "result_3_phy2phy_tput_p2p.csv")
    totals = entry["totals"]
    # The PMD forwarded for ~2 s (at least 1 Mpps even on a busy 2-core VM), every packet an EMC or
    # simple-match hit after the first (one flow), at a cost OVS counted in TSC cycles.
    assert totals["packets"] > 2_000_000
    assert 10 < totals["cycles_per_packet"] < 5000
    assert totals["pmd_busy_percent"] > 50
    hits = (totals["emc_hits_percent"] or 0) + (totals["simple_match_hits_percent"] or 0)
    assert hits > 99
    # The counters were cleared at start: the window's packets, not everything since OVS started.
    seconds_at_most = raw["wall_s"] + 1
    assert totals["packets"] < 100e6 * seconds_at_most
    # The same window as pmd-perf-show printed it a moment later (OVS 4.0 prints that format for
    # pmd-stats-show too): read by what it prints, the same figures within the moment's drift.
    perf = pmd_totals(parse_pmd_stats(raw["after"]["pmd_perf_show"]))
    assert perf["packets"] is not None and perf["packets"] >= totals["packets"]
    assert perf["cycles_per_packet"] == pytest.approx(totals["cycles_per_packet"], rel=0.1)
    assert perf["pmd_busy_percent"] == pytest.approx(totals["pmd_busy_percent"], abs=5)
    assert sorted((q["port"], q["queue"]) for q in entry["rxq"]) == [("null0", 0), ("null1", 0)]
    assert {q["pmd"] for q in entry["rxq"]} == {f"pmd-c{ovs.config.pmd_cpus[0]:02d}"}
    pmd_threads = [t for t in entry["threads"]["ovs-vswitchd"] if t["name"].startswith("pmd")]
    assert len(pmd_threads) == 1 and pmd_threads[0]["cpu_percent"] > 50  # a PMD polls all the time
    assert entry["ports"]["null1"]["tx_packets"] is not None
    assert "Time:" in entry["pmd_perf_show"] or "pmd thread" in entry["pmd_perf_show"]
    assert entry["notes"] == []


def test_collector_survives_an_ovs_appctl_that_hangs(
    vsperf: tuple[ModuleType, Any],
    ovs: OvsSandbox,  # noqa: F811 - the imported fixture
    tmp_path: Path,
) -> None:
    module, settings = vsperf
    settings.values["TOOLS"] = _tools(ovs, tmp_path, appctl_body="#!/bin/sh\nexec sleep 60\n")
    results = tmp_path / "results"
    results.mkdir()
    collector = module.OvsperfTelemetry(str(results), "pvp_tput")
    started = time.monotonic()
    collector.start()
    collector.stop()
    # 4 ovs-appctl calls, each cut at the collector's 5 s deadline: the test goes on.
    assert time.monotonic() - started < 4 * module.COMMAND_TIMEOUT_S + 10
    raw = json.loads((results / "ovsperf-telemetry-raw" / "test-3.json").read_text())
    entry = convert_capture(raw, "result_3_pvp_tput_pvp.csv")
    assert entry["totals"]["cycles_per_packet"] is None
    assert sum("no answer within 5 s" in n for n in entry["notes"]) == 4
    assert (results / "pidstat_pvp_tput.log").exists()
