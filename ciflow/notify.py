"""Mail a summary of the regressions and infrastructure failures of a ``process-ci-results`` pass (SMTP).

One message per pass that found regressions or infrastructure failures: per result its build,
report link and one line per REGRESSION cell (test, frame size, metric, the change and, where the
trend decides, why); per infrastructure failure (Beaker job aborted, cancelled, killed, no results
tarball) its job, status and reason, called an infrastructure failure, never a regression. Sent
with :mod:`smtplib` (RFC 5321) and :mod:`email.message` (RFC 5322; header values are built by the
library, so a result name cannot add a header). The password, read from ``password_file`` only
when sending, never reaches a log line, message or file. A mail server that is down, slow or
refusing never fails the pass: :func:`send_regression_mail` logs a warning and returns FAILED. The
whole exchange has one deadline (``timeout_s``), and a stop request (SIGTERM) abandons it at once.
"""

from __future__ import annotations

import base64
import contextlib
import enum
import logging
import smtplib
import socket
import ssl
from collections.abc import Callable, Sequence
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path

from ciflow.model import MailConfig, OutcomeKind, ResultOutcome
from ovsperf_common.deadline import StopRequestedError, run_within
from ovsperf_common.regularfile import read_regular_text
from ovsperf_common.runner import one_line
from ovsperf_common.secrets import MASK

log = logging.getLogger(__name__)

MAX_LINES_PER_RESULT = 50
"""Regression lines listed per result before "… and N more" (the report has them all)."""

MAX_PASSWORD_FILE_BYTES = 64 * 1024
"""Largest ``mail.password_file`` read [B]."""


class MailOutcome(enum.Enum):
    """What became of a pass's regression mail."""

    SENT = "sent"
    NOTHING_TO_SEND = "nothing to send"
    FAILED = "failed"
    """Not sent: the server, the network or the password file; logged as a warning."""
    STOPPED = "stopped"
    """Abandoned on a stop request (SIGTERM, SIGINT) before the server accepted it."""


def _link(mail: MailConfig, reports_dir: Path, outcome: ResultOutcome) -> str:
    """Return the report's URL under ``report_base_url``, else its file path."""
    if outcome.report_index is None:
        return "(no report)"
    return _url_or_path(mail, reports_dir, outcome.report_index)


def _what(outcome: ResultOutcome) -> str:
    """Return `` (scenario S, build B)`` for a result's line, with what is known of both."""
    parts = [f"scenario {one_line(outcome.scenario)}"] if outcome.scenario else []
    if outcome.build:
        parts.append(f"build {one_line(outcome.build)}")
    return f" ({', '.join(parts)})" if parts else ""


def _url_or_path(mail: MailConfig, reports_dir: Path, target: Path) -> str:
    """Return ``target``'s URL under ``report_base_url`` when it lies in ``reports_dir``, else its path."""
    if mail.report_base_url:
        try:
            return f"{mail.report_base_url}/{target.relative_to(reports_dir).as_posix()}"
        except ValueError:
            pass
    return str(target)


def regression_message(
    mail: MailConfig,
    outcomes: Sequence[ResultOutcome],
    reports_dir: Path,
    *,
    overview: Path | None = None,
    trend_index: Path | None = None,
) -> EmailMessage | None:
    """Return the pass's summary mail, or None when it found no regression and no infrastructure failure.

    Regressions are listed per processed result (its build, report link, one line per cell);
    infrastructure failures (:attr:`ResultOutcome.infrastructure_failure`) in their own section,
    named so and never called a regression.
    """
    hit = [o for o in outcomes if o.kind is OutcomeKind.PROCESSED and o.regressions]
    # Moved to ci_failed this pass; one left in ci_in (ERROR) is retried, not mailed again each pass.
    broken = [o for o in outcomes if o.infrastructure_failure and o.kind is OutcomeKind.FAILED]
    if not hit and not broken:
        return None
    cells = sum(len(o.regressions) for o in hit)
    message = EmailMessage()
    subject = []
    if hit:
        names = ", ".join(one_line(o.name) for o in hit[:3]) + (
            f" and {len(hit) - 3} more" if len(hit) > 3 else ""
        )
        subject.append(f"{cells} regression(s) in {names}")
    if broken:
        subject.append(f"{len(broken)} infrastructure failure(s)")
    message["Subject"] = f"{mail.subject_prefix} {'; '.join(subject)}"
    message["From"] = mail.sender
    message["To"] = ", ".join(mail.recipients)
    message["Date"] = formatdate(localtime=False, usegmt=True)
    message["Message-ID"] = make_msgid(domain=mail.sender.rsplit("@", 1)[1])
    lines = []
    if hit:
        lines += [f"process-ci-results found {cells} regression(s) in {len(hit)} result(s).", ""]
    for outcome in hit:
        lines.append(f"{one_line(outcome.name)}: {outcome.overall}{_what(outcome)}")
        lines.append(f"  report: {_link(mail, reports_dir, outcome)}")
        for text in outcome.regressions[:MAX_LINES_PER_RESULT]:
            lines.append(f"  - {one_line(text)}")
        if len(outcome.regressions) > MAX_LINES_PER_RESULT:
            lines.append(f"  … and {len(outcome.regressions) - MAX_LINES_PER_RESULT} more (see the report)")
        lines.append("")
    if broken:
        lines += [
            f"{len(broken)} run(s) ended in an infrastructure failure: nothing was measured, "
            "the lab needs a look (the builds are not judged).",
            "",
        ]
    for outcome in broken:
        lines.append(f"{one_line(outcome.name)}: INFRASTRUCTURE FAILURE{_what(outcome)}")
        lines.append(f"  {one_line(outcome.reason or '')}")
        lines.append(f"  delivery kept in: {one_line(str(outcome.location))}")
        lines.append("")
    if trend_index is not None:
        lines.append(f"Trends over builds: {_url_or_path(mail, reports_dir, trend_index)}")
    if overview is not None:
        lines.append(f"All results and tester verdicts: {_url_or_path(mail, reports_dir, overview)}")
    if hit:
        lines.append(
            "A trend REGRESSION stays open until fixed or marked expected: "
            "ovsperf-results expect <result> --test T --frame-size B --bug ID"
        )
    message.set_content("\n".join(lines) + "\n")
    return message


