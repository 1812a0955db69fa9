#!/usr/bin/env python3
"""Time rendering + validating the Beaker job of every catalog scenario.

Peers measured in the same run, on the same jobs: rendering alone (plan + Jinja2), and lxml
parsing + RelaxNG validation against beaker-job.rng alone (what any validating tool pays).
Prints per-job times [ms] and the ratios, so the numbers mean something on any machine.

Usage: python benchmarks/bench_jobcreator.py [--iterations N]
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

import benchcli
from lxml import etree

from jobcreator.jobmodel import JobOptions
from jobcreator.render import render_job
from jobcreator.validate import load_schema, validate_job
from ovsperf_catalog.catalog import load_catalog

OPTIONS = JobOptions(
    trafficgen_host="moongen.example.com",
    dut_host="dut.example.com",
    distro="RHEL-7.3",
    kick_repos=(
        "http://example.com/repos/dpdk/16.11/4.el7",
        "http://example.com/repos/openvswitch/2.6.1/15.el7",
    ),
    tag="nightly",
    reserve_hours=99.0,
)


def _per_job_ms(work: Callable[[], None], jobs: int, iterations: int, repeats: int = 5) -> float:
    """Return the best-of-``repeats`` time of ``iterations`` calls of ``work``, per job [ms]."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(iterations):
            work()
        samples.append((time.perf_counter() - start) / (iterations * jobs) * 1e3)
    return min(samples)


def main() -> int:
    parser = benchcli.parser(__doc__)
    parser.add_argument("--iterations", type=int, default=40, help="passes over all scenarios per sample")
    args = parser.parse_args()
    benchcli.stop_on_sigterm()

    catalog = load_catalog()
    scenarios = [catalog.get(name) for name in catalog.names()]
    xmls = [render_job(s, OPTIONS) for s in scenarios]
    schema = load_schema()  # parsed once, as in the tool; not part of any timing

    def render_and_validate() -> None:
        for scenario in scenarios:
            validate_job(render_job(scenario, OPTIONS))

    def render_only() -> None:
        for scenario in scenarios:
            render_job(scenario, OPTIONS)

    def parse_and_relaxng_only() -> None:
        for xml in xmls:
            if not schema.validate(etree.fromstring(xml.encode("utf-8"))):
                raise SystemExit("benchmark job is invalid")

    jobs = len(scenarios)
    full_ms = _per_job_ms(render_and_validate, jobs, args.iterations)
    render_ms = _per_job_ms(render_only, jobs, args.iterations)
    relaxng_ms = _per_job_ms(parse_and_relaxng_only, jobs, args.iterations)
    sizes = [len(x) for x in xmls]

    print(f"jobcreator benchmark: {jobs} scenarios x {args.iterations} iterations, best of 5")
    print(f"job XML size: median {statistics.median(sizes):.0f} B, max {max(sizes)} B")
    print(f"render + validate (schema + semantics): {full_ms:8.3f} ms/job")
    print(f"peer: render only (plan + Jinja2):      {render_ms:8.3f} ms/job")
    print(f"peer: lxml parse + RelaxNG only:        {relaxng_ms:8.3f} ms/job")
    print(f"ratio full / render only:               {full_ms / render_ms:8.2f}")
    print(f"ratio full / parse + RelaxNG only:      {full_ms / relaxng_ms:8.2f}")
    print(f"all {jobs} scenarios rendered and validated in {full_ms * jobs:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
