"""The 'testpmd' backend's text side: answer parsers, the console's checks and its output buffer.

The answers are what DPDK 22.11's testpmd printed in a real session (``dpdk`` 22.11.11, Debian 12);
the console tests run real processes (a Python child that prints like a runaway or silent
testpmd) through :class:`DpdkProcess`, which kills them by PID.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ovsperf_common.deadline import Deadline
from ovsperf_lab.errors import TrafficGeneratorError
from ovsperf_lab.generators import testpmd_console
from ovsperf_lab.generators.process import DpdkProcess
from ovsperf_lab.generators.testpmd import PROCESS, FlowgenConfig
from ovsperf_lab.generators.testpmd_console import MAX_BUFFER_CHARS, PROMPT, Console, _Output, answer_of
from ovsperf_lab.generators.testpmd_text import check_started, error_lines, excerpt, forward_refused

STOP = """Telling cores to stop...
Waiting for lcores to finish...

  ---------------------- Forward statistics for port 0  ----------------------
  RX-packets: 778112         RX-dropped: 0             RX-total: 778112
  TX-packets: 779168         TX-dropped: 5603808       TX-total: 6382976
  ----------------------------------------------------------------------------

  ---------------------- Forward statistics for port 1  ----------------------
  RX-packets: 778112         RX-dropped: 0             RX-total: 778112
  TX-packets: 779136         TX-dropped: 5603840       TX-total: 6382976
  ----------------------------------------------------------------------------

  +++++++++++++++ Accumulated forward statistics for all ports+++++++++++++++
  RX-packets: 1556224        RX-dropped: 0             RX-total: 1556224
  TX-packets: 1558304        TX-dropped: 11207648      TX-total: 12765952
  ++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++

Done.
"""

START = """flowgen packet forwarding - ports=2 - cores=1 - streams=2 - NUMA support enabled, MP allocation \
mode: native
Logical Core 1 (socket 0) forwards packets on 2 streams:
  RX P=0/Q=0 (socket 0) -> TX P=1/Q=0 (socket 0) peer=02:00:00:00:00:01
  number of flows for port 0: 1
"""


def test_stop_without_both_ports_forward_statistics_is_an_error() -> None:
    assert forward_refused(STOP) == {0: 5603808, 1: 5603840}
    # Before the fix an answer without the blocks gave {} and the full-load check was skipped.
    with pytest.raises(
        TrafficGeneratorError,
        match=r"answer to 'stop' has the forward statistics of ports \[\], not 0 and 1: "
        r"'Packet forwarding not started'\.",
    ):
        forward_refused("Packet forwarding not started\n")
    only_port_0 = STOP[: STOP.index("  ---------------------- Forward statistics for port 1")]
    with pytest.raises(TrafficGeneratorError, match=r"of ports \[0\], not 0 and 1"):
        forward_refused(only_port_0)
    with pytest.raises(TrafficGeneratorError, match="has no 'TX-dropped'"):
        forward_refused(STOP.replace("TX-dropped", "TX-lost"))


def test_quoted_answers_are_bounded_and_escaped() -> None:
    with pytest.raises(TrafficGeneratorError) as caught:
        forward_refused("\x1b[31mboom\x00\n" + "x" * 1000)
    message = str(caught.value)
    assert "\\x1b[31mboom\\x00\\n" in message and "\x1b" not in message and "\x00" not in message
    assert "(+711 characters)" in message and len(message) < 500
    assert excerpt("  short\n") == "'short'"


def test_start_must_say_that_forwarding_runs_in_the_mode_asked() -> None:
    check_started(START, "flowgen")
    with pytest.raises(
        TrafficGeneratorError, match="did not start rxonly forwarding; its answer to 'start': 'flowgen"
    ):
        check_started(START, "rxonly")
    with pytest.raises(
        TrafficGeneratorError, match=r"did not start flowgen .* 'Packet forwarding already started'"
    ):
        check_started("Packet forwarding already started\n", "flowgen")


def test_answers_need_their_echo_and_no_error_line(caplog: pytest.LogCaptureFixture) -> None:
    assert answer_of("set fwd flowgen", "set fwd flowgen\nSet flowgen packet forwarding mode\n") == (
        "Set flowgen packet forwarding mode\n"
    )
    caplog.set_level("INFO", logger=testpmd_console.__name__)
    event = "\nPort 0: link state change event\nstart\n" + START
    assert answer_of("start", event) == START  # an event line before the echo is skipped, and logged
    assert (
        "Skipped testpmd output before the echo of 'start': 'Port 0: link state change event'" in caplog.text
    )
    with pytest.raises(TrafficGeneratorError, match=r"has no echo of 'stop': 'start\\nflowgen packet"):
        answer_of("stop", "start\n" + START)  # before the fix: the whole output was taken silently
    for command, answer, line in (
        ("set fwd bogus", "Bad arguments\n", "Bad arguments"),
        ("bogus", "Command not found\n", "Command not found"),
        ("set txpkts 0", "total packet length=0 < 42 - give up\n", "total packet length=0 < 42 - give up"),
        ("start", "Not all ports were started\n", "Not all ports were started"),
        ("stop", "Packet forwarding not started\n", "Packet forwarding not started"),
        ("clear port stats 7", "Invalid port 7\n", "Invalid port 7"),
    ):
        with pytest.raises(TrafficGeneratorError, match=rf"testpmd refused '{command}': '{line}'"):
            answer_of(command, f"{command}\n{answer}")
    assert error_lines(STOP) == [] and error_lines(START) == []


def test_the_output_buffer_is_capped_and_searched_from_where_it_stopped() -> None:
    out = _Output()
    out.buffer = "show port info all\nInfos for port 0\n" + "testpmd"
    assert out.take_answer() is None and out.scanned == len(out.buffer)
    out.buffer += "> rest"  # the prompt across two reads is found
    assert out.take_answer() == "show port info all\nInfos for port 0\n"
    assert (out.buffer, out.scanned) == ("rest", 0)
    read, write = os.pipe()
    pump = threading.Thread(target=out.pump, args=(read, 0))
    pump.start()
    with os.fdopen(write, "wb") as pipe:
        pipe.write(b"x" * (MAX_BUFFER_CHARS + 10) + PROMPT.encode())
    pump.join(10)
    os.close(read)
    assert out.overflow and out.eof and len(out.buffer) <= MAX_BUFFER_CHARS


def _child(tmp_path: Path, code: str) -> DpdkProcess:
    """Start a Python child driven as testpmd is (its kind and configuration), for the console's waits."""
    config = FlowgenConfig(
        sockets=(tmp_path / "a.sock", tmp_path / "b.sock"),
        cpu=0,
        file_prefix="h9-none",
        hugepage_dir=tmp_path,
        runtime_dir=tmp_path,
    )
    return DpdkProcess(
        [sys.executable, "-c", code], PROCESS, config, program=sys.executable, file_prefix="h9-none"
    )


