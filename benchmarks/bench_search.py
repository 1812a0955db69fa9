"""Compare MLRsearch with the lua-compatible binary search on a simulated DUT that stalls like this VM.

The simulated DUT forwards at most ``capacity`` frames per second per direction. Besides, CPU
stalls arrive as a Poisson process (``stall_rate`` per second, each ``stall_ms`` long, the numbers
``perf sched`` showed on the 2-core development VM: kernel threads take a CPU for ~4 ms); during a
stall the DUT forwards nothing and its vhost-user ring buffers ``ring`` frames, so a stall loses
``max(0, load × stall - ring)`` frames. The peer is what the lab ran until now: two lua-compatible
binary searches (NDR, then PDR at 0.5 %), 30 s search trials and 60 s validation, 0.5 % granularity
of line rate (issue 12). MLRsearch runs with CSIT's defaults (goals 0 % and 0.5 %, exceed ratio 0.5,
width 0.5 %, 1 s trials, duration sum 21 s).

Printed per search: trial-seconds, number of trials, NDR and PDR per direction, and each answer's
error against the DUT's capacity; then the ratio MLRsearch / binary of trial-seconds (goal ≤ 0.3)
and the PDR error (goal within 1 %). Trials are simulated, so the run takes seconds.

Usage: ``.venv/bin/python benchmarks/bench_search.py [--capacity 2e6] [--stall-rate 0.5] [--seeds 5]``
"""

from __future__ import annotations

import logging
import math
import random
import statistics
import sys
from dataclasses import dataclass, field

import benchcli

from ovsperf_common.units import line_rate_pps
from ovsperf_lab.generators.api import PortInfo, TrafficGenerator
from ovsperf_lab.model import DirectionResult, TrialResult, TrialSpec
from ovsperf_lab.search.binary import SearchConfig, search_throughput
from ovsperf_lab.search.mlr import MlrConfig, search_mlr

LINK_BPS = 10e9
FRAME = 64


@dataclass
class StallingDut(TrafficGenerator):
    """A generator + DUT pair in one: exact counts from a capacity and random CPU stalls."""

    capacity_pps: float
    stall_rate_per_s: float
    stall_ms: float
    ring_frames: int
    rng: random.Random
    trial_seconds: float = 0.0
    trials: int = 0
    specs: list[TrialSpec] = field(default_factory=list)

    def ports(self) -> tuple[PortInfo, ...]:
        return tuple(PortInfo(i, f"02:00:00:00:00:0{i}", 10_000, True) for i in (0, 1))

    def _poisson(self, mean: float) -> int:
        # Knuth's method; the means here are small (a few per trial).
        limit, k, p = math.exp(-mean), 0, 1.0
        while True:
            p *= self.rng.random()
            if p <= limit:
                return k
            k += 1

    def run_trial(self, spec: TrialSpec) -> TrialResult:
        self.trials += 1
        self.trial_seconds += spec.duration_s
        self.specs.append(spec)
        directions = []
        pairs = ((0, 1), (1, 0)) if spec.bidirectional else ((0, 1),)
        for a, b in pairs:
            tx = round(spec.rate_pps * spec.duration_s)
            lost = max(0.0, spec.rate_pps - self.capacity_pps) * spec.duration_s
            stalls = self._poisson(self.stall_rate_per_s * spec.duration_s)
            lost += stalls * max(0.0, spec.rate_pps * self.stall_ms / 1000.0 - self.ring_frames)
            rx = max(0, tx - round(lost))
            directions.append(
                DirectionResult(
                    tx_port=a, rx_port=b, tx_packets=tx, rx_packets=rx, tx_pps=spec.rate_pps,
                    tx_duration_s=spec.duration_s, reordered_packets=0, duplicate_packets=0,
                    latency_min_ns=None, latency_avg_ns=None, latency_max_ns=None,
                    latency_p50_ns=None, latency_p99_ns=None, latency_p999_ns=None,
                )
            )  # fmt: skip
        return TrialResult(spec, tuple(directions), True)

    def close(self) -> None:
        pass


