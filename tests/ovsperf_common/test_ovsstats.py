"""ovsperf_common.ovsstats against OVS's own outputs, OVS 2.6 to 4.0.

Every input is written here in the format the OVS source of that version prints (repository
openvswitch/ovs; the ``pmd-perf-show`` example is the one of ``lib/dpif-netdev-unixctl.man``), with
the numbers of OVS's own test ``tests/pmd.at`` ("PMD - stats": 20 packets of one flow, the first an
upcall, 19 EMC hits) where that test shows them. Lines ``tests/pmd.at`` deletes before comparing
(``sed '/cycles/d'``) are written back with cycle counts of our own, consistent with the rest.
"""

from __future__ import annotations

import pytest

from ovsperf_common.ovsstats import parse_pmd_rxq, parse_pmd_stats, pmd_counters, pmd_totals

# OVS 2.6.0 (and up to 2.8): lib/dpif-netdev.c pmd_info_show_stats, "\temc hits:%llu\n..." then
# "\tpolling cycles:%"PRIu64" (%.02f%%)"; "miss" counts the lost packets too ("Lost packets are
# already included in DP_STAT_MISS"). tests/pmd.at v2.6.0: emc hits 19, miss 1.
OVS_2_6 = """\
pmd thread numa_id 0 core_id 1:
\temc hits:19
\tmegaflow hits:0
\tavg. subtable lookups per hit:0.00
\tmiss:1
\tlost:0
\tpolling cycles:1000 (25.00%)
\tprocessing cycles:3000 (75.00%)
\tavg cycles per packet: 200.00 (4000/20)
\tavg processing cycles per packet: 150.00 (3000/20)
main thread:
\temc hits:0
\tmegaflow hits:0
\tavg. subtable lookups per hit:0.00
\tmiss:0
\tlost:0
"""

# OVS 2.9.0: "\tpackets received: %"PRIu64"\n" ..., "\tidle cycles: ..." (tests/pmd.at v2.9.0).
OVS_2_9 = """\
pmd thread numa_id 0 core_id 1:
\tpackets received: 20
\tpacket recirculations: 0
\tavg. datapath passes per packet: 1.00
\temc hits: 19
\tmegaflow hits: 0
\tavg. subtable lookups per megaflow hit: 0.00
\tmiss with success upcall: 1
\tmiss with failed upcall: 0
\tavg. packets per output batch: 1.00
\tidle cycles: 1000 (25.00%)
\tprocessing cycles: 3000 (75.00%)
\tavg cycles per packet: 200.00 (4000/20)
\tavg processing cycles per packet: 150.00 (3000/20)
main thread:
\tpackets received: 0
\tpacket recirculations: 0
\tavg. datapath passes per packet: 0.00
\temc hits: 0
\tmegaflow hits: 0
\tavg. subtable lookups per megaflow hit: 0.00
\tmiss with success upcall: 0
\tmiss with failed upcall: 0
\tavg. packets per output batch: 0.00
"""

# OVS 3.3.0: two-space indent, hardware offload / MFEX / simple match / SMC counters (tests/pmd.at).
OVS_3_3 = """\
pmd thread numa_id 0 core_id 1:
  packets received: 20
  packet recirculations: 0
  avg. datapath passes per packet: 1.00
  phwol hits: 0
  mfex opt hits: 0
  simple match hits: 0
  emc hits: 19
  smc hits: 0
  megaflow hits: 0
  avg. subtable lookups per megaflow hit: 0.00
  miss with success upcall: 1
  miss with failed upcall: 0
  avg. packets per output batch: 1.00
  idle cycles: 1000 (25.00%)
  processing cycles: 3000 (75.00%)
  avg cycles per packet: 200.00 (4000/20)
  avg processing cycles per packet: 150.00 (3000/20)
"""

