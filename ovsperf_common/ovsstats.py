"""Read OVS's own counters: ``pmd-stats-show``, ``pmd-rxq-show``, and thread CPU from ``/proc``.

Shared by the lab's telemetry (``ovsperf_lab.telemetry``, around each trial) and the Beaker task's
(``ovsperf_common.vsperf_telemetry``, around each VSperf test), so both derive every figure the
same way, from OVS's counters (ovs-vswitchd(8), "dpif-netdev/pmd-stats-show"):

* cycles per packet = processing cycles / packets received (OVS prints it as "avg processing
  cycles per packet"; the TSC's cycles, not re-derived from wall time);
* PMD busy % = processing cycles / (idle + processing cycles) × 100;
* hits by level [%] = hardware-offload, MFEX, simple-match, EMC, SMC and megaflow hits and
  upcalls / packets received × 100 (:data:`~ovsperf_common.telemetryfile.HIT_COUNTERS`).

Standard library only, Python ≥ 3.9 (runs on the lab hosts).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ovsperf_common.telemetryfile import HIT_COUNTERS

_HEADER_RE = re.compile(r"^(pmd thread numa_id (?P<numa>\d+) core_id (?P<core>\d+)|main thread):\s*$")
_NUMBER_RE = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_PERCENT_RE = re.compile(r"\(\s*([-+]?\d+(?:\.\d+)?)\s*%\)")
_RXQ_RE = re.compile(
    r"port:\s*(?P<port>\S+)\s+queue-id:\s*(?P<queue>\d+)\s*(?:\((?P<state>[^)]*)\))?"
    r"(?:\s+pmd usage:\s*(?P<usage>NOT AVAIL|[-\d.]+)\s*%?)?"
)


def _slug(key: str) -> str:
    """Return ``'avg. processing cycles per packet'`` as ``'avg_processing_cycles_per_packet'``."""
    return re.sub(r"[^a-z0-9]+", "_", key.strip().lower()).strip("_")


def _blocks(text: str) -> dict[str, list[str]]:
    """Split ``pmd-*-show`` output into thread key (``pmd-c01``, ``main``) → its indented lines."""
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        match = _HEADER_RE.match(line.strip()) if not line.startswith((" ", "\t")) else None
        if match:
            key = "main" if match.group("core") is None else f"pmd-c{int(match.group('core')):02d}"
            current = blocks.setdefault(key, [])
        elif current is not None and line.strip():
            current.append(line.strip())
    return blocks


def parse_pmd_stats(text: str) -> dict[str, dict[str, float]]:
    """Parse ``ovs-appctl dpif-netdev/pmd-stats-show``: thread → counter name → value.

    Counter names are the slugs of OVS's labels (``packets_received``, ``emc_hits``,
    ``smc_hits``, ``megaflow_hits``, ``miss_with_success_upcall``, ``idle_cycles``,
    ``processing_cycles``, ``avg_processing_cycles_per_packet``, …); a label with a percentage
    also gives ``<name>_percent``. Unknown lines are kept by their slug; lines without a number
    are skipped. OVS 2.9 to 3.x wordings are accepted (the older ``polling cycles`` is read as
    ``idle_cycles``).
    """
    out: dict[str, dict[str, float]] = {}
    for thread, lines in _blocks(text).items():
        counters: dict[str, float] = {}
        for line in lines:
            label, sep, rest = line.partition(":")
            number = _NUMBER_RE.search(rest) if sep else None
            if number is None:
                continue
            name = _slug(label)
            name = "idle_cycles" if name == "polling_cycles" else name
            counters[name] = float(number.group())
            percent = _PERCENT_RE.search(rest)
            if percent:
                counters[f"{name}_percent"] = float(percent.group(1))
        out[thread] = counters
    return out


@dataclass(frozen=True)
class RxqPlacement:
    """One rx queue on one PMD (``pmd-rxq-show``)."""

    pmd: str
    """Thread key, e.g. ``pmd-c01``."""
    port: str
    queue: int
    enabled: bool
    usage_percent: float | None
    """Share of the PMD's processing cycles this queue used over OVS's measuring interval [%]."""


def parse_pmd_rxq(text: str) -> list[RxqPlacement]:
    """Parse ``ovs-appctl dpif-netdev/pmd-rxq-show``; a usage OVS cannot tell yet is None."""
    out = []
    for thread, lines in _blocks(text).items():
        for line in lines:
            match = _RXQ_RE.search(line)
            if not match:
                continue
            usage = match.group("usage")
            out.append(
                RxqPlacement(
                    pmd=thread,
                    port=match.group("port"),
                    queue=int(match.group("queue")),
                    enabled=(match.group("state") or "enabled").strip() != "disabled",
                    usage_percent=None if usage in (None, "NOT AVAIL") else float(usage),
                )
            )
    return out


def parse_thread_stat(raw: str) -> tuple[str, int]:
    """Parse one ``/proc/<pid>/task/<tid>/stat`` line: (thread name, utime + stime clock ticks).

    Fields per ``proc(5)``: the name (``comm``) is in parentheses and may itself hold spaces and
    parentheses, so it ends at the last ``)``; after it, utime and stime are fields 14 and 15.

    :raises ValueError: when the line is not a stat line.
    """
    try:
        comm = raw[raw.index("(") + 1 : raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2 :].split()
        return comm, int(fields[11]) + int(fields[12])
    except (ValueError, IndexError) as err:
        raise ValueError(f"not a /proc stat line: {raw[:80]!r}") from err


def read_thread_ticks(pid: int, proc: Path = Path("/proc")) -> dict[str, tuple[str, int]]:
    """Return thread id → (thread name, utime + stime clock ticks) of process ``pid`` (``proc(5)``).

    The name is the ``comm`` field (``pmd-c01/id:8``, ``handler1``, ``revalidator2``, ``urcu3``,
    the process name for the main thread). A thread that ends while being read is skipped.

    :raises OSError: when the process does not exist.
    """
    out: dict[str, tuple[str, int]] = {}
    for task in (proc / str(pid) / "task").iterdir():
        try:
            raw = (task / "stat").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        out[task.name] = parse_thread_stat(raw)
    return out


def thread_cpu(
    before: Mapping[str, tuple[str, int]],
    after: Mapping[str, tuple[str, int]],
    wall_s: float,
    clock_ticks_per_s: int | None = None,
) -> list[dict[str, Any]]:
    """Return per thread its CPU use over the window [% of one CPU], busiest first.

    CPU % = (ticks after − ticks before) / ``clock_ticks_per_s`` (this host's ``SC_CLK_TCK``
    when None) / ``wall_s`` × 100, at most 100: a thread runs on one CPU at a time, and more is the
    tick granularity (1 / ``SC_CLK_TCK`` s at both ends of a window of about a second). Rows are
    ``{"tid", "name", "cpu_percent"}``; threads present at both ends only; a count that went
    backwards (a reused thread id) is None.
    """
    ticks = clock_ticks_per_s or os.sysconf("SC_CLK_TCK")
    rows: list[tuple[float, dict[str, Any]]] = []
    for tid, (name, end) in after.items():
        if tid not in before or wall_s <= 0:
            continue
        delta = end - before[tid][1]
        percent = None if delta < 0 else min(100.0, 100.0 * delta / ticks / wall_s)
        rows.append((percent or 0.0, {"tid": int(tid), "name": name, "cpu_percent": percent}))
    rows.sort(key=lambda row: -row[0])
    return [row for _, row in rows]


def counter_delta(after: float | None, before: float | None) -> float | None:
    """Return ``after - before``; None when either is missing or the counter went backwards."""
    if after is None or before is None or after < before:
        return None
    return after - before


def pmd_totals(pmds: Mapping[str, Mapping[str, float]]) -> dict[str, float | None]:
    """Return the PMD threads' sums and derived figures (None where the counters are missing).

    :param pmds: thread → counters as :func:`parse_pmd_stats` returns them (``main``, the
        non-PMD threads, is left out of the sums).
    :returns: ``packets``, ``cycles_per_packet``, ``pmd_busy_percent`` and ``<counter>_percent``
        for each of :data:`~ovsperf_common.telemetryfile.HIT_COUNTERS` (module docstring: formulas).
    """
    threads = [c for key, c in pmds.items() if key != "main"]
    if not threads:
        return {"packets": None, "cycles_per_packet": None, "pmd_busy_percent": None}

    def total(name: str) -> float | None:
        values = [c[name] for c in threads if name in c]
        return sum(values) if values else None

    packets = total("packets_received")
    if packets is None:  # OVS before 2.10 has no "packets received": the hits sum to it
        parts = [total(n) for n in ("emc_hits", "megaflow_hits", "miss")]
        packets = sum(p for p in parts if p is not None) if any(p is not None for p in parts) else None
    processing, idle = total("processing_cycles"), total("idle_cycles")
    out: dict[str, float | None] = {
        "packets": packets,
        "cycles_per_packet": processing / packets if processing is not None and packets else None,
        "pmd_busy_percent": (
            100.0 * processing / (processing + idle)
            if processing is not None and idle is not None and processing + idle > 0
            else None
        ),
    }
    for name in HIT_COUNTERS:
        value = total(name)
        out[f"{name}_percent"] = 100.0 * value / packets if value is not None and packets else None
    return out
