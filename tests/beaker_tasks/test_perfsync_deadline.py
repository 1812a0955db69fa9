"""perfsync --wait keeps its deadline whatever the peer does, and opens no server of its own choosing."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PERFSYNC = ROOT / "beaker_tasks" / "perf_synchronization" / "perfsync.py"


def _trickling_peer(stop: threading.Event) -> tuple[socket.socket, threading.Thread]:
    """Serve on 127.0.0.1: answer each connection with a status line, then one byte every 0.5 s."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.2)

    def serve() -> None:
        conns = []
        for _ in range(200):  # bounded: at most ~40 s
            if stop.is_set():
                break
            try:
                conn, _addr = server.accept()
                conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{")
                conns.append(conn)
            except TimeoutError:
                pass
            for conn in conns:
                try:
                    conn.sendall(b" ")
                except OSError:
                    pass
            time.sleep(0.3)
        for conn in conns:
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server, thread


def test_wait_returns_by_its_deadline_against_a_peer_that_trickles_bytes(tmp_path: Path) -> None:
    stop = threading.Event()
    server, thread = _trickling_peer(stop)
    port = server.getsockname()[1]
    try:
        start = time.monotonic()
        proc = subprocess.run(
            [sys.executable, str(PERFSYNC), "--wait", "SLOW", "--peer", f"127.0.0.1:{port}",
             "--timeout", "3", "--interval", "0.2", "--state-dir", str(tmp_path / "state")],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        elapsed = time.monotonic() - start
    finally:
        stop.set()
        thread.join(timeout=10)
        server.close()
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
