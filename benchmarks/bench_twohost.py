"""Benchmark the two-host engine against the local lab: P2P NDR and PDR at the same frame sizes.

Two-host: the test's two network namespaces (``tests/ovsperf_lab/twohost_env.py``: a TG and a DUT,
each with sshd, two veth pairs as the data links), ``ovsperf-lab run`` in the DUT namespace with
OVS's ``net_af_packet`` ports and the generator started over SSH in the TG namespace on its own
``net_af_packet`` ports. Local: ``ovsperf-lab run`` in this namespace, vhost-user ports to a
generator on this machine. Same scenario (OVS_DPDK1q, P2P), frame sizes and MLRsearch options;
the runs alternate (two-host first) ROUNDS times. Printed per frame size: each engine's NDR and
PDR (both directions) and the ratio two-host / local of the best NDR, plus each run's wall time.

Context only: ``net_af_packet`` on veth pairs is a kernel path (a system call per burst, a copy
per frame), far below vhost-user's shared-memory rings, so the ratio says what the netns test
measures, not what two hosts with NICs bound to vfio-pci would.

Needs root, hugepages, ``make -C trafficgen``, OpenSSH's ``sshd``. Exit 0 when every run
completed, 2 otherwise.

Usage: ``sudo .venv/bin/python benchmarks/bench_twohost.py [--frame-sizes 64,1518] [--rounds N]
[--final-trial-duration S] [--duration-sum S]``.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchcli

from tests.ovsperf_lab.twohost_env import LAB, ROOT, two_hosts

BINARY = ROOT / "trafficgen" / "build" / "ovsperf-trafficgen"


def _ndr_pdr(stdout: str) -> dict[int, tuple[float, float]]:
    """Return frame size [B] → (NDR, PDR) [fps, both directions] of the results directory printed."""
    [results] = [Path(line) for line in stdout.splitlines() if line.strip()]
    with (results / "result_0_phy2phy_tput_p2p.csv").open(newline="") as handle:
        return {
            int(row["packet_size"]): (float(row["throughput_rx_fps"]), float(row["pdr_throughput_rx_fps"]))
            for row in csv.DictReader(handle)
        }


def _run(
    argv: list[str], env: dict[str, str] | None, timeout_s: float
) -> tuple[dict[int, tuple[float, float]], float]:
    """Run one ``ovsperf-lab run``; return its rows and wall time [s].

    :raises RuntimeError: when it fails (with its stderr's tail).
    """
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False, env=env)
    wall_s = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"'{' '.join(argv[:6])} …' exited {done.returncode}: {done.stderr[-1500:]}")
    return _ndr_pdr(done.stdout), wall_s


def main() -> int:
    """Run the benchmark; return the exit code."""
    parser = benchcli.parser(__doc__)
    parser.add_argument("--frame-sizes", default="64,1518", help="frame sizes incl. FCS [B] (64,1518)")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each engine, alternating (1)")
    parser.add_argument("--final-trial-duration", default="1", help="MLRsearch final trial [s] (1)")
    parser.add_argument("--duration-sum", default="5", help="MLRsearch trial time per load [s] (5)")
    args = parser.parse_args()
    benchcli.stop_on_sigterm()
    subprocess.run(["make", "-s", "-C", str(ROOT / "trafficgen")], check=True, timeout=300)
    cpus = sorted(os.sched_getaffinity(0))
    common = [
        "run", "--config", "OVS_DPDK1q", "--frame-sizes", args.frame_sizes, "--no-progress",
        "--final-trial-duration", args.final_trial_duration, "--duration-sum", args.duration_sum,
        "--latency-loads", "", "--socket-mem-mb", "256",
    ]  # fmt: skip
    best: dict[str, dict[int, tuple[float, float]]] = {"two-host": {}, "local": {}}
    failed = False
    with tempfile.TemporaryDirectory(prefix="bench-twohost-") as tmp, two_hosts(Path(tmp) / "lab") as hosts:
        state = Path(tempfile.mkdtemp(prefix="ovsperf-lab-b", dir="/run"))
        try:
            for round_number in range(1, args.rounds + 1):
                out = Path(tmp) / f"out{round_number}"
                two_host = [
                    "ip", "netns", "exec", hosts.dut.ns, str(LAB), "--state-dir", str(state), *common,
                    "--output", str(out / "two-host"), *hosts.dut_ports(), *hosts.tg_ports(),
                    *hosts.ssh_options(),
                    "--tg-binary", str(BINARY), "--tg-cpus", str(cpus[0]), "--tg-memory-mb", "128",
                    "--ring-size", "1024", "--pmd-cpus", str(cpus[-1]), "--lcore-cpu", str(cpus[0]),
                ]  # fmt: skip
                local = [str(LAB), "--state-dir", str(state), *common, "--output", str(out / "local")]
                env = {**os.environ, "HOME": str(hosts.home)}
                for engine, argv in (("two-host", two_host), ("local", local)):
                    try:
                        rows, wall_s = _run(argv, env, timeout_s=1800)
                    except RuntimeError as err:
                        print(f"round {round_number} {engine}: FAILED: {err}", file=sys.stderr)
                        failed = True
                        continue
                    print(f"round {round_number} {engine}: {wall_s:.0f} s wall", flush=True)
                    for size, (ndr, pdr) in sorted(rows.items()):
                        print(
                            f"  {size:>5} B  NDR {ndr / 1e6:8.4f} Mpps  PDR {pdr / 1e6:8.4f} Mpps", flush=True
                        )
                        kept = best[engine].get(size, (0.0, 0.0))
                        best[engine][size] = (max(kept[0], ndr), max(kept[1], pdr))
        finally:
            subprocess.run(["rm", "-rf", str(state)], check=False, timeout=30)
    print("frame size   two-host NDR   local NDR   two-host / local (best of each)")
    for size in sorted(set(best["two-host"]) & set(best["local"])):
        two, here = best["two-host"][size][0], best["local"][size][0]
        ratio = two / here if here else float("nan")
        print(f"{size:>7} B  {two / 1e6:10.4f} Mpps {here / 1e6:9.4f} Mpps   {ratio:.3f}")
    return 2 if failed or not best["two-host"] or not best["local"] else 0


if __name__ == "__main__":
    sys.exit(main())
