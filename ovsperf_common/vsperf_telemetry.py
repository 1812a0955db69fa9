"""Turn the VSperf collector's raw captures into ``ovsperf-telemetry.json`` (one window per test).

Under Beaker, VSperf runs every test of a scenario in one process and starts and stops OVS
itself, so the DUT's counters are captured from inside VSperf by our collector
(``beaker_tasks/vsperf_test/collectors/ovsperf_telemetry.py``) around each test's traffic: the
window holds every frame size of the test (and VSperf's flow setup), not one trial as in the
lab. This module reads its ``ovsperf-telemetry-raw/test-<index>.json`` files and writes the
documented ``ovsperf-telemetry.json`` (docs/results-format.md) with one entry per test:
``"window": "test"``, ``frame_size_bytes`` null, ``frame_sizes_bytes`` the sizes it covers, no
load; the figures are derived by :mod:`ovsperf_common.ovsstats`, as in the lab.

``python3 -m ovsperf_common.vsperf_telemetry RESULTS_DIR --test INDEX:NAME:DEPLOYMENT ...``
prints one line per test; exit 0 when the file was written or there was nothing to convert (no
raw captures: an absent file means "not collected"), 2 on bad arguments or an unwritable file.
A capture that cannot be read is reported on stderr naming the file and field, and left out.

Standard library only, Python ≥ 3.9 (runs on the DUT).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ovsperf_common.atomicio import atomic_write_text
from ovsperf_common.labfiles import TELEMETRY_FILE, TELEMETRY_SCHEMA
from ovsperf_common.ovsstats import (
    counter_delta,
    parse_pmd_rxq,
    parse_thread_stat,
    pmd_counters,
    pmd_totals,
    thread_cpu,
)
from ovsperf_common.resultdir import result_csv_name
from ovsperf_common.runner import one_line, run_command

RAW_DIR = "ovsperf-telemetry-raw"
"""Where the VSperf collector writes its captures, below the results directory."""

MAX_RAW_BYTES = 64 * 1024 * 1024
"""Larger captures are not read [B]."""

PORT_COUNTERS = ("rx_packets", "rx_dropped", "rx_errors", "tx_packets", "tx_dropped", "tx_errors")
"""Interface ``statistics`` keys whose change over the window is kept."""


class RawError(ValueError):
    """A raw capture is missing a field or has one of the wrong type (the message names it)."""


def _field(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise RawError(f"{where}.{key} is {type(value).__name__}, not {getattr(kind, '__name__', kind)}")
    return value


def parse_interface_statistics(text: str | None) -> dict[str, dict[str, float]] | None:
    """Parse ``ovs-vsctl --format=json --columns=name,statistics list Interface``.

    :returns: interface → the :data:`PORT_COUNTERS` it has; None when ``text`` is None.
    :raises RawError: when it is not that JSON table.
    """
    if text is None:
        return None
    try:
        table = json.loads(text)
        headings = table["headings"]
        name_at, stats_at = headings.index("name"), headings.index("statistics")
        out: dict[str, dict[str, float]] = {}
        for row in table["data"]:
            name, stats = row[name_at], row[stats_at]
            if not isinstance(name, str) or not isinstance(stats, list) or stats[0] != "map":
                raise RawError(f"an Interface row is not (name, statistics map): {str(row)[:80]}")
            counters = {str(k): float(v) for k, v in stats[1] if k in PORT_COUNTERS}
            out[name] = counters
    except (ValueError, KeyError, IndexError, TypeError) as err:
        raise RawError(f"port statistics are not ovs-vsctl's JSON table ({err})") from err
    return out


def _ticks(raw: Mapping[str, Any], where: str) -> dict[str, dict[str, tuple[str, int]]]:
    """Return process → thread id → (name, ticks) from a capture's ``threads``."""
    out: dict[str, dict[str, tuple[str, int]]] = {}
    for process, entry in _field(raw, "threads", dict, where).items():
        here = f"{where}.threads.{process}"
        stats = _field(entry, "stat", dict, here)
        try:
            out[str(process)] = {str(tid): parse_thread_stat(str(line)) for tid, line in stats.items()}
        except ValueError as err:
            raise RawError(f"{here}.stat: {err}") from err
    return out


