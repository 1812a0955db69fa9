"""The 'testpmd' backend: dpdk-testpmd flowgen as an MRR generator through a real sandboxed OVS P2P.

The real tests start the lab's own OVS sandbox (``conftest.ovs``), build the P2P topology and
start the backend the way ``ovsperf-lab compare`` does (``testpmd_generator.start`` of a
``GeneratorRequest``); a few seconds of traffic each.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ovsperf_catalog.model import Topology
from ovsperf_common.framemix import BUILTIN_MIXES
from ovsperf_lab import topology
from ovsperf_lab.cli import main
from ovsperf_lab.crosscheck import ABSOLUTE_TOLERANCE, RELATIVE_TOLERANCE, CrossCheckedGenerator
from ovsperf_lab.errors import LabError, TrafficGeneratorError
from ovsperf_lab.generators import testpmd as testpmd_generator
from ovsperf_lab.generators.api import GeneratorRequest
from ovsperf_lab.generators.registry import GENERATORS
from ovsperf_lab.generators.testpmd import FlowgenConfig, FlowgenGenerator
from ovsperf_lab.generators.testpmd_text import parse_port_info, parse_port_stats
from ovsperf_lab.model import TrialSpec
from ovsperf_lab.ovs import OvsSandbox
from ovsperf_lab.state import LabRunState, dpdk_leftovers

# What DPDK 22.11's testpmd printed (a real session, trimmed to the parsed part).
PORT_INFO = """
********************* Infos for port 0  *********************
MAC address: FA:EF:D1:39:93:60
Device name: net_virtio_user0
Link status: up
Link speed: Unknown
Link duplex: full-duplex

********************* Infos for port 1  *********************
MAC address: 46:44:40:12:21:63
Device name: net_virtio_user1
Link status: down
Link speed: 25 Gbps
"""

PORT_STATS = """
  ######################## NIC statistics for port 0  ########################
  RX-packets: 233568     RX-missed: 0          RX-bytes:  14014080
  RX-errors: 0
  RX-nombuf:  0
  TX-packets: 233888     TX-errors: 0          TX-bytes:  14033280
  ############################################################################

  ######################## NIC statistics for port 1  ########################
  RX-packets: 233632     RX-missed: 0          RX-bytes:  14017920
  RX-errors: 0
  RX-nombuf:  0
  TX-packets: 233792     TX-errors: 0          TX-bytes:  14027520
  ############################################################################
