"""Benchmark the nightly flow and the results store, printed as ratios against peers run here and now.

1. process-ci-results: one pass over N results (N = 10, 50), each a copy of the real candidate
   fixture, against the peer "generate_report called N times on the same inputs" (the work a pass
   cannot avoid); prints the bookkeeping overhead and how the pass time grows from 10 to 50.
2. Results store (SQLite file): recording results + comparisons, one transaction each, against raw
   ``sqlite3`` inserting the same rows into the same kind of tables, one transaction each.
3. Queries: ``comparisons(limit=50)`` and ``latest_passed_result`` against the equivalent raw SQL.

Usage: ``.venv/bin/python benchmarks/bench_ciflow.py``.
"""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import benchcli  # noqa: E402

from ciflow.config import load_config  # noqa: E402
from ciflow.process import run_pass  # noqa: E402
from reporting.api import generate_report  # noqa: E402
from resultstore.model import ResultStatus, ReviewDecision  # noqa: E402
from resultstore.store import ResultStore  # noqa: E402
from tests.ciflow.helpers import BASELINE, CANDIDATE, SCENARIO, deliver, write_config  # noqa: E402

STORE_ROWS = 500
QUERY_REPEATS = 200
ROUNDS = 5


def timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def paired(ours: Callable[[], object], peer: Callable[[], object]) -> tuple[float, float]:
    """Alternate ours and the peer ROUNDS times (the machine is shared); return the summed times [s]."""
    total_ours = total_peer = 0.0
    for _ in range(ROUNDS):
        total_ours += timed(ours)
        total_peer += timed(peer)
    return total_ours, total_peer


def bench_pass(n: int, root: Path) -> tuple[float, float]:
    """Return (pass time, peer time) for n results [s].

    The peer (generate_report alone on the same inputs) runs once before and once after the pass
    and its mean is taken, so a load change on the shared machine hits both sides alike.
    """
    root.mkdir(parents=True)
    config_path = write_config(root)
    for i in range(n):
        deliver(root / "ci_in", f"night-{i:03d}", CANDIDATE)
    config = load_config(config_path)
    baseline = sorted(BASELINE.glob("results_*"))

    def peer(tag: str, where: Path) -> float:
        currents = [sorted((where / f"night-{i:03d}").glob("results_*")) for i in range(n)]
        return timed(
            lambda: [generate_report(baseline, cur, root / tag / str(i)) for i, cur in enumerate(currents)]
        )

    before_s = peer("peer-before", root / "ci_in")
    pass_s = timed(lambda: run_pass(config))
    assert len(list((root / "ci_processed").iterdir())) == n
    after_s = peer("peer-after", root / "ci_processed")
    return pass_s, (before_s + after_s) / 2


_RAW_SCHEMA = """
CREATE TABLE results (id INTEGER PRIMARY KEY, name VARCHAR(255) UNIQUE, scenario VARCHAR(255),
  location TEXT, vsperf_dirs JSON, status VARCHAR(16), failure_reason TEXT, metadata_json JSON,
  received_at DATETIME);
CREATE INDEX ix_results_scenario ON results (scenario);
CREATE TABLE comparisons (id INTEGER PRIMARY KEY, result_id INTEGER REFERENCES results(id),
  baseline_result_id INTEGER REFERENCES results(id), baseline_dirs JSON, current_dirs JSON,
  report_dir TEXT, title TEXT, overall VARCHAR(32), counts JSON, warnings JSON, thresholds JSON,
  created_at DATETIME, updated_at DATETIME, UNIQUE (result_id, report_dir));
CREATE INDEX ix_comparisons_result_id ON comparisons (result_id);
CREATE TABLE verdicts (id INTEGER PRIMARY KEY, comparison_id INTEGER REFERENCES comparisons(id),
  decision VARCHAR(8), bug_id VARCHAR(255), comment TEXT, tester VARCHAR(255), recorded_at DATETIME);
CREATE INDEX ix_verdicts_comparison_id ON verdicts (comparison_id);
"""


