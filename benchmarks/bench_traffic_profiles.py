#!/usr/bin/env python3
"""Benchmark traffic profiles: the generator with IMIX and a million flows, the lab's NDR vs flows.

1. Generator, one core, into a ``net_null`` sink (as ``bench_trafficgen.py``): the unpaced maximum
   rate of 64 B / 1 flow, ``imix`` (64/594/1518 B, 7:4:1) / 1 flow and 64 B / 1,048,576 tuple
   flows, against ``dpdk-testpmd --forward-mode=txonly`` measured alternately in the same run: 64 B,
   at the mix's average size (testpmd cannot send a mix: ``--txpkts`` sets the segments of one
   frame, so its rate at 362 B is the nearest peer), and 64 B with ``--txonly-multi-flow``. The best
   of RUNS runs each is compared (a shared machine can take a run's CPU away).
2. Pacing of the mix: 2 s trials at 10 % … 90 % of the generator's median ``imix`` rate; error of
   the achieved rate (goal ≤ 0.5 %) and the per-size counts against 7:4:1.
3. Lab: ``ovsperf-lab run --config OVS_DPDK1q --frame-sizes 64,imix --flows 1,1048576`` (a sweep:
   four MLRsearches, CSIT defaults, no latency trials), once with ``--flow-rules ports`` and once
   with ``--flow-rules udp``; prints NDR and PDR of each, the NDR ratio 1 M flows / 1 flow and
   where OVS classified the packets (simple match, EMC, SMC, megaflow, upcall shares of the last
   final trial, from the run's telemetry).
   Port-to-port rules are classified by OVS ≥ 2.17's simple match, so there the flow count is
   expected not to matter; ``udp`` rules put every flow through the EMC/SMC/megaflow caches
   (docs/lab.md, flow scale).

Usage: ``sudo .venv/bin/python benchmarks/bench_traffic_profiles.py [--no-lab]``. Exit 0 when the
measurements ran (goals are reported, not enforced), 2 on a setup failure.
"""

from __future__ import annotations

import csv
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_trafficgen as base  # noqa: E402
import benchcli  # noqa: E402

from ovsperf_common.labfiles import TELEMETRY_FILE  # noqa: E402
from ovsperf_common.telemetryfile import HIT_COUNTERS  # noqa: E402
from ovsperf_common.units import line_rate_pps, mix_rates  # noqa: E402
from ovsperf_lab.errors import TrafficGeneratorError  # noqa: E402
from ovsperf_lab.generators.dpdk import DpdkTrafficGenerator  # noqa: E402
from tests.ovsperf_lab import tg_harness as h  # noqa: E402

RUNS = 3
MEASURE_S = 2.0
IMIX = [[64, 7], [594, 4], [1518, 1]]
IMIX_AVG = mix_rates([(s, w) for s, w in IMIX], 1.0, 10e9).average_frame_bytes
MILLION = 1_048_576


def ours_max(gen: DpdkTrafficGenerator, **fields: object) -> float:
    """The generator's unpaced TX rate into the sink [pps]."""
    result = gen.run_raw_trial(
        {"rate_pps": 0, "duration_s": MEASURE_S, "bidirectional": False, "on_tx_full": "retry",
         "drain_s": 0.0, **fields}
    )  # fmt: skip
    return float(result["directions"][0]["tx_pps"])


def generator_part(cpu: str) -> dict[str, list[float]]:
    runs: dict[str, list[float]] = {k: [] for k in ("64", "imix", "million", "tp64", "tpavg", "tpflows")}
    for number in range(RUNS):
        print(f"# generator round {number + 1}/{RUNS}", file=sys.stderr, flush=True)
        runs["tp64"].append(base.testpmd_txonly_pps(cpu, 60))
        with DpdkTrafficGenerator(base.generator_config(cpu)) as gen:
            gen.wait_link(10)
            runs["64"].append(ours_max(gen, frame_size_bytes=64))
            runs["imix"].append(ours_max(gen, frame_mix=IMIX))
            runs["million"].append(ours_max(gen, frame_size_bytes=64, flows=MILLION, flow_field="tuple"))
        runs["tpavg"].append(base.testpmd_txonly_pps(cpu, round(IMIX_AVG) - 4))
        runs["tpflows"].append(base.testpmd_txonly_pps(cpu, 60, ("--txonly-multi-flow",)))
    return runs


