"""Fixtures: the results store on SQLite and on a real PostgreSQL 15 server started for the session."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PG_BIN = Path("/usr/lib/postgresql/15/bin")
PG_USER = "ovsperf"


@dataclass(frozen=True)
class PgServer:
    socket_dir: Path

    def url(self, dbname: str) -> str:
        return f"postgresql+psycopg://{PG_USER}@/{dbname}?host={self.socket_dir}"


def _as_postgres(cmd: list[str]) -> list[str]:
    # initdb refuses to run as root: run the server as the `postgres` system user then.
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """Start a throw-away PostgreSQL on a unix socket (no TCP), stop and delete it afterwards."""
    base = Path(tempfile.mkdtemp(prefix="ovsperf-pg-"))  # not under pytest's 0700 root-owned tmp
    data, sockets = base / "data", base / "sock"
    sockets.mkdir()
    if os.geteuid() == 0:
        shutil.chown(base, "postgres", "postgres")
        shutil.chown(sockets, "postgres", "postgres")
    log = base / "server.log"
    started = False
    try:
        subprocess.run(
            _as_postgres(
                [
                    str(PG_BIN / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    PG_USER,
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                ]
            ),
            check=True,
            capture_output=True,
            timeout=60,
        )
        options = f"-k {sockets} -c listen_addresses= -c fsync=off -c synchronous_commit=off"
        subprocess.run(
            _as_postgres(
                [
                    str(PG_BIN / "pg_ctl"),
                    "-D",
                    str(data),
                    "-o",
                    options,
                    "-l",
                    str(log),
                    "-w",
                    "-t",
                    "30",
                    "start",
                ]
            ),
            check=True,
            capture_output=True,
            timeout=60,
        )
        started = True
        yield PgServer(sockets)
    finally:
        if started:
            subprocess.run(
                _as_postgres(
                    [str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "-t", "30", "stop"]
                ),
                check=False,
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(base, ignore_errors=True)


_db_numbers = itertools.count()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty results store URL on each backend."""
    if request.param == "sqlite":
        (tmp_path / "store").mkdir(exist_ok=True)  # the store's directory exists; the file not yet
        return f"sqlite:///{tmp_path / 'store' / 'results.sqlite'}"
    import psycopg

    server: PgServer = request.getfixturevalue("pg_server")
    name = f"ovsperf_test_{os.getpid()}_{next(_db_numbers)}"
    with psycopg.connect(
        host=str(server.socket_dir), user=PG_USER, dbname="postgres", autocommit=True
    ) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server.url(name)
