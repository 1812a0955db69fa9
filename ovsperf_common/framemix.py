"""Frame-size mixes (IMIX and custom) and the ``--frame-sizes`` syntax that names them.

A mix is a list of (frame size including FCS [B], weight) pairs, weights by frame count. Its name
is what results carry where a frame size would be (VSperf's ``packet_size`` column, report rows,
the results store), so a mix is compared only with the same mix. Rates: :func:`mix_rates`
(``ovsperf_common.units``) with the mix's weighted average frame size.

``--frame-sizes`` takes comma-separated items, each one of:

* a frame size, ``64``;
* ``imix``: 64, 594 and 1518 B in 7:4:1 (the "simple IMIX" NFVbench sends: its
  ``traffic_utils.IMIX_L2_SIZES = [64, 594, 1518]``, ``IMIX_RATIOS = [7, 4, 1]``, sizes including the
  FCS; average 361.83 B). Not the same as TRex's ``stl/imix.py``: the same sizes (60/590/1514 B
  without FCS) in 28:20:4, i.e. ``64:7/594:5/1518:1`` here (average 379.69 B); nor as FD.io
  CSIT's ``IMIX_v4_1``: 64/570/1518 B in 28:16:4, i.e. ``64:7/570:4/1518:1`` (average 353.83 B);
* ``genome:LETTERS``: RFC 6985's IMIX genome, one letter per frame in the order sent, ``a`` 64,
  ``b`` 128, ``c`` 256, ``d`` 512, ``e`` 1024, ``f`` 1280, ``g`` 1518, ``h`` 2112 B (RFC 6985 §4;
  the table VSperf's Spirent driver uses); weights are the letters' counts, so
  ``genome:aaaaaaaddddg`` is 64/512/1518 B in 7:4:1 (VSperf's default ``TRAFFIC['imix']``);
* a custom mix ``SIZE:WEIGHT/SIZE:WEIGHT/...``, e.g. ``64:7/594:4/1518:1``.

Standard library only, Python ≥ 3.9.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Union

from ovsperf_common.errors import FieldError
from ovsperf_common.units import MixRates, check_frame_size, mix_rates

RFC6985_GENOME = {"a": 64, "b": 128, "c": 256, "d": 512, "e": 1024, "f": 1280, "g": 1518, "h": 2112}
"""RFC 6985 §4 IMIX genome letters → frame size including FCS [B]."""

MAX_MIX_ENTRIES = 16
"""Most distinct frame sizes in one mix (the generator's ``TG_MAX_MIX``)."""

MAX_WEIGHT = 4096
"""Largest weight of one size in a mix (the generator sends periods of at most 4096 frames)."""

MAX_GENOME_LETTERS = 128
"""Longest RFC 6985 genome taken (VSperf's default has 12 letters). With the two limits above a
mix's name stays short enough for the results store (255 characters with ``flows=N``)."""

MAX_DIGITS = 6
"""Longest whole number read in a size or weight [digits]: anything longer is outside every range,
and is refused before ``int()`` (slow for thousands of digits; refused past 4,300 on Python ≥ 3.11)."""

_CUSTOM_RE = re.compile(r"\A[0-9]+:[0-9]+(?:/[0-9]+:[0-9]+)*\Z")
_GENOME_RE = re.compile(rf"\Agenome:([a-h]{{1,{MAX_GENOME_LETTERS}}})\Z")


@dataclass(frozen=True)
class FrameMix:
    """A named frame-size mix.

    :param name: ``imix``, ``genome:<letters>`` or the canonical custom form
        ``SIZE:WEIGHT/...`` (ascending sizes): what results carry as the "frame size".
    :param entries: (frame size incl. FCS [B], weight) by ascending size; weights by frame count.
    """

    name: str
    entries: tuple[tuple[int, int], ...]

    @property
    def average_frame_bytes(self) -> float:
        """Weighted average frame size including FCS [B]."""
        return self.rates(1.0, 1e10).average_frame_bytes

    def rates(self, pps: float, link_bps: float) -> MixRates:
        """Return the L1/L2 rates and line rate at ``pps`` on a ``link_bps`` link (:func:`mix_rates`)."""
        return mix_rates(self.entries, pps, link_bps)


BUILTIN_MIXES = {"imix": FrameMix("imix", ((64, 7), (594, 4), (1518, 1)))}
"""Mixes known by name (module docstring: their sources)."""

FrameSizeItem = Union[int, FrameMix]
"""One item of ``--frame-sizes``: a frame size [B] or a mix."""


def _shown(text: str, limit: int = 80) -> str:
    """Return ``text`` for a message: its first ``limit`` characters, '…' when longer."""
    return text if len(text) <= limit else f"{text[:limit]}…"


def _whole(text: str, what: str, option: str) -> int:
    """Return the ASCII digits ``text`` as an int, refusing more than :data:`MAX_DIGITS` unread.

    :raises FieldError: naming ``option`` and ``what``, for a number too long to be in range.
    """
    if len(text.lstrip("0")) > MAX_DIGITS:
        raise FieldError(
            f"{what} '{_shown(text, 20)}' ({len(text)} digits) is outside every accepted range.", field=option
        )
    return int(text)


def _mix(name: str, pairs: list[tuple[int, int]], option: str, jumbo: bool) -> FrameMix:
    if len(pairs) > MAX_MIX_ENTRIES:
        raise FieldError(f"mix '{_shown(name)}' has more than {MAX_MIX_ENTRIES} sizes.", field=option)
    sizes = [size for size, _ in pairs]
    duplicate = sorted({s for s in sizes if sizes.count(s) > 1})
    if duplicate:
        raise FieldError(
            f"mix '{_shown(name)}' names {', '.join(map(str, duplicate))} B more than once.", field=option
        )
    for size, weight in pairs:
        try:
            check_frame_size(size, jumbo=jumbo)
        except ValueError as err:
            raise FieldError(f"mix '{_shown(name)}': {err}", field=option) from err
        if not 0 < weight <= MAX_WEIGHT:
            raise FieldError(
                f"mix '{_shown(name)}': weight {weight} of {size} B is not a whole number in 1…{MAX_WEIGHT}.",
                field=option,
            )
    return FrameMix(name, tuple(sorted(pairs)))


def parse_item(text: str, *, jumbo: bool = False, option: str = "--frame-sizes") -> FrameSizeItem:
    """Parse one ``--frame-sizes`` item (module docstring: the syntax).

    Cost is linear in ``text``: the number of sizes in a mix is checked before they are read,
    and a number of more than :data:`MAX_DIGITS` digits is refused unread.

    :raises FieldError: naming ``option``, for an unknown name, a size outside 64…1518 B (9018 B
        with ``jumbo``), a weight ≤ 0, an empty mix, a mix of more than :data:`MAX_MIX_ENTRIES`
        sizes or a size named twice in one mix.
    """
    item = text.strip()
    if item.isascii() and item.isdigit():
        try:
            return check_frame_size(_whole(item, "frame size", option), jumbo=jumbo)
        except ValueError as err:
            raise FieldError(str(err), field=option) from err
    if item.lower() in BUILTIN_MIXES:
        mix = BUILTIN_MIXES[item.lower()]
        return _mix(mix.name, list(mix.entries), option, jumbo)
    genome = _GENOME_RE.match(item)
    if genome:
        letters = genome.group(1)
        counts = {RFC6985_GENOME[ch]: letters.count(ch) for ch in sorted(set(letters))}
        return _mix(item, sorted(counts.items()), option, jumbo)
    if _CUSTOM_RE.match(item):
        if item.count("/") >= MAX_MIX_ENTRIES:
            raise FieldError(f"mix '{_shown(item)}' has more than {MAX_MIX_ENTRIES} sizes.", field=option)
        pairs = [
            (_whole(s, "frame size", option), _whole(w, f"weight of mix '{_shown(item)}'", option))
            for s, w in (part.split(":") for part in item.split("/"))
        ]
        mix = _mix(item, pairs, option, jumbo)
        return FrameMix("/".join(f"{s}:{w}" for s, w in mix.entries), mix.entries)
    if item.startswith("genome:"):
        reason = f"an RFC 6985 genome takes 1…{MAX_GENOME_LETTERS} of the letters a…h (64…2112 B)"
    elif ":" in item or "/" in item:
        reason = "a custom mix is SIZE:WEIGHT/SIZE:WEIGHT/... with whole numbers (e.g. 64:7/594:4/1518:1)"
    elif not item:
        reason = "an empty item (two commas, or a trailing comma)"
    else:
        reason = (
            f"not a frame size, a mix name ({', '.join(sorted(BUILTIN_MIXES))}), genome:… or SIZE:WEIGHT/…"
        )
    raise FieldError(f"'{item[:80]}' is {reason}.", field=option)


def parse_frame_sizes(
    text: str, *, jumbo: bool = False, option: str = "--frame-sizes"
) -> tuple[FrameSizeItem, ...]:
    """Parse a comma-separated ``--frame-sizes`` value into frame sizes and mixes, in order.

    :raises FieldError: naming ``option``, for any bad item (:func:`parse_item`), an empty list or
        an item given twice.
    """
    items = tuple(parse_item(part, jumbo=jumbo, option=option) for part in text.split(","))
    seen: set[str] = set()
    repeated: set[str] = set()
    for name in (item_name(item) for item in items):
        (repeated if name in seen else seen).add(name)
    if repeated:
        raise FieldError(f"{_shown(', '.join(sorted(repeated)))} given more than once.", field=option)
    return items


def item_name(item: FrameSizeItem) -> str:
    """Return what results carry for ``item`` where a frame size would be: ``'64'`` or the mix's name.

    This is the lab's VSperf ``packet_size`` value; :func:`read_packet_size` reads it back.
    """
    return str(item) if isinstance(item, int) else item.name


def item_text(item: FrameSizeItem) -> str:
    """Return ``item`` for a log line or a message: ``'64 B'`` or the mix's name."""
    return f"{item} B" if isinstance(item, int) else item.name


def item_entries(item: FrameSizeItem) -> tuple[tuple[int, int], ...]:
    """Return ``item`` as (frame size incl. FCS [B], weight) pairs; a size is the mix of one."""
    return ((item, 1),) if isinstance(item, int) else item.entries


def item_line_rate_pps(item: FrameSizeItem, link_bps: float) -> float:
    """Return the line rate of ``item`` on a ``link_bps`` link [pps] (:func:`mix_rates`)."""
    return mix_rates(item_entries(item), 1.0, link_bps).line_rate_pps


def reduced_weights(mix: FrameMix) -> tuple[tuple[int, int], ...]:
    """Return ``mix``'s pairs with the weights divided by their greatest common divisor.

    This is what a generator sends per period (``64:14/594:8`` → ``64:7/594:4``): the period is the
    sum of these weights.
    """
    divisor = math.gcd(*(weight for _, weight in mix.entries))
    return tuple((size, weight // divisor) for size, weight in mix.entries)


VSPERF_IMIX_NAME = "vsperf-imix"
"""Name given to a VSperf result whose ``packet_size`` is ``0`` (IMIX, ``TRAFFICGEN_PKT_SIZES = (0,)``)
and that does not say its genome (only VSperf's Spirent driver writes ``imix_genome``)."""


def read_packet_size(text: str, imix_genome: str | None = None) -> tuple[int, str]:
    """Read a results file's ``packet_size`` into (frame size incl. FCS [B], mix name).

    A plain size gives ``(size, '')``; a mix gives ``(0, name)`` — 0 is what VSperf itself writes
    for IMIX (``TRAFFICGEN_PKT_SIZES = (0,)``, its ``packet_size`` column is ``str(0)``), and the
    lab writes the mix's name. VSperf's ``0`` becomes ``genome:<imix_genome>`` when that column is
    there, else :data:`VSPERF_IMIX_NAME`.

    :raises ValueError: when ``text`` is neither a positive whole number, ``0`` nor a mix name
        :func:`parse_item` accepts (message without the file: the caller names it).
    """
    value = text.strip()
    if value.isascii() and value.isdigit():
        if len(value.lstrip("0")) > MAX_DIGITS:
            raise ValueError(f"packet_size '{_shown(value, 20)}' ({len(value)} digits) is not a frame size")
        size = int(value)
        if size > 0:
            return size, ""
        genome = (imix_genome or "").strip().lower()
        if genome and _GENOME_RE.match(f"genome:{genome}"):
            return 0, f"genome:{genome}"
        return 0, VSPERF_IMIX_NAME
    try:
        item = parse_item(value, jumbo=True, option="packet_size")
    except FieldError as err:
        raise ValueError(f"packet_size '{value[:80]}' is not a frame size or a mix name") from err
    return (item, "") if isinstance(item, int) else (0, item.name)


def mix_average_bytes(name: str) -> float | None:
    """Return the weighted average frame size of the mix named ``name`` [B], ``None`` if unknown.

    Names are self-describing (``imix``, ``genome:…``, ``SIZE:WEIGHT/…``); :data:`VSPERF_IMIX_NAME`
    is not (VSperf's genome was not recorded).
    """
    try:
        item = parse_item(name, jumbo=True, option="mix")
    except FieldError:
        return None
    return float(item) if isinstance(item, int) else item.average_frame_bytes


@dataclass(frozen=True)
class TrafficKey:
    """What a result row measured besides its test: frame size or mix, and flows per direction.

    Rows are compared only with rows of an equal key. Ordering (:meth:`sort_key`): plain sizes
    ascending, then mixes by name, then flows ascending.
    """

    frame_size_bytes: int
    """Frame size including FCS [B]; 0 for a mix (VSperf's IMIX convention)."""
    mix: str = ""
    """The mix's name when ``frame_size_bytes`` is 0, else empty."""
    flows: int | None = None
    """Flows per direction (VSperf ``stream_count``) [1]; ``None`` when the result does not say."""

    def sort_key(self) -> tuple[bool, int, str, int]:
        """Return the ordering key: sizes before mixes, then by size, name and flows."""
        return (self.frame_size_bytes == 0, self.frame_size_bytes, self.mix, self.flows or 0)

    @property
    def average_frame_bytes(self) -> float | None:
        """Return the frame size, or the mix's weighted average size [B].

        None for a mix whose sizes are unknown (:data:`VSPERF_IMIX_NAME`).
        """
        return mix_average_bytes(self.mix) if self.frame_size_bytes == 0 else float(self.frame_size_bytes)

    @property
    def frame_label(self) -> str:
        """``'64'`` or the mix's name: the report's frame-size column."""
        return self.mix if self.frame_size_bytes == 0 else str(self.frame_size_bytes)

    @property
    def frame_text(self) -> str:
        """``'64 B'`` or the mix's name, for messages."""
        return self.mix if self.frame_size_bytes == 0 else f"{self.frame_size_bytes} B"

    @property
    def store_label(self) -> str:
        """Return what the results store files beside the frame size.

        ``''`` for a plain size at one flow (or flows not recorded), else the mix's name and/or
        ``flows=N``, e.g. ``'imix flows=1000'``.
        """
        parts = [self.mix] if self.mix else []
        if self.flows is not None and self.flows != 1:
            parts.append(f"flows={self.flows}")
        return " ".join(parts)

    @classmethod
    def from_store(cls, frame_size_bytes: int, label: str) -> TrafficKey:
        """Return the key the store filed as (``frame_size_bytes``, :attr:`store_label`).

        A label that does not parse (written by a newer release) is kept whole as the mix's name.
        """
        mix, flows = "", None
        for part in label.split():
            digits = part[6:]  # at most 9 ASCII digits: a flow count, not a name
            if part.startswith("flows=") and digits.isascii() and digits.isdigit() and len(digits) <= 9:
                flows = int(digits)
            else:
                mix = part
        return cls(frame_size_bytes, mix, flows)

    def text(self, *, with_flows: bool = True) -> str:
        """Return ``'64 B'``, ``'imix'``, or with more than one flow ``'64 B, 1000 flows'``.

        :param with_flows: ``False`` leaves the flows out; ``True`` names them when above 1 (a
            single flow is the default traffic and needs no words).
        """
        if not with_flows or self.flows is None or self.flows == 1:
            return self.frame_text
        return f"{self.frame_text}, {self.flows} flows"


def item_json(item: FrameSizeItem) -> dict[str, int | str]:
    """Return the keys results files carry for ``item``.

    ``frame_size_bytes`` (0 for a mix, as VSperf writes for IMIX) and ``packet_size``
    (:func:`item_name`; read back with :func:`read_packet_size`).
    """
    return {"frame_size_bytes": item if isinstance(item, int) else 0, "packet_size": item_name(item)}


def traffic_from_json(entry: Mapping[str, object], where: str) -> TrafficKey:
    """Read the traffic keys of a results JSON entry (``item_json`` and ``flows``) into a key.

    ``packet_size`` (when present) decides, else ``frame_size_bytes`` must be a size in 64…9216 B;
    ``flows`` is absent/null or a whole number ≥ 1.

    :raises ValueError: naming ``where`` and the field, for a value of the wrong kind.
    """
    packet_size = entry.get("packet_size")
    if packet_size is not None:
        if not isinstance(packet_size, str) or len(packet_size) > 200:
            raise ValueError(f"{where}.packet_size is not a short text")
        try:
            size, mix = read_packet_size(packet_size)
        except ValueError as err:
            raise ValueError(f"{where}.packet_size: {err}") from err
    else:
        raw = entry.get("frame_size_bytes")
        if type(raw) is not int or not 64 <= raw <= 9216:
            raise ValueError(f"{where}.frame_size_bytes is {str(raw)[:40]}")
        size, mix = raw, ""
    flows = entry.get("flows")
    if flows is not None and (type(flows) is not int or flows < 1):
        raise ValueError(f"{where}.flows is {str(flows)[:40]}, not a flow count")
    return TrafficKey(size, mix, flows)
