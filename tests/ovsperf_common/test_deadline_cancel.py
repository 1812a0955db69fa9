"""run_within's cancel hook and stop probe: a blocked call is ended, not only abandoned (issue 25 item 14)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from ovsperf_common.deadline import DeadlineExceededError, StopRequestedError, run_within


def _blocked_reader() -> tuple[socket.socket, socket.socket, threading.Event]:
    """Return a connected pair whose first end a call will block reading, and an event set when it returns."""
    left, right = socket.socketpair()
    return left, right, threading.Event()


def test_the_deadline_cancels_the_blocked_call() -> None:
    left, right, ended = _blocked_reader()

    def call() -> bytes:
        try:
            return left.recv(10)  # no per-read timeout: only the cancel ends it
        finally:
            ended.set()

    started = time.monotonic()
    with pytest.raises(DeadlineExceededError, match=r"Timed out after 0\.3 s waiting for a stuck read"):
        run_within(0.3, "a stuck read", call, cancel=lambda: left.shutdown(socket.SHUT_RDWR))
    assert 0.3 <= time.monotonic() - started < 2.0
    assert ended.wait(2)  # the worker ended too: its read returned once the socket was shut down
    left.close()
    right.close()


def test_a_stop_request_ends_the_wait_within_a_poll_interval() -> None:
    left, right, ended = _blocked_reader()
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()

    def call() -> bytes:
        try:
            return left.recv(10)
        finally:
            ended.set()

    started = time.monotonic()
    with pytest.raises(StopRequestedError, match=r"Stopped on request after \d+\.\d s of a stuck read"):
        run_within(
            30,
            "a stuck read",
            call,
            cancel=lambda: left.shutdown(socket.SHUT_RDWR),
            stop_requested=stop.is_set,
        )
    assert 0.2 <= time.monotonic() - started < 2.0  # the stop, not the 30 s deadline
    assert ended.wait(2)
    left.close()
    right.close()


def test_a_call_that_finishes_is_not_cancelled() -> None:
    cancelled: list[bool] = []
    assert run_within(5, "a quick call", lambda: 42, cancel=lambda: cancelled.append(True)) == 42
    with pytest.raises(KeyError):
        run_within(5, "a failing call", lambda: {}["x"], cancel=lambda: cancelled.append(True))
    assert cancelled == []
