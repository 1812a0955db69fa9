"""Open a page in Debian's headless Chromium over the DevTools protocol and report what a tester sees.

Test support only: starts ``chromium`` with its own profile directory and a DevTools port chosen by
the browser, attaches to the page target with ``websocket-client``, records JavaScript exceptions,
console calls, dialogs (an executed ``alert``) and browser log errors (failed loads, CSP
violations), evaluates expressions, and takes a full-page screenshot. Every wait is bounded by a
:class:`~ovsperf_common.deadline.Deadline`; the browser is ended by its PID on exit.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import shutil
import subprocess
import tempfile
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websocket

from ovsperf_common.deadline import Deadline

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
    "--remote-allow-origins=*",
    "--window-size=1400,1000",
)
_DEVTOOLS_RE = re.compile(r"DevTools listening on (ws://\S+)")


@dataclass
class PageReport:
    """What happened while loading one page."""

    exceptions: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    log_errors: list[str] = field(default_factory=list)


class Browser:
    """A headless Chromium with one page attached over the DevTools protocol."""

    def __init__(self, proc: subprocess.Popen[str], ws: websocket.WebSocket) -> None:
        self.proc = proc
        self.ws = ws
        self._next_id = 0
        self.report = PageReport()

    def _record(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        params = message.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.report.exceptions.append(
                str(details.get("exception", {}).get("description") or details.get("text"))
            )
        elif method == "Runtime.consoleAPICalled":
            args = [str(a.get("value", a.get("description", ""))) for a in params.get("args", [])]
            self.report.console.append(f"{params.get('type')}: {' '.join(args)}")
        elif method == "Page.javascriptDialogOpening":
            self.report.dialogs.append(str(params.get("message")))
            self._send_nowait("Page.handleJavaScriptDialog", {"accept": True})
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            if entry.get("level") == "error":
                self.report.log_errors.append(
                    f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}"
                )

    def _send_nowait(self, method: str, params: dict[str, Any] | None = None) -> int:
        self._next_id += 1
        self.ws.send(json.dumps({"id": self._next_id, "method": method, "params": params or {}}))
        return self._next_id

    def _receive(self, deadline: Deadline) -> dict[str, Any]:
        deadline.check()
        self.ws.settimeout(max(0.1, deadline.remaining_s()))
        try:
            message: dict[str, Any] = json.loads(self.ws.recv())
        except websocket.WebSocketTimeoutException:
            deadline.check()
            raise
        self._record(message)
        return message

    def call(
        self, method: str, params: dict[str, Any] | None = None, timeout_s: float = 30.0
    ) -> dict[str, Any]:
        """Send one DevTools command and return its ``result``, recording events meanwhile."""
        wanted = self._send_nowait(method, params)
        deadline = Deadline.in_seconds(timeout_s, f"Chromium's answer to {method}")
        while True:
            message = self._receive(deadline)
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method} failed: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result

    def wait_event(self, method: str, timeout_s: float = 30.0) -> dict[str, Any]:
        """Wait for the event ``method``; return its params."""
        deadline = Deadline.in_seconds(timeout_s, f"Chromium event {method}")
        while True:
            message = self._receive(deadline)
            if message.get("method") == method:
                params: dict[str, Any] = message.get("params", {})
                return params

    def open(self, url: str, settle_s: float = 1.0) -> PageReport:
        """Load ``url``, wait for its load event and a short settle time; return what happened."""
        self.report = PageReport()
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")
        # Drain late events (timers, deferred errors) for a bounded time.
        with contextlib.suppress(websocket.WebSocketTimeoutException, TimeoutError):
            self.wait_event("ovsperf.never", timeout_s=settle_s)
        return self.report

    def evaluate(self, expression: str) -> Any:
        """Evaluate ``expression`` in the page (DevTools bypasses the page's CSP) and return its value."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluation failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> None:
        """Write a full-page PNG screenshot to ``path``."""
        result = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        path.write_bytes(base64.b64decode(result["data"]))


@contextlib.contextmanager
def chromium(timeout_s: float = 60.0) -> Iterator[Browser]:
    """Start headless Chromium and attach to its first page; always stop it and remove its profile."""
    binary = shutil.which("chromium")
    if binary is None:
        raise RuntimeError("Debian's 'chromium' is not installed (packaging/debian-packages.txt lists it).")
    profile = Path(tempfile.mkdtemp(prefix="reporting-chromium-"))
    proc = subprocess.Popen(
        [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    ws = None
    try:
        deadline = Deadline.in_seconds(timeout_s, "Chromium's DevTools endpoint")
        assert proc.stderr is not None
        browser_url = None
        while browser_url is None:
            deadline.check()
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {proc.returncode} before DevTools started")
            match = _DEVTOOLS_RE.search(line)
            if match:
                browser_url = match.group(1)
        port = browser_url.split(":")[2].split("/")[0]
        page_url = None
        while page_url is None:
            deadline.check()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as answer:
                targets = json.load(answer)
            page_url = next((t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page"), None)
        # Keep draining stderr so the browser never blocks on a full pipe; ends at the browser's exit.
        stderr = proc.stderr
        threading.Thread(target=lambda: all(True for _ in stderr), daemon=True).start()
        ws = websocket.create_connection(page_url, timeout=deadline.remaining_s(), suppress_origin=True)
        yield Browser(proc, ws)
    finally:
        if ws is not None:
            with contextlib.suppress(OSError, websocket.WebSocketException):
                ws.close()
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
        shutil.rmtree(profile, ignore_errors=True)
