"""Fixtures shared by the tests of several packages."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest


@pytest.fixture
def closed_port_url() -> str:
    """Return an http URL on 127.0.0.1 where nothing listens (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def trickling_server() -> Iterator[str]:
    """Serve on 127.0.0.1 a peer that answers every request with a status line, then one byte
    every 0.3 s (bounded to about 40 s): per-read socket timeouts never fire against it.

    Yields ``host:port``.
    """
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        conns: list[socket.socket] = []
        for _ in range(130):
            if stop.is_set():
                break
            try:
                conn, _addr = server.accept()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nX-Slow: ")
                conns.append(conn)
            except TimeoutError:
                pass
            for conn in conns:
                try:
                    conn.sendall(b"x")
                except OSError:
                    pass
            time.sleep(0.3)
        for conn in conns:
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=10)
        server.close()


@pytest.fixture(autouse=True)
def _no_log_handler_left_on_a_closed_stream() -> Iterator[None]:
    """Remove the handler a command's ``main()`` installs (``configure_logging``) after each test.

    It writes to the ``sys.stderr`` of the test that ran ``main()``; pytest closes that capture
    afterwards, and a later import that logs (Alembic logs its plugin set-up) would hit it.
    """
    import logging

    yield
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_ovsperf", False):
            root.removeHandler(handler)
