"""perfsync --wait against a hostile peer (issue 25 items 16 and 18), served on 127.0.0.1.

The peer is a small HTTP server of the test that answers every ``GET`` with a body the test
chooses: what a compromised or broken lab host could send.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

HOSTKEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHostKeyOfTheMoonGenMachineForTestsOnly0000"

ROOT = Path(__file__).resolve().parents[2]
PERFSYNC = ROOT / "beaker_tasks" / "perf_synchronization" / "perfsync.py"


class _Peer(ThreadingHTTPServer):
    body = b"{}"


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = self.server.body  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def peer() -> Iterator[_Peer]:
    server = _Peer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _wait(peer: _Peer, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(PERFSYNC), "--wait", "READY", "--peer", f"127.0.0.1:{peer.server_port}",
         "--timeout", "5", "--interval", "0.1", "--state-dir", str(tmp_path / "state"), *extra],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_deeply_nested_json_from_the_peer_is_one_line_and_exit_2(peer: _Peer, tmp_path: Path) -> None:
    """A peer answering ``[[[[…]]]]`` 70,000 deep crashed --wait with a RecursionError (exit 1)."""
    peer.body = b"[" * 70_000 + b"]" * 70_000
    proc = _wait(peer, tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("perfsync: ")]
    assert lines == [
        f"perfsync: Peer '127.0.0.1:{peer.server_port}' answered for state 'READY' with something that is "
        "not a state: JSON nested too deeply (140000 B)."
    ]


def test_a_peer_cannot_plant_host_keys_for_other_hosts(peer: _Peer, tmp_path: Path) -> None:
    """Issue 25 item 18: the peer published its host key under 'github.com' and the DUT's name too;
    only the peer's own names (as --peer gives it, and its addresses) are recorded."""
    other_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOtherHostOtherHostOtherHostOtherHostOtherHo"
    data = (
        f"github.com,127.0.0.1,dut01.example.com {HOSTKEY}\n"
        f"*,[127.0.0.1]:22 {other_key}\n"  # a wildcard is not a host name: the line is refused
    )
    peer.body = json.dumps({"state": "READY", "data": data}).encode()
    ssh_dir = tmp_path / "ssh"
    refused = _wait(peer, tmp_path, "--install", "known_hosts", "--ssh-dir", str(ssh_dir))
    assert refused.returncode == 2
    assert "perfsync: Not a host key line: '*,[127.0.0.1]:22 ssh-ed25519" in refused.stderr
    assert not (ssh_dir / "known_hosts").exists()

    data = f"github.com,127.0.0.1,dut01.example.com {HOSTKEY}\n[evil]:2222,localhost {other_key}\n"
    peer.body = json.dumps({"state": "READY", "data": data}).encode()
    proc = _wait(peer, tmp_path, "--install", "known_hosts", "--ssh-dir", str(ssh_dir))
    assert proc.returncode == 0, proc.stderr
    assert (ssh_dir / "known_hosts").read_text() == f"127.0.0.1 {HOSTKEY}\n127.0.0.1 {other_key}\n"
    assert (
        f"Peer '127.0.0.1:{peer.server_port}' published host keys for names that are not its own "
        "([evil]:2222, dut01.example.com, github.com, localhost): ignored; its keys are recorded under "
        "127.0.0.1 only."
    ) in proc.stderr


def test_a_request_line_with_terminal_controls_is_logged_escaped() -> None:
    import importlib.util
    import logging

    spec = importlib.util.spec_from_file_location("perfsync_under_test", PERFSYNC)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    records: list[str] = []

    class _Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    module.log.addHandler(_Keep())
    module.log.setLevel(logging.INFO)
    handler = module._Handler.__new__(module._Handler)
    handler.client_address = ("127.0.0.1", 4242)
    handler.log_message('"%s" %s %s', "GET /\x1b]0;owned\x07\r/state HTTP/1.1", "404", "-")
    assert records == ['127.0.0.1 "GET /\\x1b]0;owned\\x07\\r/state HTTP/1.1" 404 -']
