"""process-ci-results with a history: samples recorded, trend verdicts on the page and in JUnit,
and the regression mail through a real SMTP server (aiosmtpd) on 127.0.0.1; a mail server that is
down never fails the pass."""

from __future__ import annotations

import logging
import socket
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from email import message_from_bytes
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from ciflow.cli import main as process_main
from ciflow.config import load_config
from ciflow.errors import ConfigError
from reporting.model import TREND_MIN_HISTORY
from resultstore.connect import database_url
from resultstore.store import ResultStore
from tests.ciflow.helpers import CANDIDATE, SCENARIO, deliver, write_config
from tests.resultstore.history import add_history_of


class Inbox:
    """aiosmtpd handler keeping every message it accepts."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, list[str], Message]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(
            (envelope.mail_from, list(envelope.rcpt_tos), message_from_bytes(envelope.content))
        )
        return "250 Message accepted for delivery"


@pytest.fixture
def smtp() -> Iterator[tuple[Inbox, int]]:
    # aiosmtpd logs from its own thread, also after the test's captured stderr is closed.
    logging.getLogger("mail.log").propagate = False
    inbox = Inbox()
    port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port, ready_timeout=10)
    controller.start()
    try:
        yield inbox, port
    finally:
        controller.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def seed_history(db: str, *, pvp64_factor: float) -> None:
    """Record TREND_MIN_HISTORY + 2 builds of the scenario: the candidate's NDRs, pvp 64 B × factor."""
    with ResultStore.open(database_url(db)) as store:
        add_history_of(
            store,
            [CANDIDATE],
            scenario=SCENARIO,
            builds=TREND_MIN_HISTORY + 2,
            factors={("pvp_tput", 64): pvp64_factor},
        )


def mail_config(port: int, **extra: Any) -> dict[str, Any]:
    return {
        "smtp_host": "127.0.0.1",
        "smtp_port": port,
        "sender": "ovsperf@ci.example.com",
        "recipients": ["perf-qe@example.com", "ovs-dev@example.com"],
        "report_base_url": "https://perf.example.com/reports",
        "timeout_s": 5,
        **extra,
    }


