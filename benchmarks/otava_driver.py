"""Run Apache Otava's change-point detection on series read from stdin (for bench_changepoints.py).

Runs under the interpreter of a separate virtual environment holding ``apache-otava``: Otava pins
numpy 2.2.0 and scipy < 1.17 and pulls Google BigQuery and Slack clients, which the product's
environment does not need. Input: JSON ``{"series": [[float, ...], ...], "window": int,
"max_pvalue": float}``. Output: JSON ``{"change_points": [[int, ...], ...], "seconds": float}``,
the seconds spent in ``compute_change_points`` alone (Otava's own algorithm, Fleming et al. 2023).
"""

from __future__ import annotations

import json
import sys
import time

from otava.analysis import compute_change_points


def main() -> int:
    """Read the series, detect change points in each, print the result."""
    request = json.load(sys.stdin)
    found = []
    start = time.perf_counter()
    for values in request["series"]:
        points, _ = compute_change_points(
            values, window_len=request["window"], max_pvalue=request["max_pvalue"]
        )
        found.append([int(p.index) for p in points])
    seconds = time.perf_counter() - start
    json.dump({"change_points": found, "seconds": seconds}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
