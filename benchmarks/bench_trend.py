"""A year of nightly builds in the results store: import, change points of every series, trend pages.

The store holds ``--builds`` nightly builds (365) of 7 scenarios, each with 2 tests × 7 frame sizes
× 2 metrics (NDR and PDR, VSperf CSV columns as docs/results-format.md), written as deliveries
(``ovsperf-metadata.json`` + a VSperf results directory) and imported with ``ovsperf-results
import``'s code: 365 × 7 × 2 × 7 × 2 = 71,540 throughput samples, 196 series of 365 builds. The
series carry 2 % noise, a few steps (−6 %, +4 %) and outliers.

Printed, each also as a ratio to a peer measured in the same run:

* import time (and per build), against the import one result at a time as it was before its
  batches (``tests/resultstore/onebyone.py``, into a second store), and the stored rows compared;
* change-point analysis of all series, cold (jumpavg's classification by ``reporting.jumpfast``,
  our rules, 2 worker processes), against Apache Otava's analysis of the same series
  (``benchmarks/otava_driver.py`` in its own venv); peak memory;
* ``jumpavg.classify`` itself on every series: its CPU time against ours, and how many series
  it groups differently (goal 0);
* the same with the analysis cache (nothing changed), and after one more nightly (7 builds):
  only the changed series are analysed again;
* growth: the cold analysis at a quarter, half and all of ``--builds`` (91, 182, 365), and the
  ratio per doubling, in elapsed time and in CPU time (this process and its workers: steadier on
  a shared machine);
* trend pages render time; index page load in headless Chromium (navigate → load event).

Target on the 2-core VM (issues 11 and 31): analysis of all series + pages ≤ 10 s; the cold
analysis ≤ 10 s, ≤ 5 × Otava's time, × ≤ 2.3 per doubling of the builds, no series grouped unlike
jumpavg; import ≤ 20 s; index load ≤ 2 s. docs/trending.md has the figures and what they mean.

Usage: ``.venv/bin/python benchmarks/bench_trend.py [--builds 365] [--no-otava] [--no-browser]
[--no-reference] [--no-old-import]``
"""

from __future__ import annotations

import csv
import random
import resource
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import benchcli
from bench_changepoints import otava_detect, otava_python

from ovsperf_common.metadata import RunMetadata, write
from reporting import jumpfast
from reporting.metrics import THROUGHPUT_METRICS
from resultstore import importer
from resultstore.importer import import_dirs
from resultstore.model import Series
from resultstore.store import ResultStore
from resultstore.trend import analyse_series
from resultstore.trendpages import write_trend_pages
from tests.resultstore.onebyone import import_one_by_one

SCENARIOS = (
    "OVS_DPDK1q",
    "OVS_DPDK2q",
    "OVS_DPDK4q",
    "OVS_DPDK1q_GUEST_DPDK1q",
    "OVS_DPDK2q_GUEST_DPDK2q",
    "OVS_KERNEL1q",
    "OVS_DPDK1q_NOEMC",
)
TESTS = (("phy2phy_tput", "p2p"), ("pvp_tput", "pvp"))
SIZES = (64, 128, 256, 512, 1024, 1280, 1518)
HEADER = (
    "throughput_rx_fps,throughput_rx_mbps,throughput_rx_percent,tx_rate_fps,tx_rate_mbps,tx_rate_percent,"
    "min_latency_ns,max_latency_ns,avg_latency_ns,type,packet_size,id,deployment,vswitch,traffic_type,"
    "test_execution_time,start_time,stop_time,stream_count,match_type,pre-installed_flows,"
    "loss_goal_percent,search_method,pdr_loss_goal_percent,pdr_throughput_rx_fps,pdr_throughput_rx_mbps,"
    "pdr_throughput_rx_percent,pdr_tx_rate_fps"
).split(",")
T0 = datetime(2025, 11, 1, 2, 0, tzinfo=UTC)
LINK_BPS = 10e9
"""The link the rows were measured on [bit/s]: their line-rate percentages are shares of it."""


