"""Decide whether a throughput row can be a measurement: by its own columns, then by its run's link.

A row that cannot be physical gets a reason in ``ThroughputRow.implausible`` and is INVALID, never
compared (issue 25 item 7: a row at 300 % of line rate was reported as an IMPROVEMENT). Checks:

* **one row** (:func:`row_problem`): throughput above line rate by the row's own
  ``throughput_rx_percent``, or above both directions of a :data:`PLAUSIBLE_LINK_BPS` link; frame
  loss outside [0, 100] %; a negative latency; ``throughput_rx_mbps`` that is not the row's
  ``throughput_rx_fps`` in any unit VSperf's generators write it (:func:`mbps_problem`);
  ``throughput_rx_fps`` above ``tx_rate_fps``;
* **a test run's rows together** (:func:`link_problem`): the link a run derives from its own
  rows (:func:`derive_link_bps`, the median of what each row's ``throughput_rx_percent`` implies)
  against each row: its percentage must say what its frame rate is on that link, and no frame
  rate may be above that link's line rate (+ :data:`LINE_RATE_TOLERANCE`). The link is derived per
  test run (one CSV), because VSperf's percentage is of the streams that test used: a
  bidirectional and a unidirectional test of one directory imply 2 and 1 links. A run that
  implies no link (no percentages: VSperf's TRex driver writes ``Unknown``) is checked against
  the link the comparison derived (``reporting.compare``), when it derived one.

Rates use ``ovsperf_common.units``: L1 = pps · (frame + 20 B) · 8, L2 = pps · frame · 8.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable

from ovsperf_common.units import MIN_FRAME_SIZE_BYTES, l1_bps, l2_bps, line_rate_pps
from reporting.resultmodel import ThroughputRow

PLAUSIBLE_LINK_BPS = 400e9
"""Fastest Ethernet link a result is checked against when it gives no line-rate share [bit/s]."""

LINE_RATE_TOLERANCE = 0.01
"""Measurement tolerance above line rate before a throughput is impossible [1] (clock drift of
generator and DUT; RFC 2544 §26 asks for the maximum rate the medium allows, not more)."""

RATE_COLUMNS_TOLERANCE = 0.005
"""Relative difference allowed between two columns that state one rate [1]: far above the
rounding of the written digits (``%.6f`` fps, ``%.3f`` Mbit/s and %), and below the 1.3 % between
L1 and L2 at 1518 B, so a frame rate and a bit rate of different measurements never agree."""

ROUNDING_MBPS = 0.0005
"""Half the last digit VSperf writes of ``*_mbps`` [Mbit/s] (``'%.3f'``)."""

ROUNDING_PERCENT = 0.0005
"""Half the last digit VSperf writes of ``*_percent`` [percentage points] (``'%.3f'``)."""

MIN_PERCENT_FOR_LINK = 1.0
"""Rows at or below this share of line rate do not vote for the link [%]: 3 written decimals are too
coarse there."""

FCS_BYTES = 4
"""Ethernet frame check sequence [B]: DPDK NIC byte counters (TRex's ``rx_bps``) leave it out."""

MBPS_UNITS = (
    ("L1", ""),
    ("L2", " (frame bytes)"),
    ("L2-FCS", " (frame bytes without FCS)"),
)
"""What VSperf's generators write as ``throughput_rx_mbps``: L1 (MoonGen, Xena ``PortRxBpsL1``,
the lab), L2 with FCS (Spirent: fps × FrameSize), L2 without FCS (TRex ``rx_bps``) [Mbit/s]."""


def _mbps_candidates(fps: float, frame_bytes: float) -> tuple[float, ...]:
    """Return ``fps`` in each of :data:`MBPS_UNITS` [Mbit/s]."""
    return (
        l1_bps(fps, frame_bytes) / 1e6,
        l2_bps(fps, frame_bytes) / 1e6,
        l2_bps(fps, frame_bytes - FCS_BYTES) / 1e6,
    )


def mbps_problem(fps: float | None, mbps: float | None, row: ThroughputRow, column: str) -> str | None:
    """Return why ``mbps`` [Mbit/s] cannot be the bit rate of ``fps`` [pps] frames of ``row``, or None.

    Agreement: within :data:`ROUNDING_MBPS` + :data:`RATE_COLUMNS_TOLERANCE` of one of
    :data:`MBPS_UNITS`. Not checked when a number is missing, ``fps`` ≤ 0 (the row is INVALID for
    that already), ``mbps`` is 0 (IxNetwork writes 0 for an empty cell) or the mix's sizes are
    unknown (VSperf's IMIX without its genome).

    :param column: the bit-rate column's name, for the reason.
    """
    average = row.traffic.average_frame_bytes
    if fps is None or mbps is None or fps <= 0 or mbps == 0 or average is None:
        return None
    candidates = _mbps_candidates(fps, average)
    if any(abs(mbps - c) <= ROUNDING_MBPS + RATE_COLUMNS_TOLERANCE * c for c in candidates):
        return None
    return (
        f"the rate columns disagree: {fps:.0f} fps of {row.traffic.frame_text} is "
        f"{candidates[0]:.3f} Mbit/s (L1) or {candidates[1]:.3f} Mbit/s (L2), but '{column}' "
        f"says {mbps:g} Mbit/s"
    )


def row_problem(row: ThroughputRow, rx_mbps: float | None = None, mbps_column: str = "") -> str | None:
    """Return why ``row`` alone cannot be a physical measurement, or None.

    Throughput above line rate beyond :data:`LINE_RATE_TOLERANCE`: by the row's own
    ``throughput_rx_percent`` (share of the theoretical maximum for the streams used), or, when
    that is absent, above both directions of a :data:`PLAUSIBLE_LINK_BPS` link; frame loss outside
    [0, 100] %; a negative latency; a bit rate ``rx_mbps`` [Mbit/s] (column ``mbps_column``) that
    is not the row's frame rate (:func:`mbps_problem`); more frames received than sent (beyond
    :data:`LINE_RATE_TOLERANCE`).
    """
    limit_percent = 100.0 * (1 + LINE_RATE_TOLERANCE)
    if row.rx_line_rate_percent is not None and row.rx_line_rate_percent > limit_percent:
        return f"{row.rx_line_rate_percent:g} % of line rate"
    if row.rx_pps is not None:
        # A mix of unknown sizes (VSperf's IMIX without its genome) is checked as 64 B frames.
        average = row.traffic.average_frame_bytes or MIN_FRAME_SIZE_BYTES
        ceiling = 2 * line_rate_pps(average, PLAUSIBLE_LINK_BPS) * (1 + LINE_RATE_TOLERANCE)
        if row.rx_pps > ceiling:
            return f"{row.rx_pps:g} fps is above line rate even for 2 x 400 GbE"
    if row.frame_loss_percent is not None and not 0 <= row.frame_loss_percent <= 100:
        return f"frame loss {row.frame_loss_percent:g} % is outside [0, 100] %"
    for name, value in (
        ("minimum", row.latency_min_ns),
        ("average", row.latency_avg_ns),
        ("maximum", row.latency_max_ns),
    ):
        if value is not None and value < 0:
            return f"{name} latency {value:g} ns is negative"
    bits = mbps_problem(row.rx_pps, rx_mbps, row, mbps_column)
    if bits is None and row.rx_pps is not None and row.tx_pps:
        if row.rx_pps > row.tx_pps * (1 + LINE_RATE_TOLERANCE):
            return (
                f"the rate columns disagree: {row.rx_pps:.0f} fps received is more than the "
                f"{row.tx_pps:.0f} fps sent (tolerance {100 * LINE_RATE_TOLERANCE:g} %)"
            )
    return bits


def implied_link_bps(row: ThroughputRow) -> float | None:
    """Return the link speed ``row``'s own percentage implies [bit/s], or None when it implies none.

    VSperf writes ``percent = 100 · rx_fps / (streams · link / ((frame + 20) · 8))`` (MoonGen
    driver ``moongen.py``; the lab the same, docs/results-format.md), so
    ``streams · link = L1(rx_fps · 100 / percent, frame)``. None for an invalid row,
    a row at or below :data:`MIN_PERCENT_FOR_LINK`, or a mix of unknown sizes.
    """
    percent = row.rx_line_rate_percent
    average = row.traffic.average_frame_bytes
    if not row.valid or row.rx_pps is None or percent is None or percent <= MIN_PERCENT_FOR_LINK:
        return None
    if average is None:
        return None
    return l1_bps(row.rx_pps * 100.0 / percent, average)


def derive_link_bps(rows: Iterable[ThroughputRow]) -> float | None:
    """Return the link speed ``rows`` imply together: the median of :func:`implied_link_bps` [bit/s].

    The median, so one row whose columns were edited does not move the link the others imply;
    None when no row implies one.
    """
    estimates = [bps for row in rows for bps in [implied_link_bps(row)] if bps is not None]
    return statistics.median(estimates) if estimates else None


def link_problem(row: ThroughputRow, link_bps: float, source: str) -> str | None:
    """Return why ``row`` cannot have been measured on a ``link_bps`` link [bit/s], or None.

    The row's percentage (when it has one) must be its frame rate's share of the link's line rate
    within :data:`ROUNDING_PERCENT` + :data:`RATE_COLUMNS_TOLERANCE` (relative); its frame rate
    must not exceed that line rate by more than :data:`LINE_RATE_TOLERANCE`. Rows already invalid
    and mixes of unknown sizes are not checked.

    :param source: where ``link_bps`` comes from, completing "the 20 Gbit/s link …" in the reason
        (``"that the test's other rows imply"``).
    """
    average = row.traffic.average_frame_bytes
    if not row.valid or row.rx_pps is None or average is None:
        return None
    share = 100.0 * row.rx_pps / line_rate_pps(average, link_bps)
    link = f"the {link_bps / 1e9:.4g} Gbit/s link {source}"
    percent = row.rx_line_rate_percent
    if percent is not None and abs(share - percent) > ROUNDING_PERCENT + RATE_COLUMNS_TOLERANCE * share:
        return (
            f"the rate columns disagree: the row's share of line rate says {percent:g} %, but "
            f"{row.rx_pps:.0f} fps is {share:.3f} % of line rate on {link}"
        )
    if share > 100.0 * (1 + LINE_RATE_TOLERANCE):
        return (
            f"{row.rx_pps:.0f} fps is {share:.3f} % of line rate on {link} "
            f"(tolerance {100 * LINE_RATE_TOLERANCE:g} %)"
        )
    return None
