"""Choose the change-point library: FD.io CSIT's jumpavg against Apache Otava on series with known steps.

Synthetic series stand for a nightly throughput cell: ``n`` builds (30, 100, 250, 500), Gaussian
noise of coefficient of variation ``cv`` (1, 5, 10, 15 %), 0 to 3 steps of 2 to 10 % (up or
down, at least 15 builds apart) and, on request, outliers (2 % of builds dipping 20 to 60 %, a
stalled host). Every series is analysed by

* ``jumpavg``: ``jumpavg.classify`` as CSIT calls it, each group boundary a change point;
* ``ovsperf``: :func:`reporting.changepoints.analyse` (jumpavg plus our outlier rule), what the
  product uses;
* ``otava``: Apache Otava's ``compute_change_points`` (window 30, p ≤ 0.001, its defaults for
  Hunter), run in a separate virtual environment (``benchmarks/otava_driver.py``; created with
  ``pip install apache-otava`` on first use under ``--otava-venv``).

A detection within ±3 builds of a true step is a hit. Printed per detector: precision, recall,
false alarms per 1000 builds on the series without any step, recall by noise and step size, and
the analysis time (its ratio to jumpavg's). Goal: choose the library with the best precision at a
usable recall, then speed (docs/trending.md has the table and the choice).

Usage: ``.venv/bin/python benchmarks/bench_changepoints.py [--per-cell 4] [--no-outliers]``
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
import venv
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import benchcli
import jumpavg

from reporting.changepoints import analyse

LENGTHS = (30, 100, 250, 500)
CVS = (0.01, 0.05, 0.10, 0.15)
TOLERANCE = 3
OTAVA_VERSION = "0.8.0"


@dataclass(frozen=True)
class Synthetic:
    values: list[float]
    steps: list[int]
    magnitudes: list[float]
    cv: float


def make_series(rng: random.Random, n: int, cv: float, steps: int, outliers: bool) -> Synthetic:
    """Return a series of ``n`` builds with ``steps`` known steps of 2–10 % and noise ``cv``."""
    positions: list[int] = []
    candidates = list(range(10, n - 5))
    while len(positions) < steps and candidates:
        pos = rng.choice(candidates)
        positions.append(pos)
        candidates = [c for c in candidates if abs(c - pos) >= 15]
    positions.sort()
    magnitude = {p: rng.choice((-1, 1)) * rng.uniform(0.02, 0.10) for p in positions}
    level, values = 10e6, []
    for i in range(n):
        if i in magnitude:
            level *= 1 + magnitude[i]
        value = level * rng.gauss(1.0, cv)
        if outliers and rng.random() < 0.02:
            value *= rng.uniform(0.4, 0.8)
        values.append(max(value, 1.0))
    return Synthetic(values, positions, [magnitude[p] for p in positions], cv)


def corpus(per_cell: int, outliers: bool, seed: int) -> list[Synthetic]:
    """Return ``per_cell`` series for each (length, noise), steps cycling 0, 1, 2, 3."""
    rng = random.Random(seed)
    out = []
    for n in LENGTHS:
        for cv in CVS:
            for k in range(per_cell):
                out.append(make_series(rng, n, cv, k % 4, outliers))
    return out


def run_jumpavg(series: Sequence[Synthetic]) -> tuple[list[list[int]], float]:
    start, found = time.perf_counter(), []
    for s in series:
        cuts, index = [], 0
        for group in jumpavg.classify(s.values):
            if index:
                cuts.append(index)
            index += len(group.run_list)
        found.append(cuts)
    return found, time.perf_counter() - start


def run_ovsperf(series: Sequence[Synthetic]) -> tuple[list[list[int]], float]:
    start, found = time.perf_counter(), []
    for s in series:
        found.append([c.index for c in analyse([[v] for v in s.values]).changes])
    return found, time.perf_counter() - start


def otava_python(venv_dir: Path) -> Path:
    python = venv_dir / "bin" / "python"
    if not python.exists():
        print(f"creating {venv_dir} with apache-otava=={OTAVA_VERSION} (once) ...", file=sys.stderr)
        venv.create(venv_dir, with_pip=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"apache-otava=={OTAVA_VERSION}"],
            check=True,
            timeout=900,
        )
    return python


def run_otava(series: Sequence[Synthetic], python: Path) -> tuple[list[list[int]], float]:
    return otava_detect([s.values for s in series], python)


def otava_detect(series: Sequence[Sequence[float]], python: Path) -> tuple[list[list[int]], float]:
    """Return Otava's change points of each series and its own analysis time [s] (otava_driver.py)."""
    request = {"series": [list(values) for values in series], "window": 30, "max_pvalue": 0.001}
    driver = Path(__file__).with_name("otava_driver.py")
    done = subprocess.run(
        [str(python), str(driver)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=1800,
        check=True,
    )
    answer = json.loads(done.stdout)
    return answer["change_points"], float(answer["seconds"])


@dataclass
class Score:
    hits: int = 0
    detections: int = 0
    truths: int = 0
    false_on_flat: int = 0
    flat_builds: int = 0

    @property
    def precision(self) -> float:
        return self.hits / self.detections if self.detections else 1.0

    @property
    def recall(self) -> float:
        return self.hits / self.truths if self.truths else 1.0


def score(series: Sequence[Synthetic], found: Sequence[Sequence[int]]) -> tuple[Score, dict[str, list[int]]]:
    total = Score()
    by_bucket: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for s, cuts in zip(series, found, strict=True):
        used: set[int] = set()
        for step, magnitude in zip(s.steps, s.magnitudes, strict=True):
            match = next((c for c in cuts if abs(c - step) <= TOLERANCE and c not in used), None)
            bucket = f"cv {s.cv * 100:>2.0f} %, step {'2-5' if abs(magnitude) < 0.05 else '5-10'} %"
            by_bucket[bucket][1] += 1
            total.truths += 1
            if match is not None:
                used.add(match)
                total.hits += 1
                by_bucket[bucket][0] += 1
        total.detections += len(cuts)
        if not s.steps:
            total.false_on_flat += len(cuts)
            total.flat_builds += len(s.values)
    return total, dict(by_bucket)


def main() -> int:
    parser = benchcli.parser(__doc__)
    parser.add_argument("--per-cell", type=int, default=4, help="series per (length, noise) cell (default 4)")
    parser.add_argument("--no-outliers", action="store_true", help="series without outlier dips")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--otava-venv", type=Path, default=Path(__file__).with_name(".venv-otava"))
    parser.add_argument("--no-otava", action="store_true", help="skip Otava (no network to install it)")
    args = parser.parse_args()
    benchcli.stop_on_sigterm()
    series = corpus(args.per_cell, not args.no_outliers, args.seed)
    builds = sum(len(s.values) for s in series)
    print(
        f"{len(series)} series, {builds} builds, {sum(len(s.steps) for s in series)} true steps, "
        f"outliers {'off' if args.no_outliers else 'on'}, tolerance ±{TOLERANCE} builds"
    )
    detectors: list[tuple[str, Callable[[], tuple[list[list[int]], float]]]] = [
        ("jumpavg", lambda: run_jumpavg(series)),
        ("ovsperf", lambda: run_ovsperf(series)),
    ]
    if not args.no_otava:
        python = otava_python(args.otava_venv)
        detectors.append(("otava", lambda: run_otava(series, python)))
    results = {}
    for name, run in detectors:
        found, seconds = run()
        results[name] = (score(series, found), seconds)
    base_time = results["jumpavg"][1]
    header = ("detector", "precision", "recall", "false/1000 flat", "time [s]", "vs jumpavg")
    print(f"{header[0]:<9} {header[1]:>9} {header[2]:>7} {header[3]:>15} {header[4]:>9} {header[5]:>10}")
    for name, ((total, _), seconds) in results.items():
        false_rate = 1000 * total.false_on_flat / total.flat_builds if total.flat_builds else 0.0
        print(
            f"{name:<9} {total.precision:>9.2f} {total.recall:>7.2f} {false_rate:>15.2f} {seconds:>9.2f} "
            f"{seconds / base_time:>10.3f}"
        )
    print("recall by noise and step size (hits/steps):")
    buckets = sorted({b for (_, by), _ in results.values() for b in by})
    print(f"  {'bucket':<22}" + "".join(f"{name:>10}" for name in results))
    for bucket in buckets:
        counts = [by.get(bucket, [0, 0]) for (_, by), _ in results.values()]
        cells = "".join(f"{f'{hit}/{total}':>10}" for hit, total in counts)
        print(f"  {bucket:<22}{cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
