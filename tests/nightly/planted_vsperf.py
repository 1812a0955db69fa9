"""A stand-in VSperf whose numbers depend on the build under test (planted: N+1 10 % slower at 64 B).

The task tests' VSperf stand-in (``tests/beaker_tasks/fake_vsperf.py``, named by
``$PLANTED_VSPERF_BASE``) runs with the same arguments, its output passed through, so it refuses
what VSperf would refuse and writes what VSperf writes. Then every row of each result CSV of the
run gets planted rates, consistent as MoonGen's would be: a fraction of the 2 × 10 GbE line rate
(40 % at 64 B, 95 % above), received = offered (a zero-loss NDR), in fps, Mbit/s (L1:
fps × (frame + 20 B) × 8) and % of line rate. When a package the machine was provisioned with
(``rpm -qa``: the lab's shim lists the job's kick repository) is one of ``$PLANTED_SLOW_NVRS``
(space-separated ``NAME-VERSION-RELEASE``), the 64 B rate is scaled by ``$PLANTED_SLOW_FACTOR``
(default 0.9). The git shim copies this file into the VSperf checkout as ``vsperf``, so it
imports nothing of the repository.
"""

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

LINK_BPS = 2 * 10e9
"""Both test ports together, 10 GbE each [bit/s]."""
LINE_FRACTION = {64: 0.40}
"""Planted NDR as a fraction of the line rate per frame size [1]; other sizes: DEFAULT_FRACTION."""
DEFAULT_FRACTION = 0.95
RESULTS_RE = re.compile(r"Creating result directory: *(\S+)")


def planted_row(row: dict[str, str], factor: float) -> dict[str, str]:
    """Return ``row`` with planted, mutually consistent rates for its frame size (module docstring)."""
    size = int(row["packet_size"])
    line_fps = LINK_BPS / ((size + 20) * 8)
    fps = line_fps * LINE_FRACTION.get(size, DEFAULT_FRACTION) * (factor if size == 64 else 1.0)
    rates = {
        "fps": f"{fps:.6f}",
        "mbps": f"{fps * (size + 20) * 8 / 1e6:.3f}",
        "percent": f"{100 * fps / line_fps:.3f}",
    }
    return {
        **row,
        **{f"throughput_rx_{unit}": value for unit, value in rates.items()},
        **{f"tx_rate_{unit}": value for unit, value in rates.items()},
    }


def installed_nvrs() -> set[str]:
    """Return ``NAME-VERSION-RELEASE`` of every package ``rpm -qa`` lists (arch dropped)."""
    listing = subprocess.run(
        ["rpm", "-qa", "--qf", "%{NAME} %{VERSION}-%{RELEASE}.%{ARCH}\n"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    nvrs = set()
    for line in listing.splitlines():
        name, _, evra = line.partition(" ")
        if evra:
            nvrs.add(f"{name}-{evra.rsplit('.', 1)[0]}")
    return nvrs


def plant(csv_path: Path, factor: float) -> None:
    """Rewrite every row of ``csv_path`` with planted rates (``factor`` at 64 B)."""
    with csv_path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
        fields = list(rows[0]) if rows else []
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(planted_row(row, factor) for row in rows)


def main(argv: list[str]) -> int:
    """Run the base stand-in, then plant the build's speed; return its exit status."""
    proc = subprocess.Popen(
        [sys.executable, os.environ["PLANTED_VSPERF_BASE"], *argv],
        stdout=subprocess.PIPE,
        text=True,
    )
    results = None
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        match = RESULTS_RE.search(line)
        if match:
            results = Path(match.group(1))
    status = proc.wait()
    if status != 0 or results is None:
        return status
    slow = set(os.environ.get("PLANTED_SLOW_NVRS", "").split()) & installed_nvrs()
    factor = float(os.environ.get("PLANTED_SLOW_FACTOR", "0.9")) if slow else 1.0
    for path in sorted(results.glob("result_*.csv")):
        plant(path, factor)
    print(f"planted: rates of {' '.join(sorted(slow)) or 'this build'}, 64 B x {factor:g}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
