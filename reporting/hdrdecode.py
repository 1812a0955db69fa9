"""Decode untrusted HdrHistogram V2 strings within fixed memory bounds, and merge histograms.

An ``hdrh`` field of ``ovsperf-latency.json`` is base64 of an 8-byte header (cookie, length) and a
zlib-compressed payload: a 40-byte header (cookie, payload length, normalizing offset,
significant figures, lowest and highest trackable value, conversion ratio) and the counts as
ZigZag LEB128 varints (HdrHistogram's "V2 encoding"). ``hdrh.HdrHistogram.decode`` inflates the
payload whole and allocates the counts array the header asks for, so a small field could demand
gigabytes. Here the payload is inflated with a limit and the header's layout is checked before
anything is allocated; only then is the string handed to ``hdrh``.

:func:`add_covering` merges two histograms whatever their ranges: when the second one holds values
the first one cannot, both go into a new histogram that covers the two (``HdrHistogram.add``
raises ``IndexError`` there).
"""

from __future__ import annotations

import binascii
import math
import struct
import zlib

from hdrh.codec import HdrCookieException, HdrHistogramSettingsException, HdrLengthException
from hdrh.histogram import HdrHistogram

from reporting.errors import ReportingError

MAX_COUNTS = 1 << 20
"""Largest counts array a decoded histogram may have [counters] (8 MiB of 64-bit counters; the
lab's histograms, 1 ns to 60 s at 3 significant digits, have 27,648)."""

MAX_PAYLOAD_BYTES = 40 + 9 * MAX_COUNTS
"""Largest inflated payload [B]: the header and at most 9 bytes of varint per counter."""

_EXTERNAL = struct.Struct(">II")
_PAYLOAD = struct.Struct(">IIIIqqd")
_COMPRESSION_COOKIE = 0x1C849304
_ENCODING_COOKIE = 0x1C849303


class HistogramError(ReportingError, ValueError):
    """A histogram this module does not decode or merge; the message says why.

    Caught by the callers, which fall back to the runs' own percentiles.
    """


def counts_length(lowest: int, highest: int, significant_figures: int) -> int:
    """Return the counts array length ``HdrHistogram(lowest, highest, significant_figures)`` allocates.

    :raises HistogramError: when HdrHistogram would refuse the settings.
    """
    if not 1 <= significant_figures <= 5 or lowest < 1 or highest < 2 * lowest:
        raise HistogramError(
            f"settings lowest {lowest}, highest {highest}, {significant_figures} significant figures "
            "are not an HdrHistogram's"
        )
    unit_magnitude = lowest.bit_length() - 1
    sub_bucket_count_magnitude = math.ceil(math.log2(2 * 10**significant_figures))
    sub_bucket_count = 1 << max(sub_bucket_count_magnitude, 1)
    smallest_untrackable = sub_bucket_count << unit_magnitude
    buckets = 1
    while smallest_untrackable <= highest:
        if smallest_untrackable > (1 << 63):
            break
        smallest_untrackable <<= 1
        buckets += 1
    return (buckets + 1) * (sub_bucket_count // 2)


def _inflate(compressed: bytes) -> bytes:
    """Return ``compressed`` inflated, refusing more than :data:`MAX_PAYLOAD_BYTES`."""
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(compressed, MAX_PAYLOAD_BYTES)
    except zlib.error as err:
        raise HistogramError(f"the payload does not inflate ({err})") from err
    if inflater.unconsumed_tail:
        raise HistogramError(f"the payload inflates to more than {MAX_PAYLOAD_BYTES} B")
    return data


def decode_bounded(hdrh: str) -> HdrHistogram:
    """Return the histogram of a base64 HdrHistogram V2 compressed string.

    Memory stays below about ``2 × len(hdrh) + 2 × MAX_PAYLOAD_BYTES + 8 × MAX_COUNTS`` bytes.

    :raises HistogramError: when the string is not base64 of one V2 compressed histogram, its
        payload inflates beyond :data:`MAX_PAYLOAD_BYTES`, its settings are not HdrHistogram's or
        need more than :data:`MAX_COUNTS` counters, or its counts do not decode.
    """
    try:
        raw = binascii.a2b_base64(hdrh.encode("ascii"), strict_mode=True)
    except (binascii.Error, ValueError) as err:
        raise HistogramError("not base64") from err
    if len(raw) < _EXTERNAL.size:
        raise HistogramError("shorter than the HdrHistogram header")
    cookie, length = _EXTERNAL.unpack_from(raw)
    if cookie & ~0xF0 != _COMPRESSION_COOKIE or length != len(raw) - _EXTERNAL.size:
        raise HistogramError("not an HdrHistogram V2 compressed histogram (cookie or length)")
    payload = _inflate(raw[_EXTERNAL.size :])
    if len(payload) < _PAYLOAD.size:
        raise HistogramError("the payload is shorter than its header")
    inner, _, _, figures, lowest, highest, _ = _PAYLOAD.unpack_from(payload)
    if inner & ~0xF0 != _ENCODING_COOKIE:
        raise HistogramError("the payload is not HdrHistogram V2 encoded (cookie)")
    counters = counts_length(lowest, highest, figures)
    if counters > MAX_COUNTS:
        raise HistogramError(f"its settings need {counters} counters, more than {MAX_COUNTS}")
    try:
        return HdrHistogram.decode(hdrh)
    except (
        binascii.Error,
        zlib.error,
        ValueError,
        TypeError,
        IndexError,
        OverflowError,
        HdrCookieException,
        HdrHistogramSettingsException,
        HdrLengthException,
    ) as err:
        raise HistogramError(f"its counts do not decode ({type(err).__name__})") from err


def add_covering(total: HdrHistogram, other: HdrHistogram) -> HdrHistogram:
    """Return ``total`` with ``other`` added.

    That is ``total`` itself when it can hold ``other``'s values, else a new histogram covering
    both ranges, at the finer of their precisions when that fits :data:`MAX_COUNTS`, else at the
    coarser.

    :raises HistogramError: when no covering histogram fits :data:`MAX_COUNTS` counters.
    """
    reach = total.get_highest_equivalent_value(total.get_value_from_index(total.counts_len - 1))
    if other.get_total_count() == 0 or other.get_max_value() <= reach:
        total.add(other)
        return total
    lowest = min(total.lowest_trackable_value, other.lowest_trackable_value)
    highest = max(total.highest_trackable_value, other.highest_trackable_value, other.get_max_value())
    for figures in sorted({total.significant_figures, other.significant_figures}, reverse=True):
        counters = counts_length(lowest, highest, figures)
        if counters <= MAX_COUNTS:
            wider = HdrHistogram(lowest, highest, figures)
            wider.add(total)
            wider.add(other)
            return wider
    raise HistogramError(f"covering both needs {counters} counters, more than {MAX_COUNTS}")
