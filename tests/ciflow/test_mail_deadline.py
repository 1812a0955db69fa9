"""The regression mail: one deadline, stopped by SIGTERM, its password never logged (issue 25, 14 and 19).

Real SMTP clients against scripted servers on 127.0.0.1: one trickles ``220-`` continuation lines
for ever (each within the per-read timeout), one echoes the AUTH data in its error.
"""

from __future__ import annotations

import base64
import logging
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ciflow.config import load_config
from ciflow.errors import ConfigError
from ciflow.model import MailConfig, OutcomeKind, ResultOutcome
from ciflow.notify import MailOutcome, send_regression_mail
from ovsperf_common.verdict import Overall
from tests.ciflow.helpers import CANDIDATE, deliver, write_config
from tests.fifoguard import fifo_watchdog

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "hunter2-s3cret"


class ScriptedSmtp:
    """An SMTP server on 127.0.0.1 whose every connection is served by ``serve(conn)`` in a thread."""

    def __init__(self, serve: Callable[[socket.socket, threading.Event], None]) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.connected = threading.Event()
        """Set when a client connected."""
        self.closed_at: list[float] = []
        """``time.monotonic()`` when the client's side of each connection was seen closed."""
        self.stop = threading.Event()
        self._serve = serve
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        self.listener.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connected.set()
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            try:
                self._serve(conn, self.stop)
            except OSError:  # the client went away (reset, broken pipe)
                pass
            self.closed_at.append(time.monotonic())

    def close(self) -> None:
        self.stop.set()
        self.listener.close()
        self._thread.join(5)


def trickle(conn: socket.socket, stop: threading.Event) -> None:
    """Send a ``220-`` continuation line every 0.2 s, never the final ``220 `` line."""
    conn.settimeout(0.2)
    while not stop.is_set():
        conn.sendall(b"220-mail.example.com still greeting you\r\n")
        try:
            if conn.recv(1) == b"":  # the client shut the connection down
                return
        except TimeoutError:
            pass


def echo_auth(mechanism: bytes) -> Callable[[socket.socket, threading.Event], None]:
    """Return a server that offers AUTH ``mechanism`` and echoes what it got, raw and decoded, in its 535."""

    def serve(conn: socket.socket, _stop: threading.Event) -> None:
        conn.settimeout(10)
        stream = conn.makefile("rb")
        conn.sendall(b"220 mail.example.com ESMTP\r\n")
        while line := stream.readline():
            verb = line[:4].upper()
            if verb in (b"EHLO", b"HELO"):
                conn.sendall(b"250-mail.example.com\r\n250 AUTH " + mechanism + b"\r\n")
            elif line.upper().startswith(b"AUTH LOGIN"):
                conn.sendall(b"334 UGFzc3dvcmQ6\r\n")
                answer = stream.readline().strip()
                decoded = base64.b64decode(answer)
                conn.sendall(b"535 5.7.8 Rejected " + answer + b" = " + decoded + b"\r\n")
            elif verb == b"AUTH":
                blob = line.split()[-1]
                decoded = base64.b64decode(blob).replace(b"\0", b" ")
                conn.sendall(b"535 5.7.8 Rejected " + blob + b" = " + decoded + b"\r\n")
            elif verb == b"QUIT":
                conn.sendall(b"221 bye\r\n")
                return
            else:
                conn.sendall(b"502 no\r\n")

    return serve


@pytest.fixture
def trickling() -> Iterator[ScriptedSmtp]:
    server = ScriptedSmtp(trickle)
    try:
        yield server
    finally:
        server.close()


def regression(tmp_path: Path) -> list[ResultOutcome]:
    return [
        ResultOutcome(
            "night-1",
            OutcomeKind.PROCESSED,
            tmp_path,
            overall=Overall.REGRESSION,
            report_index=tmp_path / "reports" / "night-1" / "index.html",
            regressions=("pvp_tput/pvp 64 B NDR: -7.0 %",),
        )
    ]


def mail(port: int, **extra: object) -> MailConfig:
    values: dict[str, object] = {
        "smtp_host": "127.0.0.1",
        "smtp_port": port,
        "sender": "ovsperf@ci.example.com",
        "recipients": ("perf-qe@example.com",),
        "timeout_s": 2.0,
    }
    values.update(extra)
    return MailConfig(**values)  # type: ignore[arg-type]


def test_a_trickling_server_cannot_hold_the_mail_past_its_deadline(
    tmp_path: Path, trickling: ScriptedSmtp, caplog: pytest.LogCaptureFixture
) -> None:
    """Each ``220-`` line arrives within the 2 s per-read timeout; before the fix this ran for ever."""
    caplog.set_level(logging.WARNING, logger="ciflow.notify")
    outcome: list[MailOutcome] = []
    started = time.monotonic()
    sender = threading.Thread(
        target=lambda: outcome.append(
            send_regression_mail(mail(trickling.port), regression(tmp_path), tmp_path)
        ),
        daemon=True,
    )
    sender.start()
    sender.join(15)  # the test's own bound: a hang fails here, it does not hold the suite
    elapsed = time.monotonic() - started
    assert outcome == [MailOutcome.FAILED], f"still sending after {elapsed:.1f} s"
    assert 2.0 <= elapsed < 4.0  # the deadline, plus scheduling slack on a loaded machine
    assert (
        f"Regression mail not sent (SMTP 127.0.0.1:{trickling.port}): DeadlineExceededError: "
        f"Timed out after 2.0 s waiting for the SMTP exchange with 127.0.0.1:{trickling.port}." in caplog.text
    )
    # The connection was shut down at the deadline, not left to the abandoned thread.
    deadline = time.monotonic() + 2
    while not trickling.closed_at and time.monotonic() < deadline:
        time.sleep(0.05)
    assert trickling.closed_at and trickling.closed_at[0] - started < 3.0