def level(scenario: int, test: int, size: int, build: int) -> float:
    """The cell's true throughput at a build [fps]: line-rate-like by size, with steps."""
    base = min(14.88e6 * 64 / size, 12e6) * (0.8 if test else 1.0) * (1.0 - 0.05 * scenario)
    if scenario == 0 and build >= 300:
        base *= 0.94  # a regression in one scenario
    if scenario == 3 and build >= 120:
        base *= 1.04  # an improvement in another
    return base


def write_delivery(root: Path, s: int, scenario: str, b: int, rng: random.Random) -> None:
    """Write build ``b`` of scenario ``s`` as a delivery under ``root``."""
    when = T0 + timedelta(days=b)
    delivery = root / f"{scenario}-openvswitch3.3-3.3.0-{b}.el9"
    results = delivery / f"results_{when.strftime('%Y-%m-%d_%H-%M-%S')}"
    results.mkdir(parents=True)
    start = when.strftime("%Y-%m-%d %H:%M:%S")
    for t, (test, deployment) in enumerate(TESTS):
        with (results / f"result_{t}_{test}_{deployment}.csv").open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(HEADER)
            for size in SIZES:
                outlier = 0.6 if rng.random() < 0.01 else 1.0
                ndr = level(s, t, size, b) * rng.gauss(1.0, 0.02) * outlier
                pdr = ndr * 1.03 * rng.gauss(1.0, 0.01)
                mbps = ndr * (size + 20) * 8 / 1e6
                # Shares of a 10 GbE line rate (L1), as reporting/plausibility.py checks them.
                ndr_pct, pdr_pct = (f"{100 * r * (size + 20) * 8 / LINK_BPS:.3f}" for r in (ndr, pdr))
                writer.writerow(
                    [f"{ndr:.3f}", f"{mbps:.3f}", ndr_pct, f"{ndr:.3f}", f"{mbps:.3f}", ndr_pct,
                     "0", "0", "0", "rfc2544_throughput", size, test, deployment, "OvsDpdkVhost", "udp",
                     "00:10:00", start, start, 1, "L4", "No", 0, "mlr", 0.5, f"{pdr:.3f}",
                     f"{pdr * (size + 20) * 8 / 1e6:.3f}", pdr_pct, f"{pdr:.3f}"]
                )  # fmt: skip
    write(delivery, RunMetadata(scenario=scenario, producer="bench", started_at=when.isoformat()))


def write_year(root: Path, builds: int, seed: int) -> int:
    """Write ``builds`` nightly deliveries of every scenario under ``root``; return their count."""
    rng = random.Random(seed)
    for s, scenario in enumerate(SCENARIOS):
        for b in range(builds):
            write_delivery(root, s, scenario, b, rng)
    return builds * len(SCENARIOS)


def _against_jumpavg(values: list[tuple[float, ...]]) -> tuple[bool, float, float]:
    """Return (same classification as jumpavg's, our time, jumpavg's time) of one series [s]."""
    start = time.perf_counter()
    fast = jumpfast.classify(values)
    fast_s = time.perf_counter() - start
    start = time.perf_counter()
    ref = jumpfast.reference(values)
    return (
        repr(fast.groups) == repr(ref.groups) and fast.bits == ref.bits,
        fast_s,
        time.perf_counter() - start,
    )


def against_jumpavg(series: list[Series]) -> tuple[int, float, float]:
    """Return (series classified unlike jumpavg.classify, our total, jumpavg's total) [s], 2 processes."""
    with ProcessPoolExecutor(max_workers=2) as pool:
        checked = list(
            pool.map(_against_jumpavg, [[p.values for p in s.points] for s in series], chunksize=4)
        )
    return (
        sum(not same for same, _, _ in checked),
        sum(f for _, f, _ in checked),
        sum(r for _, _, r in checked),
    )


def peak_rss_mib() -> tuple[float, float]:
    """Return the peak resident memory of this process and of its largest finished child [MiB]."""
    return (
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    )


def cpu_seconds() -> float:
    """Return the CPU time of this process and of its finished children [s]."""
    return sum(
        usage.ru_utime + usage.ru_stime
        for usage in (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))
    )


