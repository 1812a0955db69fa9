"""The ``trex`` backend against a TRex protocol stand-in, driven by the real TRex client library.

The stand-in (``trex_standin.py``) speaks TRex's ZMQ JSON-RPC and publisher protocol; the client
is PyPI ``lbr-trex-client`` in its own process, exactly as a run uses it. Nothing here is a real
TRex server: these tests show the backend speaks the protocol the client speaks and turns the
counters into trials the lab's searches decide on, not how a TRex NIC behaves.
"""

from __future__ import annotations

import base64
import importlib.util
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from ovsperf_common.framemix import parse_frame_sizes
from ovsperf_common.trexclient import TrexError, TrexServer, probe
from ovsperf_lab.crosscheck import CrossCheckedGenerator
from ovsperf_lab.errors import LabError, TrafficGeneratorError
from ovsperf_lab.generators.api import (
    Attachment,
    AttachmentKind,
    GeneratorPort,
    GeneratorRequest,
    PortInfo,
    PortRole,
    TrafficGenerator,
)
from ovsperf_lab.generators.trex import BACKEND, TrexGenerator, TrexOptions, factory, parse_ports, readiness
from ovsperf_lab.measure import MeasureObserver, measure_binary, measure_mlr
from ovsperf_lab.model import TrialResult, TrialSpec
from ovsperf_lab.plan import SearchMethod
from ovsperf_lab.search.latency import summarize
from tests.ovsperf_lab.test_measure import plan
from tests.ovsperf_lab.trex_standin import TrexStandin

pytestmark = pytest.mark.timeout(300)


def options(standin: TrexStandin, **fields: Any) -> TrexOptions:
    """Return the options for the stand-in: RPC timeout 10 s (a loaded CI machine), unless given."""
    ports = fields.pop("ports", (0, 1))
    fields.setdefault("timeout_s", 10.0)
    server = TrexServer("127.0.0.1", standin.sync_port, async_port=standin.async_port, **fields)
    return TrexOptions(server, ports)


@pytest.fixture
def standin() -> Iterator[TrexStandin]:
    with TrexStandin(capacity_pps=1_000_000.0) as server:
        yield server


class Unchecked(TrafficGenerator):
    """Where the run puts a cross-checked generator (no OVS here, so nothing to check against)."""

    last = None
    wire_names = None

    def __init__(self, inner: TrafficGenerator) -> None:
        self.inner = inner

    def ports(self) -> tuple[PortInfo, ...]:
        return self.inner.ports()

    def run_trial(self, spec: TrialSpec) -> TrialResult:
        return self.inner.run_trial(spec)

    def close(self) -> None:
        self.inner.close()


def test_probe_reports_the_server_version_and_ports(standin: TrexStandin) -> None:
    found = probe(TrexServer("127.0.0.1", standin.sync_port, async_port=standin.async_port, timeout_s=10.0))
    assert found["server_version"] == "v3.04"
    assert found["client"] == "lbr-trex-client 3.4.0, STL API 5.1"
    assert [(p["index"], p["pci_addr"], p["speed_mbps"], p["link_up"]) for p in found["ports"]] == [
        (0, "0000:00:00.0", 10_000, True),
        (1, "0000:00:01.0", 10_000, True),
    ]
    assert "acquire" not in standin.calls  # a probe acquires nothing


def test_a_trial_counts_what_the_standin_forwarded(standin: TrexStandin) -> None:
    with TrexGenerator(options(standin)) as gen:
        assert [(p.index, p.mac, p.link_speed_mbps, p.name) for p in gen.ports()] == [
            (0, "02:00:00:00:00:00", 10_000, "TRex port 0 (0000:00:00.0)"),
            (1, "02:00:00:00:00:01", 10_000, "TRex port 1 (0000:00:01.0)"),
        ]
        assert gen.server_version == "v3.04" and gen.pid is not None
        below = gen.run_trial(
            TrialSpec(frame_size_bytes=64, rate_pps=400_000.0, duration_s=0.5, drain_s=0.1, flows=100)
        )
        above = gen.run_trial(
            TrialSpec(frame_size_bytes=512, rate_pps=2_000_000.0, duration_s=0.5, drain_s=0.1)
        )
    assert below.valid and [(d.tx_port, d.rx_port, d.tx_packets, d.rx_packets) for d in below.directions] == [
        (0, 1, 200_000, 200_000),
        (1, 0, 200_000, 200_000),
    ]
    assert below.directions[0].latency_min_ns is None  # no latency stream in a search trial
    assert [(d.tx_packets, d.rx_packets) for d in above.directions] == [(1_000_000, 500_000)] * 2
    assert above.loss_ratio == pytest.approx(0.5)
    # the stream the client built: 512 B incl. FCS is 508 B on the wire buffer, the UDP flows by field engine
    assert standin.trials[-1]["rate_pps"] == pytest.approx(2_000_000.0)
    assert "acquire" in standin.calls and "release" in standin.calls