def test_pass_records_samples_judges_the_trend_and_mails_the_regression(
    tmp_path: Path, smtp: tuple[Inbox, int], capsys: pytest.CaptureFixture[str]
) -> None:
    inbox, port = smtp
    config = write_config(tmp_path, mail=mail_config(port))
    db = str(tmp_path / "results.sqlite")
    seed_history(db, pvp64_factor=1.08)
    deliver(tmp_path / "ci_in", "night-1", CANDIDATE)
    junit = tmp_path / "jenkins" / "ovsperf-junit.xml"
    junit.parent.mkdir()
    assert process_main(["--config", str(config), "--junit", str(junit)]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("processed\tnight-1\tREGRESSION\t")

    # Every number of night-1 is in the store, as the newest build of its series.
    with ResultStore.open(database_url(db)) as store:
        series = {(s.key.test, s.key.frame_size): s for s in store.series(metrics=["ndr_fps"])}
        assert len(series) == 14
        assert all(s.points[-1].result_name == "night-1" for s in series.values())
        assert series[("pvp_tput", 64)].points[-1].ovs_version == "2.9.1"

    # The page and the pass's JUnit: one failure, decided by the trend.
    page = (tmp_path / "reports" / "night-1" / "index.html").read_text(encoding="utf-8")
    assert "(trend decides)" in page and "a worse group starts here" in page
    root = ET.parse(junit).getroot()
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [f"{SCENARIO}.night-1"]
    failures = [c for c in root.iter("testcase") if c.find("failure") is not None]
    assert [(c.get("classname"), c.get("name")) for c in failures] == [("pvp_tput.pvp", "64B NDR")]

    # One mail, with the cell and the report's URL.
    assert len(inbox.messages) == 1
    sender, recipients, message = inbox.messages[0]
    assert sender == "ovsperf@ci.example.com"
    assert recipients == ["perf-qe@example.com", "ovs-dev@example.com"]
    assert message["Subject"] == "[ovsperf] 1 regression(s) in night-1"
    body = message.get_payload(decode=True).decode("utf-8")  # type: ignore[union-attr]
    assert "night-1: REGRESSION" in body
    assert "report: https://perf.example.com/reports/night-1/index.html" in body
    assert "pvp_tput/pvp 64 B NDR: trend a worse group starts here: -7." in body
    assert "All results and tester verdicts: https://perf.example.com/reports/index.html" in body
    assert "Regression mail sent to perf-qe@example.com, ovs-dev@example.com" in err


def test_no_regression_no_mail(
    tmp_path: Path, smtp: tuple[Inbox, int], capsys: pytest.CaptureFixture[str]
) -> None:
    inbox, port = smtp
    config = write_config(tmp_path, mail=mail_config(port))
    # The history agrees with the candidate: the trend overrules the baseline's -6 % at pvp 64 B.
    seed_history(str(tmp_path / "results.sqlite"), pvp64_factor=1.0)
    deliver(tmp_path / "ci_in", "night-1", CANDIDATE)
    assert process_main(["--config", str(config)]) == 0
    out, _ = capsys.readouterr()
    assert out.startswith("processed\tnight-1\tPASS\t")
    assert inbox.messages == []


def test_mail_server_down_never_fails_the_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()  # nothing listens there
    config = write_config(tmp_path, mail=mail_config(port))
    deliver(tmp_path / "ci_in", "night-1", CANDIDATE)
    assert process_main(["--config", str(config)]) == 1  # the baseline's regression, as without mail
    out, err = capsys.readouterr()
    assert out.startswith("processed\tnight-1\tREGRESSION\t")
    assert f"Regression mail not sent (SMTP 127.0.0.1:{port})" in err
    assert (tmp_path / "ci_processed" / "night-1").is_dir()


def test_mail_password_comes_from_a_file_and_never_shows(
    tmp_path: Path, smtp: tuple[Inbox, int], capsys: pytest.CaptureFixture[str]
) -> None:
    _, port = smtp
    secret = tmp_path / "smtp.pass"
    secret.write_text("hunter2-s3cret\n")
    config = write_config(tmp_path, mail=mail_config(port, username="ovsperf", password_file=str(secret)))
    deliver(tmp_path / "ci_in", "night-1", CANDIDATE)
    assert process_main(["--config", str(config), "-v"]) == 1
    out, err = capsys.readouterr()
    # aiosmtpd offers no AUTH without TLS: the login is refused, the pass goes on.
    assert "Regression mail not sent" in err
    assert "hunter2" not in out + err
    assert "hunter2" not in config.read_text()


OK = {"smtp_host": "x", "sender": "a@b.c", "recipients": ["a@b.c"]}


@pytest.mark.parametrize(
    ("mail", "field", "text"),
    [
        ({"smtp_host": "x", "sender": "a@b.c"}, "mail.recipients", "missing"),
        ({**OK, "recipients": []}, "mail.recipients", "one address"),
        ({**OK, "recipients": ["nobody"]}, "mail.recipients[0]", "not an e-mail"),
        ({**OK, "sender": "a@b.c\nBcc: x@y.z"}, "mail.sender", "control character"),
        ({**OK, "smtp_host": "bad host"}, "mail.smtp_host", ""),
        ({**OK, "smtp_port": 70000}, "mail.smtp_port", ""),
        ({**OK, "password_file": "p"}, "mail.password_file", "username"),
        ({**OK, "report_base_url": "ftp://x"}, "mail.report_base_url", "http"),
        ({**OK, "starttls": "yes"}, "mail.starttls", "true or false"),
        ({**OK, "cc": ["a@b.c"]}, "mail", "cc"),
    ],
)
def test_bad_mail_settings_name_the_field(
    tmp_path: Path, mail: dict[str, Any], field: str, text: str
) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(write_config(tmp_path, mail=mail))
    assert field in str(err.value) and text in str(err.value)