# OVS 4.0 (commit 4060c1c2e, "dpif-netdev: Remove pmd-stats-show in favor of pmd-perf-show"):
# pmd-stats-show is an alias that prints pmd-perf-show (lib/dpif-netdev-perf.c
# pmd_perf_format_overall_stats), now with the "main" thread, whose cycle figures are left out.
# tests/pmd.at at that commit: Datapath passes 20, EMC hits 19 (95.0 %), Upcalls 1 (5.0 %).
OVS_4_0 = """\

Time: 10:00:00.200
Measurement duration: 0.200 s

pmd thread numa_id 0 core_id 1:

  Iterations:                 500  (0.40 us/it)
  - Used TSC cycles:         4000  (  0.1 % of total cycles)
  - idle iterations:          480  ( 25.0 % of used cycles)
  - busy iterations:           20  ( 75.0 % of used cycles)
  - sleep iterations:           0  (  0.0 % of iterations)
  Sleep time (us):              0  (  0 us/iteration avg.)
  Rx packets:                  20  (0 Kpps, 150 cycles/pkt)
  Datapath passes:             20  (1.00 passes/pkt)
  - PHWOL hits:                 0  (  0.0 %)
  - Simple Match hits:          0  (  0.0 %)
  - EMC hits:                  19  ( 95.0 %)
  - SMC hits:                   0  (  0.0 %)
  - Megaflow hits:              0  (  0.0 %, 0.00 subtbl lookups/hit)
  - Upcalls:                    1  (  5.0 %, 12.3 us/upcall)
  - Lost upcalls:               0  (  0.0 %)
  Tx packets:                  20  (0 Kpps)
  Tx batches:                  20  (1.00 pkts/batch)

Time: 10:00:00.200
Measurement duration: 0.200 s

main thread:

  Rx packets:                   3  (0 Kpps)
  Datapath passes:              3  (1.00 passes/pkt)
  - PHWOL hits:                 0  (  0.0 %)
  - Simple Match hits:          0  (  0.0 %)
  - EMC hits:                   0  (  0.0 %)
  - SMC hits:                   0  (  0.0 %)
  - Megaflow hits:              0  (  0.0 %, 0.00 subtbl lookups/hit)
  - Upcalls:                    3  (100.0 %)
  - Lost upcalls:               0  (  0.0 %)
  Tx packets:                   0

"""


@pytest.mark.parametrize("text", [OVS_2_6, OVS_2_9, OVS_3_3, OVS_4_0], ids=["2.6", "2.9", "3.3", "4.0"])
def test_the_pmd_at_stats_read_the_same_in_every_ovs_version(text: str) -> None:
    pmds = parse_pmd_stats(text)
    assert pmds["pmd-c01"]["packets_received"] == 20
    assert pmds["pmd-c01"]["miss_with_success_upcall"] == 1
    totals = pmd_totals(pmds)
    assert totals["packets"] == 20
    assert totals["emc_hits_percent"] == pytest.approx(95.0)
    assert totals["miss_with_success_upcall_percent"] == pytest.approx(5.0)
    assert totals["miss_with_failed_upcall_percent"] == 0.0
    assert totals["megaflow_hits_percent"] == 0.0
    # 3000 processing (busy) cycles over 20 packets; 3000 of 4000 cycles busy.
    assert totals["cycles_per_packet"] == pytest.approx(150.0)
    assert totals["pmd_busy_percent"] == pytest.approx(75.0)


def test_ovs_4_0_main_thread_has_no_cycles_and_stays_out_of_the_sums() -> None:
    pmds = parse_pmd_stats(OVS_4_0)
    assert sorted(pmds) == ["main", "pmd-c01"]
    main = pmds["main"]
    assert main["packets_received"] == 3 and main["miss_with_success_upcall"] == 3
    assert "processing_cycles" not in main and "avg_processing_cycles_per_packet" not in main
    assert "time" not in pmds["pmd-c01"]  # the next thread's "Time:" line belongs to no thread
    assert pmd_totals(pmds)["packets"] == 20


def test_ovs_2_8_lost_packets_are_failed_upcalls_inside_miss() -> None:
    text = OVS_2_6.replace("\temc hits:19", "\temc hits:16").replace(
        "\tmiss:1\n\tlost:0", "\tmiss:4\n\tlost:1"
    )
    pmd = parse_pmd_stats(text)["pmd-c01"]
    assert (pmd["miss_with_success_upcall"], pmd["miss_with_failed_upcall"]) == (3, 1)
    totals = pmd_totals(parse_pmd_stats(text))
    assert totals["packets"] == 20  # 16 + 0 + 4: OVS 2.8's own total (the lost ones are in "miss")
    assert totals["miss_with_success_upcall_percent"] == pytest.approx(15.0)
    assert totals["miss_with_failed_upcall_percent"] == pytest.approx(5.0)


# lib/dpif-netdev-unixctl.man (openvswitch/ovs, the same from OVS 2.11 to 4.0): the example output
# of pmd-perf-show; OVS says 2,399,607 Rx packets at 848 cycles/pkt, busy 84.1 % of used cycles.
MAN_PAGE = """\
Time: 15:24:55.270
Measurement duration: 1.008 s

pmd thread numa_id 0 core_id 1:

  Iterations:              572817  (1.76 us/it)
  - Used TSC cycles:   2419034712  ( 99.9 % of total cycles)
  - idle iterations:       486808  ( 15.9 % of used cycles)
  - busy iterations:        86009  ( 84.1 % of used cycles)
  Rx packets:             2399607  (2381 Kpps, 848 cycles/pkt)
  Datapath passes:        3599415  (1.50 passes/pkt)
  - PHWOL hits:                 0  (  0.0 %)
  - Simple Match hits:          0  (  0.0 %)
  - EMC hits:              336472  (  9.3 %)
  - SMC hits:                   0  (  0.0 %)
  - Megaflow hits:        3262943  ( 90.7 %, 1.00 subtbl lookups/hit)
  - Upcalls:                    0  (  0.0 %, 0.0 us/upcall)
  - Lost upcalls:               0  (  0.0 %)
  Tx packets:             2399607  (2381 Kpps)
  Tx batches:              171400  (14.00 pkts/batch)
"""

