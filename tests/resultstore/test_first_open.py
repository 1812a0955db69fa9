"""Several processes opening a new SQLite store at once all succeed (issue 25 item 20).

Three processes first opening a new store: one failed about 1 time in 4 ("table ovsperf_schema
already exists", or tables without their version row) because pysqlite ran each ``CREATE TABLE``
in its own implicit transaction. Then, in CI, two of three failed with "database is locked" in one
round of four: SQLite does not call the busy handler for ``PRAGMA journal_mode=WAL``, which each
new connection sent while the first opener held the write lock (about 1 round in 20). Three real
processes (imports done once) open the same new file at the same moment, round after round.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from resultstore.migrate import head_revision
from resultstore.schema import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[2]
WORKER = r"""
import sys
from resultstore.connect import database_url
from resultstore.store import ResultStore
print("ready", flush=True)
for line in sys.stdin:
    try:
        ResultStore.open(database_url(line.strip())).close()
        print("ok", flush=True)
    except Exception as err:
        print(f"{type(err).__name__}: {' '.join(str(err).split())}", flush=True)
"""
ROUNDS = 30
OPENERS = 3


def test_three_processes_first_opening_a_new_store_all_succeed(tmp_path: Path) -> None:
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for _ in range(OPENERS)
    ]
    answers: list[list[str]] = []
    try:
        for worker in workers:
            assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
        for number in range(ROUNDS):
            database = tmp_path / f"store{number}" / "results.sqlite"
            for worker in workers:  # all three at once: each waits only for its line
                assert worker.stdin is not None
                worker.stdin.write(f"{database}\n")
                worker.stdin.flush()
            answers.append([w.stdout.readline().strip() for w in workers if w.stdout is not None])
    finally:
        for worker in workers:
            if worker.stdin is not None:
                worker.stdin.close()
            worker.wait(timeout=60)
    assert answers == [["ok"] * OPENERS] * ROUNDS
    for number in range(ROUNDS):
        with sqlite3.connect(tmp_path / f"store{number}" / "results.sqlite") as db:
            assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(head_revision(),)]
            assert db.execute("SELECT version FROM ovsperf_schema").fetchall() == [(SCHEMA_VERSION,)]
