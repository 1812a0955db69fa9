#!/usr/bin/env python3
"""Benchmark ovsperf-trafficgen against dpdk-testpmd txonly on one core, into the same sink.

Sink: a ``net_null`` port (``no-rx=1``), which frees every frame it is given in the sender's own
lcore, so the measurement is the sender's cost per frame and nothing else (on a 2-CPU machine a
polling sink process would share the CPUs with everything else).
Peer: dpdk-testpmd ``--forward-mode=txonly`` (64 B frames: ``--txpkts=60`` + 4 B FCS), lcores
pinned to the generator's CPU. Both are measured RUNS times, alternating, in the same run, and
the best run of each is compared (on a shared machine a run can lose a large share of its CPU;
the best run is the closest to the sender's capability). Then the generator is paced at
10 %..90 % of its median maximum rate (what it sustains on this machine) into the same sink.

Prints the max-rate ratio (goal >= 0.9) and the requested vs achieved table (goal +-0.5 %).
Needs root, hugepages and ``make -C trafficgen``. Exit 0 always when measurement worked (the
goals are reported, not enforced), 2 on a setup failure.

Usage: ``sudo .venv/bin/python benchmarks/bench_trafficgen.py``.
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import benchcli  # noqa: E402

from ovsperf_lab.errors import TrafficGeneratorError  # noqa: E402
from ovsperf_lab.generators.dpdk import DpdkTrafficGenerator  # noqa: E402
from ovsperf_lab.generators.dpdk_config import GeneratorConfig, TxFullPolicy  # noqa: E402
from tests.ovsperf_lab import tg_harness as h  # noqa: E402

MEASURE_S = 2.0
RUNS = 3
FRAME_SIZE_BYTES = 64
PROMPT = "testpmd> "


class InteractiveTestpmd:
    """dpdk-testpmd in interactive mode, driven command by command over stdin."""

    def __init__(self, eal: list[str], app: list[str]) -> None:
        self.prefix = h.unique_prefix("bench")
        # stdbuf: testpmd's statistics are printf output, block-buffered on a pipe.
        cmd = ["stdbuf", "-o0", h.TESTPMD, *eal, "--no-pci", "--in-memory", "--file-prefix", self.prefix,
               "-m", "256", "--", "-i", "--no-mlockall", *app]  # fmt: skip
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        )
        self._buf = ""
        self._cond = threading.Condition()
        threading.Thread(target=self._pump, daemon=True).start()
        self._wait_prompt(60)

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        while True:
            chunk = self.proc.stdout.read(1)
            if not chunk:
                break
            with self._cond:
                self._buf += chunk
                self._cond.notify_all()

    def _wait_prompt(self, timeout_s: float) -> str:
        end = time.monotonic() + timeout_s
        with self._cond:
            while PROMPT not in self._buf:
                if time.monotonic() > end or self.proc.poll() is not None:
                    raise RuntimeError(f"testpmd gave no prompt; output:\n{self._buf[-2000:]}")
                self._cond.wait(0.1)
            out, _, self._buf = self._buf.partition(PROMPT)
        return out

    def tx_packets(self, port: int = 0, timeout_s: float = 30) -> int:
        """Return the port's TX-packets counter (``show port stats``)."""
        assert self.proc.stdin is not None
        with self._cond:
            self._buf = ""
        self.proc.stdin.write(f"show port stats {port}\n")
        self.proc.stdin.flush()
        end = time.monotonic() + timeout_s
        pattern = re.compile(r"TX-packets:\s*(\d+)")
        with self._cond:
            while (match := pattern.search(self._buf)) is None:
                if time.monotonic() > end or self.proc.poll() is not None:
                    raise RuntimeError(f"No TX-packets in testpmd output:\n{self._buf[-2000:]}")
                self._cond.wait(0.1)
        return int(match.group(1))

    def stop(self) -> None:
        h.stop_pid(self.proc)
        h.remove_dpdk_leftovers(self.prefix)


SINK_VDEV = "net_null0,no-rx=1"


