"""Convert between frame rates and bit rates, and compute Ethernet line rate.

Terminology (FD.io CSIT, RFC 2544 §9.1, STYLE.md §2):

* frame size: the Ethernet frame including the 4 B FCS, excluding the 8 B preamble/SFD and
  the 12 B inter-frame gap [B];
* L2 rate: ``pps * frame_size_bytes * 8`` [bit/s];
* L1 rate: ``pps * (frame_size_bytes + 20) * 8`` [bit/s], i.e. what occupies the wire;
* line rate: the highest frame rate a link carries, ``link_bps / ((frame_size_bytes + 20) * 8)``
  [pps]; 64 B at 10 GbE is 14,880,952.38 pps;
* a frame-size mix (IMIX, :mod:`ovsperf_common.framemix`) uses its weighted average frame size in
  all of these (:func:`mix_rates`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

ETHERNET_L1_OVERHEAD_BYTES: Final = 20
"""Preamble + SFD (8 B) and minimum inter-frame gap (12 B) per frame [B] (IEEE 802.3)."""

MIN_FRAME_SIZE_BYTES: Final = 64
"""Smallest Ethernet frame including FCS [B] (DPDK ``RTE_ETHER_MIN_LEN``)."""

MAX_FRAME_SIZE_BYTES: Final = 1518
"""Largest non-jumbo Ethernet frame including FCS [B] (DPDK ``RTE_ETHER_MAX_LEN``)."""

MAX_JUMBO_FRAME_SIZE_BYTES: Final = 9018
"""Largest jumbo frame we accept including FCS [B] (9000 B MTU + 14 B header + 4 B FCS)."""

RFC2544_FRAME_SIZES_BYTES: Final = (64, 128, 256, 512, 1024, 1280, 1518)
"""Frame sizes RFC 2544 §9.1 recommends for Ethernet [B]."""


def l1_bps(pps: float, frame_size_bytes: float) -> float:
    """Return the L1 (on-the-wire) bit rate of ``pps`` frames of ``frame_size_bytes`` [bit/s].

    ``frame_size_bytes`` may be a mix's weighted average size (:func:`mix_rates`).

    Formula: ``pps * (frame_size_bytes + 20) * 8`` (CSIT terminology; MoonGen's ``_mbps`` values
    and VSperf's ``throughput_rx_mbps`` are L1).
    """
    return pps * (frame_size_bytes + ETHERNET_L1_OVERHEAD_BYTES) * 8


def l2_bps(pps: float, frame_size_bytes: float) -> float:
    """Return the L2 bit rate (frame bytes including FCS only) [bit/s].

    ``frame_size_bytes`` may be a mix's weighted average size (:func:`mix_rates`).

    Formula: ``pps * frame_size_bytes * 8``.
    """
    return pps * frame_size_bytes * 8


def line_rate_pps(frame_size_bytes: float, link_bps: float) -> float:
    """Return the maximum frame rate one link of ``link_bps`` carries [pps].

    ``frame_size_bytes`` may be a mix's weighted average size (:func:`mix_rates`).

    Formula: ``link_bps / ((frame_size_bytes + 20) * 8)`` (RFC 2544 §20 / IEEE 802.3 framing).

    :raises ValueError: when ``frame_size_bytes`` is not positive or ``link_bps`` is not positive.
    """
    if frame_size_bytes <= 0:
        raise ValueError(f"Frame size {frame_size_bytes!r} B is not positive.")
    if link_bps <= 0:
        raise ValueError(f"Link speed {link_bps!r} bit/s is not positive.")
    return link_bps / ((frame_size_bytes + ETHERNET_L1_OVERHEAD_BYTES) * 8)


def check_frame_size(frame_size_bytes: int, *, jumbo: bool = False) -> int:
    """Return ``frame_size_bytes`` if it is a valid Ethernet frame size including FCS [B].

    Valid: 64…1518, or 64…9018 when ``jumbo`` is true.

    :raises ValueError: with the accepted range, when the size is outside it or not an ``int``.
    """
    upper = MAX_JUMBO_FRAME_SIZE_BYTES if jumbo else MAX_FRAME_SIZE_BYTES
    if isinstance(frame_size_bytes, bool) or not isinstance(frame_size_bytes, int):
        raise ValueError(f"Frame size {frame_size_bytes!r} is not a whole number of bytes.")
    if not MIN_FRAME_SIZE_BYTES <= frame_size_bytes <= upper:
        raise ValueError(
            f"Frame size {frame_size_bytes} B is outside {MIN_FRAME_SIZE_BYTES}..{upper} B "
            "(sizes include the 4 B FCS)."
        )
    return frame_size_bytes


@dataclass(frozen=True)
class MixRates:
    """The rates of a frame-size mix sent at one frame rate (:func:`mix_rates`)."""

    average_frame_bytes: float
    """Weighted average frame size including FCS [B]: Σ weightᵢ·sizeᵢ / Σ weightᵢ."""
    l1_bps: float
    """On-the-wire rate: pps · (average + 20) · 8 [bit/s]."""
    l2_bps: float
    """Frame bytes only: pps · average · 8 [bit/s]."""
    line_rate_pps: float
    """Highest frame rate of the mix on the link: link / ((average + 20) · 8) [pps]."""
    line_rate_percent: float
    """pps / line rate · 100 [%]."""


def mix_rates(mix: Sequence[tuple[int, float]], pps: float, link_bps: float) -> MixRates:
    """Return the L1/L2 rates, line rate and share of line rate of ``pps`` frames of ``mix``.

    A mix is (frame size including FCS [B], weight) pairs, weights by frame count (7:4:1 means
    7 frames of the first size for every 4 of the second and 1 of the third); a plain frame
    size is the mix ``[(size, 1)]``. Every frame carries the same 20 B of L1 overhead, so a mix
    behaves on the wire like frames of its weighted average size (RFC 2544 §20 framing applied
    per frame; the same average NFVbench's ``IMIX_AVG_L2_FRAME_SIZE`` uses).

    :raises ValueError: when the mix is empty, a size is not positive, a weight is not positive
        and finite, or ``link_bps`` is not positive.
    """
    if not mix:
        raise ValueError("A frame-size mix needs at least one (size, weight) pair.")
    for size, weight in mix:
        if size <= 0:
            raise ValueError(f"Frame size {size!r} B is not positive.")
        if not (weight > 0 and math.isfinite(weight)):
            raise ValueError(f"Weight {weight!r} of {size} B is not a positive number.")
    if link_bps <= 0:
        raise ValueError(f"Link speed {link_bps!r} bit/s is not positive.")
    total = sum(weight for _, weight in mix)
    average = sum(size * weight for size, weight in mix) / total
    wire_bits = (average + ETHERNET_L1_OVERHEAD_BYTES) * 8
    line = link_bps / wire_bits
    return MixRates(
        average_frame_bytes=average,
        l1_bps=pps * wire_bits,
        l2_bps=pps * average * 8,
        line_rate_pps=line,
        line_rate_percent=100.0 * pps / line,
    )