def test_a_mix_and_a_latency_trial(standin: TrexStandin) -> None:
    (imix,) = parse_frame_sizes("64:7/594:4/1518:1")
    with TrexGenerator(options(standin)) as gen:
        mixed = gen.run_trial(
            TrialSpec(frame_size_bytes=imix, rate_pps=120_000.0, duration_s=0.5, drain_s=0.1)
        )
        lat = gen.run_trial(
            TrialSpec(
                frame_size_bytes=64, rate_pps=100_000.0, duration_s=1.0, drain_s=0.1, latency_histogram=True
            )
        )
    assert [d.tx_packets for d in mixed.directions] == [60_000, 60_000]
    first = lat.directions[0]
    assert (first.latency_min_ns, first.latency_max_ns) == (8_000.0, 120_000.0)
    # 9 kpps of latency frames for 1 s: 8 µs 90 %, 15 µs 9 %, 120 µs 1 % (the stand-in's shares)
    assert sum(n for _, n in first.latency_histogram or ()) == 9000
    assert first.latency_p50_ns == pytest.approx(8_000.0, rel=1e-3)
    assert first.latency_p99_ns == pytest.approx(15_000.0, rel=1e-3)
    assert first.latency_p999_ns == pytest.approx(120_000.0, rel=1e-3)
    summary = summarize(lat.directions)
    assert summary is not None and summary.rx_packets == 18_000
    assert summary.p50_ns == pytest.approx(8_000.0, rel=2e-3) and summary.max_ns == 120_000.0


def test_mlrsearch_through_trex_finds_the_standins_capacity_within_the_goal_width(
    standin: TrexStandin,
) -> None:
    mlr = plan(
        goals_percent=(0.0, 0.5),
        goal_width_percent=1.0,
        final_trial_s=0.2,
        duration_sum_s=0.4,
        latency_levels_percent=(50.0,),
        latency_trial_s=0.5,
    )
    records: list[list[dict[str, Any]]] = []
    with TrexGenerator(options(standin)) as gen:
        started = time.monotonic()
        row = measure_mlr(
            cast(CrossCheckedGenerator, Unchecked(gen)),
            64,
            1,
            10_000,
            mlr,
            on_trials=lambda r: records.append(list(r)),
            observer=MeasureObserver(),
        )
        took = time.monotonic() - started
    # The stand-in forwards up to 1 Mpps per direction and drops the excess: the NDR edge is 1 Mpps,
    # the 0.5 % PDR edge 1 Mpps / 0.995. Each goal's bounds must straddle its edge, within the width.
    for goal, edge in zip(row.goals, (standin.capacity_pps, standin.capacity_pps / 0.995), strict=True):
        low, high = goal.lower_bound_pps, goal.upper_bound_pps
        assert low is not None and high is not None
        assert low <= edge < high and (high - low) / high <= 0.01, (goal, edge, took)
    assert [lv.percent_of_pdr for lv in row.latency_levels] == [50.0]
    merged = row.latency_levels[0].all
    assert (
        merged is not None and merged.min_ns == 8_000.0 and merged.p50_ns == pytest.approx(8_000.0, rel=2e-3)
    )
    assert len(records[-1]) == len(standin.trials) // 2  # every trial recorded, each one TRex trial per port


def test_binary_search_through_trex(standin: TrexStandin) -> None:
    binary = plan(search=SearchMethod.BINARY, search_trial_s=0.2,
                  validation_trial_s=0.3, granularity_percent=1.0, drain_s=0.1)  # fmt: skip
    with TrexGenerator(options(standin)) as gen:
        row = measure_binary(
            cast(CrossCheckedGenerator, Unchecked(gen)), 1518, 1, 10_000, binary,
            on_trials=lambda r: None, observer=MeasureObserver(),
        )  # fmt: skip
    line = 812_743.8  # 1518 B at 10 GbE: the search's start; the stand-in's 1 Mpps is above it
    assert row.goals[0].rx_fps == pytest.approx(2 * line, rel=1e-3)


def test_a_connection_lost_mid_trial_is_an_error_naming_trex() -> None:
    with TrexStandin() as standin, TrexGenerator(options(standin, timeout_s=3.0)) as gen:
        standin.drop_after_start = True
        started = time.monotonic()
        with pytest.raises(
            TrafficGeneratorError, match=r"Traffic generator 'trex' failed while running a trial"
        ) as caught:
            gen.run_trial(TrialSpec(frame_size_bytes=64, rate_pps=100_000.0, duration_s=0.5, drain_s=0.1))
        assert time.monotonic() - started < 60
        assert f"127.0.0.1:{standin.sync_port}" in str(caught.value)
        gen.close()
        assert gen._process.proc.poll() is not None  # the client process is gone
        assert gen.pid is not None and not Path(f"/proc/{gen.pid}").exists()


