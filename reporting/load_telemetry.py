"""Read ``ovsperf-telemetry.json``: the DUT's own counters around each final trial or VSperf test.

Format: docs/results-format.md (written by ``ovsperf_lab.results.ResultsWriter.write_telemetry``
in the lab; by ``ovsperf_common.vsperf_telemetry`` under Beaker, one whole-test window per VSperf
test: ``"window": "test"``, no frame size, no load).
Per result CSV and frame size one :class:`~reporting.resultmodel.TelemetryPoint` is kept: the
telemetry of the valid trial at the highest load without loss (the trial the NDR rests on), else
of the valid trial at the highest load. Every field is checked where it enters; a bad trial
becomes a :class:`~reporting.resultmodel.LoadWarning` naming the file and the field. An absent
file means "not collected" (VSperf runs without our collector, older lab runs, ``--no-telemetry``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ovsperf_common.framemix import TrafficKey, traffic_from_json
from ovsperf_common.labfiles import TELEMETRY_FILE, TELEMETRY_SCHEMA
from ovsperf_common.telemetryfile import HIT_COUNTERS
from reporting.errors import LabFileFieldError
from reporting.resultmodel import LoadWarning, TelemetryPoint

MAX_TELEMETRY_FILE_BYTES = 256 * 1024 * 1024
"""Larger files are not read [B]."""

SHOWN_HITS = HIT_COUNTERS[2:]
"""The classification shares shown (hardware offload and MFEX are not used by the lab)."""

MAX_THREADS = 4
"""Busiest threads kept per process."""

MAX_PROCESSES = 16
"""Processes read per trial (the lab writes ovs-vswitchd and the guests)."""

MAX_RXQ = 1024
"""Rx queue placements read per trial."""

MAX_NOTES = 32
"""Notes read per trial."""


def _optional(obj: Mapping[str, Any], key: str, where: str, *, maximum: float | None = None) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise LabFileFieldError(f"{where}.{key} is {repr(value)[:60]}, not a finite number >= 0")
    if maximum is not None and value > maximum * 1.02:  # 2 %: CPU accounting granularity
        raise LabFileFieldError(f"{where}.{key} is {value!r}, above {maximum:g}")
    return float(value)


def _kind(value: object) -> str:
    """Return what a JSON value is, for a message: ``5`` → "a number", ``"x"`` → "a text"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a text"
    return "a list" if isinstance(value, list) else "an object"


def _text(value: object, where: str, limit: int = 200) -> str:
    if not isinstance(value, str) or len(value) > limit:
        raise LabFileFieldError(f"{where} is not a short text")
    return "".join(ch if ch.isprintable() else "?" for ch in value)


def _point(trial: Mapping[str, Any], where: str) -> TelemetryPoint:
    whole_test = trial.get("window") == "test"
    size = trial.get("frame_size_bytes")
    traffic = None
    if whole_test and size is None:
        sizes = trial.get("frame_sizes_bytes")
        if not isinstance(sizes, list) or not all(type(s) is int and 64 <= s <= 9216 for s in sizes):
            raise LabFileFieldError(f"{where}.frame_sizes_bytes is {str(sizes)[:80]}, not frame sizes")
    else:
        try:
            traffic = traffic_from_json(trial, where)
        except ValueError as err:
            raise LabFileFieldError(str(err)) from err
    load = _optional(trial, "load_pps", where)
    if load is None and not whole_test:
        raise LabFileFieldError(f"{where}.load_pps is missing")
    totals = trial.get("totals")
    if not isinstance(totals, dict):
        raise LabFileFieldError(f"{where}.totals is {_kind(totals)}, not an object")
    threads: list[tuple[str, str, float | None]] = []
    raw_threads = trial.get("threads") or {}
    if not isinstance(raw_threads, dict):
        raise LabFileFieldError(f"{where}.threads is {_kind(raw_threads)}, not an object")
    for process, rows in list(raw_threads.items())[:MAX_PROCESSES]:
        if not isinstance(rows, list):
            raise LabFileFieldError(f"{where}.threads[{process[:40]!r}] is {_kind(rows)}, not a list")
        for n, row in enumerate(rows[:MAX_THREADS]):
            here = f"{where}.threads[{process[:40]!r}][{n}]"
            if not isinstance(row, dict):
                raise LabFileFieldError(f"{here} is not an object")
            threads.append(
                (
                    _text(process, here),
                    _text(row.get("name"), f"{here}.name"),
                    _optional(row, "cpu_percent", here, maximum=100.0),
                )
            )
    rxq: list[tuple[str, str, int, float | None]] = []
    raw_rxq = trial.get("rxq") or []
    if not isinstance(raw_rxq, list):
        raise LabFileFieldError(f"{where}.rxq is {_kind(raw_rxq)}, not a list")
    for n, row in enumerate(raw_rxq[:MAX_RXQ]):
        here = f"{where}.rxq[{n}]"
        if (
            not isinstance(row, dict)
            or isinstance(row.get("queue"), bool)
            or not isinstance(row.get("queue"), int)
        ):
            raise LabFileFieldError(f"{here} is not a queue placement")
        rxq.append(
            (
                _text(row.get("pmd"), f"{here}.pmd"),
                _text(row.get("port"), f"{here}.port"),
                int(row["queue"]),
                _optional(row, "usage_percent", here, maximum=100.0),
            )
        )
    notes = trial.get("notes") or []
    if not isinstance(notes, list):
        raise LabFileFieldError(f"{where}.notes is {_kind(notes)}, not a list")
    notes = notes[:MAX_NOTES]
    return TelemetryPoint(
        frame_size_bytes=None if traffic is None else traffic.frame_size_bytes,
        mix="" if traffic is None else traffic.mix,
        flows=None if traffic is None else traffic.flows,
        load_pps=load,
        loss_ratio=_optional(trial, "loss_ratio", where, maximum=1.0),
        cycles_per_packet=_optional(totals, "cycles_per_packet", f"{where}.totals"),
        pmd_busy_percent=_optional(totals, "pmd_busy_percent", f"{where}.totals", maximum=100.0),
        hits_percent=tuple(
            (name, _optional(totals, f"{name}_percent", f"{where}.totals", maximum=100.0))
            for name in SHOWN_HITS
        ),
        threads=tuple(threads),
        rxq=tuple(rxq),
        notes=tuple(_text(n, f"{where}.notes", 400) for n in notes),
        frame_sizes_bytes=tuple(trial["frame_sizes_bytes"]) if whole_test and size is None else (),
    )


