"""Define the trial records exchanged between the RFC 2544 search and a traffic generator.

A *trial* (RFC 2544 §23, CSIT terminology) offers traffic at one rate for one duration and
counts what comes back. The search (``ovsperf_lab.search.binary``) asks a
:class:`~ovsperf_lab.generators.api.TrafficGenerator` for trials described by :class:`TrialSpec`
and decides from :class:`TrialResult`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ovsperf_catalog.model import MAX_FLOWS as MAX_FLOWS  # the generator's flow limit; the catalog owns it
from ovsperf_catalog.model import TunnelType
from ovsperf_common.framemix import FrameMix, FrameSizeItem, item_text, reduced_weights
from ovsperf_common.units import check_frame_size
from ovsperf_lab.errors import LabError

MAX_FLOWS_SRC_PORT = 64_000
"""Most flows the UDP source port alone tells apart (``TG_MAX_FLOWS_SRC_PORT``); above it the
driver varies (IPv4 source address, UDP destination port) tuples instead [1]."""

MAX_MIX_SIZES = 16
"""Most distinct frame sizes in one mix the generator sends (``TG_MAX_MIX``) [1]."""

MAX_MIX_PERIOD = 4096
"""Largest sum of a mix's weights, after dividing them by their gcd, the generator sends [frames]."""


def check_generator_mix(mix: FrameMix) -> None:
    """Check that the generator can send ``mix`` (docs/trafficgen.md, ``frame_mix``).

    :raises ValueError: with the limit, when ``mix`` has more than :data:`MAX_MIX_SIZES` sizes or
        its reduced weights sum to more than :data:`MAX_MIX_PERIOD`.
    """
    if len(mix.entries) > MAX_MIX_SIZES:
        raise ValueError(
            f"mix '{mix.name}' has {len(mix.entries)} sizes; the generator sends at most {MAX_MIX_SIZES}."
        )
    period = sum(weight for _, weight in reduced_weights(mix))
    if period > MAX_MIX_PERIOD:
        raise ValueError(
            f"mix '{mix.name}': its weights sum to {period} frames after dividing by their greatest "
            f"common divisor; the generator sends at most {MAX_MIX_PERIOD} (use smaller weights)."
        )


MIN_TUNNEL_FRAME_BYTES = 114
"""Smallest tunnel frame the generator sends: a 64 B inner frame plus 50 B of outer Ethernet, IPv4,
UDP and VXLAN/Geneve headers (``TG_TUNNEL_OVERHEAD``, docs/trafficgen.md) [B]."""


@dataclass(frozen=True)
class TunnelEncap:
    """The outer headers the generator puts in front of every frame, as a remote VTEP would.

    Decapsulation tests (VSperf ``overlay_p2p_decap_tput``): OVS receives these frames on its
    underlay bridge and pops the tunnel. Sources: RFC 7348 §5 (VXLAN, UDP port 4789), RFC 8926 §3
    (Geneve, UDP port 6081, no options). Wire format: the ``tunnel`` trial field, docs/trafficgen.md.

    :raises LabError: when ``vni`` is outside [0, 2^24).
    """

    tunnel_type: TunnelType
    """VXLAN or Geneve."""
    vni: int
    """Virtual network identifier, 24 bits [1] (OVS's ``options:key``)."""
    dst_mac: str
    """The DUT VTEP's MAC address (its underlay bridge's), e.g. ``'02:00:00:00:fe:01'``."""
    src_ip: str
    """The remote VTEP's (the generator's) IPv4 address."""
    dst_ip: str
    """The DUT VTEP's IPv4 address (OVS's ``options:local_ip``)."""

    def __post_init__(self) -> None:
        if type(self.vni) is not int or not 0 <= self.vni < 1 << 24:
            raise LabError(f"Field 'vni' must be an integer in [0, {(1 << 24) - 1}], got {self.vni!r}.")

    def to_json(self) -> dict[str, object]:
        """Return the generator's ``tunnel`` trial field (docs/trafficgen.md)."""
        return {
            "type": self.tunnel_type.value,
            "vni": self.vni,
            "dst_mac": self.dst_mac,
            "src_ip": self.src_ip,
            "dst_ip": self.dst_ip,
        }