def testpmd_txonly_pps(cpu: str, txpkts: int = FRAME_SIZE_BYTES - 4, extra: tuple[str, ...] = ()) -> float:
    """Return testpmd txonly's TX rate into the sink over MEASURE_S [pps] (``txpkts``: frame
    bytes without FCS; ``extra``: more testpmd options, e.g. ``--txonly-multi-flow``)."""
    pmd = InteractiveTestpmd(
        ["--lcores", f"0@{cpu},1@{cpu}", "--vdev", SINK_VDEV],
        ["--forward-mode=txonly", f"--txpkts={txpkts}", "--auto-start", *extra],
    )  # fmt: skip
    try:
        time.sleep(0.5)
        t0, n0 = time.monotonic(), pmd.tx_packets()
        time.sleep(MEASURE_S)
        t1, n1 = time.monotonic(), pmd.tx_packets()
        return (n1 - n0) / (t1 - t0)
    finally:
        pmd.stop()


def generator_config(cpu: str) -> GeneratorConfig:
    return GeneratorConfig(
        vdevs=(SINK_VDEV,),
        lcores=cpu,
        memory_mb=128,
        file_prefix=h.unique_prefix("bench"),
        binary=h.BINARY,
        on_tx_full=TxFullPolicy.RETRY,
    )


def generator_max_pps(gen: DpdkTrafficGenerator) -> float:
    """Return the generator's unpaced TX rate into the sink over MEASURE_S [pps]."""
    result = gen.run_raw_trial(
        {"frame_size_bytes": FRAME_SIZE_BYTES, "rate_pps": 0, "duration_s": MEASURE_S, "bidirectional": False,
         "on_tx_full": "retry", "drain_s": 0.0}
    )  # fmt: skip
    return float(result["directions"][0]["tx_pps"])


def main() -> int:
    benchcli.parser(__doc__).parse_args()
    benchcli.stop_on_sigterm()
    h.build_generator()
    cpu = h.generator_cpu()
    try:
        testpmd_runs: list[float] = []
        ours_runs: list[float] = []
        for _ in range(RUNS):
            testpmd_runs.append(testpmd_txonly_pps(cpu))
            with DpdkTrafficGenerator(generator_config(cpu)) as gen:
                gen.wait_link(10)
                ours_runs.append(generator_max_pps(gen))
        testpmd_pps = max(testpmd_runs)
        ours_pps = max(ours_runs)
        ratio = ours_pps / testpmd_pps
        median_ratio = statistics.median(ours_runs) / statistics.median(testpmd_runs)
        print(f"# Max offered {FRAME_SIZE_BYTES} B rate on CPU {cpu} into '{SINK_VDEV}'")
        print(f"testpmd txonly: {', '.join(f'{r / 1e6:.3f}' for r in testpmd_runs)} Mpps")
        print(f"ovsperf-trafficgen (unpaced): {', '.join(f'{r / 1e6:.3f}' for r in ours_runs)} Mpps")
        verdict = "OK" if ratio >= 0.9 else "BELOW GOAL"
        print(f"ratio trafficgen/testpmd, best runs: {ratio:.3f} (goal >= 0.9) {verdict}")
        print(f"ratio trafficgen/testpmd, medians: {median_ratio:.3f}")
        print()
        print(f"# Pacing, {FRAME_SIZE_BYTES} B, 2 s trials, unidirectional, fractions of the median max rate")
        header = ("fraction", "requested_pps", "achieved_pps", "error_%", "valid")
        print("{:>8} {:>14} {:>14} {:>8} {:>6}".format(*header))
        worst = 0.0
        within = 0
        with DpdkTrafficGenerator(generator_config(cpu)) as gen:
            gen.wait_link(10)
            for tenth in range(1, 10):
                rate = statistics.median(ours_runs) * tenth / 10
                result = gen.run_raw_trial(
                    {"frame_size_bytes": FRAME_SIZE_BYTES, "rate_pps": rate, "duration_s": 2.0,
                     "bidirectional": False, "on_tx_full": "retry", "drain_s": 0.0}
                )  # fmt: skip
                achieved = float(result["directions"][0]["tx_pps"])
                error = (achieved - rate) / rate * 100
                worst = max(worst, abs(error))
                within += abs(error) <= 0.5
                print(
                    f"{tenth * 10:>7}% {rate:>14.0f} {achieved:>14.0f} {error:>+8.3f} {result['valid']!s:>6}"
                )
        print(f"worst pacing error: {worst:.3f} % (goal <= 0.5 %) {'OK' if worst <= 0.5 else 'ABOVE GOAL'}")
        print(f"rates within 0.5 %: {within} of 9")
        return 0
    except (TrafficGeneratorError, RuntimeError, AssertionError) as err:
        print(f"bench_trafficgen: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