def convert_capture(raw: Mapping[str, Any], csv_name: str) -> dict[str, Any]:
    """Return the ``ovsperf-telemetry.json`` entry of one test's raw capture.

    :param raw: the collector's capture (module docstring).
    :param csv_name: the test's result CSV name (``result_<index>_<test>_<deployment>.csv``).
    :raises RawError: when a field is missing or has the wrong type.
    """
    if raw.get("schema") != 1:
        raise RawError(f"schema is {raw.get('schema')!r}, not 1")
    sizes = _field(raw, "frame_sizes_bytes", list, "capture")
    if not sizes or not all(
        isinstance(s, int) and not isinstance(s, bool) and 64 <= s <= 9216 for s in sizes
    ):
        raise RawError(f"capture.frame_sizes_bytes is {sizes!r}, not frame sizes in 64…9216 B")
    wall = _field(raw, "wall_s", (int, float), "capture")
    before = _field(raw, "before", dict, "capture")
    after = _field(raw, "after", dict, "capture")
    notes = [str(n)[:400] for n in _field(raw, "notes", list, "capture")]
    ticks_per_s = raw.get("clock_ticks_per_s")
    entry: dict[str, Any] = {
        "csv": csv_name,
        "source": "vsperf",
        "window": "test",
        "frame_size_bytes": None,
        "frame_sizes_bytes": sorted(set(sizes)),
        "load_pps": None,
        "duration_s": None,
        "loss_ratio": None,
        "valid": True,
        "wall_s": round(float(wall), 6),
        "pmds": {},
        "rxq": [],
        "ports": {},
        "threads": {},
        "pmd_perf_show": after.get("pmd_perf_show") if isinstance(after.get("pmd_perf_show"), str) else None,
    }
    stats = after.get("pmd_stats_show")
    stats = stats if isinstance(stats, str) else None
    entry["pmds"] = pmd_counters(stats, entry["pmd_perf_show"])
    if stats is not None and not [k for k in entry["pmds"] if k != "main"]:
        notes.append("pmd-stats-show: no PMD thread (kernel datapath?): not collected")
    rxq = after.get("pmd_rxq_show")
    if isinstance(rxq, str):
        entry["rxq"] = [vars(r) for r in parse_pmd_rxq(rxq)]
    first = parse_interface_statistics(before.get("ports"))
    last = parse_interface_statistics(after.get("ports"))
    if first is not None and last is not None:
        for port, counters in sorted(last.items()):
            start = first.get(port, {})
            entry["ports"][port] = {k: counter_delta(v, start.get(k)) for k, v in sorted(counters.items())}
            if any(v is None for v in entry["ports"][port].values()):
                notes.append(f"port {port}: a counter went backwards or appeared during the test")
    start_ticks, end_ticks = _ticks(before, "capture.before"), _ticks(after, "capture.after")
    for process, end in end_ticks.items():
        if process in start_ticks:
            entry["threads"][process] = thread_cpu(
                start_ticks[process], end, float(wall), ticks_per_s if isinstance(ticks_per_s, int) else None
            )
    entry["totals"] = pmd_totals(entry["pmds"])
    entry["notes"] = notes
    return entry


def convert(
    results_dir: Path, tests: Sequence[tuple[int, str, str]]
) -> tuple[dict[str, Any] | None, list[str]]:
    """Read the captures of ``tests`` (index, name, deployment) below ``results_dir``.

    :returns: (the ``ovsperf-telemetry.json`` document, or None when no capture exists; one
        message per capture that is missing or unusable, naming its file and field).
    """
    trials: list[dict[str, Any]] = []
    problems: list[str] = []
    for index, name, deployment in tests:
        path = results_dir / RAW_DIR / f"test-{index}.json"
        if not path.is_file() or path.is_symlink():
            problems.append(f"{path}: no capture for test {name} (not collected)")
            continue
        try:
            if path.stat().st_size > MAX_RAW_BYTES:
                raise RawError(f"larger than {MAX_RAW_BYTES} B")
            raw = json.loads(path.read_bytes())
            if not isinstance(raw, dict):
                raise RawError("not a JSON object")
            if raw.get("test") != name:
                raise RawError(f"test is {str(raw.get('test'))[:80]!r}, not {name!r}")
            trials.append(convert_capture(raw, result_csv_name(name, deployment, index)))
        except (OSError, ValueError) as err:
            problems.append(f"{path}: {err}; telemetry of test {name} left out")
    if not trials:
        return None, problems
    return {"schema": TELEMETRY_SCHEMA, "producer": "vsperf_test", "trials": trials}, problems


def _test(text: str) -> tuple[int, str, str]:
    index, sep1, rest = text.partition(":")
    name, sep2, deployment = rest.partition(":")
    if not (sep1 and sep2 and index.isdigit() and name and deployment):
        raise argparse.ArgumentTypeError(f"--test {text!r} is not INDEX:NAME:DEPLOYMENT")
    return int(index), name, deployment


def main(argv: list[str] | None = None) -> int:
    """Convert the captures of RESULTS_DIR; print one line per test (see the module docstring)."""
    return run_command(_parser(), _run, argv)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python3 -m ovsperf_common.vsperf_telemetry",
        description="Write ovsperf-telemetry.json from the VSperf collector's raw captures.",
    )
    parser.add_argument("results_dir", type=Path, help="VSperf's results directory")
    parser.add_argument(
        "--test", type=_test, action="append", required=True, help="INDEX:NAME:DEPLOYMENT, once per test"
    )
    return parser


def _run(args: argparse.Namespace) -> int:
    document, problems = convert(args.results_dir, args.test)
    for problem in problems:
        print(f"vsperf_telemetry: {one_line(problem)}", file=sys.stderr)
    if document is None:
        print("DUT telemetry: not collected (no capture from the VSperf collector)")
        return 0
    try:
        atomic_write_text(args.results_dir / TELEMETRY_FILE, json.dumps(document, indent=1) + "\n")
    except OSError as err:
        print(f"vsperf_telemetry: cannot write {TELEMETRY_FILE}: {err}", file=sys.stderr)
        return 2
    for trial in document["trials"]:
        totals = trial["totals"]
        cpp, busy = totals.get("cycles_per_packet"), totals.get("pmd_busy_percent")
        print(
            f"{one_line(trial['csv'])}: cycles/packet {'not collected' if cpp is None else f'{cpp:.1f}'}, "
            f"PMD busy {'not collected' if busy is None else f'{busy:.1f} %'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
