"""Benchmark of the local lab: NDR and PDR repeatability, and against OVS's maximum forwarding rate.

In one run on this machine (root, hugepages, the built generator):

1. Sandboxed OVS-DPDK, P2P topology, ``ovsperf-trafficgen``, 64 B, three rounds; each round runs
   the lua-compatible binary NDR search and MLRsearch (NDR 0 % and PDR 0.5 %, CSIT's defaults)
   back to back, so both see the same machine; prints every answer, and per method and goal the
   mean and the coefficient of variation (issue 12's goal: PDR CV <= 5 %).
2. The same OVS and ports, with ``dpdk-testpmd --forward-mode=flowgen`` offering full load on
   both ports: OVS's maximum forwarding rate = frames OVS delivered to the two ports per second
   (``ovs-ofctl dump-ports``); prints NDR / max and PDR / max (goal PDR / max >= 0.8).

Usage: ``sudo .venv/bin/python benchmarks/bench_lab.py [--search-time S] [--validation-time S]
[--no-binary]``.
"""

from __future__ import annotations

import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import benchcli

from ovsperf_catalog.model import Topology
from ovsperf_common.units import line_rate_pps
from ovsperf_lab import topology
from ovsperf_lab.errors import SearchError
from ovsperf_lab.generators.api import GeneratorRequest
from ovsperf_lab.generators.dpdk import pool_mbufs, pool_memory_mb
from ovsperf_lab.generators.dpdk import start as _dpdk_generator
from ovsperf_lab.ovs import OvsConfig, OvsSandbox
from ovsperf_lab.plan import DEFAULT_RING_SIZE
from ovsperf_lab.search.binary import SearchConfig, search_throughput
from ovsperf_lab.search.mlr import MlrConfig, search_mlr
from ovsperf_lab.state import LabRunState, release, renice
from ovsperf_lab.vnf import ForwarderProcess, make_testpmd_argv

FRAME_SIZE_BYTES = 64
REPEATS = 3
FLOWGEN_RING_SIZE = 4096
"""Ring of the flowgen testpmd [descriptors]: flowgen offered more with 4096 than with the lab's larger
rings (cache effects), and the maximum must be OVS's best."""


def measure_max_forwarding(
    state: LabRunState, ovs: OvsSandbox, lay: topology.Layout, cpu: int, window_s: float
) -> float:
    """Return OVS's forwarding rate under full flowgen load, both directions summed [pps]."""
    argv = make_testpmd_argv(
        binary="dpdk-testpmd",
        cpu=cpu,
        file_prefix=state.new_file_prefix("flowgen"),
        memory_mb=pool_memory_mb(2, 1, FLOWGEN_RING_SIZE),
        sockets=(lay.generator_ports[0].socket, lay.generator_ports[1].socket),
        queues=1,
        forward_mode="flowgen",
        queue_size=FLOWGEN_RING_SIZE,
        total_mbufs=pool_mbufs(2, 1, FLOWGEN_RING_SIZE),
        # flowgen takes the frame size including the FCS (it subtracts 4 B itself): 64 B frames.
        extra_app_args=("-i", f"--txpkts={FRAME_SIZE_BYTES}"),
    )
    gen = ForwarderProcess(state, "flowgen-testpmd", argv, state.run_dir / "flowgen.log")
    gen.start()
    try:
        topology.wait_links_up(ovs, lay)
        if gen.pid is not None:
            renice(gen.pid, -10)
        time.sleep(2.0)  # warm-up: flows installed, rings full
        before = ovs.port_counters(ovs.bridge)
        start = time.monotonic()
        time.sleep(window_s)
        after = ovs.port_counters(ovs.bridge)
        elapsed = time.monotonic() - start
        gen.command("stop")
    finally:
        gen.stop()
    delivered = sum((after[p].tx_packets or 0) - (before[p].tx_packets or 0) for p in (1, 2))
    return delivered / elapsed