"""


def test_testpmd_answers_are_parsed() -> None:
    p0, p1 = parse_port_info(PORT_INFO, 2048, 1024)
    assert (p0.index, p0.mac, p0.link_up, p0.link_speed_mbps) == (0, "fa:ef:d1:39:93:60", True, None)
    assert (p1.index, p1.link_up, p1.link_speed_mbps) == (1, False, 25_000)
    assert (p0.rx_descriptors, p0.tx_descriptors) == (2048, 1024)
    stats = parse_port_stats(PORT_STATS)
    assert (stats[0].rx_packets, stats[0].tx_packets, stats[0].tx_bytes) == (233568, 233888, 14033280)
    assert stats[1].tx_bytes == 233792 * 60  # 64 B frames: 60 B without the FCS
    with pytest.raises(TrafficGeneratorError, match="shows no port"):
        parse_port_stats("testpmd: unknown command\n")
    with pytest.raises(TrafficGeneratorError, match="has no 'TX-bytes'"):
        parse_port_stats(PORT_STATS.replace("TX-bytes", "TX-octets"))


def test_command_line_is_no_pci_flowgen_with_a_double_rx_ring(tmp_path: Path) -> None:
    config = FlowgenConfig(
        sockets=(tmp_path / "a.sock", tmp_path / "b.sock"), cpu=1, file_prefix="p", ring_size=1024
    )
    argv = config.command(flows=8)
    assert argv[:3] == ["stdbuf", "-o0", "dpdk-testpmd"]
    assert "--no-pci" in argv and "--in-memory" in argv and "-i" in argv
    assert "--auto-start" not in argv
    assert {"--forward-mode=flowgen", "--flowgen-flows=8", "--rxd=2048", "--txd=1024"} <= set(argv)
    assert f"net_virtio_user0,path={tmp_path / 'a.sock'},server=1,queues=1,queue_size=2048" in argv
    assert (
        FlowgenConfig(sockets=config.sockets, cpu=1, file_prefix="p", ring_size=32768).rx_ring_size() == 32768
    )
    with pytest.raises(TrafficGeneratorError, match="Field 'ring_size' must be in"):
        FlowgenConfig(sockets=config.sockets, cpu=1, file_prefix="p", ring_size=8)


def test_the_registry_has_both_backends_and_testpmd_cannot_pace() -> None:
    assert list(GENERATORS) == ["trafficgen", "testpmd", "trex"]
    backend = GENERATORS["testpmd"]
    assert backend is testpmd_generator.BACKEND and backend.paced is False
    found = backend.readiness()
    assert found.ready and found.detail.endswith("/dpdk-testpmd") and found.fix is None
    lay = topology.layout(Topology.P2P, Path("/nonexistent"))
    with pytest.raises(LabError, match=r"Field 'flows' must be an integer in \[1, 1048576\], got 0"):
        GeneratorRequest(
            lay.attachments(), cpu=0, file_prefix="p", memory_mb=64, queues=1, ring_size=64, flows=0
        )


@pytest.fixture
def p2p(ovs: OvsSandbox, run_state: LabRunState) -> topology.Layout:
    lay = topology.layout(Topology.P2P, run_state.run_dir / "sock")
    topology.build(ovs, lay, 1)
    return lay


def _request(state: LabRunState, lay: topology.Layout) -> GeneratorRequest:
    return GeneratorRequest(
        ports=lay.attachments(),
        cpu=sorted(os.sched_getaffinity(0))[0],
        file_prefix=state.new_file_prefix("tg"),
        memory_mb=128,
        queues=1,
        ring_size=1024,
    )


def _close(a: int, b: int) -> bool:
    return abs(a - b) <= max(ABSOLUTE_TOLERANCE, RELATIVE_TOLERANCE * max(a, b))


@pytest.fixture
def flowgen(run_state: LabRunState, p2p: topology.Layout) -> Iterator[FlowgenGenerator]:
    gen = testpmd_generator.start(_request(run_state, p2p))
    assert isinstance(gen, FlowgenGenerator)
    try:
        yield gen
    finally:
        gen.close()
    assert gen.returncode is not None
    assert dpdk_leftovers(gen.file_prefix) == []


@pytest.mark.dpdk
def test_mrr_trial_counts_agree_with_ovs(ovs: OvsSandbox, flowgen: FlowgenGenerator) -> None:
    ports = flowgen.wait_link(timeout_s=10)
    assert [p.link_up for p in ports] == [True, True] and all(len(p.mac) == 17 for p in ports)
    assert [p.link_speed_mbps for p in ports] == [None, None]  # virtio_user reports no speed
    checked = CrossCheckedGenerator(flowgen, ovs, ovs.bridge, (1, 2))
    full = flowgen.full_load_pps(64)
    assert full == pytest.approx(14_880_952.38)
    for spec in (
        TrialSpec(frame_size_bytes=64, rate_pps=full, duration_s=1.0, drain_s=0.5),
        TrialSpec(frame_size_bytes=1518, rate_pps=flowgen.full_load_pps(1518), duration_s=1.0, drain_s=0.5),
    ):
        result = checked.run_trial(spec)
        assert [(d.tx_port, d.rx_port) for d in result.directions] == [(0, 1), (1, 0)]
        for d in result.directions:
            assert d.tx_packets > 0 and 0 < d.rx_packets <= d.tx_packets
            assert d.tx_duration_s == pytest.approx(spec.duration_s, abs=0.05)
            assert d.latency_avg_ns is None
        assert result.rx_pps > 0 and result.valid, result.invalid_reason
        check = checked.last
        assert check is not None and check.ok, check.mismatches
        assert result.generator_counters is not None and result.generator_counters.warmup_tx_packets == 0
        d0, d1 = result.directions  # generator port p sends direction p and receives the other one
        assert _close(check.ovs_rx_packets[0] or 0, d0.tx_packets)
        assert _close(check.ovs_rx_packets[1] or 0, d1.tx_packets)
        assert _close(check.ovs_tx_packets[1] or 0, d0.rx_packets)
        assert _close(check.ovs_tx_packets[0] or 0, d1.rx_packets)
        assert check.ovs_tx_dropped == {0: 0, 1: 0}  # the generator's RX kept up, also while draining
    # A warm-up is a burst of its own: OVS saw its frames, the trial's counts do not hold them.
    before = ovs.port_counters(ovs.bridge)
    result = flowgen.run_trial(TrialSpec(64, full, duration_s=1.0, warmup_s=0.5, drain_s=0.5))
    after = ovs.port_counters(ovs.bridge)
    assert result.generator_counters is not None
    warmup = result.generator_counters.warmup_tx_packets
    into_ovs = sum((after[p].rx_packets or 0) - (before[p].rx_packets or 0) for p in (1, 2))
    assert warmup > 0 and _close(into_ovs, result.tx_packets + warmup)
    assert all(0 < d.rx_packets <= d.tx_packets for d in result.directions)
    # Another flow count is refused (--flowgen-flows is a start option): the PID the run tracks stays.
    pid = flowgen.pid
    with pytest.raises(TrafficGeneratorError, match=r"Field 'flows': .* runs 1 flow\(s\) per port .* got 4"):
        flowgen.run_trial(TrialSpec(64, full, duration_s=1.0, flows=4, drain_s=0.5))
    assert flowgen.flows == 1 and flowgen.pid == pid and flowgen.returncode is None


@pytest.mark.dpdk
def test_what_testpmd_cannot_do_is_refused(flowgen: FlowgenGenerator) -> None:
    flowgen.wait_link(timeout_s=10)
    full = flowgen.full_load_pps(64)
    with pytest.raises(TrafficGeneratorError, match=r"Field 'frame_size_bytes': .* not the mix 'imix'"):
        flowgen.run_trial(TrialSpec(BUILTIN_MIXES["imix"], rate_pps=full, duration_s=1.0))
    with pytest.raises(TrafficGeneratorError, match=r"Field 'rate_pps': .* cannot pace"):
        flowgen.run_trial(TrialSpec(64, rate_pps=full / 2, duration_s=1.0))
    with pytest.raises(TrafficGeneratorError, match="Field 'bidirectional'"):
        flowgen.run_trial(TrialSpec(64, rate_pps=full, duration_s=1.0, bidirectional=False))
    with pytest.raises(TrafficGeneratorError, match=r"Field 'frame_size_bytes': .* at most 1518 B"):
        flowgen.run_trial(TrialSpec(9000, rate_pps=1e9, duration_s=1.0, jumbo=True))
    with pytest.raises(TrafficGeneratorError, match=r"Field 'flows': .* got 2; start it with"):
        flowgen.run_trial(TrialSpec(64, rate_pps=full, duration_s=1.0, flows=2))
    # Every answer is checked for testpmd's error lines, the real ones quoted.
    with pytest.raises(TrafficGeneratorError, match=r"testpmd refused 'set fwd bogus': 'Bad arguments'"):
        flowgen._exchange("set fwd bogus")
    with pytest.raises(TrafficGeneratorError, match=r"refused 'set txpkts 0': 'total packet length=0 < 42"):
        flowgen._exchange("set txpkts 0")
    assert flowgen.returncode is None  # a refusal leaves testpmd running


@pytest.mark.dpdk
def test_a_refused_start_is_an_error_and_a_long_link_wait_logs_progress(
    flowgen: FlowgenGenerator, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    flowgen.wait_link(timeout_s=10)
    flowgen._exchange("port stop all")  # links go down; 'start' answers 'Not all ports were started'
    monkeypatch.setattr(testpmd_generator, "PROGRESS_EVERY_S", 0.3)
    caplog.set_level("INFO", logger=testpmd_generator.__name__)
    with pytest.raises(TrafficGeneratorError, match=r"Port 0 link still down after 1\.0 s"):
        flowgen.wait_link(timeout_s=1.0)
    progress = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Still waiting for")]
    assert 2 <= len(progress) <= 4, progress
    assert all(f"testpmd PID {flowgen.pid}'s links to come up (port 0 down)" in m for m in progress)
    with pytest.raises(TrafficGeneratorError, match=r"testpmd refused 'start': 'Not all ports were started'"):
        flowgen._send(0.2, 0.1)  # before the fix, a trial without forwarding was counted as valid
    assert flowgen.returncode is None


@pytest.mark.dpdk
def test_hung_or_killed_testpmd_is_an_error_within_its_deadline(
    run_state: LabRunState, p2p: topology.Layout
) -> None:
    request = _request(run_state, p2p)
    config = FlowgenConfig(
        sockets=request.sockets(), cpu=request.cpu, file_prefix=request.file_prefix, reply_margin_s=2.0
    )
    hung = FlowgenGenerator(config, flows=4)
    try:
        hung.wait_link(timeout_s=10)
        assert hung.flows == 4
        assert "--flowgen-flows=4" in Path(f"/proc/{hung.pid}/cmdline").read_bytes().decode().split("\0")
        os.kill(hung.pid or 0, signal.SIGSTOP)  # alive, answers nothing
        started = time.monotonic()
        with pytest.raises(
            TrafficGeneratorError,
            match=r"Timed out after 2\.\d s waiting for testpmd PID \d+ to answer .*; testpmd was killed",
        ):
            hung.ports()
        assert time.monotonic() - started < 2.0 + 5.0
        assert hung.returncode == -signal.SIGKILL
        assert dpdk_leftovers(config.file_prefix) == []
        with pytest.raises(TrafficGeneratorError, match="already closed"):
            hung.ports()
    finally:
        hung.close()
    killed = FlowgenGenerator(
        FlowgenConfig(sockets=config.sockets, cpu=config.cpu, file_prefix=config.file_prefix)
    )
    try:
        killed.wait_link(timeout_s=10)
        killer = threading.Timer(0.3, lambda: os.kill(killed.pid or 0, signal.SIGKILL))
        killer.start()
        started = time.monotonic()
        with pytest.raises(TrafficGeneratorError, match=r"testpmd PID \d+ exited \(code -9\)"):
            killed.run_trial(TrialSpec(64, rate_pps=killed.full_load_pps(64), duration_s=1.0, drain_s=0.2))
        killer.cancel()
        assert time.monotonic() - started < 1.0 + 5.0
        assert killed.returncode == -signal.SIGKILL
        assert dpdk_leftovers(config.file_prefix) == []
    finally:
        killed.close()


@pytest.mark.dpdk
@pytest.mark.slow
def test_compare_with_testpmd_end_to_end(
    tmp_path: Path, state_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["--state-dir", str(state_root), "compare", "--config", "OVS_DPDK1q", "--b", "system",
         "--generator", "testpmd", "--rounds", "2", "--min-rounds", "2", "--trial-duration", "1",
         "--seed", "3", "--output", str(tmp_path), "--no-progress"]
    )  # fmt: skip
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    assert code in (0, 1), (out, captured.err)
    [page] = out
    assert Path(page).is_file() and Path(page).name == "index.html"
    rounds = (Path(page).parent / "rounds.csv").read_text().splitlines()
    assert len(rounds) == 1 + 4
    assert all(float(line.split(",")[3]) > 0 for line in rounds[1:])  # every MRR measured
    assert list(state_root.iterdir()) == []


def test_run_refuses_testpmd_and_doctor_lists_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--config", "OVS_DPDK1q", "--generator", "testpmd", "--output", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert "'testpmd' cannot hold an offered load below its maximum" in captured.err
    main(["doctor"])
    doctor = capsys.readouterr().out
    assert "[ok  ] traffic generator 'testpmd': " in doctor
    assert "traffic generator 'trafficgen': " in doctor


def test_a_start_with_a_port_missing_is_tried_once_more_then_raised(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # DPDK's eth_virtio_dev_init fails now and then after OVS connected: testpmd comes up with one port.
    starts: list[int] = []
    outcomes: list[object] = [testpmd_generator.PortMissingError("testpmd PID 7 has 1 ports, not 2."), "gen"]

    def flowgen(config: testpmd_generator.FlowgenConfig, flows: int) -> object:
        starts.append(flows)
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    monkeypatch.setattr(testpmd_generator, "FlowgenGenerator", flowgen)
    lay = topology.layout(Topology.P2P, Path("/nonexistent"))
    request = GeneratorRequest(
        lay.attachments(), cpu=0, file_prefix="p", memory_mb=64, queues=1, ring_size=64
    )
    started: object = testpmd_generator.start(request)
    assert started == "gen"
    assert starts == [1, 1]
    assert "testpmd PID 7 has 1 ports, not 2. Starting testpmd once more." in caplog.text
    outcomes[:] = [testpmd_generator.PortMissingError("first"), testpmd_generator.PortMissingError("second")]
    with pytest.raises(testpmd_generator.PortMissingError, match=r"^second$"):
        testpmd_generator.start(request)
    assert starts == [1, 1, 1, 1]
