"""Benchmark of ``ovsperf-lab bisect``: steps and wall time to the first bad build.

In one run on this machine (root, hugepages, the built generator), 64 B P2P, MRR:

1. one real A/A ``compare`` run (the system OVS against itself, ``--rounds`` rounds): its wall
   time T, its time per round and the noise of its rounds (standard deviation s of ln(B / A)):
   the noise model; ``--noise-sd S`` skips it (then times are in rounds);
2. for 8 and 32 builds and a culprit whose step is 5 % and 10 %: ``--runs`` bisections (culprit
   at a random position) through the real bisection code (search, state file, page) with a
   simulated comparison that draws each round's ln(B / A) from N(ln(1 + change), s) and applies
   ``compare``'s own statistics and stopping rule (``abstats.estimate``, ``--min-rounds``,
   ``--rounds``, the MDC target); a step's time is its rounds × the measured time per round;
3. with ``--real``: one real bisection of 8 builds of the system OVS, 10 % of the PMD CPU taken
   from build 5 on (``--cpu-steal``), through ``ovsperf-lab bisect``.

Printed per case: right / wrong / undecided answers, measured steps per bisection against
log2 N (goal: <= log2 N + 2, no wrong answer in 10 runs), and time per step against one compare
run T (goal: <= 1).

Usage: ``sudo .venv/bin/python benchmarks/bench_bisect.py [--runs N] [--rounds N] [--trial-duration S]
[--noise-sd S] [--real]``.
"""

from __future__ import annotations

import logging
import math
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import benchcli

from ovsperf_lab.bisect.model import Conclusion
from ovsperf_lab.bisect.options import BisectRequest, local_builds
from ovsperf_lab.bisect.search import Measured
from ovsperf_lab.bisect.session import Bisection, StepMeasurement, StepRun, start
from ovsperf_lab.bisect.state import BisectState
from ovsperf_lab.compare.abstats import estimate
from ovsperf_lab.compare.config import CompareConfig


def measure_noise(rounds: int, trial_s: float) -> tuple[float, float, float]:
    """Return (s of ln(B / A) per round [1], wall time of the A/A compare [s], time per round [s])."""
    from ovsperf_catalog.catalog import load_catalog
    from ovsperf_catalog.model import VsperfTest
    from ovsperf_lab.compare.abtest import run_compare
    from ovsperf_lab.compare.sides import SideSpec, resolve
    from ovsperf_lab.generators.dpdk import start as dpdk_generator
    from ovsperf_lab.machine import probe_machine
    from ovsperf_lab.plan import LabOptions, plan_run

    options = LabOptions(frame_sizes_bytes=(64,), tests=(VsperfTest.PHY2PHY_TPUT,))
    cpus = plan_run(load_catalog().get("OVS_DPDK1q"), probe_machine(), options).cpus
    a, b = resolve(SideSpec("A", "system")), resolve(SideSpec("B", "system"))
    config = CompareConfig(trial_s=trial_s, min_rounds=rounds, max_rounds=rounds)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ovsperf-lab-bb", dir="/run") as state:
        outcome = run_compare((a, b), cpus, config, state_root=Path(state), generator_factory=dpdk_generator)
    wall = time.monotonic() - started
    xs, ys = outcome.pairs()
    logs = [math.log(y / x) for x, y in zip(xs, ys, strict=True)]
    return statistics.stdev(logs), wall, wall / len(logs)


class Simulated:
    """A comparison whose rounds are drawn from the noise model, judged by compare's statistics."""

    def __init__(self, changes: dict[int, float], noise_sd: float, rng: random.Random) -> None:
        self.changes, self.noise_sd, self.rng = changes, noise_sd, rng
        self.rounds = 0

    def __call__(self, run: StepRun) -> StepMeasurement:
        config = run.config
        mu = math.log1p(self.changes.get(run.candidate.index, 0.0) / 100.0)
        a: list[float] = []
        b: list[float] = []
        while True:
            a.append(1.0)
            b.append(math.exp(self.rng.gauss(mu, self.noise_sd)))
            e = estimate(
                a, b, alpha=config.alpha, power=config.power, threshold_percent=config.threshold_percent
            )
            n = len(a)
            if n >= config.max_rounds or (
                n >= config.min_rounds
                and e.mdc_percent is not None
                and e.mdc_percent <= config.target_mdc_percent
            ):
                break
        self.rounds += n
        measured = Measured(
            e.verdict.value, e.change_percent, e.ci_low_percent, e.ci_high_percent, e.mdc_percent
        )
        return StepMeasurement(measured, n, None)


