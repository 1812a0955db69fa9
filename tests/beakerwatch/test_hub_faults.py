"""A hub that is down, flaky or slow: bounded retries with backoff, then exit 2 with every job id kept."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from beakerwatch.cli import main
from ovsperf_common.exitcodes import ExitCode
from tests.beakerwatch.conftest import SCENARIO, TS, Lab, results_tarball
from tests.jobcreator.conftest import write_client_conf


def _tracked(lab: Lab, count: int = 2) -> list[str]:
    jobs = [lab.submit() for _ in range(count)]
    assert lab.track(*jobs) == ExitCode.OK
    for job in jobs:
        lab.finish(job, results_tarball(lab.tmp / job.j_id.replace(":", "")))
    return [job.j_id for job in jobs]


def test_unreachable_hub_retries_then_exits_2_keeping_the_ids(
    lab: Lab, closed_port_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = _tracked(lab)
    before = lab.state.read_bytes()
    monkeypatch.setenv("BEAKER_CLIENT_CONF", str(write_client_conf(lab.tmp / "down.conf", closed_port_url)))
    capsys.readouterr()
    started = time.monotonic()
    assert lab.collect() == ExitCode.ERROR
    elapsed = time.monotonic() - started
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("retrying in") == 2  # --hub-retries 2: three attempts, two pauses
    assert "failed 3 time(s)" in err and "Connection refused" in err
    assert f"Still tracked for the next pass: {', '.join(ids)}." in err
    assert elapsed < 10
    assert lab.state.read_bytes() == before  # every job id kept, untouched
    assert lab.deliveries() == []
    # The next pass, with the hub back, collects both.
    monkeypatch.setenv("BEAKER_CLIENT_CONF", str(lab.conf))
    assert lab.collect() == ExitCode.OK
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_hub_answering_503_then_recovering(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    _tracked(lab, 1)
    lab.hub.state.fail_requests(2, "503")
    capsys.readouterr()
    assert lab.collect() == ExitCode.OK
    out, err = capsys.readouterr()
    assert err.count("503 Service Unavailable") == 2 and err.count("retrying in") == 2
    assert out.split("\t")[2] == "delivered"


def test_hub_dropping_connections_exits_2(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    ids = _tracked(lab, 1)
    lab.hub.state.fail_requests(100, "drop")
    before = lab.state.read_bytes()
    assert lab.collect() == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "failed 3 time(s)" in err and ids[0] in err
    assert lab.state.read_bytes() == before


def test_slow_hub_within_the_timeout_is_waited_for(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    _tracked(lab, 1)
    lab.hub.state.delay_s = 0.2
    assert lab.collect() == ExitCode.OK
    assert capsys.readouterr().out.count("\tdelivered\t") == 1


def test_hub_slower_than_the_timeout_exits_2(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    ids = _tracked(lab, 1)
    lab.hub.state.delay_s = 1.0
    before = lab.state.read_bytes()
    started = time.monotonic()
    assert lab.collect("--hub-timeout-s", "0.3") == ExitCode.ERROR
    assert time.monotonic() - started < 5
    err = capsys.readouterr().err
    assert "Timed out after 0.3 s" in err and ids[0] in err
    assert lab.state.read_bytes() == before


def test_trickling_hub_is_cut_off_by_the_call_limit(
    lab: Lab, trickling_server: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hub sending one byte every 0.3 s never trips a socket timeout; the per-call limit still ends it."""
    _tracked(lab, 1)
    before = lab.state.read_bytes()
    conf = write_client_conf(lab.tmp / "slow.conf", f"http://{trickling_server}")
    monkeypatch.setenv("BEAKER_CLIENT_CONF", str(conf))
    started = time.monotonic()
    assert lab.collect("--hub-timeout-s", "0.5", "--hub-retries", "1") == ExitCode.ERROR
    assert time.monotonic() - started < 5
    assert "failed 2 time(s)" in capsys.readouterr().err
    assert lab.state.read_bytes() == before


