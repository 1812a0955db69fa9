"""The generator's latency histogram (``trafficgen/src/hist.c``) through its C unit test."""

from __future__ import annotations

import subprocess

from tests.ovsperf_lab import tg_harness as h


def test_histogram_buckets_and_quantiles() -> None:
    done = subprocess.run(
        ["make", "-s", "-C", str(h.ROOT / "trafficgen"), "check"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "ok"
