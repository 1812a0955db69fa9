"""The generator's tunnel frames (VXLAN, Geneve): on the wire (net_pcap), counted back (net_ring)."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pytest

from ovsperf_catalog.model import TunnelType
from ovsperf_lab.errors import LabError, TrafficGeneratorError
from ovsperf_lab.generators.dpdk import DpdkTrafficGenerator
from ovsperf_lab.model import TrialSpec, TunnelEncap
from tests.ovsperf_lab import tg_harness as h
from tests.ovsperf_lab.test_generator_protocol import read_pcap, ring_config

pytestmark = pytest.mark.dpdk

ENCAP = TunnelEncap(TunnelType.VXLAN, 0x123456, "02:00:00:00:fe:01", "198.19.254.2", "198.19.254.1")


@pytest.fixture(scope="module")
def binary() -> h.Path:
    return h.build_generator()


@pytest.fixture
def ring_gen(binary: h.Path) -> Iterator[DpdkTrafficGenerator]:
    config = ring_config()
    assert config.file_prefix is not None
    with h.no_leftovers(config.file_prefix), DpdkTrafficGenerator(config) as gen:
        yield gen


def checksum_ok(header: bytes) -> bool:
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return total == 0xFFFF


@pytest.mark.parametrize("tunnel_type", [TunnelType.VXLAN, TunnelType.GENEVE])
def test_tunnel_frames_on_the_wire_carry_the_outer_headers_and_the_inner_frame(
    binary: h.Path, tmp_path: h.Path, tunnel_type: TunnelType
) -> None:
    empty, wire = tmp_path / "empty.pcap", tmp_path / "wire.pcap"
    empty.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    config = ring_config(vdevs=(f"net_pcap0,rx_pcap={empty},tx_pcap={wire}",))
    assert config.file_prefix is not None
    encap = TunnelEncap(tunnel_type, ENCAP.vni, ENCAP.dst_mac, ENCAP.src_ip, ENCAP.dst_ip)
    with h.no_leftovers(config.file_prefix), DpdkTrafficGenerator(config) as gen:
        command = gen.trial_command(
            TrialSpec(frame_size_bytes=114, rate_pps=1000, duration_s=0.01, flows=3, tunnel=encap)
        )
        assert command["tunnel"] == {
            "type": tunnel_type.value,
            "vni": 0x123456,
            "dst_mac": "02:00:00:00:fe:01",
            "src_ip": "198.19.254.2",
            "dst_ip": "198.19.254.1",
        }
        fields = {k: v for k, v in command.items() if k not in ("cmd", "frame_size_bytes")}
        result = gen.run_raw_trial(
            {
                **fields,
                "frame_mix": [[114, 1], [600, 1]],
                "bidirectional": False,
                "loopback": True,
                "drain_s": 0.1,
            }
        )
    assert result["directions"][0]["tx_packets"] == 10
    frames = read_pcap(wire)
    assert [len(f) for f in frames] == [110, 596] * 5  # without FCS: the outer frame
    for i, frame in enumerate(frames):
        assert frame[0:6] == bytes.fromhex("02000000fe01") and frame[12:14] == b"\x08\x00"
        outer_ip = frame[14:34]
        assert checksum_ok(outer_ip), f"frame {i}: outer IPv4 checksum"
        total_len, proto = struct.unpack("!H", outer_ip[2:4])[0], outer_ip[9]
        assert (total_len, proto) == (len(frame) - 14, 17)
        assert outer_ip[12:16] == bytes([198, 19, 254, 2]) and outer_ip[16:20] == bytes([198, 19, 254, 1])
        src_port, dst_port, udp_len = struct.unpack("!HHH", frame[34:40])
        assert dst_port == (4789 if tunnel_type is TunnelType.VXLAN else 6081)
        assert src_port == 49152 + i % 3 and udp_len == len(frame) - 34  # the flow gives the entropy
        header = frame[42:50]
        if tunnel_type is TunnelType.VXLAN:
            assert header == bytes([0x08, 0, 0, 0, 0x12, 0x34, 0x56, 0])  # RFC 7348: I flag, VNI
        else:
            assert header == bytes([0, 0, 0x65, 0x58, 0x12, 0x34, 0x56, 0])  # RFC 8926: 0x6558, VNI
        inner = frame[50:]
        assert inner[12:14] == b"\x08\x00" and checksum_ok(inner[14:34])
        assert struct.unpack("!H", inner[16:18])[0] == len(inner) - 14
        assert struct.unpack("<I", inner[42:46])[0] == 0x4F565047  # our trailer (host order)


@pytest.mark.parametrize("tunnel_type", [TunnelType.VXLAN, TunnelType.GENEVE])
def test_tunnel_frames_received_are_counted_by_their_inner_frame(
    ring_gen: DpdkTrafficGenerator, tunnel_type: TunnelType
) -> None:
    encap = TunnelEncap(tunnel_type, 99, ENCAP.dst_mac, ENCAP.src_ip, ENCAP.dst_ip)
    spec = TrialSpec(
        frame_size_bytes=114, rate_pps=50_000, duration_s=0.4, flows=4, tunnel=encap, drain_s=0.2
    )
    fields = {k: v for k, v in ring_gen.trial_command(spec).items() if k != "cmd"}
    result = ring_gen.run_raw_trial({**fields, "bidirectional": False, "loopback": True})
    [direction] = result["directions"]
    assert direction["tx_packets"] == direction["rx_packets"] == 20_000
    assert result["rx_foreign_packets"] == [0, 0]
    assert direction["duplicate_packets"] == 0 and direction["latency_max_ns"] > 0


def test_a_tunnel_frame_too_small_for_a_64_byte_inner_frame_is_refused(
    ring_gen: DpdkTrafficGenerator,
) -> None:
    with pytest.raises(
        LabError, match=r"Field 'frame_size_bytes': a vxlan frame of 113 B .* smallest is 114 B"
    ):
        TrialSpec(frame_size_bytes=113, rate_pps=1000, duration_s=0.1, tunnel=ENCAP)
    with pytest.raises(LabError, match=r"Field 'vni' must be an integer in \[0, 16777215\]"):
        TunnelEncap(TunnelType.VXLAN, 1 << 24, ENCAP.dst_mac, ENCAP.src_ip, ENCAP.dst_ip)
    tunnel = ENCAP.to_json()
    cases = (
        ({"frame_size_bytes": 113, "tunnel": tunnel}, "a tunnel frame of 113 B cannot carry a 64 B inner"),
        ({"tunnel": {**tunnel, "type": "gre"}}, "'tunnel.type' must be 'vxlan' or 'geneve'"),
        ({"tunnel": {**tunnel, "dst_ip": "1.2.3"}}, "'tunnel.dst_ip' must be an IPv4"),
        ({"tunnel": {**tunnel, "dst_mac": "zz"}}, "'tunnel.dst_mac' must be a MAC"),
        ({"tunnel": {**tunnel, "ttl": 3}}, "Unknown field 'ttl'"),
    )
    for fields, message in cases:
        with pytest.raises(TrafficGeneratorError, match=message):
            ring_gen.run_raw_trial({"frame_size_bytes": 128, **fields, "rate_pps": 1000, "duration_s": 0.1})
    # The generator still answers.
    assert len(ring_gen.ports()) == 2
