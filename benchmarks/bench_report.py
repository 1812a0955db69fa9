"""Time generate-report at scale: 1 baseline × N results × 6 tests × 7 frame sizes, N = 10 … 50.

Synthetic VSperf-format ``results_<ts>`` directories (MoonGen CSV header, CRLF rows, an .rst
environment block and an overall log) are written to a temporary directory. Prints the time per N,
the cost per added result, and the growth ratio t(50)/t(10) against the linear peer 50/10.
Target (issue 3): ≤ 10 s for N = 50 on the 2-core CI machine, and linear growth.

Usage: ``.venv/bin/python benchmarks/bench_report.py [--max-results 50] [--step 10]``
"""

from __future__ import annotations

import logging
import random
import sys
import tempfile
import time
from pathlib import Path

import benchcli

from ovsperf_common.units import RFC2544_FRAME_SIZES_BYTES, line_rate_pps
from reporting.api import generate_report

TESTS = (
    ("phy2phy_tput", "p2p"),
    ("pvp_tput", "pvp"),
    ("pvvp_tput", "pvvp"),
    ("phy2phy_tput_mod_vlan", "p2p"),
    ("phy2phy_scalability", "p2p"),
    ("pvp_tput_bidir", "pvp"),
)
HEADER = (
    "throughput_rx_fps,throughput_rx_mbps,throughput_rx_percent,tx_rate_fps,tx_rate_mbps,tx_rate_percent,"
    "min_latency_ns,max_latency_ns,avg_latency_ns,type,packet_size,id,deployment,vswitch,traffic_type,"
    "test_execution_time,start_time,stop_time,stream_count,match_type,pre-installed_flows"
)
ENV = """Test Environment
~~~~~~~~~~~~~~~~
Below is the environment that the test was performed in:

* OS: Red Hat Enterprise Linux Server 7.3 Maipo
* Kernel Version: 3.10.0-514.el7.x86_64
* CPU:  Intel(R) Xeon(R) CPU E5-2620 v3 @ 2.40GHz
* vSwitch: OvsDpdkVhost, Version: {ovs}, GIT tag: None
* DPDK Version: 17.11.0, GIT tag: None

Below are test details:
"""


def write_results(root: Path, number: int, rng: random.Random, ovs: str) -> Path:
    """Write one synthetic results directory (6 tests × 7 sizes) and return its path."""
    stamp = f"2018-04-{1 + number // 24:02d}_{number % 24:02d}-00-00"
    path = root / f"run{number:03d}" / f"results_{stamp}"
    path.mkdir(parents=True)
    link_bps = 20e9
    for index, (test, deployment) in enumerate(TESTS):
        rows = [HEADER]
        for size in RFC2544_FRAME_SIZES_BYTES:
            line = line_rate_pps(size, link_bps)
            rx = min(line, 14.2e6 * (0.6 + 0.1 * index / len(TESTS))) * rng.gauss(1.0, 0.005)
            pct = 100.0 * rx / line
            mbps = rx * (size + 20) * 8 / 1e6
            rows.append(
                f"{rx:.6f},{mbps:.3f},{pct:.3f},{rx:.6f},{mbps:.3f},{pct:.3f},0.000,0.000,0.000,"
                f"rfc2544_throughput,{size},{test},{deployment},OvsDpdkVhost,udp,00:28:55,"
                f"2018-04-01 00:00:00,2018-04-01 00:28:55,1,L4,No"
            )
        (path / f"result_{index}_{test}_{deployment}.csv").write_bytes(("\r\n".join(rows) + "\r\n").encode())
        (path / f"result_{index}_{test}_{deployment}.rst").write_text(ENV.format(ovs=ovs))
    (path / f"vsperf-overall_{stamp}.log").write_text(
        "".join(f"2018-04-01 00:00:00,000 : # Test:    {t}\n" for t, _ in TESTS)
    )
    return path


def main() -> int:
    """Run the benchmark and print the timings and ratios."""
    parser = benchcli.parser(__doc__)
    parser.add_argument("--max-results", type=int, default=50)
    parser.add_argument("--step", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3, help="runs per size; the fastest counts")
    args = parser.parse_args()
    benchcli.stop_on_sigterm()
    logging.basicConfig(level=logging.ERROR)
    rng = random.Random(42)
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        root = Path(tmp)
        baseline = write_results(root / "baseline", 0, rng, "2.9.0")
        results = [write_results(root / "current", n, rng, "2.9.1") for n in range(1, args.max_results + 1)]
        generate_report([baseline], results[:1], root / "warmup")  # font cache, imports
        timings: dict[int, float] = {}
        cpu: dict[int, float] = {}
        for count in range(args.step, args.max_results + 1, args.step):
            walls, cpus = [], []
            for attempt in range(args.repeat):
                start, start_cpu = time.perf_counter(), time.process_time()
                outcome = generate_report([baseline], results[:count], root / f"out{count}-{attempt}")
                walls.append(time.perf_counter() - start)
                cpus.append(time.process_time() - start_cpu)
            timings[count], cpu[count] = min(walls), min(cpus)
            cells = sum(outcome.counts.values())
            print(
                f"results={count:3d}  wall={timings[count]:6.2f} s  cpu={cpu[count]:6.2f} s  "
                f"cells={cells}  overall={outcome.overall}"
            )
        first, last = min(timings), max(timings)
        for name, series in (("wall", timings), ("cpu", cpu)):
            per_result = (series[last] - series[first]) / (last - first)
            fixed = series[first] - per_result * first
            growth = series[last] / series[first]
            print(
                f"{name}: {per_result * 1000:.1f} ms per added result, fixed part {fixed:.2f} s; "
                f"growth t({last})/t({first}) = {growth:.2f} (results alone, if linear: {last / first:.2f})"
            )
        print(f"target wall t({last}) <= 10 s: {'met' if timings[last] <= 10 else 'MISSED'}")
        return 0 if timings[last] <= 10 else 1


if __name__ == "__main__":
    sys.exit(main())
