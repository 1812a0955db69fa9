"""What DUT telemetry costs, and whether cycles per packet is a steadier signal than the NDR.

Runs the local lab's P2P scenario at 64 B with MLRsearch ``--runs`` times with telemetry and as
often without (``--no-telemetry``), interleaved (on, off, on, off, …) so that the machine's drift
falls on both alike. Printed:

* the NDR of each run, the mean with and without telemetry, their difference and the run-to-run
  noise (CV) of each: the goal (issue 15) is a difference within that noise;
* the coefficient of variation of cycles per packet (OVS's own counters, the trial the NDR rests
  on) against the CV of the NDR over the same runs: the smaller is the steadier signal.

Needs root, hugepages and the built generator, like ``make run``; takes 3–5 minutes per run here.
Usage: ``sudo .venv/bin/python benchmarks/bench_telemetry.py [--runs 3] [--duration-sum 21]``
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from reporting.load import find_results_dirs, load_results_dir

VENV_BIN = Path(sys.executable).parent


def run_once(output: Path, telemetry: bool, duration_sum: float) -> tuple[float, float | None, float]:
    """Run the lab once; return (NDR both directions [fps], cycles per packet or None, wall time [s])."""
    argv = [str(VENV_BIN / "ovsperf-lab"), "-q", "run", "--config", "OVS_DPDK1q", "--frame-sizes", "64",
            "--latency-loads", "", "--duration-sum", str(duration_sum), "--output", str(output)]  # fmt: skip
    if not telemetry:
        argv.append("--no-telemetry")
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=3600, check=False)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"ovsperf-lab failed ({done.returncode}): {done.stderr[-2000:]}")
    [results] = find_results_dirs(Path(done.stdout.strip()))[0]
    loaded = load_results_dir(results)
    [run] = loaded.runs
    [ndr] = [r for r in run.rows if r.loss_goal_percent == 0]
    cycles = run.telemetry[0].cycles_per_packet if run.telemetry else None
    if telemetry and cycles is None:
        raise SystemExit(f"no telemetry in {results}")
    assert ndr.rx_pps is not None
    return ndr.rx_pps, cycles, wall


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--runs", type=int, default=3, help="runs with and runs without telemetry (default 3)"
    )
    parser.add_argument(
        "--duration-sum", type=float, default=21.0, help="MLRsearch duration sum [s] (CSIT: 21)"
    )
    args = parser.parse_args()
    on: list[tuple[float, float | None, float]] = []
    off: list[tuple[float, float | None, float]] = []
    with tempfile.TemporaryDirectory(prefix="bench-telemetry-") as tmp:
        for number in range(args.runs):
            for telemetry, bucket in ((True, on), (False, off)):
                result = run_once(Path(tmp) / f"{number}-{telemetry}", telemetry, args.duration_sum)
                bucket.append(result)
                cycles = "" if result[1] is None else f", {result[1]:.0f} cycles/packet"
                print(
                    f"run {number + 1} telemetry {'on ' if telemetry else 'off'}: "
                    f"NDR {result[0] / 1e6:.3f} Mpps{cycles} ({result[2]:.0f} s)",
                    flush=True,
                )
    ndr_on, ndr_off = [r[0] for r in on], [r[0] for r in off]
    cycles_on = [r[1] for r in on if r[1] is not None]
    mean_on, mean_off = statistics.fmean(ndr_on), statistics.fmean(ndr_off)
    noise = max(cv(ndr_on), cv(ndr_off))
    print(
        f"NDR with telemetry {mean_on / 1e6:.3f} Mpps (CV {100 * cv(ndr_on):.1f} %), without "
        f"{mean_off / 1e6:.3f} Mpps (CV {100 * cv(ndr_off):.1f} %): on / off − 1 = "
        f"{100 * (mean_on / mean_off - 1):+.1f} % against a run-to-run noise of {100 * noise:.1f} % "
        f"({'within' if abs(mean_on / mean_off - 1) <= noise else 'beyond'} the noise)"
    )
    print(
        f"steadiness over the runs with telemetry: CV of cycles/packet {100 * cv(cycles_on):.1f} % "
        f"vs CV of the NDR {100 * cv(ndr_on):.1f} %: ratio {cv(cycles_on) / cv(ndr_on):.2f} "
        "(below 1: cycles/packet is steadier)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