def test_a_runaway_testpmd_is_killed_at_the_buffer_cap(tmp_path: Path) -> None:
    process = _child(
        tmp_path, "import sys, time; sys.stdout.write('x' * (1 << 21)); sys.stdout.flush(); time.sleep(60)"
    )
    try:
        with pytest.raises(
            TrafficGeneratorError,
            match=rf"printed more than {MAX_BUFFER_CHARS} characters without a prompt while start-up; "
            "testpmd was killed",
        ):
            Console(process, 5.0).until_prompt(Deadline.in_seconds(20.0, "the prompt"), "start-up")
        assert process.returncode == -signal.SIGKILL and process.stopped
    finally:
        process.stop()


def test_a_long_wait_for_the_prompt_logs_progress_then_kills(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(testpmd_console, "PROGRESS_EVERY_S", 0.3)
    caplog.set_level("INFO", logger=testpmd_console.__name__)
    process = _child(tmp_path, "import time; time.sleep(60)")
    try:
        with pytest.raises(
            TrafficGeneratorError, match=r"Timed out after 1\.\d s waiting for the prompt; testpmd was killed"
        ):
            Console(process, 5.0).until_prompt(Deadline.in_seconds(1.0, "the prompt"), "start-up")
        progress = [
            r.getMessage()
            for r in caplog.records
            if r.getMessage().startswith("Still waiting for the prompt")
        ]
        assert len(progress) == 3, progress  # at 0.3, 0.6 and 0.9 s
        assert process.returncode == -signal.SIGKILL
    finally:
        process.stop()


def test_importing_the_api_loads_no_backend() -> None:
    code = (
        "import sys, ovsperf_lab.generators.api; print(sorted(m for m in sys.modules if '.generators' in m))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['ovsperf_lab.generators', 'ovsperf_lab.generators.api']"


def test_full_load_above_an_assumed_line_rate_is_valid_only_without_a_link_speed() -> None:
    """virtio_user ports report no speed: full load past the 10 GbE the lab assumes is the virtual
    path's MRR (valid); a port with a real speed cannot send faster than its line, so counters
    saying so make the trial invalid."""
    from ovsperf_lab.generators.testpmd_text import PortStats
    from ovsperf_lab.generators.testpmd_trial import trial_result
    from ovsperf_lab.model import TrialSpec

    spec = TrialSpec(frame_size_bytes=1518, rate_pps=812_743.8, duration_s=1.0, drain_s=0.5)
    end = {
        p: PortStats(rx_packets=1_900_000, tx_packets=2_000_000, tx_bytes=2_000_000 * 1514) for p in (0, 1)
    }
    refused = {0: 5, 1: 7}
    virtual = trial_result(spec, end, 1.0, 0, refused, line_rate_known=False)
    assert virtual.valid and virtual.invalid_reason is None
    assert virtual.tx_pps == pytest.approx(4_000_000) and virtual.rx_pps == pytest.approx(3_800_000)
    physical = trial_result(spec, end, 1.0, 0, refused, line_rate_known=True)
    assert not physical.valid
    assert physical.invalid_reason is not None
    assert (
        "port 0 sent 2000000 pps, above the requested 812744 pps (testpmd cannot pace)"
        in physical.invalid_reason
    )
