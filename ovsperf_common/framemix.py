"""Frame-size mixes (IMIX and custom) and the ``--frame-sizes`` syntax that names them.

A mix is a list of (frame size including FCS [B], weight) pairs, weights by frame count. Its name
is what results carry where a frame size would be (VSperf's ``packet_size`` column, report rows,
the results store), so a mix is compared only with the same mix. Rates: :func:`mix_rates`
(``ovsperf_common.units``) with the mix's weighted average frame size.

``--frame-sizes`` takes comma-separated items, each one of:

* a frame size, ``64``;
* ``imix``: 64, 594 and 1518 B in 7:4:1 (the "simple IMIX" NFVbench sends: its
  ``traffic_utils.IMIX_L2_SIZES = [64, 594, 1518]``, ``IMIX_RATIOS = [7, 4, 1]``, sizes including the
  FCS; TRex's ``stl/imix.py`` sends the same as 60/590/1514 B without FCS in 28:16:4);
* ``genome:LETTERS``: RFC 6985's IMIX genome, one letter per frame in the order sent, ``a`` 64,
  ``b`` 128, ``c`` 256, ``d`` 512, ``e`` 1024, ``f`` 1280, ``g`` 1518, ``h`` 2112 B (RFC 6985 §4;
  the table VSperf's Spirent driver uses); weights are the letters' counts, so
  ``genome:aaaaaaaddddg`` is 64/512/1518 B in 7:4:1 (VSperf's default ``TRAFFIC['imix']``);
* a custom mix ``SIZE:WEIGHT/SIZE:WEIGHT/...``, e.g. ``64:7/594:4/1518:1``.

Standard library only, Python ≥ 3.9.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

from ovsperf_common.errors import FieldError
from ovsperf_common.units import MixRates, check_frame_size, mix_rates

RFC6985_GENOME = {"a": 64, "b": 128, "c": 256, "d": 512, "e": 1024, "f": 1280, "g": 1518, "h": 2112}
"""RFC 6985 §4 IMIX genome letters → frame size including FCS [B]."""

MAX_MIX_ENTRIES = 64
"""Most distinct frame sizes in one mix."""

MAX_WEIGHT = 1_000_000
"""Largest weight of one size in a mix."""

_CUSTOM_RE = re.compile(r"\A\d+:\d+(?:/\d+:\d+)*\Z")
_GENOME_RE = re.compile(r"\Agenome:([a-h]{1,1000})\Z")


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


def _mix(name: str, pairs: list[tuple[int, int]], option: str, jumbo: bool) -> FrameMix:
    sizes = [size for size, _ in pairs]
    duplicate = sorted({s for s in sizes if sizes.count(s) > 1})
    if duplicate:
        raise FieldError(
            f"mix '{name}' names {', '.join(map(str, duplicate))} B more than once.", field=option
        )
    if len(pairs) > MAX_MIX_ENTRIES:
        raise FieldError(f"mix '{name}' has more than {MAX_MIX_ENTRIES} sizes.", field=option)
    for size, weight in pairs:
        try:
            check_frame_size(size, jumbo=jumbo)
        except ValueError as err:
            raise FieldError(f"mix '{name}': {err}", field=option) from err
        if not 0 < weight <= MAX_WEIGHT:
            raise FieldError(
                f"mix '{name}': weight {weight} of {size} B is not a whole number in 1…{MAX_WEIGHT}.",
                field=option,
            )
    return FrameMix(name, tuple(sorted(pairs)))


def parse_item(text: str, *, jumbo: bool = False, option: str = "--frame-sizes") -> FrameSizeItem:
    """Parse one ``--frame-sizes`` item (module docstring: the syntax).

    :raises FieldError: naming ``option``, for an unknown name, a size outside 64…1518 B (9018 B
        with ``jumbo``), a weight ≤ 0, an empty mix or a size named twice in one mix.
    """
    item = text.strip()
    if item.isdigit():
        try:
            return check_frame_size(int(item), jumbo=jumbo)
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
        pairs = [(int(s), int(w)) for s, w in (part.split(":") for part in item.split("/"))]
        mix = _mix(item, pairs, option, jumbo)
        return FrameMix("/".join(f"{s}:{w}" for s, w in mix.entries), mix.entries)
    if item.startswith("genome:"):
        reason = "an RFC 6985 genome takes 1…1000 of the letters a…h (64…2112 B)"
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
    names = [item if isinstance(item, int) else item.name for item in items]
    repeated = sorted({str(n) for n in names if names.count(n) > 1})
    if repeated:
        raise FieldError(f"{', '.join(repeated)} given more than once.", field=option)
    return items