def simulate(
    builds: int, step_percent: float, runs: int, noise_sd: float, seed: int, max_rounds: int
) -> dict[str, float]:
    """Return the outcome counts and mean steps and rounds of ``runs`` simulated bisections.

    Each step's comparison has ``compare``'s settings with at most ``max_rounds`` rounds (a repeat
    twice that), as the measured A/A run.
    """
    rng = random.Random(seed)
    right = wrong = undecided = 0
    steps: list[int] = []
    rounds: list[float] = []
    bookkeeping_s = 0.0
    for _ in range(runs):
        culprit = rng.randrange(1, builds)
        config = CompareConfig(min_rounds=min(5, max_rounds), max_rounds=max_rounds)
        request = BisectRequest("OVS_DPDK1q", config, builds=local_builds(["system"] * builds, None, None))
        state = BisectState(request, request.builds)
        comparison = Simulated({i: -step_percent for i in range(culprit, builds)}, noise_sd, rng)
        with tempfile.TemporaryDirectory(prefix="bench-bisect") as out:
            bisection = Bisection(start(state, Path(out)), state, comparison)
            started = time.monotonic()
            result = bisection.run()
            bookkeeping_s += time.monotonic() - started
        measured = [s for s in bisection.state.steps if s.measured]
        steps.append(len(measured))
        rounds.append(comparison.rounds / len(measured))
        if result.conclusion is Conclusion.FOUND:
            right += result.first_bad == culprit
            wrong += result.first_bad != culprit
        else:
            undecided += 1
    return {
        "right": right,
        "wrong": wrong,
        "undecided": undecided,
        "steps": statistics.fmean(steps),
        "max_steps": max(steps),
        "rounds_per_step": statistics.fmean(rounds),
        "bookkeeping_s_per_step": bookkeeping_s / sum(steps),
    }


def real_bisection(rounds: int, trial_s: float) -> tuple[str, int, float]:
    """Bisect 8 system builds slowed 10 % from build 5 on this machine's lab; return (answer, steps, s)."""
    from ovsperf_lab.bisect.session import lab_comparator

    config = CompareConfig(trial_s=trial_s, max_rounds=rounds)
    request = BisectRequest("OVS_DPDK1q", config, builds=local_builds(["system"] * 8, 10.0, 5))
    state = BisectState(request, request.builds)
    with (
        tempfile.TemporaryDirectory(prefix="bench-bisect") as out,
        tempfile.TemporaryDirectory(prefix="ovsperf-lab-bb", dir="/run") as lab_state,
    ):
        comparator = lab_comparator("OVS_DPDK1q", Path(lab_state), None, progress=False)
        started = time.monotonic()
        bisection = Bisection(start(state, Path(out)), state, comparator)
        result = bisection.run()
        wall = time.monotonic() - started
    labels = [b.label for b in state.builds]
    answer = labels[result.first_bad] if result.conclusion is Conclusion.FOUND and result.first_bad else ""
    return answer or result.conclusion.value, sum(1 for s in bisection.state.steps if s.measured), wall


def main() -> int:
    parser = benchcli.parser(__doc__)
    parser.add_argument("--runs", type=int, default=10, help="simulated bisections per case (10)")
    parser.add_argument("--rounds", type=int, default=20, help="rounds of the A/A compare run (20)")
    parser.add_argument("--trial-duration", type=float, default=5.0, help="MRR trial [s] (5)")
    parser.add_argument("--noise-sd", type=float, help="s of ln(B / A) per round instead of measuring it")
    parser.add_argument("--real", action="store_true", help="also one real bisection of 8 builds")
    args = parser.parse_args()
    benchcli.stop_on_sigterm()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    logging.getLogger("ovsperf_lab.bisect").setLevel(logging.ERROR)
    if args.noise_sd is None:
        noise_sd, compare_s, round_s = measure_noise(args.rounds, args.trial_duration)
        print(
            f"A/A compare: {args.rounds} rounds in {compare_s:.0f} s ({round_s:.1f} s per round); "
            f"noise s = {noise_sd:.4f} (ln(B / A) per round)"
        )
    else:
        noise_sd, compare_s, round_s = args.noise_sd, float("nan"), float("nan")
        print(f"noise s = {noise_sd:.4f} (given); times in rounds")
    wrong_total = 0
    for builds in (8, 32):
        for step in (5.0, 10.0):
            r = simulate(builds, step, args.runs, noise_sd, builds * 100 + int(step), args.rounds)
            wrong_total += int(r["wrong"])
            per_step_s = r["rounds_per_step"] * round_s
            goal = (math.log2(builds) + 2) / math.log2(builds)
            print(
                f"N={builds:2d}, step {step:4.1f} %: right {r['right']:.0f}, wrong {r['wrong']:.0f}, "
                f"undecided {r['undecided']:.0f} of {args.runs}; steps {r['steps']:.1f} "
                f"(max {r['max_steps']:.0f}) = {r['steps'] / math.log2(builds):.2f} × log2 N "
                f"(goal <= {goal:.2f}); {r['rounds_per_step']:.1f} rounds per step = "
                f"{per_step_s / compare_s:.2f} × one compare run (goal <= 1); "
                f"bookkeeping {r['bookkeeping_s_per_step'] * 1000:.0f} ms per step"
            )
    if args.real:
        answer, steps, wall = real_bisection(args.rounds, args.trial_duration)
        print(
            f"real N=8, 10 % of the PMD CPU from build 5: answer {answer!r} (right: '#5 system'), "
            f"{steps} steps = {steps / 3:.2f} × log2 N, {wall / max(steps, 1):.0f} s per step = "
            f"{wall / max(steps, 1) / compare_s:.2f} × one compare run"
        )
    print(f"wrong answers: {wrong_total} (goal: none)")
    return 1 if wrong_total else 0


if __name__ == "__main__":
    sys.exit(main())
