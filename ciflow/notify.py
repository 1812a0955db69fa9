"""Mail a summary of the regressions a ``process-ci-results`` pass found (SMTP, standard library only).

One message per pass that found regressions: per result its report link and one line per
REGRESSION cell (test, frame size, metric, the change and, where the trend decides, why). Sent
with :mod:`smtplib` (RFC 5321) and :mod:`email.message` (RFC 5322; header values are built by the
library, so a result name cannot add a header). The password, read from ``password_file`` only
when sending, never reaches a log line, message or file. A mail server that is down, slow or
refusing never fails the pass: :func:`send_regression_mail` logs a warning and returns False.
"""

from __future__ import annotations

import logging
import smtplib
import ssl
from collections.abc import Sequence
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path

from ciflow.model import MailConfig, OutcomeKind, ResultOutcome
from ovsperf_common.runner import one_line

log = logging.getLogger(__name__)

MAX_LINES_PER_RESULT = 50
"""Regression lines listed per result before "… and N more" (the report has them all)."""


def _link(mail: MailConfig, reports_dir: Path, outcome: ResultOutcome) -> str:
    """Return the report's URL under ``report_base_url``, else its file path."""
    index = outcome.report_index
    if index is None:
        return "(no report)"
    if mail.report_base_url:
        try:
            relative = index.relative_to(reports_dir)
        except ValueError:
            return str(index)
        return f"{mail.report_base_url}/{relative.as_posix()}"
    return str(index)


def regression_message(
    mail: MailConfig, outcomes: Sequence[ResultOutcome], reports_dir: Path, *, overview: Path | None = None
) -> EmailMessage | None:
    """Return the summary mail for the processed results with regressions, or None when there are none."""
    hit = [o for o in outcomes if o.kind is OutcomeKind.PROCESSED and o.regressions]
    if not hit:
        return None
    cells = sum(len(o.regressions) for o in hit)
    message = EmailMessage()
    names = ", ".join(one_line(o.name) for o in hit[:3]) + (
        f" and {len(hit) - 3} more" if len(hit) > 3 else ""
    )
    message["Subject"] = f"{mail.subject_prefix} {cells} regression(s) in {names}"
    message["From"] = mail.sender
    message["To"] = ", ".join(mail.recipients)
    message["Date"] = formatdate(localtime=False, usegmt=True)
    message["Message-ID"] = make_msgid(domain=mail.sender.rsplit("@", 1)[1])
    lines = [f"process-ci-results found {cells} regression(s) in {len(hit)} result(s).", ""]
    for outcome in hit:
        lines.append(f"{one_line(outcome.name)}: {outcome.overall}")
        lines.append(f"  report: {_link(mail, reports_dir, outcome)}")
        for text in outcome.regressions[:MAX_LINES_PER_RESULT]:
            lines.append(f"  - {one_line(text)}")
        if len(outcome.regressions) > MAX_LINES_PER_RESULT:
            lines.append(f"  … and {len(outcome.regressions) - MAX_LINES_PER_RESULT} more (see the report)")
        lines.append("")
    if overview is not None:
        if mail.report_base_url:
            lines.append(f"All results and tester verdicts: {mail.report_base_url}/{overview.name}")
        else:
            lines.append(f"All results and tester verdicts: {overview}")
    lines.append(
        "A trend REGRESSION stays open until fixed or marked expected: "
        "ovsperf-results expect <result> --test T --frame-size B --bug ID"
    )
    message.set_content("\n".join(lines) + "\n")
    return message


def _password(mail: MailConfig) -> str | None:
    if mail.password_file is None:
        return None
    return mail.password_file.read_text(encoding="utf-8").splitlines()[0].strip()


def send_regression_mail(
    mail: MailConfig, outcomes: Sequence[ResultOutcome], reports_dir: Path, *, overview: Path | None = None
) -> bool:
    """Send the summary of ``outcomes``' regressions; return True when the server accepted it.

    Nothing is sent (False) when no processed result has a regression. Every failure (server down,
    timeout after ``mail.timeout_s``, TLS or authentication refused, recipients refused, unreadable
    password file) is logged as a warning naming the server, and False returned.
    """
    message = regression_message(mail, outcomes, reports_dir, overview=overview)
    if message is None:
        return False
    server = f"{mail.smtp_host}:{mail.smtp_port}"
    try:
        with smtplib.SMTP(mail.smtp_host, mail.smtp_port, timeout=mail.timeout_s) as smtp:
            if mail.starttls:
                smtp.starttls(context=ssl.create_default_context())
            if mail.username is not None:
                password = _password(mail)
                smtp.login(mail.username, password or "")
            refused = smtp.send_message(message)
    except (TimeoutError, OSError, smtplib.SMTPException, ssl.SSLError, IndexError) as err:
        # IndexError: an empty password file. Never format the password: err texts do not hold it.
        log.warning("Regression mail not sent (SMTP %s): %s: %s", server, type(err).__name__, err)
        return False
    if refused:
        log.warning("Regression mail: %s refused %s.", server, ", ".join(sorted(refused)))
    log.info("Regression mail sent to %s via %s.", ", ".join(mail.recipients), server)
    return True
