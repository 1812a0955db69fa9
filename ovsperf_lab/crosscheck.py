"""Cross-check the generator's counters with OVS's own port counters after every trial.

Two independent instruments count the same frames: the generator (frames it sent and
sequence-checked frames it received) and OVS (``ovs-ofctl dump-ports``: frames received from and
delivered to each vhost-user port). After a trial:

* frames OVS received on the port facing generator port *p* must equal what the generator sent
  on *p* (minus frames the port refused, which never reached OVS, plus warm-up frames);
* frames OVS delivered to the port facing generator port *q* must not exceed what the generator
  counted on *q* (received + duplicates + foreign frames): an excess means frames vanished inside
  the generator's RX path, and the loss the search saw was not the DUT's;
* OVS must not have dropped frames toward the generator (``tx_dropped``: the generator's RX ring
  was full, i.e. the generator did not poll in time; with a NIC the wire would not drop them).

A mismatch beyond the tolerance is reported (WARNING and in the trial log); it does not stop
the run. Source of the idea: lua-trafficgen's device counters vs bench-trafficgen's stream
counters (search_and_trending.md §1.5, §2.4).

With NIC ports (two-host mode, ``wire``) a link lies between the two counters: frames OVS
received plus those its NIC dropped on receive must equal what the generator sent; frames OVS
sent but the generator did not count were lost on the link or in the TG's NIC; and frames OVS
could not send (its NIC's TX queue was full) are the DUT's loss, not the generator's. Before the
first trial the cabling is checked (:func:`check_cabling`): a short trial from TG port 0 only
must arrive on DUT port 0; arriving on DUT port 1, the links are crossed, and the run stops
naming the crossing (:class:`CablingError`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ovsperf_common.framemix import item_text
from ovsperf_lab.errors import LabError
from ovsperf_lab.generators.api import PortInfo, TrafficGenerator
from ovsperf_lab.model import GeneratorCounters, TrialResult, TrialSpec
from ovsperf_lab.ovs import OvsSandbox, PortCounters

log = logging.getLogger(__name__)

RELATIVE_TOLERANCE = 1e-4
"""Allowed relative difference between the two counts [1]."""

ABSOLUTE_TOLERANCE = 32
"""Allowed absolute difference, one burst [frames]."""


@dataclass(frozen=True)
class CrossCheck:
    """The comparison of one trial."""

    ok: bool
    """Whether every count agreed within the tolerance."""
    mismatches: tuple[str, ...]
    """One sentence per disagreement."""
    ovs_rx_packets: dict[int, int | None]
    """Generator port → frames OVS received from it during the trial [1]."""
    ovs_tx_packets: dict[int, int | None]
    """Generator port → frames OVS delivered to it during the trial [1]."""
    ovs_tx_dropped: dict[int, int | None]
    """Generator port → frames OVS could not deliver to it [1]."""
    ovs_ports: dict[int, dict[str, int | None]]
    """OVS port number → counter deltas of every bridge port (PVP: where frames were lost) [1]."""
    connections: int | None = None
    """Connections OVS's conntrack held after the trial (conntrack tests, :mod:`ovsperf_lab.conntrack`);
    ``None``: not a conntrack test [1]."""
    expected_connections: int | None = None
    """Connections the trial should have left: flows per direction × directions; ``None`` likewise [1]."""

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "ok": self.ok,
            "mismatches": list(self.mismatches),
            "ovs_rx_packets": {str(k): v for k, v in self.ovs_rx_packets.items()},
            "ovs_tx_packets": {str(k): v for k, v in self.ovs_tx_packets.items()},
            "ovs_tx_dropped": {str(k): v for k, v in self.ovs_tx_dropped.items()},
            "ovs_ports": {str(k): v for k, v in self.ovs_ports.items()},
            **(
                {"connections": self.connections, "expected_connections": self.expected_connections}
                if self.expected_connections is not None
                else {}
            ),
        }


def _delta(after: int | None, before: int | None) -> int | None:
    return None if after is None or before is None else after - before


def _close(a: int, b: int) -> bool:
    return abs(a - b) <= max(ABSOLUTE_TOLERANCE, RELATIVE_TOLERANCE * max(a, b))


def compare(
    before: dict[int, PortCounters],
    after: dict[int, PortCounters],
    result: TrialResult,
    ofports: tuple[int, ...],
    *,
    wire: bool = False,
    delivered_delta_bytes: int | None = None,
) -> CrossCheck:
    """Compare the OVS counter deltas of a trial with the generator's counts.

    The generator's refused, foreign and warm-up frames come from ``result.generator_counters``
    (none when it is ``None``).

    :param ofports: OVS port number facing generator port 0, 1, … (index = generator port).
    :param wire: whether OVS's ports are NIC ports cabled to the generator's (two-host mode).
    :param delivered_delta_bytes: overlay tests: how much longer each frame leaves OVS toward the
        generator than the generator sent it [B] (+50 encapsulated, -50 decapsulated); then OVS's
        byte counters are checked too (one frame size, not a mix): every frame received is the
        size sent, every frame delivered that size plus the delta (:func:`_check_bytes`).
    """
    mismatches: list[str] = []
    ovs_rx: dict[int, int | None] = {}
    ovs_tx: dict[int, int | None] = {}
    ovs_drop: dict[int, int | None] = {}
    counters = result.generator_counters or GeneratorCounters()
    warmup = counters.warmup_tx_packets
    for gport, ofport in enumerate(ofports):
        if ofport not in before or ofport not in after:
            mismatches.append(f"OVS port {ofport} (generator port {gport}) has no counters.")
            continue
        ovs_rx[gport] = _delta(after[ofport].rx_packets, before[ofport].rx_packets)
        ovs_tx[gport] = _delta(after[ofport].tx_packets, before[ofport].tx_packets)
        ovs_drop[gport] = _delta(after[ofport].tx_dropped, before[ofport].tx_dropped)
        sent = 0
        refused = 0
        for i, d in enumerate(result.directions):
            if d.tx_port == gport:
                sent += d.tx_packets
                refused += counters.refused(i)
        if warmup and result.spec.warmup_s > 0:
            sent += warmup // max(1, len({d.tx_port for d in result.directions}))
        entered = sent - refused
        received = ovs_rx[gport]
        rx_dropped = _delta(after[ofport].rx_dropped, before[ofport].rx_dropped) if wire else 0
        if received is not None and rx_dropped:  # a NIC's RX drops (imissed) arrived, too
            received += rx_dropped
        if received is None:
            mismatches.append(f"OVS did not report RX counters for port {ofport}.")
        elif sent and not _close(received, entered):
            mismatches.append(
                f"Generator port {gport} sent {entered} frames into OVS, OVS port {ofport} received "
                f"{ovs_rx[gport]}"
                + (f" and dropped {rx_dropped} on receive: the link lost the rest." if wire else ".")
            )
        counted = sum(d.rx_packets + d.duplicate_packets for d in result.directions if d.rx_port == gport)
        counted += counters.foreign(gport)
        dropped = ovs_drop[gport]
        if dropped and not wire:
            mismatches.append(
                f"OVS could not deliver {dropped} frames to generator port {gport} (its RX ring was "
                "full): the generator did not keep up, the loss is not the DUT's."
            )
        delivered = ovs_tx[gport]
        if delivered is not None and delivered > counted and not _close(delivered, counted):
            where = "on the link or in the TG's NIC, not in" if wire else "inside the generator, not"
            mismatches.append(
                f"OVS delivered {delivered} frames to generator port {gport}, the generator counted "
                f"{counted}: {delivered - counted} frames were lost {where} the DUT."
            )
    if delivered_delta_bytes is not None and isinstance(result.spec.frame_size_bytes, int):
        mismatches += _check_bytes(
            before, after, ofports, result.spec.frame_size_bytes, delivered_delta_bytes
        )
    ports = {
        ofport: {
            "rx_packets": _delta(after[ofport].rx_packets, before[ofport].rx_packets),
            "rx_dropped": _delta(after[ofport].rx_dropped, before[ofport].rx_dropped),
            "tx_packets": _delta(after[ofport].tx_packets, before[ofport].tx_packets),
            "tx_dropped": _delta(after[ofport].tx_dropped, before[ofport].tx_dropped),
        }
        for ofport in sorted(set(before) & set(after))
    }
    return CrossCheck(not mismatches, tuple(mismatches), ovs_rx, ovs_tx, ovs_drop, ports)


def _check_bytes(
    before: dict[int, PortCounters],
    after: dict[int, PortCounters],
    ofports: tuple[int, ...],
    frame_size_bytes: int,
    delivered_delta_bytes: int,
) -> list[str]:
    """Return the byte-count mismatches of an overlay trial, one sentence each.

    OVS counts frames without FCS: each frame it received from a generator port is
    ``frame_size_bytes - 4`` long, each it delivered to one ``frame_size_bytes - 4 +
    delivered_delta_bytes`` [B] (the tunnel's outer headers added or removed).
    """
    sent_len = frame_size_bytes - 4
    out: list[str] = []
    for ofport in ofports:
        if ofport not in before or ofport not in after:
            continue
        new, old = after[ofport], before[ofport]
        for kind, frame_len, packets, octets in (
            ("received", sent_len, (new.rx_packets, old.rx_packets), (new.rx_bytes, old.rx_bytes)),
            ("delivered", sent_len + delivered_delta_bytes, (new.tx_packets, old.tx_packets),
             (new.tx_bytes, old.tx_bytes)),
        ):  # fmt: skip
            frames, size = _delta(*packets), _delta(*octets)
            if frames and size is not None and size != frames * frame_len:
                out.append(
                    f"OVS port {ofport} {kind} {frames} frames of {size} B, not {frames} × {frame_len} B "
                    f"= {frames * frame_len} B: the frames are not the size the tunnel makes them."
                )
    return out


def generator_caused_failure(result: TrialResult, check: CrossCheck, loss_ratio_limit: float) -> int:
    """Return how many lost frames OVS dropped toward the generator, if they alone fail the trial.

    A direction *a → b* whose loss minus the frames OVS could not deliver to generator port *b*
    is within ``loss_ratio_limit`` [1] did not fail because of the DUT. Returns 0 when the trial
    passes anyway, when OVS dropped nothing toward the generator, or when some direction fails
    even without those frames (then the DUT failed, whatever the generator did).
    """
    dropped_total = sum(v or 0 for v in check.ovs_tx_dropped.values())
    if dropped_total == 0 or all(d.loss_ratio <= loss_ratio_limit for d in result.directions):
        return 0
    for d in result.directions:
        not_ours = check.ovs_tx_dropped.get(d.rx_port) or 0
        if d.tx_packets and (d.lost_packets - not_ours) / d.tx_packets > loss_ratio_limit:
            return 0
    return dropped_total


class CablingError(LabError):
    """TG and DUT NIC ports are not cabled port 0 to port 0 and port 1 to port 1 (two-host mode)."""


CABLING_PROBE = TrialSpec(
    frame_size_bytes=64, rate_pps=10_000.0, duration_s=0.1, bidirectional=False, drain_s=0.2
)
"""The cabling check's trial: 1000 frames from TG port 0 only (``bidirectional`` false)."""


def check_cabling(
    generator: TrafficGenerator,
    ovs: OvsSandbox,
    bridge: str,
    ofports: tuple[int, int],
    names: tuple[str, str],
    counters: Callable[[], dict[int, PortCounters]] | None = None,
) -> CrossCheck:
    """Send :data:`CABLING_PROBE` from TG port 0 and check that OVS received it on DUT port 0.

    :param ofports: OVS port numbers of DUT port 0 and 1; ``names`` their interface names.
    :param counters: reads OVS's port counters (default: ``bridge``'s; the overlay tests' DUT ports
        are on two bridges).
    :returns: the probe's cross-check.
    :raises CablingError: when most of the frames arrived on DUT port 1 (the links are crossed:
        TG port 0 is cabled to DUT port 1, TG port 1 to DUT port 0) or fewer than half on DUT port
        0 (not cabled, or the link is down); the message names the ports and the counts. A link
        that loses some of them (fewer than half) is logged as a WARNING.
    """
    read = counters if counters is not None else (lambda: ovs.port_counters(bridge))
    before = read()
    result = generator.run_trial(CABLING_PROBE)
    after = read()
    sent = sum(d.tx_packets for d in result.directions if d.tx_port == 0)
    rx = [
        _delta(after[p].rx_packets, before[p].rx_packets) or 0 if p in after and p in before else 0
        for p in ofports
    ]
    check = compare(before, after, result, ofports, wire=True)
    # Which port got the frames decides; a lossy link (a virtual lab's) delivers most, not all.
    if sent and rx[1] > rx[0] and 2 * rx[1] >= sent:
        raise CablingError(
            f"TG port 0 is cabled to DUT port 1 ('{names[1]}') and TG port 1 to DUT port 0 ('{names[0]}'): "
            f"the {sent} frames TG port 0 sent arrived on OVS port '{names[1]}' ({rx[1]}), not on "
            f"'{names[0]}' ({rx[0]}). Swap the cables, or the order of '--tg-port' (or of '--dut-port')."
        )
    if sent and 2 * rx[0] < sent:
        raise CablingError(
            f"TG port 0 sent {sent} frames, and OVS received {rx[0]} of them on DUT port 0 ('{names[0]}') "
            f"and {rx[1]} on DUT port 1 ('{names[1]}'): TG port 0 is not cabled to DUT port 0 (or the "
            "link is down); check the cabling and '--tg-port'/'--dut-port'."
        )
    log.info(
        "Cabling checked: %d frames from TG port 0 arrived on DUT port 0 ('%s'), %d on port 1.",
        rx[0],
        names[0],
        rx[1],
    )
    if sent and not _close(rx[0], sent):
        log.warning(
            "Cabling probe: the link from TG port 0 to DUT port 0 ('%s') lost %d of %d frames (%.1f %%) at "
            "%.0f pps; its losses will count against the DUT.",
            names[0],
            sent - rx[0],
            sent,
            100.0 * (sent - rx[0]) / sent,
            CABLING_PROBE.rate_pps,
        )
    return check


class CrossCheckedGenerator(TrafficGenerator):
    """Wrap a generator: snapshot OVS port counters around every trial and compare them.

    The last comparison is in :attr:`last`; every mismatch is logged as a WARNING. A trial that
    fails only because OVS could not deliver frames to the generator (its RX ring was full: the
    generator, not the DUT, fell behind) is returned as invalid, so the search repeats it. With
    NIC ports (``wire_names``: OVS's port names, two-host mode) the cabling is checked before the
    first trial (:func:`check_cabling`), and a full TX queue of OVS's NIC is the DUT's loss.
    """

    def __init__(
        self,
        inner: TrafficGenerator,
        ovs: OvsSandbox,
        bridge: str,
        ofports: tuple[int, ...],
        loss_ratio_limit: float = 0.0,
        *,
        wire_names: tuple[str, str] | None = None,
        counters: Callable[[], dict[int, PortCounters]] | None = None,
        delivered_delta_bytes: int | None = None,
        cabling_generator: TrafficGenerator | None = None,
    ) -> None:
        """Wrap ``inner``; check its trials against ``bridge``'s port counters.

        :param counters: reads OVS's port counters (default: ``bridge``'s); the overlay tests'
            ports are on two bridges.
        :param delivered_delta_bytes: the overlay tests' frame length change toward the generator
            [B] (:func:`compare`); ``None``: bytes are not checked.
        :param cabling_generator: sends the cabling probe (plain frames; default ``inner``: the
            overlay tests' ``inner`` would make them tunnel frames).
        """
        self.cabling_generator = cabling_generator if cabling_generator is not None else inner
        self.counters = counters if counters is not None else (lambda: ovs.port_counters(bridge))
        self.delivered_delta_bytes = delivered_delta_bytes
        self.inner = inner
        self.ovs = ovs
        self.bridge = bridge
        self.ofports = ofports
        self.loss_ratio_limit = loss_ratio_limit
        self.wire_names = wire_names
        self.last: CrossCheck | None = None
        self.cabling: CrossCheck | None = None
        """The cabling probe's cross-check (two-host mode), once the first trial ran."""

    def ports(self) -> tuple[PortInfo, ...]:
        """Return the inner generator's ports."""
        return self.inner.ports()

    def run_trial(self, spec: TrialSpec) -> TrialResult:
        """Run the trial on the inner generator and cross-check it with OVS.

        :raises CablingError: before the first trial, when the NIC ports are crossed or not cabled.
        """
        self.ovs.check_alive()
        wire = self.wire_names is not None
        if self.wire_names is not None and self.cabling is None:
            self.cabling = check_cabling(
                self.cabling_generator,
                self.ovs,
                self.bridge,
                (self.ofports[0], self.ofports[1]),
                self.wire_names,
                self.counters,
            )
        before = self.counters()
        result = self.inner.run_trial(spec)
        self.ovs.check_alive()
        after = self.counters()
        self.last = compare(
            before, after, result, self.ofports, wire=wire, delivered_delta_bytes=self.delivered_delta_bytes
        )
        for line in self.last.mismatches:
            log.warning(
                "Cross-check, %s at %.0f pps: %s", item_text(spec.frame_size_bytes), spec.rate_pps, line
            )
        dropped = (
            generator_caused_failure(result, self.last, self.loss_ratio_limit)
            if result.valid and not wire
            else 0
        )
        if dropped:
            return dataclasses.replace(
                result,
                valid=False,
                invalid_reason=(
                    f"generator RX fell behind: OVS could not deliver {dropped} frames to it, "
                    "and only those made the trial fail"
                ),
            )
        return result

    def close(self) -> None:
        """Close the inner generator."""
        self.inner.close()