def _binary(dut: StallingDut, loss: float, log: logging.Logger) -> float:
    line = line_rate_pps(FRAME, LINK_BPS)
    config = SearchConfig(
        frame_size_bytes=FRAME,
        max_rate_pps=line,
        rate_granularity_pps=line * 0.005,
        loss_ratio_limit=loss,
        search_trial_s=30.0,
        validation_trial_s=60.0,
        drain_s=0.0,
        max_trials=200,
    )
    return search_throughput(dut, config, log=log).rate_pps


def main(argv: list[str] | None = None) -> int:
    parser = benchcli.parser(__doc__)
    parser.add_argument("--capacity", type=float, default=2.0e6, help="DUT capacity per direction [pps]")
    parser.add_argument("--stall-rate", type=float, default=0.5, help="CPU stalls per second")
    parser.add_argument("--stall-ms", type=float, default=4.0, help="length of a stall [ms]")
    parser.add_argument("--ring", type=int, default=8192, help="frames a vhost-user ring buffers")
    parser.add_argument("--seeds", type=int, default=5, help="repeats with different random stalls")
    args = parser.parse_args(argv)
    benchcli.stop_on_sigterm()
    log = logging.getLogger("bench.search")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    capacity = args.capacity
    rows: dict[str, list[tuple[float, int, float, float]]] = {"binary": [], "mlr": []}
    for seed in range(args.seeds):
        dut = StallingDut(capacity, args.stall_rate, args.stall_ms, args.ring, random.Random(seed))
        ndr = _binary(dut, 0.0, log)
        pdr = _binary(dut, 0.005, log)
        rows["binary"].append((dut.trial_seconds, dut.trials, ndr, pdr))
        dut = StallingDut(capacity, args.stall_rate, args.stall_ms, args.ring, random.Random(seed))
        found = search_mlr(
            dut,
            MlrConfig(frame_size_bytes=FRAME, max_rate_pps=line_rate_pps(FRAME, LINK_BPS), drain_s=0.0),
            log=log,
        )
        rows["mlr"].append(
            (
                dut.trial_seconds,
                dut.trials,
                found.goal(0.0).conditional_throughput_pps or 0.0,
                found.goal(0.005).conditional_throughput_pps or 0.0,
            )
        )
    print(
        f"simulated DUT: capacity {capacity / 1e6:.3f} Mpps/dir, {args.stall_rate:g} stalls/s of "
        f"{args.stall_ms:g} ms, ring {args.ring} frames; {args.seeds} seeds"
    )
    head = ("search", "trial-s", "trials", "NDR Mpps", "NDR err", "PDR Mpps", "PDR err")
    print(f"{head[0]:<8} " + " ".join(f"{h:>9}" for h in head[1:]))
    means = {}
    for name, results in rows.items():
        seconds = statistics.mean(r[0] for r in results)
        trials = statistics.mean(r[1] for r in results)
        ndr = statistics.mean(r[2] for r in results)
        pdr = statistics.mean(r[3] for r in results)
        pdr_err = max(abs(r[3] / capacity - 1) for r in results)
        means[name] = (seconds, pdr_err)
        print(
            f"{name:<8} {seconds:>9.1f} {trials:>9.1f} {ndr / 1e6:>9.4f} {ndr / capacity - 1:>+9.2%} "
            f"{pdr / 1e6:>9.4f} {pdr / capacity - 1:>+9.2%}"
        )
    ratio = means["mlr"][0] / means["binary"][0]
    verdict = "met" if ratio <= 0.3 else "not met"
    print(f"ratio MLRsearch / binary trial-seconds: {ratio:.3f} (goal <= 0.3: {verdict})")
    worst = means["mlr"][1]
    verdict = "met" if worst <= 0.01 else "not met"
    print(f"MLRsearch PDR worst error vs capacity: {worst:.2%} (goal within 1 %: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