def test_download_failing_transiently_keeps_the_job(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    """The hub answers, the log server does not: no delivery, no staging left, the job stays tracked."""
    ids = _tracked(lab, 1)
    original = lab.hub.state.serve_file

    def refuse(path: str) -> bytes | None:
        lab.hub.state.fail_requests(1, "503")  # the next request (this GET's retry) fails too
        raise ConnectionResetError("log server went away")

    lab.hub.state.serve_file = refuse  # type: ignore[method-assign]
    assert lab.collect() == ExitCode.ERROR
    lab.hub.state.serve_file = original  # type: ignore[method-assign]
    lab.hub.state.fail_requests(0)
    err = capsys.readouterr().err
    assert "Download of" in err and ids[0] in err
    assert lab.deliveries() == []
    assert json.loads(lab.state.read_text())["jobs"][0]["state"] == "tracked"
    assert lab.collect() == ExitCode.OK
    assert lab.deliveries() == [f"J{ids[0][2:]}-{SCENARIO}-{TS}"]


def test_missing_client_configuration_is_a_clear_error(
    lab: Lab, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _tracked(lab, 1)
    monkeypatch.setenv("BEAKER_CLIENT_CONF", str(tmp_path / "nope.conf"))
    assert lab.collect() == ExitCode.ERROR
    assert "BEAKER_CLIENT_CONF names" in capsys.readouterr().err
    assert main(["status", "--state", str(lab.state)]) == ExitCode.OK  # status needs no hub


def test_hub_sending_a_gzip_bomb_fails_the_pass_without_inflating_it(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """128 KiB of gzip inflating to 128 MiB: the parser stops at MAX_REPLY_BYTES (16 MiB), the pass
    exits 2 naming the hub and the size, and the job is still tracked."""
    import resource

    ids = _tracked(lab, 1)
    before = lab.state.read_bytes()
    rss_before_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    lab.hub.state.fail_requests(1, "gzip-bomb")
    capsys.readouterr()
    assert lab.collect() == ExitCode.ERROR
    out, err = capsys.readouterr()
    assert out == ""
    assert "the reply is larger than 16777216 bytes (inflated)" in err and ids[0] in err
    assert lab.state.read_bytes() == before
    # The expat parser holds what it was fed (≤ 16 MiB + 1 KiB); the other 112 MiB never arrived.
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before_kib) / 1024
    assert grown_mib < 100, f"peak RSS grew {grown_mib:.0f} MiB"
    assert lab.collect() == ExitCode.OK  # the hub is sane again: the next pass delivers


def test_cap_replies_keeps_the_transport_class_and_counts_inflated_bytes() -> None:
    import xmlrpc.client

    from beakerwatch.hub import cap_replies

    transport = xmlrpc.client.Transport()
    cap_replies(transport, limit=10)
    assert isinstance(transport, xmlrpc.client.Transport) and type(transport).__name__ == "CappedTransport"
    parser, _ = transport.getparser()
    parser.feed(b"<?xml ")
    with pytest.raises(xmlrpc.client.ResponseError, match="larger than 10 bytes"):
        parser.feed(b"version='1.0'?>")


def test_a_big_compressed_body_is_refused_before_it_is_read_whole() -> None:
    """The standard library reads a gzip body whole before inflating: the cap counts the bytes as sent."""
    import io
    import os
    import xmlrpc.client
    import zlib

    from beakerwatch.hub import cap_replies

    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    body = packer.compress(os.urandom(50_000)) + packer.flush()  # random data: stays ~50 kB compressed

    class Response:
        def __init__(self) -> None:
            self.stream = io.BytesIO(body)
            self.asked: list[int | None] = []

        def getheader(self, name: str, default: str | None = None) -> str | None:
            return "gzip" if name == "Content-Encoding" else default

        def read(self, amount: int | None = None) -> bytes:
            self.asked.append(amount)
            return self.stream.read(amount)

        def close(self) -> None:
            pass

    first, second = xmlrpc.client.Transport(), xmlrpc.client.Transport()
    cap_replies(first, limit=10_000)
    cap_replies(second, limit=10_000)
    assert type(first) is type(second) and first.accept_gzip_encoding is False
    response = Response()
    with pytest.raises(xmlrpc.client.ResponseError, match="larger than 10000 bytes \\(as sent\\)"):
        first.parse_response(response)
    assert response.stream.tell() <= 10_001  # never more than the limit (+1 to see it passed) was read