def cold_analysis(series: list[Series], repeats: int = 3) -> tuple[float, float]:
    """Return the best of ``repeats`` cold analyses of ``series`` (2 processes): elapsed, CPU [s].

    The best, because on a shared machine a second-long run is mostly other processes' noise.
    The CPU time counts the workers too (each analysis ends its pool, so they are reaped).
    """
    times, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), cpu_seconds()
        analyse_series(series, {}, workers=2)
        times.append(time.perf_counter() - start)
        cpu.append(cpu_seconds() - start_cpu)
    return min(times), min(cpu)


def stored_rows(store: ResultStore) -> list[tuple[object, ...]]:
    """Return every sample of ``store`` with its result's name and build columns, sorted."""
    return sorted(
        (p.result_name, repr(s.key), p.values, p.built_at, p.ovs_version, p.dpdk_version, p.qemu_version)
        for s in store.series()
        for p in s.points
    )


def otava_seconds(series: list[Series], python: Path) -> float:
    return otava_detect([[sum(p.values) / len(p.values) for p in s.points] for s in series], python)[1]


def truncated(series: list[Series], builds: int) -> list[Series]:
    return [Series(s.key, s.points[:builds]) for s in series]


def browser_load_seconds(index: Path) -> tuple[float, float]:
    """Return (index page, first series page) load times in headless Chromium [s]."""
    from tests.reporting.cdp import chromium

    with chromium() as browser:
        for domain in ("Page", "Runtime", "Log"):
            browser.call(f"{domain}.enable")
        times = []
        for page in (index, next(iter(sorted((index.parent / "series").iterdir())))):
            start = time.perf_counter()
            browser.call("Page.navigate", {"url": page.as_uri()})
            browser.wait_event("Page.loadEventFired", timeout_s=60)
            times.append(time.perf_counter() - start)
        return times[0], times[1]