# OVS 2.10.0 lib/dpif-netdev-perf.c printed the same figures as "Cycles:" (all used cycles) and
# "- idle:"/"- busy:" iterations with "(%4.1f %% cycles)"; the man page's numbers in that format.
OVS_2_10_PERF = """\

Time: 15:24:55.270
Measurement duration: 1.008 s

pmd thread numa_id 0 core_id 1:

  Cycles:            2419034712  (2.40 GHz)
  Iterations:            572817  (1.76 us/it)
  - idle:                486808  (15.9 % cycles)
  - busy:                 86009  (84.1 % cycles)
  Rx packets:           2399607  (2381 Kpps, 848 cycles/pkt)
  Datapath passes:      3599415  (1.50 passes/pkt)
  - EMC hits:            336472  ( 9.3 %)
  - Megaflow hits:      3262943  (90.7 %, 1.00 subtbl lookups/hit)
  - Upcalls:                  0  ( 0.0 %, 0.0 us/upcall)
  - Lost upcalls:             0  ( 0.0 %)
  Tx packets:           2399607  (2381 Kpps)
  Tx batches:            171400  (14.00 pkts/batch)
"""


@pytest.mark.parametrize("text", [MAN_PAGE, OVS_2_10_PERF], ids=["man-page", "2.10"])
def test_the_man_page_pmd_perf_show_example(text: str) -> None:
    pmds = parse_pmd_stats(text)
    assert list(pmds) == ["pmd-c01"]
    pmd = pmds["pmd-c01"]
    assert pmd["packets_received"] == 2399607 and pmd["datapath_passes"] == 3599415
    assert pmd["packet_recirculations"] == 3599415 - 2399607
    assert pmd["avg_processing_cycles_per_packet"] == 848
    assert pmd["used_tsc_cycles"] == 2419034712
    assert pmd["processing_cycles"] + pmd["idle_cycles"] == 2419034712
    totals = pmd_totals(pmds)
    assert totals["packets"] == 2399607  # Rx packets, not the 3,599,415 datapath passes
    assert totals["cycles_per_packet"] == pytest.approx(848)
    assert totals["pmd_busy_percent"] == pytest.approx(84.1, abs=0.05)
    # Hits are shares of the lookups (datapath passes), as OVS prints them: they add up to 100 %.
    assert totals["emc_hits_percent"] == pytest.approx(9.3, abs=0.05)
    assert totals["megaflow_hits_percent"] == pytest.approx(90.7, abs=0.05)
    assert totals["miss_with_success_upcall_percent"] == 0.0


def test_a_recirculating_stats_show_shares_hits_of_the_lookups() -> None:
    # The man page's counters as OVS 3.3's pmd-stats-show prints them: 1,199,808 recirculations.
    text = (
        "pmd thread numa_id 0 core_id 1:\n  packets received: 2399607\n  packet recirculations: 1199808\n"
        "  emc hits: 336472\n  megaflow hits: 3262943\n  miss with success upcall: 0\n"
    )
    totals = pmd_totals(parse_pmd_stats(text))
    assert totals["packets"] == 2399607
    assert totals["emc_hits_percent"] == pytest.approx(100 * 336472 / 3599415)
    assert totals["megaflow_hits_percent"] == pytest.approx(100 * 3262943 / 3599415)


def test_two_pmds_with_histograms_sum_their_cycles() -> None:
    # Without -nh and with other_config:pmd-perf-metrics=true OVS appends histograms
    # (pmd_perf_format_histograms: a "Histograms" title, columns without colons).
    second = (
        MAN_PAGE.replace("core_id 1:", "core_id 3:")
        .replace("2399607  (2381 Kpps, 848", "1000000  (992 Kpps, 1000")
        .replace("( 84.1 %", "( 41.3 %")
        + "\nHistograms\n   cycles/it              packets/it\n   499       0            0         8\n"
        "   >         0            >         0\n---------\n   cycles/it: 10   packets/it\n"
    )
    pmds = parse_pmd_stats(MAN_PAGE + second)
    assert sorted(pmds) == ["pmd-c01", "pmd-c03"]
    assert "cycles_it" not in pmds["pmd-c03"]
    totals = pmd_totals(pmds)
    assert totals["packets"] == 3399607
    assert totals["cycles_per_packet"] == pytest.approx((848 * 2399607 + 1000 * 1000000) / 3399607)