def _password(mail: MailConfig) -> str:
    """Return the first line of ``mail.password_file`` (a regular file only: a FIFO never blocks).

    :raises OSError: when it cannot be read or is not a regular file.
    :raises ValueError: when it is not UTF-8 text or its first line is empty.
    """
    if mail.password_file is None:
        return ""
    lines = read_regular_text(mail.password_file, max_bytes=MAX_PASSWORD_FILE_BYTES).splitlines()
    if not lines or not lines[0].strip():
        raise ValueError("its first line is empty")
    return lines[0].strip()


def _scrub(text: str, secrets: Sequence[str]) -> str:
    """Return ``text`` without any of ``secrets``: a server may echo the AUTH data in its error."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= 3:  # replacing a one- or two-character password would mangle any text
            text = text.replace(secret, MASK)
    return text


def _auth_forms(username: str, password: str) -> list[str]:
    """Return the password as sent in AUTH PLAIN (RFC 4616) and AUTH LOGIN: plain and base64 forms."""
    if not password:
        return []
    forms = [password]
    for raw in (f"\0{username}\0{password}", password):
        blob = base64.b64encode(raw.encode("utf-8")).decode("ascii")
        forms += [blob, blob.rstrip("=")]
    return forms


class _Connection:
    """The SMTP client of one exchange, reachable from the waiting thread to abort it."""

    def __init__(self) -> None:
        self.client: smtplib.SMTP | None = None

    def abort(self) -> None:
        """Shut the connection's socket down: the exchange's blocked read returns at once."""
        client = self.client
        sock = None if client is None else client.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class _Client(smtplib.SMTP):
    """:class:`smtplib.SMTP` that registers itself before connecting, so that it can be aborted."""

    def __init__(self, connection: _Connection, host: str, port: int, timeout: float) -> None:
        connection.client = self
        super().__init__(host, port, timeout=timeout)


def _exchange(
    mail: MailConfig, message: EmailMessage, connection: _Connection, timeout_s: float, password: str
) -> dict[str, tuple[int, bytes]]:
    """Connect, (STARTTLS,) log in and send; return the refused recipients (smtplib's dict)."""
    with _Client(connection, mail.smtp_host, mail.smtp_port, timeout_s) as smtp:
        if mail.starttls:
            smtp.starttls(context=ssl.create_default_context())
        if mail.username is not None:
            smtp.login(mail.username, password)
        return smtp.send_message(message)


def send_regression_mail(
    mail: MailConfig,
    outcomes: Sequence[ResultOutcome],
    reports_dir: Path,
    *,
    overview: Path | None = None,
    trend_index: Path | None = None,
    stop_requested: Callable[[], bool] | None = None,
) -> MailOutcome:
    """Send the summary of ``outcomes``' regressions and infrastructure failures (:func:`regression_message`).

    Returns SENT when the server accepted it, NOTHING_TO_SEND when no processed result has a
    regression and no delivery is an infrastructure failure. The whole exchange (connecting,
    greeting, STARTTLS, login, sending) is bounded by ``mail.timeout_s`` [s] in total, whatever
    the server trickles; it is abandoned within ~0.1 s when ``stop_requested()`` turns true
    (SIGTERM), returning STOPPED. Every other failure (server down, too slow, TLS or authentication
    refused, recipients refused, password file unreadable or not a regular file) is logged as a
    warning naming the server, and FAILED returned. The password never reaches the log: forms of it
    a server echoes in its error are masked.
    """
    message = regression_message(mail, outcomes, reports_dir, overview=overview, trend_index=trend_index)
    if message is None:
        return MailOutcome.NOTHING_TO_SEND
    server = f"{mail.smtp_host}:{mail.smtp_port}"
    try:
        password = _password(mail)
    except (OSError, ValueError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        log.warning(
            "Regression mail not sent (SMTP %s): cannot read mail.password_file '%s': %s.",
            server,
            mail.password_file,
            why,
        )
        return MailOutcome.FAILED
    connection = _Connection()
    try:
        refused = run_within(
            mail.timeout_s,
            f"the SMTP exchange with {server}",
            lambda: _exchange(mail, message, connection, mail.timeout_s, password),
            cancel=connection.abort,
            stop_requested=stop_requested,
        )
    except StopRequestedError as err:
        log.warning("Regression mail not sent (SMTP %s): %s", server, err)
        return MailOutcome.STOPPED
    except (TimeoutError, OSError, smtplib.SMTPException, ssl.SSLError) as err:
        text = _scrub(f"{type(err).__name__}: {err}", _auth_forms(mail.username or "", password))
        log.warning("Regression mail not sent (SMTP %s): %s", server, text)
        return MailOutcome.FAILED
    if refused:
        log.warning("Regression mail: %s refused %s.", server, ", ".join(sorted(refused)))
    log.info("Regression mail sent to %s via %s.", ", ".join(mail.recipients), server)
    return MailOutcome.SENT
