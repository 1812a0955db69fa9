"""Benchmark the two traffic generators of the registry: 64 B P2P MRR through the same OVS.

One sandboxed OVS-DPDK with the P2P topology (as ``ovsperf-lab compare`` builds it); each
backend (``trafficgen``: ovsperf-trafficgen, ``testpmd``: dpdk-testpmd flowgen) is started on
the same CPU and rings as compare starts it, warmed up for 1 s, and measures the MRR: one trial
at the 10 GbE line rate (received frames per second, both directions), as compare does. ROUNDS
rounds, the two backends alternating (the order flips every round); the best of each is
compared (a shared machine can take a round's CPU away) and the ratio testpmd / trafficgen is
printed: near 1 means the two agree on what OVS forwards; well below 1 means testpmd, not OVS,
was the limit.

Needs root, hugepages, ``make -C trafficgen`` and the Debian package ``dpdk``. Exit 0 when both
measured, 2 on a setup failure.

Usage: ``sudo .venv/bin/python benchmarks/bench_generators.py [--trial-time S] [--rounds N]``.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from pathlib import Path

import benchcli

from ovsperf_catalog.model import Topology
from ovsperf_common.units import line_rate_pps
from ovsperf_lab import topology
from ovsperf_lab.errors import LabError
from ovsperf_lab.generators.api import DEFAULT_LINK_SPEED_MBPS, GeneratorBackend, GeneratorRequest
from ovsperf_lab.generators.registry import GENERATORS
from ovsperf_lab.model import TrialSpec
from ovsperf_lab.ovs import OvsConfig, OvsSandbox
from ovsperf_lab.plan import DEFAULT_RING_SIZE
from ovsperf_lab.state import LabRunState, release, renice

FRAME_SIZE_BYTES = 64


def measure(
    backend: GeneratorBackend, state: LabRunState, lay: topology.Layout, cpu: int, trial_s: float
) -> tuple[float, float]:
    """Return (MRR, offered) of one trial of ``backend``, both directions [pps]."""
    generator = backend.start(
        GeneratorRequest(
            ports=lay.attachments(),
            cpu=cpu,
            file_prefix=state.new_file_prefix("tg"),
            memory_mb=256,
            queues=1,
            ring_size=DEFAULT_RING_SIZE,
        )
    )
    try:
        if generator.pid is not None:
            state.track_process(backend.label, generator.pid)
            renice(generator.pid, -10)
        generator.wait_link(timeout_s=30)
        load = line_rate_pps(FRAME_SIZE_BYTES, DEFAULT_LINK_SPEED_MBPS * 1e6)
        generator.run_trial(TrialSpec(FRAME_SIZE_BYTES, load, duration_s=1.0, drain_s=0.2))
        result = generator.run_trial(TrialSpec(FRAME_SIZE_BYTES, load, duration_s=trial_s, drain_s=0.5))
        if not result.valid:
            print(f"# {backend.name}: invalid trial: {result.invalid_reason}", flush=True)
        return result.rx_pps, result.tx_pps
    finally:
        generator.close()


def main() -> int:
    parser = benchcli.parser(__doc__)
    parser.add_argument("--trial-time", type=float, default=2.0, help="MRR trial [s] (%(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, best of them compared (%(default)s)")
    args = parser.parse_args()
    benchcli.stop_on_sigterm()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    backends = [GENERATORS["trafficgen"], GENERATORS["testpmd"]]
    for backend in backends:
        found = backend.readiness()
        if not found.ready:
            print(f"bench_generators: {backend.name}: {found.detail}; fix: {found.fix}", file=sys.stderr)
            return 2
    cpus = sorted(os.sched_getaffinity(0))
    root = Path(tempfile.mkdtemp(prefix="ovsperf-lab-bench", dir="/run"))
    state = LabRunState.create(root, f"ovsperf-lab-bench-{os.getpid()}")
    mrr: dict[str, list[float]] = {b.name: [] for b in backends}
    try:
        ovs = OvsSandbox(
            state,
            OvsConfig(lcore_cpu=cpus[0], pmd_cpus=(cpus[-1],), file_prefix=state.new_file_prefix("ovs")),
        )
        ovs.start()
        lay = topology.layout(Topology.P2P, state.run_dir / "sock")
        topology.build(ovs, lay, n_rxq=1)
        for pid in ovs.pids.values():  # PMD threads exist only once ports are added
            renice(pid, -10)
        print(f"{'round':>5} {'generator':>10} {'MRR_Mpps':>9} {'offered_Mpps':>12}")
        for number in range(1, args.rounds + 1):
            for backend in backends if number % 2 else reversed(backends):
                rx, tx = measure(backend, state, lay, cpus[0], args.trial_time)
                mrr[backend.name].append(rx)
                print(f"{number:>5} {backend.name:>10} {rx / 1e6:>9.4f} {tx / 1e6:>12.4f}", flush=True)
        ovs.stop()
    except LabError as err:
        print(f"bench_generators: {err}", file=sys.stderr)
        return 2
    finally:
        release(state)
        root.rmdir()
    best = {name: max(values) for name, values in mrr.items()}
    print(
        f"64 B P2P MRR, best of {args.rounds}: trafficgen {best['trafficgen'] / 1e6:.4f} Mpps, "
        f"testpmd {best['testpmd'] / 1e6:.4f} Mpps (both directions); "
        f"testpmd / trafficgen = {best['testpmd'] / best['trafficgen']:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
