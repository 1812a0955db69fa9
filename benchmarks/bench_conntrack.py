"""Benchmark conntrack and PVVP against plain P2P: NDR and cycles per packet as ratios, one run.

Through ``ovsperf-lab run``'s own code (:func:`ovsperf_lab.run.run_lab`, sandboxed OVS-DPDK, the
``trafficgen`` backend, MLRsearch), 64 B, per round:

1. ``phy2phy_tput`` (port-to-port rules, 1 flow) and ``pvvp_tput`` (two testpmd forwarders);
2. ``phy2phy_ct_tput`` (``ct(commit)``) at 1, 1,000 and 100,000 flows per direction (twice as many
   connections: the two directions are separate connections, ovsperf_lab/conntrack.py);
3. ``phy2phy_ct_nat_tput`` (``ct(commit,nat)``) at 1,000 flows.

Rounds run in that order ``--rounds`` times; per item the best NDR of the rounds counts (a shared
machine can take a round's CPU away). Printed: each NDR (both directions) [Mpps], each / P2P, and
OVS's cycles per packet (``dpif-netdev/pmd-perf-show`` through :mod:`ovsperf_lab.telemetry`, of
the lossless final trial at the highest load) / P2P's. No absolute goal: the ratios are what one
compares with published OVS conntrack figures.

Needs root, hugepages, ``make -C trafficgen`` and the Debian packages ``openvswitch-switch-dpdk``
and ``dpdk``. Exit 0 when everything measured, 2 on a failure.

Usage: ``sudo .venv/bin/python benchmarks/bench_conntrack.py [--rounds N] [--final-trial-duration S]``.
"""

from __future__ import annotations

import json
import logging
import sys
import tempfile
from pathlib import Path

import benchcli

from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import VsperfTest
from ovsperf_common.labfiles import TELEMETRY_FILE
from ovsperf_lab.errors import LabError
from ovsperf_lab.machine import probe_machine
from ovsperf_lab.plan import LabOptions, plan_run
from ovsperf_lab.run import run_lab

FRAME_SIZE_BYTES = 64
CT_FLOWS = (1, 1000, 100_000)
NAT_FLOWS = 1000

Item = tuple[str, int]
"""(test name, flows per direction)."""


def _runs() -> tuple[tuple[str, tuple[VsperfTest, ...], tuple[int, ...]], ...]:
    """Return the runs of one round: (scenario, tests, flow sweep)."""
    return (
        ("OVS_DPDK1q", (VsperfTest.PHY2PHY_TPUT,), (1,)),
        ("OVS_DPDK1q_PVVP", (VsperfTest.PVVP_TPUT,), (1,)),
        ("OVS_DPDK1q_CT", (VsperfTest.PHY2PHY_CT_TPUT,), CT_FLOWS),
        ("OVS_DPDK1q_CT", (VsperfTest.PHY2PHY_CT_NAT_TPUT,), (NAT_FLOWS,)),
    )


def _cycles(results_dir: Path) -> dict[Item, float]:
    """Return cycles per packet per item: the lossless telemetry trial at the highest load."""
    trials = json.loads((results_dir / TELEMETRY_FILE).read_text())["trials"]
    best: dict[Item, tuple[float, float]] = {}
    for trial in trials:
        cpp = trial["totals"].get("cycles_per_packet")
        if not trial["valid"] or trial["loss_ratio"] != 0 or cpp is None:
            continue
        key = (trial["test"], trial["flows"])
        if key not in best or trial["load_pps"] > best[key][0]:
            best[key] = (trial["load_pps"], cpp)
    return {key: cpp for key, (_, cpp) in best.items()}


def measure_round(
    final_trial_s: float, out: Path, state: Path
) -> tuple[dict[Item, float], dict[Item, float]]:
    """Run one round; return NDR per item (both directions) [pps] and cycles per packet per item [1].

    A run that fails (a shared machine overloaded past OVS's waits) is reported on stderr and left
    out of the round; the other rounds may measure it.
    """
    catalog, facts = load_catalog(), probe_machine()
    ndr: dict[Item, float] = {}
    cycles: dict[Item, float] = {}
    for scenario, tests, flows in _runs():
        options = LabOptions(
            frame_sizes_bytes=(FRAME_SIZE_BYTES,),
            final_trial_s=final_trial_s,
            duration_sum_s=3 * final_trial_s,
            search_duration_max_s=240.0,
            latency_levels_percent=(),
            flows=flows[0],
            flow_sweep=flows if len(flows) > 1 else (),
            tests=tests,
        )
        plan = plan_run(catalog.get(scenario), facts, options)
        try:
            outcome = run_lab(plan, facts, output_root=out, state_root=state)
        except LabError as err:
            print(f"bench_conntrack: {scenario} {tests[0].value}: {err}", file=sys.stderr, flush=True)
            continue
        if not outcome.complete:
            print(
                f"bench_conntrack: {scenario} {tests[0].value}: {outcome.reason}", file=sys.stderr, flush=True
            )
        for test, rows in outcome.results.values():
            for row in rows:
                [goal] = [g for g in row.goals if g.loss_ratio_limit == 0]
                ndr[(test.value, row.flows)] = goal.rx_fps or 0.0
        cycles.update(_cycles(outcome.results_dir))
    return ndr, cycles


def main() -> int:
    parser = benchcli.parser(__doc__)
    parser.add_argument(
        "--rounds", type=int, default=1, help="rounds; the best NDR per item counts (%(default)s)"
    )
    parser.add_argument(
        "--final-trial-duration", type=float, default=1.0, help="MLRsearch final trial [s] (%(default)s)"
    )
    args = parser.parse_args()
    benchcli.stop_on_sigterm()
    logging.basicConfig(
        level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    best: dict[Item, float] = {}
    cycles: dict[Item, list[float]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="bench-ct-") as tmp,
        tempfile.TemporaryDirectory(prefix="olab-b", dir="/run") as state,
    ):
        for number in range(args.rounds):
            ndr, cpp = measure_round(args.final_trial_duration, Path(tmp), Path(state))
            for key, value in ndr.items():
                best[key] = max(best.get(key, 0.0), value)
                print(f"round {number + 1}: {key[0]} {key[1]} flows: NDR {value / 1e6:.3f} Mpps", flush=True)
            for key, value in cpp.items():
                cycles.setdefault(key, []).append(value)
    base = best.get((VsperfTest.PHY2PHY_TPUT.value, 1))
    base_cpp = min(cycles.get((VsperfTest.PHY2PHY_TPUT.value, 1), [0.0]) or [0.0])
    if not base:
        print("bench_conntrack: no P2P NDR to compare with.", file=sys.stderr)
        return 2
    print(f"P2P 64 B NDR {base / 1e6:.3f} Mpps (both directions), {base_cpp:.0f} cycles/packet")
    for key in sorted(best, key=lambda k: (k[0] != VsperfTest.PHY2PHY_TPUT.value, k[0], k[1])):
        cpp = min(cycles.get(key, [0.0]) or [0.0])
        cpp_ratio = f"{cpp / base_cpp:.2f}" if cpp and base_cpp else "n/a"
        print(
            f"{key[0]:<22} {key[1]:>7} flows: NDR {best[key] / 1e6:.3f} Mpps, / P2P {best[key] / base:.2f}; "
            f"{cpp:.0f} cycles/packet, / P2P {cpp_ratio}"
        )
    wanted = {(t.value, f) for _, tests, flows in _runs() for t in tests for f in flows}
    missing = sorted(wanted - set(best))
    if missing:
        print(f"bench_conntrack: never measured: {missing}.", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
