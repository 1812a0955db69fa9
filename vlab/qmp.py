"""Talk to a VM's QEMU over its QMP socket: save and load the VM state, quit (stdlib only).

QMP is QEMU's JSON control protocol (QEMU docs, "QEMU Machine Protocol Specification"): a greeting,
``qmp_capabilities``, then one JSON object per command and per reply, with asynchronous ``event``
objects in between. ``savevm``/``loadvm`` (internal snapshots in the qcow2 overlay) have no QMP
command of their own in QEMU 7.2 and go through ``human-monitor-command``, whose reply is the text
HMP would print: empty on success, the error otherwise.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from ovsperf_common.deadline import Deadline
from vlab.config import VlabError

MAX_MESSAGE_BYTES = 1024 * 1024
"""Longest QMP message taken [B]; QEMU's answers to the commands used here are a few hundred."""


class QmpError(VlabError):
    """QEMU refused a command, or its control socket did not answer in time."""


class Qmp:
    """One connection to a QMP socket; every read waits at most until ``deadline``."""

    def __init__(self, path: Path, deadline: Deadline) -> None:
        """Connect to ``path`` and leave capabilities negotiation mode.

        :raises QmpError: when the socket does not answer within the deadline.
        """
        self.path = path
        self.deadline = deadline
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._buffer = b""
        try:
            self._sock.settimeout(max(deadline.remaining_s(), 0.1))
            self._sock.connect(str(path))
            self._read()  # the greeting
            self.execute("qmp_capabilities")
        except QmpError:
            self._sock.close()
            raise
        except OSError as err:
            self._sock.close()
            raise QmpError(f"QMP socket '{path}' did not answer: {err}.") from err

    def close(self) -> None:
        """Close the connection."""
        self._sock.close()

    def __enter__(self) -> Qmp:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def execute(self, command: str, arguments: dict[str, Any] | None = None) -> Any:
        """Run one QMP command; return its ``return`` value.

        :raises QmpError: when QEMU answers with an ``error`` or not within the deadline.
        """
        message: dict[str, Any] = {"execute": command}
        if arguments:
            message["arguments"] = arguments
        try:
            self._sock.sendall(json.dumps(message).encode() + b"\n")
            while True:
                reply = self._read()
                if "event" in reply:
                    continue
                if "error" in reply:
                    error = reply["error"]
                    raise QmpError(f"QEMU refused '{command}' on '{self.path}': {error.get('desc', error)}.")
                return reply.get("return")
        except OSError as err:
            raise QmpError(f"QMP '{command}' on '{self.path}' failed: {err}.") from err

    def hmp(self, command_line: str) -> None:
        """Run a human-monitor command (``savevm NAME``); its printed text is an error.

        :raises QmpError: when QEMU prints an error or does not answer within the deadline.
        """
        output = self.execute("human-monitor-command", {"command-line": command_line})
        text = str(output or "").strip()
        if text:
            raise QmpError(f"QEMU '{command_line}' on '{self.path}' failed: {text}")

    def _read(self) -> dict[str, Any]:
        """Return the next JSON object from the socket.

        :raises QmpError: when the deadline passes or QEMU closes the socket.
        """
        while b"\n" not in self._buffer:
            if self.deadline.expired():
                raise QmpError(
                    f"QMP socket '{self.path}' gave no answer within {self.deadline.timeout_s:g} s."
                )
            self._sock.settimeout(max(self.deadline.remaining_s(), 0.1))
            try:
                chunk = self._sock.recv(65536)
            except TimeoutError as err:
                raise QmpError(
                    f"QMP socket '{self.path}' gave no answer within {self.deadline.timeout_s:g} s."
                ) from err
            if not chunk:
                raise QmpError(f"QEMU closed its QMP socket '{self.path}'.")
            self._buffer += chunk
            if len(self._buffer) > MAX_MESSAGE_BYTES:
                raise QmpError(
                    f"QMP socket '{self.path}' sent more than {MAX_MESSAGE_BYTES} bytes without a newline."
                )
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            value = json.loads(line)
        except ValueError as err:
            raise QmpError(f"QMP socket '{self.path}' sent no JSON: {line[:200]!r}.") from err
        if not isinstance(value, dict):
            raise QmpError(f"QMP socket '{self.path}' sent {type(value).__name__}, expected an object.")
        return value
