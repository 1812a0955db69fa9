"""Submission tests: beaker-client's real HubProxy against a local XML-RPC Beaker hub double."""

from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lxml import etree

from jobcreator.cli import main
from jobcreator.errors import SubmitError
from jobcreator.jobmodel import HubSettings
from jobcreator.render import render_job
from jobcreator.submit import load_client_config, submit_job
from ovsperf_catalog.catalog import load_catalog
from ovsperf_common.exitcodes import ExitCode
from tests.jobcreator.conftest import DUT, HUB_PASSWORD, HUB_USER, TG, make_options, write_client_conf
from tests.jobcreator.fakehub import FakeBeakerHub

ARGV = [
    "--host", TG, "--host", DUT, "--config", "OVS_DPDK1q_GUEST_DPDK1q", "--distro", "RHEL-7.3",
    "--kickrepo", "http://example.com/repos/dpdk/16.11/4.el7", "--tag", "nightly", "--reserve", "99",
    "--autosubmit",
]  # fmt: skip


def _canonical(xml: str) -> bytes:
    return etree.tostring(etree.fromstring(xml.encode()), method="c14n2", strip_text=True)


@pytest.fixture
def conf_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """Return a function writing a client config for a hub URL and exporting BEAKER_CLIENT_CONF."""

    def write(url: str, password: str = HUB_PASSWORD) -> Path:
        path = write_client_conf(tmp_path / "client.conf", url, password=password)
        monkeypatch.setenv("BEAKER_CLIENT_CONF", str(path))
        return path

    yield write


