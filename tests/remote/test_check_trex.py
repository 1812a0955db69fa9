"""``ovsperf-remote check --trex``: a TRex server's version and ports, through TRex's own client.

The server is the protocol stand-in of ``tests/ovsperf_lab/trex_standin.py`` (not a real TRex);
the client is PyPI ``lbr-trex-client``, in its child process as the check runs it.
"""

from __future__ import annotations

import pytest

from ovsperf_common.trexclient import TrexServer
from remote.check import Outcome, check_trex, render_table
from remote.cli import main
from tests.ovsperf_lab.trex_standin import TrexStandin

pytestmark = pytest.mark.timeout(120)


def test_check_reports_the_version_and_every_port() -> None:
    with TrexStandin(owners={1: "alice"}) as standin:
        server = TrexServer("127.0.0.1", standin.sync_port, async_port=standin.async_port, timeout_s=10.0)
        rows = check_trex(server)
        assert "acquire" not in standin.calls  # asked, nothing taken
    address = f"127.0.0.1:{standin.sync_port}"
    assert [(r.host, r.role, r.check, r.outcome) for r in rows] == [
        (address, "tg", "trex", Outcome.PASS),
        (address, "tg", "trex port 0", Outcome.PASS),
        (address, "tg", "trex port 1", Outcome.PASS),
    ]
    assert rows[0].detail == "TRex v3.04 on trex-standin (client lbr-trex-client 3.4.0, STL API 5.1)"
    assert rows[1].detail == "0000:00:00.0 02:00:00:00:00:00 10000 Mb/s, link up, owner -, net_standin"
    assert rows[2].detail == "0000:00:01.0 02:00:00:00:00:01 10000 Mb/s, link up, owner alice, net_standin"
    assert "trex port 1  PASS    0000:00:01.0" in render_table(rows)


def test_check_fails_on_another_major_version_naming_both() -> None:
    with TrexStandin(version="v4.01") as standin:
        rows = check_trex(
            TrexServer("127.0.0.1", standin.sync_port, async_port=standin.async_port, timeout_s=10.0)
        )
    assert [(r.check, r.outcome) for r in rows] == [("trex", Outcome.FAIL)]
    assert "'v4.01'" in rows[0].detail and "lbr-trex-client 3.4.0, STL API 5.1" in rows[0].detail
    assert "TRex v2.x or v3.x only" in rows[0].detail


def test_check_takes_vsperf_s_pinned_major_2() -> None:
    """VSperf pins TRex v2.86: the check of a VSperf TG passes it (the lab's backend keeps to v3.x)."""
    with TrexStandin(version="v2.86") as standin:
        server = TrexServer("127.0.0.1", standin.sync_port, async_port=standin.async_port, timeout_s=10.0)
        rows = check_trex(server)
    assert (rows[0].check, rows[0].outcome) == ("trex", Outcome.PASS)
    assert rows[0].detail.startswith("TRex v2.86 on trex-standin")
    assert server.majors == (3,)  # the caller's server, as the lab builds it, is unchanged


def test_the_command_prints_the_trex_rows(capsys: pytest.CaptureFixture[str], tmp_path: object) -> None:
    with TrexStandin() as standin:
        code = main(
            [
                "check", "--tg", "127.0.0.1:1", "--dut", "127.0.0.1:1", "--connect-timeout", "2",
                "--trex", f"127.0.0.1:{standin.sync_port}", "--trex-async-port", str(standin.async_port),
            ]
        )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 2  # nothing listens on 127.0.0.1:1 for the SSH rows
    lines = [line for line in out.splitlines() if " trex" in line]
    assert len(lines) == 3 and "PASS    TRex v3.04 on trex-standin" in lines[0], out