_PASS_SCRIPT = """
import sys
from ciflow.cli import main
sys.exit(main(["--config", sys.argv[1]]))
"""


def test_sigterm_ends_a_pass_stuck_in_the_smtp_exchange_within_seconds(
    tmp_path: Path, trickling: ScriptedSmtp
) -> None:
    """Before the fix the handler only noted the signal; the pass went on reading ``220-`` lines."""
    config = write_config(
        tmp_path,
        mail={
            "smtp_host": "127.0.0.1",
            "smtp_port": trickling.port,
            "sender": "ovsperf@ci.example.com",
            "recipients": ["perf-qe@example.com"],
            "timeout_s": 120,
        },
    )
    deliver(tmp_path / "ci_in", "night-1", CANDIDATE)  # regresses against the baseline: a mail
    log = tmp_path / "pass.log"  # a file, not a pipe: nobody reads stderr while the pass runs
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-c", _PASS_SCRIPT, str(config)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    try:
        for _ in range(1200):  # up to 120 s for the report, as long as the pass runs
            if trickling.connected.wait(0.1) or proc.poll() is not None:
                break
        assert trickling.connected.is_set(), log.read_text()
        time.sleep(0.5)  # well inside the exchange: a few 220- lines have been read
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=15)
        stopped_after = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    err = log.read_text()
    assert stopped_after < 5, err
    assert proc.returncode == 2, err
    assert out.startswith("processed\tnight-1\tREGRESSION\t")
    assert f"Regression mail not sent (SMTP 127.0.0.1:{trickling.port}): Stopped on request" in err
    assert "process-ci-results: error: Stopped on request while sending the regression mail" in err
    assert (tmp_path / "ci_processed" / "night-1").is_dir()  # the result in hand was finished


@pytest.mark.parametrize("mechanism", [b"PLAIN", b"LOGIN"])
def test_the_password_echoed_by_the_server_never_reaches_the_log(
    tmp_path: Path, mechanism: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    server = ScriptedSmtp(echo_auth(mechanism))
    secret = tmp_path / "smtp.pass"
    secret.write_text(PASSWORD + "\n")
    caplog.set_level(logging.DEBUG)
    try:
        result = send_regression_mail(
            mail(server.port, username="ovsperf", password_file=secret, timeout_s=10),
            regression(tmp_path),
            tmp_path,
        )
    finally:
        server.close()
    assert result is MailOutcome.FAILED
    text = caplog.text
    assert "SMTPAuthenticationError: (535, b'5.7.8 Rejected *** = " in text  # the server's reply, scrubbed
    forms = [
        PASSWORD,
        base64.b64encode(PASSWORD.encode()).decode(),
        base64.b64encode(f"\0ovsperf\0{PASSWORD}".encode()).decode(),
    ]
    for form in forms:
        assert form not in text and form.rstrip("=") not in text


def test_a_fifo_as_password_file_is_refused_by_the_config_and_never_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fifo = tmp_path / "smtp.pass"
    settings = {
        "smtp_host": "127.0.0.1",
        "sender": "a@b.c",
        "recipients": ["a@b.c"],
        "username": "ovsperf",
        "password_file": str(fifo),
    }
    with fifo_watchdog(fifo, timeout_s=5) as freed:
        with pytest.raises(ConfigError) as err:
            load_config(write_config(tmp_path, mail=settings))
        assert "field 'mail.password_file'" in str(err.value)
        assert f"'{fifo}' cannot be used: it is a FIFO (named pipe), not a regular file." in str(err.value)
        # A FIFO put there after the configuration was read: the mail is not sent, nothing waits.
        started = time.monotonic()
        result = send_regression_mail(
            mail(9, username="ovsperf", password_file=fifo), regression(tmp_path), tmp_path
        )
        assert time.monotonic() - started < 1
    assert freed == []
    assert result is MailOutcome.FAILED
    assert (
        f"cannot read mail.password_file '{fifo}': it is a FIFO (named pipe), not a regular file."
        in caplog.text
    )


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://qe:pa55word@perf.example.com/reports", "a password"),
        ("https://perf.example.com/reports?access_token=t0k3n", "secret parameter 'access_token'"),
        ("https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@perf.example.com/r", "token or key"),
        ("https://qe@perf.example.com/reports", "a user name"),
        ("https://perf.example.com/reports;token=t0k3n", "secret parameter 'token'"),
    ],
)
def test_a_report_base_url_with_credentials_is_refused(tmp_path: Path, url: str, why: str) -> None:
    """Issue 25 item 19: every mail carried the base URL, credentials and all."""
    settings = {"smtp_host": "x", "sender": "a@b.c", "recipients": ["a@b.c"], "report_base_url": url}
    with pytest.raises(ConfigError) as err:
        load_config(write_config(tmp_path, mail=settings))
    message = str(err.value)
    assert "field 'mail.report_base_url'" in message and why in message
    for secret in ("pa55word", "t0k3n", "16C7e42F"):
        assert secret not in message