def test_autosubmit_uploads_the_job_intact_and_prints_the_id(
    fake_hub: FakeBeakerHub, conf_for, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    conf_for(fake_hub.url)
    output = tmp_path / "job.xml"
    assert main([*ARGV, "--output", str(output)]) == ExitCode.OK
    captured = capsys.readouterr()
    assert captured.out == "J:1234\n"
    assert fake_hub.state.calls == ["auth.login_password", "jobs.upload"]
    (uploaded,) = fake_hub.state.uploads
    assert _canonical(uploaded) == _canonical(output.read_text())
    expected = render_job(
        load_catalog().get("OVS_DPDK1q_GUEST_DPDK1q"),
        make_options(kick_repos=("http://example.com/repos/dpdk/16.11/4.el7",)),
    )
    assert _canonical(uploaded) == _canonical(expected)
    assert HUB_PASSWORD not in uploaded + captured.out + captured.err


def test_each_submission_prints_its_own_id(
    fake_hub: FakeBeakerHub, conf_for, capsys: pytest.CaptureFixture[str]
) -> None:
    conf_for(fake_hub.url + "/")  # trailing slash tolerated
    assert main(ARGV) == ExitCode.OK
    assert main([*ARGV[:5], "OVS_DPDK2q", *ARGV[6:]]) == ExitCode.OK
    assert capsys.readouterr().out.splitlines() == ["J:1234", "J:1235"]
    assert len(fake_hub.state.uploads) == 2
    assert etree.fromstring(fake_hub.state.uploads[1].encode()).find(".//guestrecipe") is None


def test_refused_login_is_a_clear_error_and_nothing_is_uploaded(
    fake_hub: FakeBeakerHub, conf_for, capsys: pytest.CaptureFixture[str]
) -> None:
    conf_for(fake_hub.url, password="wrong-password")
    assert main(ARGV) == ExitCode.ERROR
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = [ln for ln in captured.err.splitlines() if ln.startswith("jobcreator: error:")]
    assert f"Beaker hub '{fake_hub.url}' refused the password login of '{HUB_USER}'" in line
    assert "Invalid username or password" in line and "<class" not in line
    assert "wrong-password" not in captured.err
    assert fake_hub.state.uploads == []


def test_unreachable_hub_fails_fast_with_a_clear_error(
    closed_port_url: str, conf_for, capsys: pytest.CaptureFixture[str]
) -> None:
    conf_for(closed_port_url)
    start = time.monotonic()
    assert main([*ARGV, "--hub-retries", "0"]) == ExitCode.ERROR
    assert time.monotonic() - start < 10
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = [ln for ln in captured.err.splitlines() if ln.startswith("jobcreator: error:")]
    assert f"Cannot reach Beaker hub '{closed_port_url}'" in line
    assert "Connection refused" in line and "client.conf" in line


def test_unreachable_hub_is_retried_a_bounded_number_of_times(
    closed_port_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = load_client_config(
        {"BEAKER_CLIENT_CONF": str(write_client_conf(tmp_path / "c.conf", closed_port_url))}
    )
    settings = HubSettings(timeout_s=2.0, retries=2, retry_interval_s=0.2)
    start = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="jobcreator.submit"), pytest.raises(SubmitError):
        submit_job("<job/>", settings, config)
    elapsed = time.monotonic() - start
    assert 0.4 <= elapsed < 5
    retries = [r for r in caplog.records if "retrying" in r.getMessage()]
    assert [r.getMessage().split(";")[1].strip() for r in retries] == [
        "attempt 1 of 3, retrying in 0 s.",
        "attempt 2 of 3, retrying in 0 s.",
    ]


def test_a_hub_that_never_answers_times_out(tmp_path: Path) -> None:
    with socket.socket() as listener:  # accepts connections (backlog) but never replies
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        config = load_client_config({"BEAKER_CLIENT_CONF": str(write_client_conf(tmp_path / "c.conf", url))})
        start = time.monotonic()
        with pytest.raises(SubmitError, match="timed out"):
            submit_job("<job/>", HubSettings(timeout_s=1.0, retries=0), config)
        assert time.monotonic() - start < 5


def test_job_rejected_by_the_hub_is_reported_with_its_reason(
    fake_hub: FakeBeakerHub, conf_for, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_hub.state.upload_fault = "Invalid task(s): /ovsperf/setup_dpdk"
    conf_for(fake_hub.url)
    assert main(ARGV) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert f"Beaker hub '{fake_hub.url}' rejected the job: Invalid task(s): /ovsperf/setup_dpdk" in err


def test_wrong_hub_path_reports_the_http_error(
    fake_hub: FakeBeakerHub, conf_for, capsys: pytest.CaptureFixture[str]
) -> None:
    conf_for(fake_hub.url + "/bkr")
    assert main([*ARGV, "--hub-retries", "0"]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "answered HTTP 404" in err and "is HUB_URL right" in err


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "BEAKER_CLIENT_CONF names"),
        ('AUTH_METHOD = "password"\nUSERNAME = "u"\nPASSWORD = "p"\n', "No HUB_URL"),
        ('HUB_URL = "http://127.0.0.1:9"\nAUTH_METHOD = "kerberos"\n', "AUTH_METHOD 'kerberos'"),
        (
            'HUB_URL = "http://127.0.0.1:9"\nAUTH_METHOD = "password"\nUSERNAME = "u"\n',
            "USERNAME or PASSWORD",
        ),
        ('HUB_URL = "http://127.0.0.1:9\n', "Cannot read the Beaker client configuration"),
    ],
)
def test_bad_client_configuration_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    content: str | None, fragment: str,
) -> None:  # fmt: skip
    conf = tmp_path / "client.conf"
    if content is not None:
        conf.write_text(content)
    monkeypatch.setenv("BEAKER_CLIENT_CONF", str(conf))
    assert main(ARGV) == ExitCode.ERROR
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and fragment in lines[0], lines


def test_user_config_in_home_is_used_without_beaker_client_conf(tmp_path: Path) -> None:
    (tmp_path / ".beaker_client").mkdir()
    user_conf = write_client_conf(tmp_path / ".beaker_client" / "config", "https://beaker.example.com/bkr/")
    config = load_client_config({"HOME": str(tmp_path)})
    assert config.files[-1] == user_conf
    assert config.hub_url == "https://beaker.example.com/bkr"
    assert config.auth_method == "password"


def test_missing_configuration_names_where_to_put_it(tmp_path: Path) -> None:
    with pytest.raises(SubmitError, match="No HUB_URL") as err:
        load_client_config({"HOME": str(tmp_path)})
    assert "~/.beaker_client/config" in str(err.value) and "/etc/beaker/client.conf" in str(err.value)


