"""Read ``ovsperf-trafficgen``'s JSON replies into the lab's records: pure parsers, no process.

Protocol: ``docs/trafficgen.md`` (one JSON object per line; ``RESULT``, ``PORT``). The
``trafficgen`` backend (:mod:`~ovsperf_lab.generators.dpdk`) feeds its replies in. Every parser
checks each key's JSON type and raises :class:`~ovsperf_lab.errors.TrafficGeneratorError` naming
the key and where it is, never guesses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ovsperf_lab.errors import TrafficGeneratorError
from ovsperf_lab.generators.api import PortInfo
from ovsperf_lab.model import DirectionResult, GeneratorCounters, TrialResult, TrialSpec


def require(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """Return ``obj[key]`` after checking its JSON type.

    :raises TrafficGeneratorError: when the key is missing or has another type.
    """
    if key not in obj:
        raise TrafficGeneratorError(f"Generator reply has no key {key!r} in {where}.")
    value = obj[key]
    if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
        raise TrafficGeneratorError(
            f"Generator reply key {key!r} in {where} has type {type(value).__name__}."
        )
    return value


def optional_float(obj: Mapping[str, Any], key: str, where: str) -> float | None:
    """Return ``obj[key]`` as float, or ``None`` when the generator sent ``null`` (not measured)."""
    if obj.get(key, 0) is None:
        return None
    return float(require(obj, key, (int, float), where))


def optional_int(obj: Mapping[str, Any], key: str) -> int | None:
    """Return ``obj[key]`` when it is a JSON integer, else ``None`` (older generators omit it)."""
    value = obj.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_direction(obj: Mapping[str, Any], index: int) -> DirectionResult:
    """Convert one ``directions[i]`` object of a trial reply into a :class:`DirectionResult`.

    Source: ``RESULT.directions`` in ``docs/trafficgen.md``.

    :raises TrafficGeneratorError: when a key is missing or has the wrong type.
    """
    where = f"'directions[{index}]'"
    return DirectionResult(
        tx_port=int(require(obj, "tx_port", int, where)),
        rx_port=int(require(obj, "rx_port", int, where)),
        tx_packets=int(require(obj, "tx_packets", int, where)),
        rx_packets=int(require(obj, "rx_packets", int, where)),
        tx_pps=float(require(obj, "tx_pps", (int, float), where)),
        tx_duration_s=float(require(obj, "tx_duration_s", (int, float), where)),
        reordered_packets=int(require(obj, "reordered_packets", int, where)),
        duplicate_packets=int(require(obj, "duplicate_packets", int, where)),
        latency_min_ns=optional_float(obj, "latency_min_ns", where),
        latency_avg_ns=optional_float(obj, "latency_avg_ns", where),
        latency_max_ns=optional_float(obj, "latency_max_ns", where),
        latency_p50_ns=optional_float(obj, "latency_p50_ns", where),
        latency_p99_ns=optional_float(obj, "latency_p99_ns", where),
        latency_p999_ns=optional_float(obj, "latency_p999_ns", where),
        latency_histogram=_histogram(obj, where),
        per_size=_per_size(obj, where),
    )


def _per_size(obj: Mapping[str, Any], where: str) -> tuple[tuple[int, int, int], ...] | None:
    """Return ``obj['per_size']`` as (frame size [B], sent, received) triples, ``None`` when absent.

    :raises TrafficGeneratorError: when it is not a list of objects with whole
        ``frame_size_bytes``, ``tx_packets`` and ``rx_packets``.
    """
    raw = obj.get("per_size")
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise TrafficGeneratorError(f"Generator reply: {where}.per_size is not a list.")
    triples = []
    for i, entry in enumerate(raw):
        place = f"{where}.per_size[{i}]"
        if not isinstance(entry, dict):
            raise TrafficGeneratorError(f"Generator reply: {place} is not an object.")
        triples.append(
            (
                int(require(entry, "frame_size_bytes", int, place)),
                int(require(entry, "tx_packets", int, place)),
                int(require(entry, "rx_packets", int, place)),
            )
        )
    return tuple(triples)


def _histogram(obj: Mapping[str, Any], where: str) -> tuple[tuple[float, int], ...] | None:
    """Return ``obj['latency_histogram']`` as ``(middle [ns], count)`` pairs, ``None`` when absent.

    :raises TrafficGeneratorError: when it is not a list of ``[number >= 0, integer >= 1]`` pairs.
    """
    raw = obj.get("latency_histogram")
    if raw is None:
        return None
    pairs: list[tuple[float, int]] = []
    ok = isinstance(raw, list)
    for pair in raw if ok else ():
        if not (
            isinstance(pair, list)
            and len(pair) == 2
            and isinstance(pair[0], int | float)
            and not isinstance(pair[0], bool)
            and pair[0] >= 0
            and isinstance(pair[1], int)
            and not isinstance(pair[1], bool)
            and pair[1] >= 1
        ):
            ok = False
            break
        pairs.append((float(pair[0]), int(pair[1])))
    if not ok:
        raise TrafficGeneratorError(
            f"Generator reply field {where}.latency_histogram is not a list of [ns, count] pairs."
        )
    return tuple(pairs)


def parse_trial_result(spec: TrialSpec, result: Mapping[str, Any]) -> TrialResult:
    """Convert the ``result`` object of a trial reply into a :class:`TrialResult` for ``spec``.

    :raises TrafficGeneratorError: when a key is missing, has the wrong type, or there are no
        directions.
    """
    directions = require(result, "directions", list, "'result'")
    if not directions:
        raise TrafficGeneratorError("Generator trial result has no directions.")
    parsed = tuple(
        parse_direction(require({"d": d}, "d", dict, "'directions'"), i) for i, d in enumerate(directions)
    )
    reason = result.get("invalid_reason")
    return TrialResult(
        spec=spec,
        directions=parsed,
        valid=bool(require(result, "valid", bool, "'result'")),
        invalid_reason=str(reason) if reason is not None else None,
        generator_counters=parse_counters(result, directions),
    )


def parse_counters(result: Mapping[str, Any], directions: list[Any]) -> GeneratorCounters:
    """Return the refused, foreign and warm-up frames of a trial ``result`` object.

    Source: ``RESULT`` in ``docs/trafficgen.md`` (``directions[i].tx_refused_packets``,
    ``rx_foreign_packets``, ``warmup_tx_packets``); a key an older generator omits counts 0.
    """

    def count(obj: Mapping[str, Any], key: str) -> int:
        return max(optional_int(obj, key) or 0, 0)

    foreign = result.get("rx_foreign_packets")
    return GeneratorCounters(
        tx_refused_packets=tuple(count(d, "tx_refused_packets") for d in directions),
        rx_foreign_packets=tuple(
            count({"n": n}, "n") for n in (foreign if isinstance(foreign, list) else ())
        ),
        warmup_tx_packets=count(result, "warmup_tx_packets"),
    )


def parse_port(obj: Mapping[str, Any], index: int) -> PortInfo:
    """Convert one ``PORT`` object of a reply into a :class:`PortInfo`.

    :raises TrafficGeneratorError: when a key is missing or has the wrong type.
    """
    where = f"'ports[{index}]'"
    speed = obj.get("link_speed_mbps")
    return PortInfo(
        index=int(require(obj, "port", int, where)),
        mac=str(require(obj, "mac", str, where)).lower(),
        link_speed_mbps=int(speed) if isinstance(speed, int) and not isinstance(speed, bool) else None,
        link_up=bool(require(obj, "link_up", bool, where)),
        rx_descriptors=optional_int(obj, "rx_descriptors"),
        tx_descriptors=optional_int(obj, "tx_descriptors"),
        name=str(obj["name"]) if isinstance(obj.get("name"), str) and obj["name"] else None,
    )


def parse_ports(reply: Mapping[str, Any]) -> tuple[PortInfo, ...]:
    """Return the ``ports`` of a reply (``ready``, ``ports``, ``wait_link``), index order.

    :raises TrafficGeneratorError: when it is missing, not a list of objects, or a port lacks a key.
    """
    ports = require(reply, "ports", list, "the reply")
    return tuple(parse_port(require({"p": p}, "p", dict, "'ports'"), i) for i, p in enumerate(ports))
