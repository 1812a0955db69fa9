"""perfsync --wait keeps its deadline whatever the peer does, and opens no server of its own choosing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PERFSYNC = ROOT / "beaker_tasks" / "perf_synchronization" / "perfsync.py"


def test_wait_returns_by_its_deadline_against_a_peer_that_trickles_bytes(
    tmp_path: Path, trickling_server: str
) -> None:
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(PERFSYNC), "--wait", "SLOW", "--peer", trickling_server,
         "--timeout", "3", "--interval", "0.2", "--state-dir", str(tmp_path / "state")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    elapsed = time.monotonic() - start
    assert proc.returncode == 2
    assert elapsed < 3 + 1.5, f"took {elapsed:.1f} s"
    assert "Timed out after" in proc.stderr and "'SLOW'" in proc.stderr


def test_wait_does_not_start_a_server_that_set_did_not_ask_for(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    (state_dir / "states").mkdir(parents=True)
    (state_dir / "states" / "OURS.json").write_text('{"state": "OURS", "data": null}')
    proc = subprocess.run(
        [sys.executable, str(PERFSYNC), "--wait", "X", "--peer", "127.0.0.1:9", "--timeout", "0.5",
         "--interval", "0.1", "--state-dir", str(state_dir)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert not (state_dir / "server.pid").exists()
    assert "Started the state server" not in proc.stderr


def test_help_says_where_the_server_listens() -> None:
    out = subprocess.run(
        [sys.executable, str(PERFSYNC), "--help"], capture_output=True, text=True, timeout=60, check=True,
        env={**os.environ, "COLUMNS": "200"},
    ).stdout  # fmt: skip
    assert "--wait starts no server of its own" in out
