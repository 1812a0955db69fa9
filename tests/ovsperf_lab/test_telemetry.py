"""ovsperf_lab.telemetry: OVS's PMD counters, rx-queue placement, thread CPU, and what happens when
they cannot be read (fixtures: OVS 3.1 as Debian 12 ships it, and the OVS 2.6-2.8 wording; every
other OVS version's format: tests/ovsperf_common/test_ovsstats.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ovsperf_common.ovsstats import parse_pmd_rxq, parse_pmd_stats, read_thread_ticks, thread_cpu
from ovsperf_lab.telemetry import TelemetryCollector, TrialTelemetry

FIXTURES = Path(__file__).with_name("fixtures") / "telemetry"


def text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_pmd_stats_of_ovs_3_1() -> None:
    stats = parse_pmd_stats(text("pmd-stats-show-3.1.txt"))
    assert sorted(stats) == ["main", "pmd-c01"]
    pmd = stats["pmd-c01"]
    assert pmd["packets_received"] == 7831812 and pmd["simple_match_hits"] == 7831812
    assert pmd["idle_cycles"] == 1728115232 and pmd["idle_cycles_percent"] == 39.70
    assert pmd["avg_processing_cycles_per_packet"] == 335.16
    telemetry = TrialTelemetry(64, 3.9e6, 1.0, 0.0, True, 1.5, pmds=stats)
    totals = telemetry.totals()
    # Cycles per packet from OVS's own counters: processing cycles / packets received.
    assert totals["cycles_per_packet"] == pytest.approx(2624851744 / 7831812)
    assert totals["cycles_per_packet"] == pytest.approx(pmd["avg_processing_cycles_per_packet"], abs=0.01)
    assert totals["pmd_busy_percent"] == pytest.approx(60.30, abs=0.01)
    assert totals["simple_match_hits_percent"] == 100.0 and totals["emc_hits_percent"] == 0.0
    assert totals["packets"] == 7831812


def test_pmd_stats_of_ovs_2_8_wording() -> None:
    # OVS 2.6-2.8 (lib/dpif-netdev.c "\temc hits:%llu"; 2.9 added "packets received").
    stats = parse_pmd_stats(text("pmd-stats-show-2.8.txt"))
    pmd = stats["pmd-c22"]
    assert pmd["idle_cycles"] == 4948219259  # "polling cycles" then
    totals = TrialTelemetry(64, 1e6, 10.0, 0.0, True, 10.0, pmds=stats).totals()
    assert totals["packets"] == 17461158  # no "packets received": the lookups sum to it
    assert totals["cycles_per_packet"] == pytest.approx(814.43, abs=0.01)
    assert totals["emc_hits_percent"] == 100.0
    assert totals["smc_hits_percent"] is None  # not counted by that OVS: unknown, not 0


def test_rxq_placement() -> None:
    placed = parse_pmd_rxq(text("pmd-rxq-show-3.1.txt"))
    assert [(r.pmd, r.port, r.queue, r.enabled, r.usage_percent) for r in placed] == [
        ("pmd-c01", "tg0", 0, True, 31.0),
        ("pmd-c01", "tg1", 0, True, 29.0),
        ("pmd-c01", "tg2", 1, False, None),
    ]


def write_task(proc: Path, pid: int, tid: int, comm: str, utime: int, stime: int) -> None:
    task = proc / str(pid) / "task" / str(tid)
    task.mkdir(parents=True, exist_ok=True)
    fields = ["S", "1", "1", "1", "0", "-1", "4194560", "0", "0", "0", "0", str(utime), str(stime)] + [
        "0"
    ] * 39
    (task / "stat").write_text(f"{tid} ({comm}) {' '.join(fields)}\n")


def test_thread_cpu_from_proc(tmp_path: Path) -> None:
    write_task(tmp_path, 100, 100, "ovs-vswitchd", 10, 5)
    write_task(tmp_path, 100, 101, "pmd-c01/id:8", 1000, 0)
    write_task(tmp_path, 100, 102, "odd (name) x", 7, 0)
    before = read_thread_ticks(100, tmp_path)
    assert before["102"] == ("odd (name) x", 7)
    write_task(tmp_path, 100, 100, "ovs-vswitchd", 11, 5)
    write_task(tmp_path, 100, 101, "pmd-c01/id:8", 1200, 0)
    write_task(tmp_path, 100, 102, "odd (name) x", 3, 0)  # went backwards: a reused thread id
    write_task(tmp_path, 100, 103, "handler1", 50, 0)  # new: not in the window's start
    after = read_thread_ticks(100, tmp_path)
    rows = thread_cpu(before, after, wall_s=2.0)
    ticks = __import__("os").sysconf("SC_CLK_TCK")
    assert [r["name"] for r in rows] == ["pmd-c01/id:8", "ovs-vswitchd", "odd (name) x"]
    assert rows[0]["cpu_percent"] == pytest.approx(100.0 * 200 / ticks / 2.0)
    assert rows[2]["cpu_percent"] is None
    # A busy thread seen over a window shorter than its ticks (105 % at Linux's 100 ticks/s): 100 %.
    assert ticks == 100 and thread_cpu(before, after, wall_s=1.9)[0]["cpu_percent"] == 100.0
    with pytest.raises(OSError):
        read_thread_ticks(999, tmp_path)


class FakeOvs:
    """appctl and port counters as the collector sees them; each may fail or go backwards."""

    def __init__(self, stats: str, fail: set[str] | None = None) -> None:
        self.stats = stats
        self.fail = fail or set()
        self.calls: list[tuple[str, ...]] = []
        self.rx = [100.0, 50.0]  # the second reading went backwards

    def appctl(self, *args: str) -> str:
        self.calls.append(args)
        if args[0] in self.fail:
            raise TimeoutError(f"ovs-appctl {args[0]}: timed out after 5 s")
        if args[0] == "dpif-netdev/pmd-stats-show":
            return self.stats
        if args[0] == "dpif-netdev/pmd-rxq-show":
            return text("pmd-rxq-show-3.1.txt")
        return ""

    def ports(self) -> dict[str, dict[str, float | None]]:
        return {"tg0": {"rx_packets": self.rx.pop(0), "tx_dropped": None}}


def test_collector_records_what_it_could_not_read(tmp_path: Path) -> None:
    write_task(tmp_path, 7, 7, "ovs-vswitchd", 1, 1)
    ovs = FakeOvs(text("pmd-stats-show-3.1.txt"), fail={"dpif-netdev/pmd-perf-show"})
    collector = TelemetryCollector(ovs.appctl, ovs.ports, {"ovs-vswitchd": 7, "generator": 8}, proc=tmp_path)
    collector.start()
    telemetry = collector.finish(64, 1e6, 1.0, 0.0, True)
    assert ovs.calls[0] == ("dpif-netdev/pmd-stats-clear",)
    assert telemetry.totals()["cycles_per_packet"] == pytest.approx(335.16, abs=0.01)
    assert telemetry.perf_show is None
    assert telemetry.ports == {"tg0": {"rx_packets": None, "tx_dropped": None}}
    assert telemetry.threads["ovs-vswitchd"][0]["cpu_percent"] == 0.0 and "generator" not in telemetry.threads
    notes = "\n".join(telemetry.notes)
    assert (
        "pmd-perf-show: not collected (TimeoutError: ovs-appctl dpif-netdev/pmd-perf-show: timed out" in notes
    )
    assert "CPU of generator (PID 8): not collected" in notes
    assert "port tg0: a counter went backwards" in notes
    data = telemetry.to_json()
    assert data["rxq"][0] == {
        "pmd": "pmd-c01",
        "port": "tg0",
        "queue": 0,
        "enabled": True,
        "usage_percent": 31.0,
    }


def test_kernel_datapath_has_no_pmd_and_says_so() -> None:
    ovs = FakeOvs("", fail={"dpif-netdev/pmd-stats-clear"})
    collector = TelemetryCollector(ovs.appctl, ovs.ports, {})
    collector.start()
    telemetry = collector.finish(64, 1e6, 1.0, 0.0, True)
    assert telemetry.totals() == {"packets": None, "cycles_per_packet": None, "pmd_busy_percent": None}
    assert any("no PMD thread" in n for n in telemetry.notes)
    assert any(n.startswith("pmd-stats-clear: not collected") for n in telemetry.notes)


def test_collector_reads_pmd_perf_show_when_pmd_stats_show_is_gone() -> None:
    # An OVS without pmd-stats-show (OVS 4.0 keeps it only as an undocumented alias): the same
    # counters from pmd-perf-show (the example of lib/dpif-netdev-unixctl.man).
    from tests.ovsperf_common.test_ovsstats import MAN_PAGE

    class PerfOnly(FakeOvs):
        def appctl(self, *args: str) -> str:
            if args[0] == "dpif-netdev/pmd-perf-show":
                self.calls.append(args)
                return MAN_PAGE
            return super().appctl(*args)

    ovs = PerfOnly("", fail={"dpif-netdev/pmd-stats-show"})
    collector = TelemetryCollector(ovs.appctl, ovs.ports, {})
    collector.start()
    telemetry = collector.finish(64, 1e6, 1.0, 0.0, True)
    totals = telemetry.totals()
    assert totals["packets"] == 2399607
    assert totals["cycles_per_packet"] == pytest.approx(848)
    assert totals["pmd_busy_percent"] == pytest.approx(84.1, abs=0.05)
    assert telemetry.perf_show == MAN_PAGE
    assert not any("no PMD thread" in n for n in telemetry.notes)
    assert any(n.startswith("pmd-stats-show: not collected") for n in telemetry.notes)


def test_collector_reads_ovs_4_0_pmd_stats_show() -> None:
    from tests.ovsperf_common.test_ovsstats import OVS_4_0

    telemetry = TrialTelemetry(64, 1e6, 1.0, 0.0, True, 1.0, pmds=parse_pmd_stats(OVS_4_0))
    totals = telemetry.totals()
    assert (totals["packets"], totals["emc_hits_percent"]) == (20, pytest.approx(95.0))
    assert totals["miss_with_success_upcall_percent"] == pytest.approx(5.0)