def main() -> int:
    parser = benchcli.parser(__doc__)
    parser.add_argument("--search-time", type=float, default=2.0)
    parser.add_argument("--validation-time", type=float, default=5.0)
    parser.add_argument("--granularity", type=float, default=0.5, help="[%% of line rate]")
    parser.add_argument("--ring-size", type=int, default=DEFAULT_RING_SIZE, help="[descriptors]")
    parser.add_argument("--no-binary", action="store_true", help="MLRsearch only")
    args = parser.parse_args()
    benchcli.stop_on_sigterm()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    cpus = sorted(os.sched_getaffinity(0))
    root = Path(tempfile.mkdtemp(prefix="ovsperf-lab-bench", dir="/run"))
    state = LabRunState.create(root, f"ovsperf-lab-bench-{os.getpid()}")
    ndrs: list[float] = []
    mlr: dict[str, list[float]] = {"NDR": [], "PDR": []}
    try:
        ovs = OvsSandbox(
            state,
            OvsConfig(lcore_cpu=cpus[0], pmd_cpus=(cpus[-1],), file_prefix=state.new_file_prefix("ovs")),
        )
        ovs.start()
        for pid in ovs.pids.values():
            renice(pid, -10)
        lay = topology.layout(Topology.P2P, state.run_dir / "sock")
        topology.build(ovs, lay, n_rxq=1)
        for pid in ovs.pids.values():  # PMD threads exist only once ports are added
            renice(pid, -10)
        gen = _dpdk_generator(
            GeneratorRequest(
                ports=lay.attachments(),
                cpu=cpus[0],
                file_prefix=state.new_file_prefix("tg"),
                memory_mb=256,
                queues=1,
                ring_size=args.ring_size,
            )
        )
        try:
            pid = getattr(gen, "pid", None)
            if isinstance(pid, int):
                state.track_process("ovsperf-trafficgen", pid)
                renice(pid, -10)
            gen.wait_link(timeout_s=60)
            line = line_rate_pps(FRAME_SIZE_BYTES, 10e9)
            config = SearchConfig(
                frame_size_bytes=FRAME_SIZE_BYTES,
                max_rate_pps=line,
                rate_granularity_pps=line * args.granularity / 100.0,
                loss_ratio_limit=0.0,
                search_trial_s=args.search_time,
                validation_trial_s=args.validation_time,
                drain_s=0.5,
            )
            mlr_config = MlrConfig(frame_size_bytes=FRAME_SIZE_BYTES, max_rate_pps=line)
            for i in range(REPEATS):
                t0 = time.monotonic()
                if not args.no_binary:
                    try:
                        found = search_throughput(gen, config, log=logging.getLogger("bench.search"))
                    except SearchError as err:
                        print(f"binary NDR run {i + 1}: n/a ({err})")
                    else:
                        ndrs.append(found.validation.rx_pps)
                        print(
                            f"binary NDR run {i + 1}: {found.validation.rx_pps / 1e6:.4f} Mpps "
                            f"(both directions), {len(found.trials)} trials, {time.monotonic() - t0:.0f} s"
                        )
                t0 = time.monotonic()
                try:
                    answer = search_mlr(gen, mlr_config, log=logging.getLogger("bench.mlr"))
                except SearchError as err:
                    print(f"MLRsearch run {i + 1}: n/a ({err})")
                    continue
                for name, goal in (("NDR", answer.goal(0.0)), ("PDR", answer.goal(0.005))):
                    if goal.aggregate_pps is not None:
                        mlr[name].append(goal.aggregate_pps)
                print(
                    f"MLRsearch run {i + 1}: NDR {(answer.goal(0.0).aggregate_pps or 0) / 1e6:.4f}, "
                    f"PDR {(answer.goal(0.005).aggregate_pps or 0) / 1e6:.4f} Mpps (both directions), "
                    f"{len(answer.trials)} trials, {sum(t.duration_s for t in answer.trials):.0f} trial-s, "
                    f"{time.monotonic() - t0:.0f} s"
                )
        finally:
            gen.close()
        max_fwd = measure_max_forwarding(state, ovs, lay, cpus[0], window_s=5.0)
        ovs.stop()
    finally:
        release(state)
        root.rmdir()
    print(f"OVS max forwarding rate at full offered load (testpmd flowgen): {max_fwd / 1e6:.4f} Mpps")
    methods = [("MLRsearch NDR", mlr["NDR"]), ("MLRsearch PDR", mlr["PDR"])]
    if not args.no_binary:
        methods.insert(0, ("binary NDR", ndrs))
    for label, values in methods:
        if not values:
            print(f"{label} 64 B: n/a (no search found a rate; see above)")
            continue
        mean = statistics.fmean(values)
        cv = statistics.stdev(values) / mean * 100.0 if len(values) > 1 and mean > 0 else float("nan")
        print(
            f"{label} 64 B mean over {len(values)} of {REPEATS} runs: {mean / 1e6:.4f} Mpps, CV {cv:.2f} % "
            f"(goal <= 5 %); / max forwarding: {mean / max_fwd:.3f} (goal >= 0.8)"
        )
    return 0 if mlr["PDR"] else 1


if __name__ == "__main__":
    sys.exit(main())