@dataclass(frozen=True)
class TrialSpec:
    """What one trial offers: frame size or mix, rate, duration, directions and flows."""

    frame_size_bytes: FrameSizeItem
    """Ethernet frame size including FCS [B], or a frame-size mix (``ovsperf_common.framemix``)
    sent interleaved, paced in frames per second of the whole mix."""
    rate_pps: float
    """Offered rate per direction [pps]."""
    duration_s: float
    """Traffic duration, excluding warm-up and drain [s]."""
    bidirectional: bool = True
    """Send port 0 → 1 and port 1 → 0 at the same time (VSperf ``TRAFFIC['bidir']``)."""
    flows: int = 1
    """Number of UDP/IPv4 flows per direction [1]: up to :data:`MAX_FLOWS_SRC_PORT` by UDP source
    port (or as the generator's ``flow_field`` says), above it by (source address, UDP
    destination port) tuples."""
    warmup_s: float = 0.0
    """Traffic sent before counting starts, e.g. to fill flow caches [s]."""
    drain_s: float = 2.0
    """Time RX keeps counting after TX stops (RFC 2544 §23 asks about 2 s) [s]."""
    jumbo: bool = False
    """Allow frames above 1518 B."""
    latency_histogram: bool = False
    """Ask for each direction's full latency histogram (latency trials; search trials skip it)."""
    tunnel: TunnelEncap | None = None
    """Send every frame tunnel-encapsulated (decapsulation tests); :attr:`frame_size_bytes` is then
    the outer frame, at least :data:`MIN_TUNNEL_FRAME_BYTES`. ``None``: plain frames."""

    def __post_init__(self) -> None:
        try:
            if isinstance(self.frame_size_bytes, FrameMix):
                for size, _ in self.frame_size_bytes.entries:
                    check_frame_size(size, jumbo=self.jumbo)
                check_generator_mix(self.frame_size_bytes)
            else:
                check_frame_size(self.frame_size_bytes, jumbo=self.jumbo)
        except ValueError as err:
            raise LabError(f"Field 'frame_size_bytes': {err}") from err
        if self.tunnel is not None:
            smallest = (
                min(size for size, _ in self.frame_size_bytes.entries)
                if isinstance(self.frame_size_bytes, FrameMix)
                else self.frame_size_bytes
            )
            if smallest < MIN_TUNNEL_FRAME_BYTES:
                raise LabError(
                    f"Field 'frame_size_bytes': a {self.tunnel.tunnel_type.value} frame of {smallest} B "
                    f"cannot carry a 64 B inner frame; the smallest is {MIN_TUNNEL_FRAME_BYTES} B "
                    "(50 B of outer headers)."
                )
        if not self.rate_pps > 0:
            raise LabError(f"Field 'rate_pps' must be positive, got {self.rate_pps!r}.")
        if not self.duration_s > 0:
            raise LabError(f"Field 'duration_s' must be positive, got {self.duration_s!r}.")
        if type(self.flows) is not int or not 1 <= self.flows <= MAX_FLOWS:
            raise LabError(
                f"Field 'flows' must be an integer in [1, {MAX_FLOWS}] (the generator's limit), "
                f"got {self.flows!r}."
            )
        if self.warmup_s < 0 or self.drain_s < 0:
            raise LabError("Fields 'warmup_s' and 'drain_s' must not be negative.")


@dataclass(frozen=True)
class DirectionResult:
    """Counters of one direction of one trial (frames of other origin are not counted)."""

    tx_port: int
    """Generator port that sent [index]."""
    rx_port: int
    """Generator port that received [index]."""
    tx_packets: int
    """Frames sent during the counted interval [1]."""
    rx_packets: int
    """Distinct frames received, duplicates excluded [1]."""
    tx_pps: float
    """Achieved transmit rate: ``tx_packets / tx_duration_s`` [pps]."""
    tx_duration_s: float
    """Measured TX time from first to last frame, by TSC [s]."""
    reordered_packets: int
    """Frames received with a sequence number lower than one already seen [1]."""
    duplicate_packets: int
    """Frames received more than once [1]."""
    latency_min_ns: float | None
    """Minimum one-way latency [ns]; ``None`` when no frame was received."""
    latency_avg_ns: float | None
    """Mean one-way latency [ns]; ``None`` when no frame was received."""
    latency_max_ns: float | None
    """Maximum one-way latency [ns]; ``None`` when no frame was received."""
    latency_p50_ns: float | None
    """Median latency [ns]; ``None`` when no frame was received."""
    latency_p99_ns: float | None
    """99th-percentile latency [ns]; ``None`` when no frame was received."""
    latency_p999_ns: float | None
    """99.9th-percentile latency [ns]; ``None`` when no frame was received."""
    latency_histogram: tuple[tuple[float, int], ...] | None = None
    """Latency histogram as ``(bucket middle [ns], frames [1])`` pairs, ascending, non-empty
    buckets only (HdrHistogram's layout at 1 ns and 3 significant digits; each middle is the
    bucket's median equivalent value, within 0.05 % of every value in it; ``docs/trafficgen.md``);
    ``None`` when the trial did not ask for it (:attr:`TrialSpec.latency_histogram`)."""

    per_size: tuple[tuple[int, int, int], ...] | None = None
    """For a mix: (frame size [B], frames sent, frames received) per size, adding up to the totals;
    ``None`` for a single frame size."""

    @property
    def lost_packets(self) -> int:
        """Return ``tx_packets - rx_packets`` [1]; negative means more arrived than were sent."""
        return self.tx_packets - self.rx_packets

    @property
    def loss_ratio(self) -> float:
        """Return ``lost_packets / tx_packets`` [1]; 0 when nothing was sent."""
        return self.lost_packets / self.tx_packets if self.tx_packets else 0.0


