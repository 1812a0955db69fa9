"""Read the lab's ``ovsperf-latency.json``: latency at shares of the PDR load, per result CSV.

Format: docs/results-format.md (written by ``ovsperf_lab.results.ResultsWriter.write_latency``).
Every field is checked where it enters; a bad entry or level becomes a
:class:`~reporting.resultmodel.LoadWarning` naming the file and the field, and the rest is read.
An absent file means "not measured" (VSperf/MoonGen results, the binary search).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ovsperf_common.framemix import TrafficKey, traffic_from_json
from ovsperf_common.labfiles import LATENCY_FILE, LATENCY_SCHEMA
from reporting.errors import LabFileFieldError
from reporting.latency import within
from reporting.resultmodel import LatencyPoint, LoadWarning

MAX_LATENCY_FILE_BYTES = 64 * 1024 * 1024
"""Larger files are not read [B] (a run of 7 sizes × 4 levels is well below 1 MiB)."""

MAX_LATENCY_LEVELS = 1024
"""Levels read from one file [1] (7 sizes × 4 levels is 28); the rest are not read, with a warning,
so that a file cannot make a report decode histograms without end."""

HDR_TOLERANCE = 0.002
"""How far a histogram percentile may lie outside the exact min/max [1] (files of older labs, whose
generator histogram had 0.4 % buckets); within it the percentile is clamped to min/max."""

_PERCENTILE_KEYS = ("min_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns")


def _number(obj: Mapping[str, Any], key: str, where: str) -> float:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise LabFileFieldError(f"{where}.{key} is {repr(value)[:60]}, not a finite number >= 0")
    return float(value)


def _point(traffic: TrafficKey, level: Mapping[str, Any], where: str) -> LatencyPoint | None:
    """Return one level's merged latency; ``None`` when no frame came back (``all`` is null)."""
    merged = level.get("all")
    if merged is None:
        return None
    if not isinstance(merged, dict):
        raise LabFileFieldError(f"{where}.all is not an object")
    values = {key: _number(merged, key, f"{where}.all") for key in _PERCENTILE_KEYS}
    # Histogram percentiles may pass the exact extremes by the histogram's precision (0.1 %).
    low, high = values["min_ns"] * (1 - HDR_TOLERANCE), values["max_ns"] * (1 + HDR_TOLERANCE)
    quantiles = [values[k] for k in _PERCENTILE_KEYS[1:-1]]
    if quantiles != sorted(quantiles) or not all(low <= q <= high for q in quantiles):
        raise LabFileFieldError(f"{where}.all percentiles are not ascending from min_ns to max_ns")
    for key in _PERCENTILE_KEYS[1:-1]:
        values[key] = within(values[key], values["min_ns"], values["max_ns"])
    rx = merged.get("rx_packets")
    if isinstance(rx, bool) or not isinstance(rx, int) or rx < 0:
        raise LabFileFieldError(f"{where}.all.rx_packets is {rx!r}, not a count")
    hdrh = merged.get("hdrh")
    if hdrh is not None and not (isinstance(hdrh, str) and hdrh.isascii() and len(hdrh) < 16 * 1024 * 1024):
        raise LabFileFieldError(f"{where}.all.hdrh is not a base64 string")
    valid = level.get("valid", True)
    return LatencyPoint(
        frame_size_bytes=traffic.frame_size_bytes,
        mix=traffic.mix,
        flows=traffic.flows,
        percent_of_pdr=_number(level, "percent_of_pdr", where),
        load_pps=_number(level, "load_fps_per_direction", where),
        rx_packets=rx,
        hdrh=hdrh,
        valid=valid is True,
        **values,
    )


def load_latency(path: Path, warnings: list[LoadWarning]) -> dict[str, tuple[LatencyPoint, ...]]:
    """Read ``path/ovsperf-latency.json``.

    :returns: result CSV file name → its points, by frame size then load; empty when the file is
        absent or unusable (with a warning).
    """
    file = path / LATENCY_FILE
    if not file.exists() and not file.is_symlink():
        return {}
    if file.is_symlink() or not file.is_file():
        warnings.append(LoadWarning(file, None, "Not a regular file (symbolic link?); latency not read."))
        return {}
    try:
        if file.stat().st_size > MAX_LATENCY_FILE_BYTES:
            raise LabFileFieldError(f"larger than {MAX_LATENCY_FILE_BYTES} B")
        document = json.loads(file.read_bytes())
    except RecursionError:
        warnings.append(
            LoadWarning(file, None, "Cannot read the latency file (JSON nested too deep); latency not shown.")
        )
        return {}
    except (OSError, ValueError) as err:
        warnings.append(LoadWarning(file, None, f"Cannot read the latency file ({err}); latency not shown."))
        return {}
    if (
        not isinstance(document, dict)
        or document.get("schema") != LATENCY_SCHEMA
        or not isinstance(document.get("results"), list)
    ):
        warnings.append(
            LoadWarning(
                file,
                None,
                f"Not an {LATENCY_FILE} of schema {LATENCY_SCHEMA} with a 'results' list; latency not shown.",
            )
        )
        return {}
    found: dict[str, list[LatencyPoint]] = {}
    budget = MAX_LATENCY_LEVELS
    for number, entry in enumerate(document["results"]):
        where = f"results[{number}]"
        try:
            if not isinstance(entry, dict):
                raise LabFileFieldError(f"{where} is not an object")
            csv_name, levels = entry.get("csv"), entry.get("levels")
            if not isinstance(csv_name, str) or not csv_name.startswith("result_") or "/" in csv_name:
                raise LabFileFieldError(f"{where}.csv is {repr(csv_name)[:60]}, not a result CSV name")
            try:
                traffic = traffic_from_json(entry, where)
            except ValueError as err:
                raise LabFileFieldError(str(err)) from err
            if not isinstance(levels, list):
                raise LabFileFieldError(f"{where}.levels is not a list")
            if len(levels) > budget:
                warnings.append(
                    LoadWarning(
                        file,
                        None,
                        f"More than {MAX_LATENCY_LEVELS} latency levels; {where} and later entries are "
                        "not read.",
                    )
                )
                break
            budget -= len(levels)
            points = []
            for index, level in enumerate(levels):
                if not isinstance(level, dict):
                    raise LabFileFieldError(f"{where}.levels[{index}] is not an object")
                point = _point(traffic, level, f"{where}.levels[{index}]")
                if point is not None:
                    points.append(point)
        except LabFileFieldError as err:
            warnings.append(LoadWarning(file, None, f"Field {err}; that entry is not shown."))
            continue
        found.setdefault(csv_name, []).extend(points)
    return {
        name: tuple(sorted(points, key=lambda p: (p.traffic.sort_key(), p.percent_of_pdr)))
        for name, points in found.items()
    }