def test_no_packets_still_gives_busy_share() -> None:
    text = (
        "pmd thread numa_id 0 core_id 1:\n\n  Iterations:  1000  (1.00 us/it)\n"
        "  - Used TSC cycles:   2000000  ( 99.9 % of total cycles)\n"
        "  - idle iterations:      1000  (100.0 % of used cycles)\n"
        "  - busy iterations:         0  (  0.0 % of used cycles)\n"
        "  Rx packets:                0\n  Tx packets:                0\n\n"
    )
    totals = pmd_totals(parse_pmd_stats(text))
    assert totals["packets"] == 0 and totals["cycles_per_packet"] is None
    assert totals["pmd_busy_percent"] == 0.0
    assert totals["emc_hits_percent"] is None  # no lookups: no share


def test_pmd_counters_read_whichever_command_this_ovs_has() -> None:
    assert pmd_counters(OVS_3_3, MAN_PAGE)["pmd-c01"]["packets_received"] == 20
    # pmd-stats-show gone (or failed): pmd-perf-show has the same counters.
    assert pmd_counters(None, MAN_PAGE)["pmd-c01"]["packets_received"] == 2399607
    assert pmd_counters("", MAN_PAGE)["pmd-c01"]["packets_received"] == 2399607
    assert pmd_counters(None, None) == {}


# pmd-rxq-show, lib/dpif-netdev.c pmd_info_show_rxq of each version:
# 2.6-2.8: "\tport: %s\tqueue-id:" then " %d" per queue, one line per port (tests/pmd.at v2.8.0);
# 2.9-2.10: "\tport: %-16s\tqueue-id: %2d" "\tpmd usage: " "%2"PRIu64" %" or "NOT AVAIL";
# 2.11: the same with two spaces for the tabs; 2.12-: " (enabled) " or " (disabled)" after the
# queue; 3.x-4.0 print "%2.0f %%" and an "overhead:" line.
RXQ_2_8 = """\
pmd thread numa_id 0 core_id 1:
\tisolated : false
\tport: p0\tqueue-id: 0 1 2 3 4 5 6 7
\tport: p1\tqueue-id: 3
"""
RXQ_2_9 = """\
pmd thread numa_id 0 core_id 1:
\tisolated : false
\tport: p0              \tqueue-id:  0\tpmd usage: 45 %
\tport: p0              \tqueue-id:  1\tpmd usage: NOT AVAIL
pmd thread numa_id 1 core_id 2:
\tisolated : true
\tport: p1              \tqueue-id: 12\tpmd usage:  7 %
"""
RXQ_2_11 = """\
pmd thread numa_id 0 core_id 1:
  isolated : false
  port: p0                queue-id:  0  pmd usage: 45 %
  port: p0                queue-id:  1  pmd usage: NOT AVAIL
pmd thread numa_id 1 core_id 2:
  isolated : true
  port: p1                queue-id: 12  pmd usage:  7 %
"""
RXQ_4_0 = """\
Displaying last 60 seconds pmd usage %
pmd thread numa_id 0 core_id 1:
  isolated : false
  port: p0                queue-id:  0 (enabled)   pmd usage: 45 %
  port: p0                queue-id:  1 (disabled)  pmd usage: NOT AVAIL
  overhead:  3 %
pmd thread numa_id 1 core_id 2:
  isolated : true
  port: p1                queue-id: 12 (enabled)   pmd usage:  7 %
  overhead: NOT AVAIL
"""


@pytest.mark.parametrize("text", [RXQ_2_9, RXQ_2_11, RXQ_4_0], ids=["2.9", "2.11", "4.0"])
def test_rxq_usage_with_and_without_the_queue_state(text: str) -> None:
    placed = [(r.pmd, r.port, r.queue, r.usage_percent) for r in parse_pmd_rxq(text)]
    assert placed == [
        ("pmd-c01", "p0", 0, 45.0),
        ("pmd-c01", "p0", 1, None),
        ("pmd-c02", "p1", 12, 7.0),
    ]
    enabled = [r.enabled for r in parse_pmd_rxq(text)]
    assert enabled == ([True, False, True] if "(disabled)" in text else [True, True, True])


def test_rxq_of_ovs_2_8_lists_every_queue_of_a_port_on_one_line() -> None:
    placed = [(r.pmd, r.port, r.queue, r.enabled, r.usage_percent) for r in parse_pmd_rxq(RXQ_2_8)]
    assert placed == [("pmd-c01", "p0", q, True, None) for q in range(8)] + [("pmd-c01", "p1", 3, True, None)]
