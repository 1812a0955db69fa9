"""Decide what a testpmd flowgen trial may ask and what its counters mean: pure, no process.

The ``testpmd`` backend (:mod:`~ovsperf_lab.generators.testpmd`) checks a
:class:`~ovsperf_lab.model.TrialSpec` here before it sends a command (:func:`check_spec`), and
turns the counters it read (:mod:`~ovsperf_lab.generators.testpmd_text`) into a
:class:`~ovsperf_lab.model.TrialResult` (:func:`check_frame_bytes`, :func:`trial_result`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ovsperf_common.framemix import FrameMix
from ovsperf_common.units import MAX_FRAME_SIZE_BYTES
from ovsperf_lab.errors import TrafficGeneratorError
from ovsperf_lab.generators.testpmd_text import PortStats
from ovsperf_lab.model import DirectionResult, GeneratorCounters, TrialResult, TrialSpec

log = logging.getLogger(__name__)

FCS_BYTES = 4
"""Frame check sequence [B]: in the frame size, not in the bytes the port counts."""

PACE_TOLERANCE_RATIO = 0.005
"""Achieved TX rate above the requested rate, as a share of it, beyond which a trial is invalid
(testpmd offered more than was asked) [1]."""


def check_spec(spec: TrialSpec, flows: int, full_load_pps: Callable[[int], float]) -> int:
    """Return the frame size of ``spec`` [B] if a testpmd started with ``flows`` flows can run it.

    ``full_load_pps(frame_size_bytes)``: the line rate of its port [pps], the least rate a trial may ask.

    :raises TrafficGeneratorError: naming the field testpmd cannot serve: a frame-size mix,
        a jumbo frame, one direction, a latency histogram, a rate below the line rate
        (testpmd cannot pace; it offers full load only), or a flow count other than the one
        it was started with.
    """
    if spec.flows != flows:
        raise TrafficGeneratorError(
            f"Field 'flows': this 'testpmd' generator runs {flows} flow(s) per port for its whole "
            f"life ('--flowgen-flows' is fixed when it starts, from the request's 'flows'), got "
            f"{spec.flows}; start it with 'GeneratorRequest.flows={spec.flows}'."
        )
    frame = spec.frame_size_bytes
    if isinstance(frame, FrameMix):
        raise TrafficGeneratorError(
            f"Field 'frame_size_bytes': the 'testpmd' generator sends one frame size per trial, not "
            f"the mix '{frame.name}'; use '--generator trafficgen' for mixes."
        )
    if frame > MAX_FRAME_SIZE_BYTES:
        raise TrafficGeneratorError(
            f"Field 'frame_size_bytes': the 'testpmd' generator sends at most {MAX_FRAME_SIZE_BYTES} B "
            f"frames, got {frame} B."
        )
    if not spec.bidirectional:
        raise TrafficGeneratorError(
            "Field 'bidirectional': the 'testpmd' generator (flowgen) always sends on both ports."
        )
    if spec.latency_histogram:
        raise TrafficGeneratorError("Field 'latency_histogram': the 'testpmd' generator measures no latency.")
    full = full_load_pps(frame)
    if spec.rate_pps < full * (1 - 1e-9):
        raise TrafficGeneratorError(
            f"Field 'rate_pps': the 'testpmd' generator cannot pace; it offers full load only "
            f"(MRR), so a trial must ask for at least the line rate {full:.0f} pps of {frame} B, "
            f"got {spec.rate_pps:.0f} pps."
        )
    return frame


def check_frame_bytes(frame_size_bytes: int, end: dict[int, PortStats]) -> None:
    """Check that ports 0 and 1 sent ``frame_size_bytes`` − FCS bytes per frame (``TX-bytes``/``TX-packets``).

    flowgen subtracts the 4 B FCS from ``set txpkts`` itself (DPDK 22.11's ``flowgen.c``).

    :raises TrafficGeneratorError: when they sent frames of another size (a testpmd whose flowgen
        handles the FCS otherwise).
    """
    frame = frame_size_bytes
    sent_frames = sum(end[p].tx_packets for p in (0, 1))
    sent_bytes = sum(end[p].tx_bytes for p in (0, 1))
    if sent_frames and sent_bytes != sent_frames * (frame - FCS_BYTES):
        raise TrafficGeneratorError(
            f"testpmd sent {sent_bytes / sent_frames:.1f} B per frame for 'set txpkts {frame}', not "
            f"{frame - FCS_BYTES} B (the {frame} B frame without its FCS): this testpmd's flowgen "
            "handles the FCS otherwise."
        )


def trial_result(
    spec: TrialSpec,
    end: dict[int, PortStats],
    tx_s: float,
    warmup_tx: int,
    refused: dict[int, int],
    *,
    line_rate_known: bool = True,
) -> TrialResult:
    """Return a trial's result, port 0 → 1 first, from the counters after its drain (cleared before it).

    ``end``: port → counters; ``tx_s``: the TX time [s]; ``warmup_tx``: frames of the warm-up burst [1].
    Direction *p* → *q*: port *p*'s ``TX-packets``, port *q*'s ``RX-packets``.

    ``refused``: port → frames its TX queue refused. A port whose queue refused none was
    never at full load: testpmd, not the DUT, set the rate, and the trial is invalid.

    ``line_rate_known``: whether the ports report a link speed. Sending above the requested rate
    (the line rate) is then impossible, and counters that say so make the trial invalid; a
    virtio_user port has no line rate (the lab assumes 10 GbE only to name a load), so full load
    there may well exceed it — that is the MRR of the virtual path, and valid.
    """
    directions = []
    reasons = []
    for tx_port, rx_port in ((0, 1), (1, 0)):
        tx = end[tx_port].tx_packets
        rx = end[rx_port].rx_packets
        tx_pps = tx / tx_s if tx_s > 0 else 0.0
        if tx == 0:
            reasons.append(f"port {tx_port} sent nothing (its TX queue took no frame)")
        elif refused[tx_port] == 0:
            reasons.append(
                f"port {tx_port}'s TX queue never refused a frame: testpmd, not the DUT, set the rate"
            )
        elif rx > tx:
            reasons.append(f"port {rx_port} received {rx} frames of {tx} sent (foreign frames)")
        elif line_rate_known and tx_pps > spec.rate_pps * (1 + PACE_TOLERANCE_RATIO):
            reasons.append(
                f"port {tx_port} sent {tx_pps:.0f} pps, above the requested {spec.rate_pps:.0f} pps "
                "(testpmd cannot pace)"
            )
        directions.append(
            DirectionResult(
                tx_port=tx_port,
                rx_port=rx_port,
                tx_packets=tx,
                rx_packets=rx,
                tx_pps=tx_pps,
                tx_duration_s=tx_s,
                reordered_packets=0,
                duplicate_packets=0,
                latency_min_ns=None,
                latency_avg_ns=None,
                latency_max_ns=None,
                latency_p50_ns=None,
                latency_p99_ns=None,
                latency_p999_ns=None,
            )
        )
    trial = TrialResult(
        spec=spec,
        directions=tuple(directions),
        valid=not reasons,
        invalid_reason="; ".join(reasons) or None,
        generator_counters=GeneratorCounters(warmup_tx_packets=warmup_tx),
    )
    log.info(
        "testpmd trial %s x %.2f s at full load: TX %.0f pps (%s frames refused by the TX queues), "
        "RX %.0f pps, loss %.6f%s.",
        trial.frame_text,
        tx_s,
        trial.tx_pps,
        "/".join(str(refused[p]) for p in (0, 1)),
        trial.rx_pps,
        trial.loss_ratio,
        f" (invalid: {trial.invalid_reason})" if trial.invalid_reason else "",
    )
    return trial
