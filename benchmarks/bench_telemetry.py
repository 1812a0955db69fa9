"""What DUT telemetry costs, and whether cycles per packet is a steadier signal than the NDR.

Runs the local lab's P2P scenario at 64 B with MLRsearch ``--runs`` times with telemetry and as
often without (``--no-telemetry``), interleaved (on, off, on, off, …) so that the machine's drift
falls on both alike. Printed:

* the NDR of each run, the mean with and without telemetry, their difference and the run-to-run
  noise (CV) of each: the goal (issue 15) is a difference within that noise;
* the coefficient of variation of cycles per packet (OVS's own counters, the trial the NDR rests
  on) against the CV of the NDR over the same runs: the smaller is the steadier signal.

With ``--paired N`` it also isolates the collector's effect on a trial from the search's noise:
in one OVS and generator session, N pairs of 1 s trials at the same fixed load (``--load-mpps``
per direction), one with telemetry collected around it and one without, in random order per pair;
printed: the mean paired difference of the received rate and of the loss ratio, with the spread.

Needs root, hugepages and the built generator, like ``make run``; takes 3–5 minutes per run here.
Usage: ``sudo .venv/bin/python benchmarks/bench_telemetry.py [--runs 3] [--duration-sum 21] [--paired 20]``
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchcli

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


def paired(pairs: int, load_pps: float, seed: int) -> None:
    """Alternate trials with and without telemetry in one session; print the paired differences."""
    import random

    from ovsperf_catalog.catalog import load_catalog
    from ovsperf_catalog.model import Topology, VsperfTest
    from ovsperf_lab import topology
    from ovsperf_lab.generators.api import GeneratorRequest
    from ovsperf_lab.generators.dpdk import start as dpdk_generator
    from ovsperf_lab.machine import probe_machine
    from ovsperf_lab.model import TrialSpec
    from ovsperf_lab.ovs import OvsConfig, OvsSandbox
    from ovsperf_lab.plan import LabOptions, plan_run
    from ovsperf_lab.state import LabRunState, release
    from ovsperf_lab.telemetry import APPCTL_TIMEOUT_S, TelemetryCollector, TelemetryGenerator
    from ovsperf_lab.testbed import LINK_TIMEOUT_S

    options = LabOptions(frame_sizes_bytes=(64,), tests=(VsperfTest.PHY2PHY_TPUT,))
    cpus = plan_run(load_catalog().get("OVS_DPDK1q"), probe_machine(), options).cpus
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="bench-telemetry-state-") as root:
        state = LabRunState.create(Path(root), "bench-telemetry")
        generator = None
        try:
            ovs = OvsSandbox(
                state,
                OvsConfig(
                    lcore_cpu=cpus.ovs_lcore_cpu,
                    pmd_cpus=cpus.pmd_cpus,
                    file_prefix=state.new_file_prefix("ovs"),
                ),
            )
            ovs.start()
            lay = topology.layout(Topology.P2P, state.run_dir / "sock")
            topology.build(ovs, lay, 1)
            generator = dpdk_generator(
                GeneratorRequest(
                    ports=lay.attachments(),
                    cpu=cpus.generator_cpu,
                    file_prefix=state.new_file_prefix("tg"),
                    memory_mb=256,
                    queues=1,
                    ring_size=1024,
                )
            )
            generator.wait_link(timeout_s=LINK_TIMEOUT_S)
            names = {p.ofport: p.name for p in lay.ports}

            def ports() -> dict[str, dict[str, float | None]]:
                return {
                    names[n]: {k: None if v is None else float(v) for k, v in vars(c).items()}
                    for n, c in ovs.port_counters(ovs.bridge).items()
                    if n in names
                }

            processes = {"ovs-vswitchd": ovs.pids["ovs-vswitchd"]}
            collector = TelemetryCollector(
                lambda *a: ovs.appctl(*a, timeout_s=APPCTL_TIMEOUT_S), ports, processes
            )
            kept: list[object] = []
            with_telemetry = TelemetryGenerator(generator, collector, 0.0, kept.append)
            spec = TrialSpec(frame_size_bytes=64, rate_pps=load_pps, duration_s=1.0, drain_s=0.5)
            generator.run_trial(
                TrialSpec(frame_size_bytes=64, rate_pps=load_pps, duration_s=2.0, drain_s=0.5)
            )
            diffs_rx, diffs_loss = [], []
            for _ in range(pairs):
                order = [True, False]
                rng.shuffle(order)
                got = {}
                for telemetry in order:
                    result = (with_telemetry if telemetry else generator).run_trial(spec)
                    got[telemetry] = result
                diffs_rx.append(got[True].rx_pps / got[False].rx_pps - 1.0)
                diffs_loss.append(got[True].loss_ratio - got[False].loss_ratio)
            mean_rx, sd_rx = statistics.fmean(diffs_rx), statistics.stdev(diffs_rx)
            mean_loss, sd_loss = statistics.fmean(diffs_loss), statistics.stdev(diffs_loss)
            half = 2.09 * sd_rx / len(diffs_rx) ** 0.5  # t(0.975, 19)
            print(
                f"paired, {pairs} pairs of 1 s trials at {load_pps / 1e6:.2f} Mpps/dir: received rate "
                f"with / without telemetry − 1 = {100 * mean_rx:+.2f} % ± {100 * half:.2f} % "
                f"(95 %; sd {100 * sd_rx:.2f} %), "
                f"loss ratio difference {100 * mean_loss:+.3f} points (sd {100 * sd_loss:.3f}); {len(kept)} "
                "trials with telemetry"
            )
        finally:
            if generator is not None:
                generator.close()
            release(state)


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else float("nan")


def main() -> int:
    parser = benchcli.parser(__doc__)
    parser.add_argument(
        "--runs", type=int, default=3, help="runs with and runs without telemetry (default 3)"
    )
    parser.add_argument(
        "--duration-sum", type=float, default=21.0, help="MLRsearch duration sum [s] (CSIT: 21)"
    )
    parser.add_argument("--paired", type=int, default=0, metavar="N", help="also N paired fixed-load trials")
    parser.add_argument(
        "--load-mpps", type=float, default=2.0, help="paired trials' load per direction [Mpps]"
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    benchcli.stop_on_sigterm()
    if args.paired:
        paired(args.paired, args.load_mpps * 1e6, args.seed)
    if not args.runs:
        return 0
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