def test_bkr_job_submit_itself_accepts_our_job_and_our_hub_double(
    fake_hub: FakeBeakerHub, tmp_path: Path
) -> None:
    """Beaker's own CLI (``bkr job-submit``) talks to the double the way our code does."""
    job = tmp_path / "job.xml"
    job.write_text(render_job(load_catalog().get("OVS_DPDK2q_GUEST_DPDK2q"), make_options()))
    env = {**os.environ, "BEAKER_CLIENT_CONF": str(write_client_conf(tmp_path / "c.conf", fake_hub.url))}
    bkr = Path(sys.executable).parent / "bkr"
    done = subprocess.run(
        [str(bkr), "job-submit", str(job)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "validation failed" not in done.stderr  # bkr validates against the same schema
    assert re.search(r"Submitted: \['J:1234'\]", done.stdout)
    assert fake_hub.state.calls == ["auth.login_password", "jobs.upload"]
    assert _canonical(fake_hub.state.uploads[0]) == _canonical(job.read_text())


def test_an_invalid_job_is_never_written_printed_or_submitted(
    fake_hub: FakeBeakerHub, conf_for, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Break the renderer's output (a template bug): the guarantee must hold at the output end."""
    import jobcreator.workflow

    good = render_job(load_catalog().get("OVS_DPDK1q_GUEST_DPDK1q"), make_options())
    monkeypatch.setattr(
        jobcreator.workflow, "render_job", lambda *_: good.replace('when="always"', 'when="sometimes"')
    )
    conf_for(fake_hub.url)
    output = tmp_path / "job.xml"
    output.write_text("previous job")
    assert main([*ARGV, "--output", str(output)]) == ExitCode.ERROR
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Invalid attribute when for element reservesys" in captured.err
    assert output.read_text() == "previous job"
    assert fake_hub.state.calls == []


def test_tls_failure_points_at_ca_cert(
    fake_hub: FakeBeakerHub, conf_for, capsys: pytest.CaptureFixture[str]
) -> None:
    conf_for(fake_hub.url.replace("http://", "https://"))  # the double speaks plain HTTP
    assert main([*ARGV, "--hub-retries", "0", "--hub-timeout", "5"]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "TLS with Beaker hub 'https://127.0.0.1:" in err and "CA_CERT" in err
    assert fake_hub.state.calls == []


def test_oauth2_login_is_supported_through_the_real_client(
    fake_hub: FakeBeakerHub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    conf = tmp_path / "client.conf"
    conf.write_text(
        f'HUB_URL = "{fake_hub.url}"\nAUTH_METHOD = "oauth2"\n'
        f'ACCESS_TOKEN = "{fake_hub.state.access_token}"\n'
    )
    monkeypatch.setenv("BEAKER_CLIENT_CONF", str(conf))
    assert main(ARGV) == ExitCode.OK
    assert capsys.readouterr().out == "J:1234\n"
    assert fake_hub.state.calls == ["auth.login_oauth2", "jobs.upload"]
    assert fake_hub.state.access_token not in fake_hub.state.uploads[0]


def test_anonymous_upload_refused_by_the_hub_is_reported(
    fake_hub: FakeBeakerHub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    conf = tmp_path / "client.conf"
    conf.write_text(f'HUB_URL = "{fake_hub.url}"\nAUTH_METHOD = "none"\n')
    monkeypatch.setenv("BEAKER_CLIENT_CONF", str(conf))
    assert main(ARGV) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "rejected the job: Anonymous access denied" in err
    assert fake_hub.state.calls == ["jobs.upload"]


def test_a_hub_that_trickles_bytes_cannot_hold_the_submission(tmp_path: Path, trickling_server: str) -> None:
    conf = write_client_conf(tmp_path / "client.conf", f"http://{trickling_server}")
    settings = HubSettings(timeout_s=1.0, retries=0)
    start = time.monotonic()
    with pytest.raises(SubmitError, match="Timed out after"):
        submit_job(
            "<job/>", settings, load_client_config({"BEAKER_CLIENT_CONF": str(conf), "HOME": str(tmp_path)})
        )
    assert time.monotonic() - start < 2 * settings.worst_case_s + 1.0
