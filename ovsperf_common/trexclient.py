"""Talk to a TRex stateless server through its Python client, run in a child process of its own.

TRex's client library rewrites ``sys.modules`` when imported (it swaps in its own ``yaml``,
``zmq`` and ``scapy``), so it runs in a child, :mod:`ovsperf_common.trexdriver`, started with this
interpreter (``python3 -m``); :class:`TrexProcess` speaks one JSON object per line with it and
bounds every reply by a deadline (a late child is killed by PID, and the error names TRex and
what was awaited). ``ovsperf-lab``'s ``trex`` backend (:mod:`ovsperf_lab.generators.trex`) and
``ovsperf-remote check --trex`` (:mod:`remote.check`) both use it; :func:`probe` is the check's
question: the server's version and ports, nothing acquired.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ovsperf_common.deadline import Deadline
from ovsperf_common.errors import OvsperfError

log = logging.getLogger(__name__)

DEFAULT_SYNC_PORT = 4501
"""TRex's RPC (ZMQ REQ/REP) port (trex-core ``doc/trex_rpc_server_spec.asciidoc``)."""
DEFAULT_ASYNC_PORT = 4500
"""TRex's publisher (ZMQ PUB) port."""
DEFAULT_TIMEOUT_S = 10.0
"""Time one RPC to the server may take [s] (the client's ``sync_timeout``)."""
START_TIMEOUT_S = 60.0
"""Time the child has to import the client and connect [s] (the client imports scapy: seconds)."""
REPLY_MARGIN_S = 15.0
"""Time a reply may take beyond the traffic it waits for [s]."""
STDERR_TAIL_LINES = 20
"""Lines of the child's stderr kept for messages [1]."""


