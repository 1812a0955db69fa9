"""Fixtures shared by the tests of several packages."""

from __future__ import annotations

import socket

import pytest


@pytest.fixture
def closed_port_url() -> str:
    """Return an http URL on 127.0.0.1 where nothing listens (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
