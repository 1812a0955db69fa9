"""Benchmark of ``ovsperf-lab compare``: what an interleaved A/B run finds, and how fast.

In one run on this machine (root, hugepages, the built generator), 64 B P2P, MRR:

1. A/A: the system OVS against itself (must come out NO_CHANGE);
2. A against A with 3 %, 5 % and 10 % of side B's PMD CPU taken (``--b-cpu-steal``, cgroup CPU
   bandwidth): a calibrated slowdown of known size.

For each it prints the estimated change with its 95 % interval, the verdict, the minimum
detectable change (MDC) and the wall time, and the PMD-share slowdown it should find. Issue 13's
goal on a 2-core VM: MDC <= 3 % within 15 minutes per comparison, A/A never flagged.

Usage: ``sudo .venv/bin/python benchmarks/bench_compare.py [--rounds N] [--trial-duration S]``.
"""

from __future__ import annotations

import logging
import sys
import tempfile
import time
from pathlib import Path

import benchcli

from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import VsperfTest
from ovsperf_lab.compare.abtest import CompareConfig, run_compare
from ovsperf_lab.compare.sides import SideSpec, resolve
from ovsperf_lab.generators.dpdk import start as _dpdk_generator
from ovsperf_lab.machine import probe_machine
from ovsperf_lab.plan import LabOptions, plan_run


def main() -> int:
    parser = benchcli.parser(__doc__)
    parser.add_argument("--rounds", type=int, default=20, help="most rounds per comparison (20)")
    parser.add_argument("--trial-duration", type=float, default=5.0, help="MRR trial [s] (5)")
    parser.add_argument("--steal", type=float, action="append", help="PMD CPU shares to take [%%] (3, 5, 10)")
    args = parser.parse_args()
    benchcli.stop_on_sigterm()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    facts = probe_machine()
    options = LabOptions(frame_sizes_bytes=(64,), tests=(VsperfTest.PHY2PHY_TPUT,))
    cpus = plan_run(load_catalog().get("OVS_DPDK1q"), facts, options).cpus
    a, b = resolve(SideSpec("A", "system")), resolve(SideSpec("B", "system"))
    flagged_aa = False
    for steal in (None, *(args.steal or (3.0, 5.0, 10.0))):
        config = CompareConfig(trial_s=args.trial_duration, max_rounds=args.rounds, b_cpu_steal_percent=steal)
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="ovsperf-lab-ab", dir="/run") as state:
            outcome = run_compare(
                (a, b), cpus, config, state_root=Path(state), generator_factory=_dpdk_generator
            )
        wall = time.monotonic() - started
        e = outcome.estimate
        name = "A/A" if steal is None else f"B with {steal:g} % of its PMD CPU taken"
        if e is None or e.ci_low_percent is None or e.mdc_percent is None:
            print(f"{name}: no estimate ({outcome.reason})")
            continue
        flagged_aa |= steal is None and e.verdict.value != "NO_CHANGE"
        expected = "0" if steal is None else f"about -{steal:g}"
        print(
            f"{name}: change {e.change_percent:+.2f} % [{e.ci_low_percent:+.2f}, {e.ci_high_percent:+.2f}] "
            f"(expected {expected} %), {e.verdict.value}, MDC {e.mdc_percent:.2f} % (goal <= 3 %), "
            f"{e.rounds} rounds, {wall / 60:.1f} min (goal <= 15 min)"
        )
    print(f"A/A flagged: {'YES' if flagged_aa else 'no'} (goal: never)")
    return 1 if flagged_aa else 0


if __name__ == "__main__":
    sys.exit(main())
