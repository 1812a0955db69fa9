"""What tunnelling costs OVS-DPDK: VXLAN/Geneve decapsulation and VXLAN encapsulation against plain P2P.

Runs ``ovsperf-lab run`` (MLRsearch, no latency trials) in one session, round after round:

* P2P 64 B (``OVS_DPDK1q``, both directions),
* VXLAN decapsulation at 114 B on the wire (``OVS_DPDK1q_VXLAN``, ``overlay_p2p_decap_tput``: the
  generator sends 114 B tunnel frames, OVS forwards their 64 B inner frames),
* VXLAN encapsulation at 64 B (``overlay_p2p_tput``: 64 B in, 114 B out),
* Geneve decapsulation at 114 B (``OVS_DPDK1q_GENEVE``),

and prints, per overlay test, the NDR per direction relative to P2P's NDR per direction (the
overlay tests send one way, P2P both: P2P's NDR is halved; relative to P2P's NDR over both
directions, the frames one PMD forwards, it is half that) and OVS's cycles per packet (PMD
telemetry, median over the valid trials at >= 50 % of the NDR load) relative to P2P's. Each
frame carries the same 64 B inner frame, so a ratio below 1 is what the tunnel costs.

Needs root, hugepages and the built generator, like ``make run``; about 2 minutes per round here.
Usage: ``sudo .venv/bin/python benchmarks/bench_overlay.py [--rounds 1] [--duration-sum 6]``
"""

from __future__ import annotations

import csv
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchcli

VENV_BIN = Path(sys.executable).parent
CASES = (
    ("P2P 64 B", "OVS_DPDK1q", "phy2phy_tput", 64, 2),
    ("VXLAN decap 114 B", "OVS_DPDK1q_VXLAN", "overlay_p2p_decap_tput", 114, 1),
    ("VXLAN encap 64 B", "OVS_DPDK1q_VXLAN", "overlay_p2p_tput", 64, 1),
    ("Geneve decap 114 B", "OVS_DPDK1q_GENEVE", "overlay_p2p_decap_tput", 114, 1),
)
"""(label, scenario, test, frame size [B], directions)."""


def run_case(
    output: Path, scenario: str, test: str, size: int, duration_sum: float
) -> tuple[float, float | None]:
    """Run one test at one frame size; return (NDR over all directions [fps], cycles per packet or None)."""
    argv = [str(VENV_BIN / "ovsperf-lab"), "-q", "run", "--config", scenario, "--test", test,
            "--frame-sizes", str(size), "--latency-loads", "", "--duration-sum", str(duration_sum),
            "--final-trial-duration", "1", "--output", str(output)]  # fmt: skip
    for attempt in range(3):  # a shared machine's hugepages may be taken for a moment
        done = subprocess.run(argv, capture_output=True, text=True, timeout=3600, check=False)
        if done.returncode == 0 or "Not enough memory available" not in done.stderr:
            break
        print(f"{scenario} {test}: hugepages taken by another job, retrying in 30 s", file=sys.stderr)
        time.sleep(30 * (attempt + 1))
    if done.returncode != 0:
        raise SystemExit(f"ovsperf-lab failed ({done.returncode}): {done.stderr[-2000:]}")
    results = Path(done.stdout.strip().splitlines()[-1])
    [csv_path] = results.glob(f"result_0_{test}_*.csv")
    with csv_path.open(newline="") as handle:
        [row] = list(csv.DictReader(handle))
    ndr = float(row["throughput_rx_fps"])
    telemetry_file = results / "ovsperf-telemetry.json"
    if not telemetry_file.is_file():
        return ndr, None
    trials = json.loads(telemetry_file.read_text())["trials"]
    directions = 2 if test == "phy2phy_tput" else 1
    near = [
        t["totals"]["cycles_per_packet"]
        for t in trials
        if t["valid"] and t["load_pps"] >= 0.5 * ndr / directions and t["totals"].get("cycles_per_packet")
    ]
    return ndr, statistics.median(near) if near else None


def main() -> None:
    """Run the rounds and print the ratios."""
    options = benchcli.parser(__doc__)
    options.add_argument("--rounds", type=int, default=1, help="rounds of the four runs (%(default)s)")
    options.add_argument(
        "--duration-sum", type=float, default=6.0, help="MLRsearch trial time per load [s] (%(default)s)"
    )
    args = options.parse_args()
    benchcli.stop_on_sigterm()
    ndr: dict[str, list[float]] = {label: [] for label, *_ in CASES}
    cycles: dict[str, list[float]] = {label: [] for label, *_ in CASES}
    with tempfile.TemporaryDirectory(prefix="bench-overlay-") as tmp:
        for round_ in range(args.rounds):
            for label, scenario, test, size, directions in CASES:
                rate, cpp = run_case(Path(tmp), scenario, test, size, args.duration_sum)
                ndr[label].append(rate / directions)
                if cpp is not None:
                    cycles[label].append(cpp)
                shown = "n/a" if cpp is None else f"{cpp:.0f}"
                print(
                    f"round {round_ + 1}: {label:20s} NDR {rate / directions / 1e6:.3f} Mpps per direction, "
                    f"{shown} cycles/packet",
                    flush=True,
                )
    base_rate = statistics.mean(ndr[CASES[0][0]])
    base_cycles = statistics.mean(cycles[CASES[0][0]]) if cycles[CASES[0][0]] else None
    print(f"\nP2P 64 B: NDR {base_rate / 1e6:.3f} Mpps per direction, cycles/packet {base_cycles or 'n/a'}")
    for label, *_ in CASES[1:]:
        rate = statistics.mean(ndr[label])
        text = (
            f"{label:20s} NDR / P2P = {rate / base_rate:.3f} per direction "
            f"({rate / (2 * base_rate):.3f} of P2P's both directions)"
        )
        if base_cycles and cycles[label]:
            text += f", cycles per packet / P2P = {statistics.mean(cycles[label]) / base_cycles:.3f}"
        print(text)


if __name__ == "__main__":
    main()