def test_an_unknown_server_version_is_refused_naming_both() -> None:
    with TrexStandin(version="v2.41") as standin:
        with pytest.raises(TrafficGeneratorError) as caught:
            TrexGenerator(options(standin))
    text = str(caught.value)
    assert "'v2.41'" in text and "lbr-trex-client 3.4.0, STL API 5.1" in text and "v3.x" in text
    assert "acquire" not in standin.calls


def test_an_api_mismatch_is_refused_naming_both() -> None:
    with TrexStandin(api_major=6) as standin:
        with pytest.raises(TrafficGeneratorError) as caught:
            TrexGenerator(options(standin))
    text = str(caught.value)
    assert "'v3.04'" in text and "STL API 5.1" in text and "API version mismatch" in text


def test_ports_held_by_another_user_are_refused_and_left_alone() -> None:
    with TrexStandin(owners={1: "alice"}) as standin:
        with pytest.raises(
            TrafficGeneratorError, match=r"TRex port 1 .* is acquired by user 'alice'.*--trex-force-acquire"
        ):
            TrexGenerator(options(standin))
        assert "acquire" not in standin.calls and standin.ports[1].owner == "alice"
        with TrexGenerator(options(standin, force_acquire=True)) as gen:
            assert gen.ports()[1].link_up
        assert "acquire" in standin.calls


def test_a_silent_server_is_an_error_within_the_deadline() -> None:
    with TrexStandin() as standin:
        standin.dropped = True
        started = time.monotonic()
        with pytest.raises(TrafficGeneratorError, match="did not answer"):
            TrexGenerator(options(standin, timeout_s=3.0))
        assert time.monotonic() - started < 30


def test_the_factory_needs_nic_ports_and_checks_their_pci_addresses(standin: TrexStandin) -> None:
    def request(kind: AttachmentKind, west: str, east: str) -> GeneratorRequest:
        def port(role: PortRole, value: str) -> GeneratorPort:
            if kind is AttachmentKind.WIRE:
                return GeneratorPort(role, Attachment(kind, devargs=value))
            return GeneratorPort(role, Attachment(kind, socket=Path(value)))

        return GeneratorRequest(
            ports=(port(PortRole.WEST, west), port(PortRole.EAST, east)),
            cpu=0, file_prefix="x", memory_mb=64, queues=1, ring_size=1024,
        )  # fmt: skip

    start = factory(options(standin))
    with pytest.raises(LabError, match="two-host mode"):
        start(request(AttachmentKind.VHOST_USER_SERVER, "/tmp/a.sock", "/tmp/b.sock"))
    with pytest.raises(TrafficGeneratorError, match=r"'--tg-port' names '0000:00:07.0' for generator port 1"):
        start(request(AttachmentKind.WIRE, "0000:00:00.0", "0000:00:07.0"))
    gen = start(request(AttachmentKind.WIRE, "0000:00:00.0", "0000:00:01.0"))
    gen.close()
    with pytest.raises(LabError, match="needs '--trex-server"):
        BACKEND.start(request(AttachmentKind.WIRE, "0000:00:00.0", "0000:00:01.0"))


def test_options_and_readiness() -> None:
    assert parse_ports("2,3") == (2, 3)
    for bad in ("1", "1,1", "a,b"):
        with pytest.raises(LabError, match="--trex-ports"):
            TrexOptions(TrexServer("h"), parse_ports(bad))
    assert TrexServer.parse("trex1:4601").sync_port == 4601 and TrexServer.parse("[::1]").host == "::1"
    found = readiness()
    assert found.ready and found.detail.startswith("lbr-trex-client 3.4.0")
    assert BACKEND.attachment is AttachmentKind.WIRE and BACKEND.paced and BACKEND.wire


