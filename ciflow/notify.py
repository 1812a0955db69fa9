"""Mail a summary of the regressions and infrastructure failures of a ``process-ci-results`` pass (SMTP).

One message per pass that found regressions or infrastructure failures: per result its build,
report link and one line per REGRESSION cell (test, frame size, metric, the change and, where the
trend decides, why); per infrastructure failure (Beaker job aborted, cancelled, killed, no results
tarball) its job, status and reason, called an infrastructure failure, never a regression. Sent
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
    broken = [o for o in outcomes if o.infrastructure_failure]
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
        lines.append(f"  delivery kept in: {outcome.location}")
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


def _password(mail: MailConfig) -> str | None:
    if mail.password_file is None:
        return None
    return mail.password_file.read_text(encoding="utf-8").splitlines()[0].strip()


def send_regression_mail(
    mail: MailConfig,
    outcomes: Sequence[ResultOutcome],
    reports_dir: Path,
    *,
    overview: Path | None = None,
    trend_index: Path | None = None,
) -> bool:
    """Send the summary of ``outcomes``' regressions and infrastructure failures (:func:`regression_message`).

    Returns True when the server accepted it. Nothing is sent (False) when no processed result has
    a regression and no delivery is an infrastructure failure. Every failure (server down,
    timeout after ``mail.timeout_s``, TLS or authentication refused, recipients refused, unreadable
    password file) is logged as a warning naming the server, and False returned.
    """
    message = regression_message(mail, outcomes, reports_dir, overview=overview, trend_index=trend_index)
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