def _order(key: tuple[int | None, str, int | None]) -> tuple[bool, int, str, int]:
    """Return the ordering of a point key: the whole-test window first, then as :class:`TrafficKey`."""
    size, mix, flows = key
    return (False, -1, "", 0) if size is None else TrafficKey(size, mix, flows).sort_key()


def _representative(points: list[tuple[bool, TelemetryPoint]]) -> TelemetryPoint:
    """Return the valid trial at the highest lossless load, else the valid one at the highest load.

    A whole-test window (VSperf, no load) is the only point of its test: the last one is kept.
    """
    valid = [p for ok, p in points if ok] or [p for _, p in points]
    lossless = [p for p in valid if p.loss_ratio == 0]
    return max(lossless or valid, key=lambda p: -1.0 if p.load_pps is None else p.load_pps)


def load_telemetry(path: Path, warnings: list[LoadWarning]) -> dict[str, tuple[TelemetryPoint, ...]]:
    """Read ``path/ovsperf-telemetry.json``.

    :returns: result CSV file name → one point per frame size (ascending; a VSperf test's
        whole-test window, frame size None, first); empty when the file is absent or unusable
        (with a warning).
    """
    file = path / TELEMETRY_FILE
    if not file.exists() and not file.is_symlink():
        return {}
    if file.is_symlink() or not file.is_file():
        warnings.append(LoadWarning(file, None, "Not a regular file (symbolic link?); telemetry not read."))
        return {}
    try:
        if file.stat().st_size > MAX_TELEMETRY_FILE_BYTES:
            raise LabFileFieldError(f"larger than {MAX_TELEMETRY_FILE_BYTES} B")
        document = json.loads(file.read_bytes())
    except RecursionError:
        warnings.append(
            LoadWarning(
                file, None, "Cannot read the telemetry file (JSON nested too deep); telemetry not shown."
            )
        )
        return {}
    except (OSError, ValueError) as err:
        warnings.append(
            LoadWarning(file, None, f"Cannot read the telemetry file ({err}); telemetry not shown.")
        )
        return {}
    if (
        not isinstance(document, dict)
        or document.get("schema") != TELEMETRY_SCHEMA
        or not isinstance(document.get("trials"), list)
    ):
        warnings.append(
            LoadWarning(
                file,
                None,
                f"Not an {TELEMETRY_FILE} of schema {TELEMETRY_SCHEMA} with a 'trials' list; not shown.",
            )
        )
        return {}
    found: dict[tuple[str, tuple[int | None, str, int | None]], list[tuple[bool, TelemetryPoint]]] = {}
    bad = 0
    for number, trial in enumerate(document["trials"]):
        where = f"trials[{number}]"
        try:
            if not isinstance(trial, dict):
                raise LabFileFieldError(f"{where} is not an object")
            csv_name = trial.get("csv")
            if not isinstance(csv_name, str) or not csv_name.startswith("result_") or "/" in csv_name:
                raise LabFileFieldError(f"{where}.csv is {repr(csv_name)[:60]}, not a result CSV name")
            point = _point(trial, where)
        except LabFileFieldError as err:
            bad += 1
            if bad <= 5:
                warnings.append(LoadWarning(file, None, f"Field {err}; that trial is not used."))
            continue
        found.setdefault((csv_name, point.key), []).append((trial.get("valid") is True, point))
    if bad > 5:
        warnings.append(LoadWarning(file, None, f"{bad - 5} more unusable trials not used."))
    out: dict[str, list[TelemetryPoint]] = {}
    for (csv_name, _), points in sorted(found.items(), key=lambda kv: (kv[0][0], _order(kv[0][1]))):
        out.setdefault(csv_name, []).append(_representative(points))
    return {name: tuple(points) for name, points in out.items()}