def pacing_part(cpu: str, imix_pps: float) -> None:
    print(f"\n# Pacing of imix (avg {IMIX_AVG:.2f} B), 2 s trials, fractions of the median max rate")
    print("{:>8} {:>14} {:>14} {:>8} {:>22}".format("fraction", "requested_pps", "achieved_pps", "error_%",
                                                   "per-size tx 64/594/1518"))  # fmt: skip
    worst = 0.0
    with DpdkTrafficGenerator(base.generator_config(cpu)) as gen:
        gen.wait_link(10)
        for tenth in range(1, 10):
            rate = round(imix_pps * tenth / 10 / 6) * 6  # × 2 s: whole periods of 12 frames
            result = gen.run_raw_trial(
                {"frame_mix": IMIX, "rate_pps": rate, "duration_s": 2.0, "bidirectional": False,
                 "on_tx_full": "retry", "drain_s": 0.0}
            )  # fmt: skip
            d = result["directions"][0]
            achieved = float(d["tx_pps"])
            error = (achieved - rate) / rate * 100
            worst = max(worst, abs(error))
            sizes = [s["tx_packets"] for s in d["per_size"]]
            exact = sizes == [d["tx_packets"] * w // 12 for _, w in IMIX]
            print(f"{tenth * 10:>7}% {rate:>14.0f} {achieved:>14.0f} {error:>+8.3f} "
                  f"{'/'.join(map(str, sizes)):>22}{'' if exact else ' NOT 7:4:1'}")  # fmt: skip
    print(f"worst pacing error: {worst:.3f} % (goal <= 0.5 %) {'OK' if worst <= 0.5 else 'ABOVE GOAL'}")


def print_hits(path: Path) -> None:
    """Print the DUT's classification shares [% of packets] of the last telemetry trial per
    (packet_size, flows): where the flows were looked up (simple match, EMC, SMC, megaflow, upcall)."""
    last: dict[tuple[str, int], dict[str, float]] = {}
    for trial in json.loads(path.read_text(encoding="utf-8"))["trials"]:
        last[(str(trial["packet_size"]), int(trial["flows"]))] = trial["totals"]
    names = HIT_COUNTERS[2:]
    print("  telemetry, last final trial: " + ", ".join(f"{n} %" for n in names))
    for (size, flows), totals in last.items():
        shares = "  ".join(f"{totals.get(f'{n}_percent') or 0.0:6.1f}" for n in names)
        print(f"  {size:>5} x {flows:>7}: {shares}")


def lab_sweep(rules: str, out: Path) -> dict[str, tuple[float, float]]:
    """Run the lab P2P at 64 B and imix, sweeping 1 and 1,048,576 flows, with ``rules``.

    :returns: ``'<packet_size> x <flows>'`` → (NDR, PDR) [Mpps, both directions], from the CSV.
    """
    target = out / f"rules-{rules}"
    target.mkdir()
    cmd = [str(ROOT / ".venv" / "bin" / "ovsperf-lab"), "run", "--config", "OVS_DPDK1q",
           "--frame-sizes", "64,imix", "--flows", f"1,{MILLION}", "--flow-rules", rules,
           "--latency-loads", "", "--no-progress", "--output", str(target)]  # fmt: skip
    subprocess.run(cmd, check=True, timeout=3600, stdout=subprocess.DEVNULL)
    (csv_path,) = target.glob("results_*/result_0_phy2phy_tput_p2p.csv")
    print_hits(csv_path.parent / TELEMETRY_FILE)
    with csv_path.open(encoding="utf-8") as handle:
        return {
            f"{row['packet_size']} x {row['stream_count']}": (
                float(row["throughput_rx_fps"]) / 1e6,
                float(row["pdr_throughput_rx_fps"]) / 1e6,
            )
            for row in csv.DictReader(handle)
        }


def main() -> int:
    parser = benchcli.parser(__doc__)
    parser.add_argument("--no-lab", action="store_true", help="skip part 3 (the lab runs)")
    parser.add_argument("--lab-only", action="store_true", help="only part 3 (the lab runs)")
    args = parser.parse_args()
    benchcli.stop_on_sigterm()
    if args.lab_only:
        return lab_part()
    h.build_generator()
    cpu = h.generator_cpu()
    try:
        runs = generator_part(cpu)
    except (TrafficGeneratorError, RuntimeError) as err:
        print(f"bench_traffic_profiles: {err}", file=sys.stderr)
        return 2
    best = {k: max(v) for k, v in runs.items()}
    print(f"# Max offered rate on CPU {cpu} into '{base.SINK_VDEV}', best of {RUNS} [Mpps]")
    for key, label in (("64", "trafficgen 64 B, 1 flow"), ("imix", "trafficgen imix, 1 flow"),
                       ("million", "trafficgen 64 B, 1,048,576 tuple flows"), ("tp64", "testpmd txonly 64 B"),
                       ("tpavg", f"testpmd txonly {round(IMIX_AVG)} B (imix average)"),
                       ("tpflows", "testpmd txonly 64 B --txonly-multi-flow")):  # fmt: skip
        print(f"{label:<44} {', '.join(f'{r / 1e6:.3f}' for r in runs[key])}  best {best[key] / 1e6:.3f}")
    print(f"imix / own 64 B:                     {best['imix'] / best['64']:.3f}")
    print(f"1 M flows / own 1 flow:              {best['million'] / best['64']:.3f}")
    print(f"imix / testpmd at the imix average:  {best['imix'] / best['tpavg']:.3f}")
    print(f"1 M flows / testpmd multi-flow:      {best['million'] / best['tpflows']:.3f}")
    line = mix_rates([(s, w) for s, w in IMIX], 1.0, 10e9).line_rate_pps
    print(f"(10 GbE line rate: imix {line / 1e6:.3f} Mpps, 64 B {line_rate_pps(64, 10e9) / 1e6:.3f} Mpps)")
    pacing_part(cpu, statistics.median(runs["imix"]))
    return 0 if args.no_lab else lab_part()


def lab_part() -> int:
    """Part 3: both rule sets, one sweep each; print NDR/PDR and the 1 M / 1 flow ratios."""
    with tempfile.TemporaryDirectory(prefix="bench-profiles-") as out:
        for rules in ("ports", "udp"):
            print(
                f"\n# Lab P2P, MLRsearch (CSIT defaults), --flow-rules {rules} [Mpps, both dirs]", flush=True
            )
            found = lab_sweep(rules, Path(out))
            for key, (ndr, pdr) in found.items():
                print(f"{key:>16}: NDR {ndr:.3f}  PDR {pdr:.3f}")
            for size in ("64", "imix"):
                one, many = found[f"{size} x 1"][0], found[f"{size} x {MILLION}"][0]
                print(f"{size:>5}: NDR at 1,048,576 flows / at 1 flow: {many / one:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
