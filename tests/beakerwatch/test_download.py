"""beakerwatch.fetch.download against a server of the test on 127.0.0.1: redirects stay http(s)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from beakerwatch.errors import UnusableResultsError
from beakerwatch.fetch import Limits, download
from beakerwatch.hub import HubRetryPolicy
from ovsperf_common.deadline import Deadline


class _Redirect(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(302)
        self.send_header("Location", "ftp://127.0.0.1/results.tar.gz")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Redirect)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_redirect_away_from_http_is_refused(server: ThreadingHTTPServer, tmp_path: Path) -> None:
    dest = tmp_path / "results.tar.gz"
    url = f"http://127.0.0.1:{server.server_port}/logs/results_2026-11-20_01-02-03.tar.gz"
    with pytest.raises(UnusableResultsError, match="redirected to a non-http"):
        deadline = Deadline.in_seconds(30, "the download")
        download(url, dest, Limits(1 << 20, 1 << 20), HubRetryPolicy(timeout_s=5, retries=0), deadline)
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no partial file left


class _EndlessRedirect(BaseHTTPRequestHandler):
    """A 302 to an http URL whose body never ends (urllib would read it whole before following)."""

    sent = 0

    def do_GET(self) -> None:
        self.send_response(302)
        self.send_header("Location", "http://127.0.0.1:9/results.tar.gz")
        self.end_headers()  # no Content-Length: the body lasts until the connection closes
        chunk = b"<p>moved</p>" * 5000
        try:
            while _EndlessRedirect.sent < 256 * 1024 * 1024:
                self.wfile.write(chunk)
                _EndlessRedirect.sent += len(chunk)
        except OSError:
            pass  # the client stopped reading: what the test wants

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_redirect_with_an_endless_body_is_refused_after_64_kib(tmp_path: Path) -> None:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _EndlessRedirect)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_port}/logs/results_2026-11-20_01-02-03.tar.gz"
        with pytest.raises(UnusableResultsError, match="came with a body of more than 65536 bytes"):
            deadline = Deadline.in_seconds(30, "the download")
            download(
                url,
                tmp_path / "results.tar.gz",
                Limits(1 << 20, 1 << 20),
                HubRetryPolicy(timeout_s=5, retries=0),
                deadline,
            )
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert _EndlessRedirect.sent < 256 * 1024 * 1024
    assert sorted(p.name for p in tmp_path.iterdir()) == []