@dataclass(frozen=True)
class GeneratorCounters:
    """What a generator counted in one trial beyond :class:`DirectionResult` (the cross-check reads it).

    Source: the ``tx_refused_packets``, ``rx_foreign_packets`` and ``warmup_tx_packets`` keys of
    ``ovsperf-trafficgen``'s trial result (docs/trafficgen.md); a backend fills what it counts.

    :raises LabError: when a count is not a whole number >= 0 (the message names the field).
    """

    tx_refused_packets: tuple[int, ...] = ()
    """Per direction, in :attr:`TrialResult.directions` order: frames counted in ``tx_packets``
    that the port's TX queue refused, so they never reached the DUT [1]; empty: none were."""
    rx_foreign_packets: tuple[int, ...] = ()
    """Per generator port: frames received that are not the generator's own and are therefore not
    in ``rx_packets`` [1]; empty: none (or the generator counts every frame it receives)."""
    warmup_tx_packets: int = 0
    """Frames sent during the warm-up, all directions, not in ``tx_packets`` [1]."""

    def __post_init__(self) -> None:
        for name in ("tx_refused_packets", "rx_foreign_packets"):
            values = getattr(self, name)
            if not isinstance(values, tuple) or any(type(v) is not int or v < 0 for v in values):
                raise LabError(f"Field {name!r} must be a tuple of whole numbers >= 0, got {values!r}.")
        if type(self.warmup_tx_packets) is not int or self.warmup_tx_packets < 0:
            raise LabError(
                f"Field 'warmup_tx_packets' must be a whole number >= 0, got {self.warmup_tx_packets!r}."
            )

    def refused(self, direction: int) -> int:
        """Return the refused frames of ``direction`` (its index) [1]; 0 when none were reported."""
        return self.tx_refused_packets[direction] if direction < len(self.tx_refused_packets) else 0

    def foreign(self, port: int) -> int:
        """Return the foreign frames received on generator ``port`` [1]; 0 when none were reported."""
        return self.rx_foreign_packets[port] if port < len(self.rx_foreign_packets) else 0


@dataclass(frozen=True)
class TrialResult:
    """The outcome of one trial: one :class:`DirectionResult` per direction, and validity."""

    spec: TrialSpec
    """What was requested."""
    directions: tuple[DirectionResult, ...]
    """Per-direction counters, port 0 → 1 first."""
    valid: bool
    """Whether the trial measured the DUT (not the generator's own limit)."""
    invalid_reason: str | None = None
    """Why the trial cannot be trusted, e.g. ``'achieved TX 0.71 Mpps < requested 1.00 Mpps'``."""
    generator_counters: GeneratorCounters | None = None
    """The generator's own further counters of this trial (refused, foreign and warm-up frames);
    ``None`` when it reports none (the tests' fake)."""

    @property
    def frame_text(self) -> str:
        """Return the frame size or mix for a message: ``'64 B'`` or ``'imix'``."""
        return item_text(self.spec.frame_size_bytes)

    @property
    def tx_packets(self) -> int:
        """Return frames sent, summed over directions [1]."""
        return sum(d.tx_packets for d in self.directions)

    @property
    def rx_packets(self) -> int:
        """Return frames received, summed over directions [1]."""
        return sum(d.rx_packets for d in self.directions)

    @property
    def loss_ratio(self) -> float:
        """Return aggregate loss ``(tx - rx) / tx`` over all directions [1]."""
        tx = self.tx_packets
        return (tx - self.rx_packets) / tx if tx else 0.0

    @property
    def tx_pps(self) -> float:
        """Return achieved TX rate summed over directions [pps]."""
        return sum(d.tx_pps for d in self.directions)

    @property
    def rx_pps(self) -> float:
        """Return received rate summed over directions, over each direction's TX time [pps]."""
        return sum(d.rx_packets / d.tx_duration_s for d in self.directions if d.tx_duration_s > 0)