def test_ovsperf_lab_refuses_trex_without_what_it_needs(capsys: pytest.CaptureFixture[str]) -> None:
    from ovsperf_lab.cli import main

    run = ["run", "--config", "OVS_DPDK1q", "--generator", "trex"]
    cases = [
        (run, "Option '--generator trex' needs '--trex-server HOST[:PORT]'."),
        ([*run, "--trex-server", "127.0.0.1:4501"], "drives NIC ports on the TRex host"),
        (
            ["run", "--config", "OVS_DPDK1q", "--trex-server", "h"],
            "Option '--trex-server' applies to '--generator trex'.",
        ),
        ([*run, "--trex-server", "h:x"], "Option '--trex-server': 'h:x' is not HOST[:PORT]"),
        (
            ["compare", "--config", "OVS_DPDK1q", "--b", "system", "--generator", "trex"],
            "builds vhost-user ports only",
        ),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        out, err = capsys.readouterr()
        assert out == "" and message in err, (argv, err)


def test_doctor_lists_trex_and_asks_the_server_only_when_told(
    standin: TrexStandin, capsys: pytest.CaptureFixture[str]
) -> None:
    from ovsperf_lab.cli import main

    main(["doctor"])
    out = capsys.readouterr().out
    assert "[warn] traffic generator 'trex'" not in out
    assert "] traffic generator 'trex': lbr-trex-client 3.4.0 (server: --trex-server)" in out
    assert "TRex server" not in out and "get_version" not in standin.calls
    address = f"127.0.0.1:{standin.sync_port}"
    main(
        [
            "doctor",
            "--trex-server",
            address,
            "--trex-async-port",
            str(standin.async_port),
            "--trex-timeout",
            "10",
        ]
    )
    out = capsys.readouterr().out
    assert (
        f"[ok  ] TRex server '{address}': v3.04 (client lbr-trex-client 3.4.0, STL API 5.1): "
        "port 0 0000:00:00.0 02:00:00:00:00:00 10000 Mb/s up, owner -; "
        "port 1 0000:00:01.0 02:00:00:00:00:01 10000 Mb/s up, owner -"
    ) in out
    standin.dropped = True
    assert main(["doctor", "--trex-server", address, "--trex-timeout", "2"]) == 2
    assert (
        f"[FAIL] TRex server '{address}': TRex server at {address} did not answer" in capsys.readouterr().out
    )


def test_a_server_installations_client_directory_is_used_when_given(standin: TrexStandin) -> None:
    # Only its path (found, not imported: importing it rewrites this process's sys.path and env).
    spec = importlib.util.find_spec("lbr_trex_client")
    assert spec is not None and spec.origin is not None
    stl_lib = Path(spec.origin).parent / "interactive" / "trex_stl_lib"  # laid out as in a TRex install
    server = TrexServer("127.0.0.1", standin.sync_port, async_port=standin.async_port, client_dir=stl_lib)
    found = probe(server)
    assert (
        found["client"] == f"the TRex client in '{stl_lib}', STL API 5.1"
        and found["server_version"] == "v3.04"
    )
    empty = TrexServer("127.0.0.1", standin.sync_port, client_dir=stl_lib.parent.parent / "stf")
    with pytest.raises(TrexError, match="holds no TRex client") as caught:
        probe(empty)
    assert caught.value.kind == "client"


def test_a_port_the_server_lacks_is_refused_naming_it(standin: TrexStandin) -> None:
    with pytest.raises(TrafficGeneratorError, match=r"has no port 5 \(it has \[0, 1\]\)"):
        TrexGenerator(options(standin, ports=(0, 5)))
    assert "acquire" not in standin.calls


def test_flows_become_field_engine_variables(standin: TrexStandin) -> None:
    with TrexGenerator(options(standin)) as gen:
        gen.run_trial(
            TrialSpec(frame_size_bytes=128, rate_pps=1000.0, duration_s=0.1, drain_s=0.0, flows=100)
        )
        (few,) = standin.ports[0].streams.values()
        gen.run_trial(
            TrialSpec(frame_size_bytes=128, rate_pps=1000.0, duration_s=0.1, drain_s=0.0, flows=100_000)
        )
        (many,) = standin.ports[1].streams.values()
    assert len(base64.b64decode(few["packet"]["binary"])) == 124  # 128 B incl. FCS
    var, write, fix = few["vm"]["instructions"]
    assert (var["type"], var["name"], var["min_value"], var["max_value"], var["op"]) == (
        "flow_var", "sport", 1024, 1123, "inc",
    )  # fmt: skip
    assert (write["name"], write["pkt_offset"], fix["type"]) == ("sport", 34, "fix_checksum_ipv4")
    # above 64,000: (IPv4 source, UDP destination port) tuples, exactly as many as asked
    tuples = many["vm"]["instructions"][0]
    assert (tuples["type"], tuples["limit_flows"], tuples["port_max"] - tuples["port_min"] + 1) == (
        "tuple_flow_var", 100_000, 64_000,
    )  # fmt: skip
    assert tuples["ip_max"] - tuples["ip_min"] + 1 == 2  # 16.0.1.1 and 16.0.1.2: direction 1
    assert many["mode"]["rate"] == {"type": "pps", "value": 1000.0}