def bench_store(root: Path) -> dict[str, tuple[float, float]]:
    """Return name → (ours [s], raw sqlite3 [s])."""
    root.mkdir(parents=True)
    store = ResultStore.open(f"sqlite:///{root / 'store.sqlite'}")
    raw = sqlite3.connect(root / "raw.sqlite", isolation_level=None)
    raw.execute("PRAGMA journal_mode=WAL")
    raw.execute("PRAGMA foreign_keys=ON")
    raw.executescript(_RAW_SCHEMA)
    meta = {"ovs_version": "3.1.0", "dpdk_version": "22.11.1", "job_id": "J:1", "hosts": ["dut", "tg"]}

    rounds = iter(range(1000))
    raw_rounds = iter(range(1000))

    def ours_insert() -> None:
        batch = next(rounds)
        for i in range(STORE_ROWS // ROUNDS):
            name = f"night-{batch}-{i:04d}"
            store.record_result(
                name=name,
                scenario=SCENARIO,
                location=root / name,
                vsperf_dirs=[root / name / "results_x"],
                status=ResultStatus.PROCESSED,
                metadata=meta,
            )
            store.record_comparison(
                result_name=name,
                baseline_result_name=None,
                baseline_dirs=[BASELINE],
                current_dirs=[root / name / "results_x"],
                report_dir=root / "reports" / name,
                title=name,
                overall="PASS",
                counts={"PASS": 14},
                warnings=[],
                thresholds={"regression_percent": 5.0},
            )

    def raw_insert() -> None:
        batch = next(raw_rounds)
        for i in range(STORE_ROWS // ROUNDS):
            name = f"night-{batch}-{i:04d}"
            now = time.strftime("%Y-%m-%d %H:%M:%S")
            raw.execute("BEGIN")
            row = raw.execute("SELECT id FROM results WHERE name = ?", (name,)).fetchone()
            assert row is None
            cur = raw.execute(
                "INSERT INTO results (name, scenario, location, vsperf_dirs, status, failure_reason,"
                " metadata_json, received_at) VALUES (?, ?, ?, ?, ?, NULL, ?, ?)",
                (
                    name,
                    SCENARIO,
                    str(root / name),
                    json.dumps([str(root / name / "results_x")]),
                    "processed",
                    json.dumps(meta),
                    now,
                ),
            )
            raw.execute("COMMIT")
            raw.execute("BEGIN")
            raw.execute(
                "INSERT INTO comparisons (result_id, baseline_result_id, baseline_dirs, current_dirs,"
                " report_dir, title, overall, counts, warnings, thresholds, created_at, updated_at)"
                " VALUES (?, NULL, ?, ?, ?, ?, 'PASS', ?, '[]', ?, ?, ?)",
                (
                    cur.lastrowid,
                    json.dumps([str(BASELINE)]),
                    json.dumps([str(root / name / "results_x")]),
                    str(root / "reports" / name),
                    name,
                    json.dumps({"PASS": 14}),
                    json.dumps({"regression_percent": 5.0}),
                    now,
                    now,
                ),
            )
            raw.execute("COMMIT")

    timings = {"insert result+comparison": paired(ours_insert, raw_insert)}
    for cid in range(1, STORE_ROWS - STORE_ROWS % ROUNDS + 1, 7):
        store.add_verdict(cid, decision=ReviewDecision.PASS if cid % 2 else ReviewDecision.FAIL)
        raw.execute(
            "INSERT INTO verdicts (comparison_id, decision, recorded_at) VALUES (?, ?, '2026-01-01')",
            (cid, "PASS" if cid % 2 else "FAIL"),
        )

    def ours_list() -> None:
        for _ in range(QUERY_REPEATS // ROUNDS):
            assert len(store.comparisons(limit=50)) == 50

    def raw_list() -> None:
        for _ in range(QUERY_REPEATS // ROUNDS):
            rows = raw.execute(
                "SELECT c.*, r.name, r.scenario, b.name, v.decision, v.bug_id, v.tester, v.recorded_at"
                " FROM comparisons c JOIN results r ON r.id = c.result_id"
                " LEFT JOIN results b ON b.id = c.baseline_result_id"
                " LEFT JOIN verdicts v ON v.id = (SELECT max(id) FROM verdicts WHERE comparison_id = c.id)"
                " ORDER BY c.id DESC LIMIT 50"
            ).fetchall()
            assert len(rows) == 50
            for row in rows:
                for column in (3, 4, 8, 9, 10):
                    json.loads(row[column])

    def ours_latest() -> None:
        for _ in range(QUERY_REPEATS // ROUNDS):
            assert store.latest_passed_result(SCENARIO) is not None

    def raw_latest() -> None:
        for _ in range(QUERY_REPEATS // ROUNDS):
            row = raw.execute(
                "SELECT r.* FROM results r JOIN comparisons c ON c.result_id = r.id"
                " JOIN (SELECT comparison_id, max(id) AS vid FROM verdicts GROUP BY comparison_id) l"
                " ON l.comparison_id = c.id JOIN verdicts v ON v.id = l.vid"
                " WHERE v.decision = 'PASS' AND r.scenario = ? AND r.status = 'processed'"
                " ORDER BY r.received_at DESC, r.id DESC LIMIT 1",
                (SCENARIO,),
            ).fetchone()
            assert row is not None

    timings["list 50 comparisons"] = paired(ours_list, raw_list)
    timings["latest PASS baseline lookup"] = paired(ours_latest, raw_latest)
    store.close()
    raw.close()
    return timings


def main() -> int:
    benchcli.parser(__doc__).parse_args()
    benchcli.stop_on_sigterm()
    logging.disable(logging.WARNING)
    root = Path(tempfile.mkdtemp(prefix="bench-ciflow-"))
    try:
        print("process-ci-results: one pass over N results vs generate_report N times (same inputs)")
        # Warm-up (imports, matplotlib font cache) so neither side pays it.
        generate_report(
            sorted(BASELINE.glob("results_*")), sorted(CANDIDATE.glob("results_*")), root / "warm"
        )
        pass_times = {}
        for n in (10, 50):
            pass_s, peer_s = bench_pass(n, root / f"pass{n}")
            pass_times[n] = pass_s
            print(
                f"  N={n:3d}: pass {pass_s:6.2f} s ({pass_s / n * 1000:6.1f} ms/result), "
                f"reports alone {peer_s:6.2f} s; pass/peer = {pass_s / peer_s:4.2f}"
            )
        print(f"  growth 10 -> 50 results: x{pass_times[50] / pass_times[10]:.2f} (linear = x5.00)")
        print(f"results store (SQLite) vs raw sqlite3, {STORE_ROWS} rows, {QUERY_REPEATS} queries")
        for name, (ours, raw) in bench_store(root / "store").items():
            print(f"  {name:30s} ours {ours:6.3f} s, raw {raw:6.3f} s; ours/raw = {ours / raw:5.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