class TrexError(OvsperfError):
    """TRex refused or failed; ``kind`` says how (``trexdriver.ERROR_KINDS``); the message names TRex."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        """``connection``, ``version``, ``busy``, ``ports``, ``trial``, ``client``, ``request`` or
        ``timeout`` (the child missed a deadline and was killed)."""


@dataclass(frozen=True)
class TrexServer:
    """Where a TRex server listens and how to talk to it.

    :raises TrexError: (``request``) when a field is out of range (the message names it).
    """

    host: str
    """Host name or address of the TRex server."""
    sync_port: int = DEFAULT_SYNC_PORT
    """RPC port (ZMQ REQ/REP, JSON-RPC 2.0)."""
    async_port: int = DEFAULT_ASYNC_PORT
    """Publisher port (ZMQ PUB)."""
    client_dir: Path | None = None
    """The server installation's client (``automation/trex_control_plane/interactive``, or its
    ``trex_stl_lib``); ``None``: the ``lbr-trex-client`` package."""
    force_acquire: bool = False
    """Take the ports over even when another user holds them (stops their traffic)."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    """Time one RPC may take [s]."""
    majors: tuple[int, ...] = (3,)
    """Server major versions accepted (the lab's backend: v3.x only; ``ovsperf-remote check`` of a
    VSperf TG also v2.x, VSperf's own pin)."""

    def __post_init__(self) -> None:
        if not self.host or any(c.isspace() for c in self.host) or self.host.startswith("-"):
            raise TrexError("request", f"Field 'host': {self.host[:80]!r} is not a host name or address.")
        for name in ("sync_port", "async_port"):
            value = getattr(self, name)
            if type(value) is not int or not 1 <= value <= 65535:
                raise TrexError("request", f"Field {name!r} must be a TCP port in [1, 65535], got {value!r}.")
        if not self.timeout_s > 0:
            raise TrexError("request", f"Field 'timeout_s' must be positive, got {self.timeout_s!r}.")
        if not self.majors or any(type(m) is not int or m < 1 for m in self.majors):
            raise TrexError("request", f"Field 'majors' must name major versions >= 1, got {self.majors!r}.")

    @classmethod
    def parse(cls, text: str, **fields: Any) -> TrexServer:
        """Return the server of ``HOST[:SYNC_PORT]`` (an IPv6 address in brackets: ``[::1]:4501``).

        :raises TrexError: (``request``) for an empty host or a port that is not a number in range.
        """
        host, port = text, str(fields.pop("sync_port", DEFAULT_SYNC_PORT))
        if text.startswith("["):
            host, _, rest = text[1:].partition("]")
            if rest.startswith(":"):
                port = rest[1:]
        elif text.count(":") == 1:
            host, port = text.split(":")
        if not port.isdigit():
            raise TrexError("request", f"'{text[:80]}' is not HOST[:PORT] (the port must be a number).")
        return cls(host=host, sync_port=int(port), **fields)

    @property
    def address(self) -> str:
        """Return ``host:sync_port`` for messages."""
        return f"{self.host}:{self.sync_port}"

    def request(self) -> dict[str, Any]:
        """Return the connection fields of a driver request."""
        return {
            "server": self.host,
            "sync_port": self.sync_port,
            "async_port": self.async_port,
            "timeout_s": self.timeout_s,
            "client_dir": str(self.client_dir) if self.client_dir else None,
            "force_acquire": self.force_acquire,
            "majors": list(self.majors),
        }


class TrexProcess:
    """The TRex client in its child process (:mod:`ovsperf_common.trexdriver`); use as a context manager.

    :raises TrexError: (``client``) when the child cannot be started.
    """

    def __init__(self, server: TrexServer, *, python: str = sys.executable) -> None:
        self.server = server
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        here = str(Path(__file__).resolve().parents[1])  # ovsperf_common's parent, for -m from anywhere
        path = os.environ.get("PYTHONPATH")
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": here + (os.pathsep + path if path else ""),
        }
        try:
            self.proc = subprocess.Popen(
                [python, "-m", "ovsperf_common.trexdriver"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                bufsize=1,
                start_new_session=True,
                env=env,
            )
        except OSError as err:
            raise TrexError("client", f"Cannot start the TRex client process: {err}.") from err
        self.pid: int = self.proc.pid
        threading.Thread(target=self._pump, args=(self.proc.stdout, True), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, False), daemon=True).start()
        self.closed = False

    def _pump(self, stream: Any, protocol: bool) -> None:
        for line in stream:
            if protocol:
                self._lines.put(line)
            else:
                self._stderr.append(line.rstrip("\n"))
                log.debug("trex client[%d]: %s", self.pid, line.rstrip("\n"))
        if protocol:
            self._lines.put(None)

    def call(self, request: dict[str, Any], timeout_s: float, what: str) -> dict[str, Any]:
        """Send ``request``; return the reply's fields, waiting at most ``timeout_s`` [s].

        :raises TrexError: the reply's error (its kind and message); ``timeout`` when no reply
            came in time (the child is then killed); ``connection`` when the child exited.
        """
        if self.closed or self.proc.poll() is not None:
            raise TrexError("connection", f"TRex client for {self.server.address} is not running.")
        deadline = Deadline.in_seconds(timeout_s, f"TRex at {self.server.address} to answer {what}")
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except (OSError, ValueError) as err:
            raise self._died(what) from err
        while True:
            try:
                line = self._lines.get(timeout=max(min(deadline.remaining_s(), 60.0), 0.001))
            except queue.Empty:
                if deadline.expired():
                    self.kill()
                    raise TrexError(
                        "timeout",
                        f"Timed out after {deadline.elapsed_s():.1f} s waiting for {deadline.what}; "
                        f"the TRex client (PID {self.pid}) was killed.",
                    ) from None
                log.info("Still waiting for %s: %.0f s elapsed.", deadline.what, deadline.elapsed_s())
                continue
            if line is None:
                raise self._died(what)
            try:
                reply = json.loads(line)
            except json.JSONDecodeError:
                log.debug("TRex client: %s", line.rstrip())
                continue
            if not isinstance(reply, dict):
                continue
            if reply.get("ok") is True:
                return reply
            raise TrexError(str(reply.get("error", "trial")), str(reply.get("message", "no message")))

    def _died(self, what: str) -> TrexError:
        try:
            code: int | None = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        tail = [line.strip() for line in self._stderr if line.strip()][-3:]
        return TrexError(
            "connection",
            f"The TRex client for {self.server.address} (PID {self.pid}) exited (code {code}) while "
            f"{what}: {'; '.join(tail) if tail else 'no output'}",
        )

    def kill(self) -> None:
        """Kill the child by PID and reap it."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        self.closed = True

    def close(self) -> None:
        """Ask the child to release the ports and quit; kill it when it does not; idempotent."""
        if self.closed:
            return
        if self.proc.poll() is None:
            with contextlib.suppress(TrexError):
                self.call({"cmd": "quit"}, self.server.timeout_s * 2 + 5, "quit (ports released)")
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()
        self.closed = True
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(OSError, ValueError):
                if stream is not None:
                    stream.close()

    def __enter__(self) -> TrexProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def probe(server: TrexServer) -> dict[str, Any]:
    """Return the server's version and ports, acquiring nothing.

    :returns: ``{"server_version": "v3.04", "build_date": ..., "client": "lbr-trex-client 3.4.0,
        STL API 5.1", "hostname": ..., "ports": [{"index", "mac", "speed_mbps", "link_up",
        "owner", "driver", "pci_addr", "description"}, ...]}``.
    :raises TrexError: when the server does not answer, runs another major version, or the client
        is missing.
    """
    with TrexProcess(server) as process:
        return process.call({"cmd": "probe", **server.request()}, START_TIMEOUT_S, "its version and ports")
