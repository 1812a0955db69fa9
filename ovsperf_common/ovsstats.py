"""Read OVS's own counters: ``pmd-stats-show`` / ``pmd-perf-show``, ``pmd-rxq-show``, thread CPU.

Shared by the lab's telemetry (``ovsperf_lab.telemetry``, around each trial) and the Beaker task's
(``ovsperf_common.vsperf_telemetry``, around each VSperf test), so both derive every figure the
same way, from OVS's counters (ovs-vswitchd(8), "dpif-netdev/pmd-perf-show"):

* cycles per packet = busy (processing) cycles / packets received (OVS prints it as "avg
  processing cycles per packet" and as "cycles/pkt" after "Rx packets"; the TSC's cycles, not
  re-derived from wall time);
* PMD busy % = busy cycles / (idle + busy cycles) × 100 (OVS: "busy iterations … % of used
  cycles");
* hits by level [%] = hardware-offload, MFEX, simple-match, EMC, SMC and megaflow hits and upcalls
  / datapath passes × 100 (:data:`~ovsperf_common.telemetryfile.HIT_COUNTERS`); the passes are
  the lookups, packets received plus recirculations, as ``pmd-perf-show`` shares them, so
  recirculating packets cannot take a level past 100 % (MFEX hits count a packet's optimized
  miniflow extraction, on top of its level).

The PMD counters are read by what OVS prints, whichever command the OVS version has (sources:
``lib/dpif-netdev.c`` and ``lib/dpif-netdev-perf.c`` of openvswitch/ovs):

* ``pmd-stats-show`` of OVS 2.6–2.8 (``emc hits:``, ``miss:`` with the lost packets in it,
  ``polling cycles:``), 2.9–3.x (``packets received:``, ``miss with success upcall:``, ``idle
  cycles:``);
* ``pmd-perf-show`` of OVS 2.10 (``Cycles:``, ``- busy:``) and 2.11 on (``Used TSC cycles:``,
  ``- busy iterations:``), which OVS 4.0 also prints for ``pmd-stats-show`` (commit 4060c1c2e
  made it an alias). Its counters get the ``pmd-stats-show`` names (``Rx packets`` →
  ``packets_received``, ``Upcalls`` → ``miss_with_success_upcall``, ``Lost upcalls`` →
  ``miss_with_failed_upcall``); OVS prints no busy or idle cycle count there, so
  ``processing_cycles`` = its cycles/pkt × Rx packets (else used cycles × busy %) and
  ``idle_cycles`` = used − processing cycles, to the precision OVS prints (0.5 cycle per packet,
  0.05 %).

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

_HEADER_RE = re.compile(
    r"^(?:pmd thread numa_id (?P<numa>\d{1,9}) core_id (?P<core>\d{1,9})"
    r"|main thread(?: numa_id \d{1,9})?):\s*$"
)
_NUMBER_RE = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_PERCENT_RE = re.compile(r"\(\s*([-+]?\d+(?:\.\d+)?)\s*%")
_CYCLES_PER_PACKET_RE = re.compile(r"(\d+(?:\.\d+)?) cycles/pkt")
_RXQ_RE = re.compile(
    r"port:\s*(?P<port>\S+)\s+queue-id:\s*(?P<queues>\d{1,9}(?:[ \t]+\d{1,9})*)(?!\d)"
    r"(?:\s*\((?P<state>[^)]*)\))?"
    r"(?:\s*pmd usage:\s*(?P<usage>NOT AVAIL|\d+(?:\.\d+)?)\s*%?)?"
)

_PERF_SHOW_NAMES = {
    "rx_packets": "packets_received",
    "upcalls": "miss_with_success_upcall",
    "lost_upcalls": "miss_with_failed_upcall",
    "cycles": "used_tsc_cycles",  # OVS 2.10
    "idle": "idle_iterations",  # OVS 2.10
    "busy": "busy_iterations",  # OVS 2.10
}
"""``pmd-perf-show`` label slug → the name the counter has in ``pmd-stats-show`` (or ours)."""


def _slug(key: str) -> str:
    """Return ``'avg. processing cycles per packet'`` as ``'avg_processing_cycles_per_packet'``."""
    return re.sub(r"[^a-z0-9]+", "_", key.strip().lower()).strip("_")


def _blocks(text: str) -> dict[str, list[str]]:
    """Split ``pmd-*-show`` output into thread key (``pmd-c01``, ``main``) → its indented lines.

    A thread's lines are the indented ones after its header; any other line at the margin ends
    the thread (``pmd-perf-show``'s ``Time:`` before the next thread, its ``Histograms``).
    """
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith((" ", "\t")):
            if current is not None:
                current.append(line.strip())
            continue
        match = _HEADER_RE.match(line.strip())
        if match is None:
            current = None
            continue
        key = "main" if match.group("core") is None else f"pmd-c{int(match.group('core')):02d}"
        current = blocks.setdefault(key, [])
    return blocks


def _from_perf_show(counters: dict[str, float], rx_text: str) -> None:
    """Give a thread's ``pmd-perf-show`` counters their ``pmd-stats-show`` names (module docstring)."""
    for perf, name in _PERF_SHOW_NAMES.items():
        for suffix in ("", "_percent"):
            if perf + suffix in counters:
                counters[name + suffix] = counters.pop(perf + suffix)
    for iterations, cycles in (("idle_iterations", "idle_cycles"), ("busy_iterations", "processing_cycles")):
        if f"{iterations}_percent" in counters:  # "(84.1 % of used cycles)": a share of cycles
            counters[f"{cycles}_percent"] = counters.pop(f"{iterations}_percent")
    packets = counters["packets_received"]
    if "datapath_passes" in counters:
        counters["packet_recirculations"] = max(0.0, counters["datapath_passes"] - packets)
    per_packet = _CYCLES_PER_PACKET_RE.search(rx_text)
    if per_packet:
        counters["avg_processing_cycles_per_packet"] = float(per_packet.group(1))
    used = counters.get("used_tsc_cycles")
    busy_percent = counters.get("processing_cycles_percent")
    if used is None:
        return
    if per_packet and packets > 0:
        busy = float(round(float(per_packet.group(1)) * packets))
    elif busy_percent is not None:
        busy = float(round(used * busy_percent / 100.0))
    else:
        return
    counters["processing_cycles"] = min(busy, used)
    counters["idle_cycles"] = used - counters["processing_cycles"]


def _from_old_stats_show(counters: dict[str, float]) -> None:
    """Give OVS 2.6–2.8's ``pmd-stats-show`` counters the names of 2.9's.

    Their ``miss`` holds the lost packets too (``Lost packets are already included in
    DP_STAT_MISS``), and their packet total is the lookups: EMC + megaflow hits + misses.
    """
    miss, lost = counters["miss"], counters.get("lost", 0.0)
    counters["miss_with_success_upcall"] = max(0.0, miss - lost)
    counters["miss_with_failed_upcall"] = lost
    counters["packets_received"] = counters.get("emc_hits", 0.0) + counters.get("megaflow_hits", 0.0) + miss


def parse_pmd_stats(text: str) -> dict[str, dict[str, float]]:
    """Parse ``dpif-netdev/pmd-stats-show`` or ``pmd-perf-show``: thread → counter name → value.

    Counter names are the slugs of OVS's ``pmd-stats-show`` labels (``packets_received``,
    ``emc_hits``, ``smc_hits``, ``megaflow_hits``, ``miss_with_success_upcall``, ``idle_cycles``,
    ``processing_cycles``, ``avg_processing_cycles_per_packet``, …), whichever of the formats
    of the module docstring OVS printed; a label with a percentage also gives ``<name>_percent``.
    Other lines are kept by their slug (``datapath_passes``, ``used_tsc_cycles``, ``tx_packets``);
    lines without a number are skipped, and so are the histograms ``pmd-perf-show`` may append.
    """
    out: dict[str, dict[str, float]] = {}
    for thread, lines in _blocks(text).items():
        counters: dict[str, float] = {}
        rests: dict[str, str] = {}
        for line in lines:
            label, sep, rest = line.partition(":")
            number = _NUMBER_RE.search(rest) if sep else None
            if number is None:
                continue
            name = _slug(label)
            name = "idle_cycles" if name == "polling_cycles" else name
            counters[name] = float(number.group())
            rests[name] = rest
            percent = _PERCENT_RE.search(rest)
            if percent:
                counters[f"{name}_percent"] = float(percent.group(1))
        if "rx_packets" in counters:
            _from_perf_show(counters, rests["rx_packets"])
        elif "miss" in counters and "packets_received" not in counters:
            _from_old_stats_show(counters)
        out[thread] = counters
    return out


def pmd_counters(stats_show: str | None, perf_show: str | None) -> dict[str, dict[str, float]]:
    """Return the PMD counters from whichever of the two outputs has PMD threads.

    ``pmd-stats-show`` first (OVS 2.6 to 4.0, where it prints ``pmd-perf-show``), else
    ``pmd-perf-show`` (OVS 2.10 on): an OVS without ``pmd-stats-show`` still gives its counters.

    :param stats_show: ``pmd-stats-show`` as OVS printed it; None when not collected.
    :param perf_show: ``pmd-perf-show`` as OVS printed it; None when not collected.
    :returns: as :func:`parse_pmd_stats`; empty when neither has a thread.
    """
    first = parse_pmd_stats(stats_show) if stats_show is not None else {}
    if any(key != "main" for key in first) or perf_show is None:
        return first
    second = parse_pmd_stats(perf_show)
    return second if any(key != "main" for key in second) else first


@dataclass(frozen=True)
class RxqPlacement:
    """One rx queue on one PMD (``pmd-rxq-show``)."""

    pmd: str
    """Thread key, e.g. ``pmd-c01``."""
    port: str
    queue: int
    enabled: bool
    """False when OVS says ``(disabled)``; OVS before 2.12 does not say (True)."""
    usage_percent: float | None
    """Share of the PMD's processing cycles this queue used over OVS's measuring interval [%];
    None when OVS cannot tell yet (``NOT AVAIL``) or does not measure it (before 2.9)."""


def parse_pmd_rxq(text: str) -> list[RxqPlacement]:
    """Parse ``ovs-appctl dpif-netdev/pmd-rxq-show`` of any OVS version: one record per queue.

    Formats (``lib/dpif-netdev.c`` ``pmd_info_show_rxq``): OVS 2.6–2.8 list a port's queues on one
    line (``port: p0<TAB>queue-id: 0 1 2 3``, no usage); 2.9–2.11 one queue per line with its usage
    (``queue-id:  0<TAB>pmd usage: 45 %``); 2.12 on add ``(enabled)`` or ``(disabled)``.
    """
    out = []
    for thread, lines in _blocks(text).items():
        for line in lines:
            match = _RXQ_RE.search(line)
            if not match:
                continue
            usage = match.group("usage")
            for queue in match.group("queues").split():
                out.append(
                    RxqPlacement(
                        pmd=thread,
                        port=match.group("port"),
                        queue=int(queue),
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


def _passes(counters: Mapping[str, float]) -> float | None:
    """Return a thread's datapath passes (lookups): printed, or packets + recirculations."""
    if "datapath_passes" in counters:
        return counters["datapath_passes"]
    if "packets_received" in counters:
        return counters["packets_received"] + counters.get("packet_recirculations", 0.0)
    return None


def pmd_totals(pmds: Mapping[str, Mapping[str, float]]) -> dict[str, float | None]:
    """Return the PMD threads' sums and derived figures (None where the counters are missing).

    :param pmds: thread → counters as :func:`parse_pmd_stats` returns them (``main``, the
        non-PMD threads, is left out of the sums).
    :returns: ``packets``, ``cycles_per_packet``, ``pmd_busy_percent`` and ``<counter>_percent``
        (share of the datapath passes) for each of
        :data:`~ovsperf_common.telemetryfile.HIT_COUNTERS` (module docstring: formulas).
    """
    threads = [c for key, c in pmds.items() if key != "main"]
    if not threads:
        return {"packets": None, "cycles_per_packet": None, "pmd_busy_percent": None}

    def total(name: str) -> float | None:
        values = [c[name] for c in threads if name in c]
        return sum(values) if values else None

    packets = total("packets_received")
    passes_each = [p for p in (_passes(c) for c in threads) if p is not None]
    passes = sum(passes_each) if passes_each else None
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
        out[f"{name}_percent"] = 100.0 * value / passes if value is not None and passes else None
    return out