def main() -> int:
    parser = benchcli.parser(__doc__)
    parser.add_argument("--builds", type=int, default=365, help="nightly builds per scenario (default 365)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--otava-venv", type=Path, default=Path(__file__).with_name(".venv-otava"))
    parser.add_argument("--no-otava", action="store_true")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument(
        "--no-reference", action="store_true", help="skip jumpavg.classify itself (minutes at 365 builds)"
    )
    parser.add_argument(
        "--no-old-import", action="store_true", help="skip the import one result at a time (a minute)"
    )
    args = parser.parse_args()
    benchcli.stop_on_sigterm()
    with tempfile.TemporaryDirectory(prefix="bench-trend-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        deliveries = write_year(root / "year", args.builds, args.seed)
        print(f"wrote {deliveries} deliveries in {time.perf_counter() - start:.1f} s")
        with ResultStore.open(f"sqlite:///{root / 'results.sqlite'}") as store:
            start = time.perf_counter()
            outcome = import_dirs(store, [root / "year"])
            import_s = time.perf_counter() - start
            samples = store.sample_count()
            print(
                f"import: {len(outcome.recorded)} results, {samples} samples in {import_s:.1f} s "
                f"({1000 * import_s / deliveries:.1f} ms per build; batches of {importer.BATCH_RESULTS} "
                "results, read in 2 processes)"
            )
            self_mib, _ = peak_rss_mib()
            print(f"  peak memory after the import: this process {self_mib:.0f} MiB")
            if not args.no_old_import:
                with ResultStore.open(f"sqlite:///{root / 'one-by-one.sqlite'}") as old_store:
                    start = time.perf_counter()
                    import_one_by_one(old_store, [root / "year"], None)
                    old_s = time.perf_counter() - start
                    same = stored_rows(old_store) == stored_rows(store)
                print(
                    f"  one result at a time (4 transactions each, as before the batches): {old_s:.1f} s; "
                    f"one by one / batched = {old_s / import_s:.1f}; stored rows identical: {same}"
                )
            start = time.perf_counter()
            series = store.series(metrics=THROUGHPUT_METRICS)
            query_s = time.perf_counter() - start
            points = sum(len(s.points) for s in series)
            print(f"series query: {len(series)} series, {points} builds in {query_s:.2f} s")

            start = time.perf_counter()
            trends, cache = analyse_series(series, store.trend_marks(), workers=2)
            cold_s = time.perf_counter() - start
            store.cache_analyses(cache)
            regressions = sum(1 for t in trends if t.last.verdict.value == "REGRESSION")
            print(
                f"analysis cold (jumpavg's groups by jumpfast + rules, 2 processes): {cold_s:.2f} s; "
                f"{regressions} open regressions"
            )
            if not args.no_otava:
                otava_s = otava_seconds(series, otava_python(args.otava_venv))
                print(f"  Otava on the same series: {otava_s:.2f} s; ours / Otava = {cold_s / otava_s:.1f}")
            self_mib, child_mib = peak_rss_mib()
            print(f"  peak memory: this process {self_mib:.0f} MiB, largest worker {child_mib:.0f} MiB")
            if not args.no_reference:
                differ, fast_s, ref_s = against_jumpavg(series)
                print(
                    f"  jumpavg.classify itself on the same series: {ref_s:.2f} s of CPU, "
                    f"ours {fast_s:.2f} s "
                    f"(jumpavg / ours = {ref_s / fast_s:.1f}); series grouped differently: {differ} "
                    f"of {len(series)}"
                )
            start = time.perf_counter()
            _, new = analyse_series(series, store.trend_marks(), cache=store.cached_analyses(), workers=2)
            warm_s = time.perf_counter() - start
            print(f"analysis with the cache, nothing new: {warm_s:.2f} s ({len(new)} analysed); "
                  f"warm / cold = {warm_s / cold_s:.3f}")  # fmt: skip

            nightly = root / "nightly"
            rng = random.Random(args.seed + 1)
            for s, scenario in enumerate(SCENARIOS):
                write_delivery(nightly, s, scenario, args.builds, rng)
            import_dirs(store, [nightly])
            series = store.series(metrics=THROUGHPUT_METRICS)
            start = time.perf_counter()
            trends, new = analyse_series(
                series, store.trend_marks(), cache=store.cached_analyses(), workers=2
            )
            nightly_s = time.perf_counter() - start
            store.cache_analyses(new)
            print(f"one more nightly (7 builds): {nightly_s:.2f} s, {len(new)} series analysed again; "
                  f"nightly / cold = {nightly_s / cold_s:.3f}")  # fmt: skip

            start = time.perf_counter()
            pages = write_trend_pages(trends, root / "trend", generated=datetime.now(UTC))
            pages_s = time.perf_counter() - start
            print(f"trend pages: {pages.pages} graphs, {pages.series} series in {pages_s:.2f} s; "
                  f"pages / cold analysis = {pages_s / cold_s:.2f}")  # fmt: skip
            print(f"analysis (cold) + pages: {cold_s + pages_s:.1f} s; with the cache after a nightly: "
                  f"{nightly_s + pages_s:.1f} s (target 10 s)")  # fmt: skip

            print("growth with the number of builds (all 196 series; 2 processes; cold: best of 3):")
            print(
                f"  {'builds':>6} {'cold [s]':>9} {'× first':>8} {'× previous':>11} {'CPU [s]':>8} "
                f"{'× previous':>11} {'nightly [s]':>12} {'× first':>8}"
            )
            first: tuple[float, float] | None = None
            previous: tuple[float, float] | None = None
            for builds in (args.builds // 4, args.builds // 2, args.builds):
                cold, cold_cpu = cold_analysis(truncated(series, builds))
                _, before = analyse_series(truncated(series, builds - 1), {}, workers=2)
                start = time.perf_counter()
                analyse_series(truncated(series, builds), {}, cache=before, workers=2)
                update = time.perf_counter() - start
                first = first or (cold, update)
                doubling = f"{cold / previous[0]:>11.2f}" if previous else f"{'':>11}"
                doubling_cpu = f"{cold_cpu / previous[1]:>11.2f}" if previous else f"{'':>11}"
                previous = (cold, cold_cpu)
                print(
                    f"  {builds:>6} {cold:>9.2f} {cold / first[0]:>8.2f} {doubling} {cold_cpu:>8.2f} "
                    f"{doubling_cpu} {update:>12.2f} {update / first[1]:>8.2f}"
                )
            if not args.no_browser:
                index_s, series_s = browser_load_seconds(pages.index_html)
                print(
                    f"Chromium load: index {index_s:.2f} s, one graph page {series_s:.2f} s "
                    "(target: index ≤ 2 s)"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
