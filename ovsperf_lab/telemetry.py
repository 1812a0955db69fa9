"""DUT telemetry over a trial's window: OVS's PMD counters, rx-queue placement, port and thread CPU.

Around a measured trial (:class:`TelemetryCollector`): ``ovs-appctl dpif-netdev/pmd-stats-clear``
before; after it ``pmd-stats-show`` (packets, EMC / SMC / megaflow hits, upcalls, idle and
processing cycles, OVS's own average processing cycles per packet), ``pmd-perf-show`` (kept as
text), ``pmd-rxq-show`` (queue → PMD placement and usage), the ports' live counters (rx/tx
packets and drops from ``ovs-ofctl dump-ports``: the database's ``statistics`` column lags by up
to ``stats-update-interval``, 5 s; the change over the window), and the CPU time of every thread of
``ovs-vswitchd`` and of the generator from ``/proc/<pid>/task/*/stat`` (utime + stime, ``proc(5)``;
the change over the window divided by the wall time).

Derived figures, each from OVS's own counters (ovs-vswitchd(8), "dpif-netdev/pmd-stats-show"):

* cycles per packet = processing cycles / packets received (OVS prints it as "avg processing
  cycles per packet"; the TSC's cycles, not re-derived from wall time);
* PMD busy % = processing cycles / (idle + processing cycles) × 100;
* hits by level [%] = hardware-offload, MFEX, simple-match, EMC, SMC and megaflow hits and
  upcalls / packets received × 100.

Anything that cannot be read (an OVS without PMDs, a command that times out, a counter that went
backwards) is recorded as ``None`` with a note saying why: "not collected", never a zero.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ovsperf_common.telemetryfile import HIT_COUNTERS
from ovsperf_lab.generator_api import PortInfo, TrafficGenerator
from ovsperf_lab.model import TrialResult, TrialSpec

log = logging.getLogger(__name__)

APPCTL_TIMEOUT_S = 5
"""Deadline of each ``ovs-appctl`` call of the collector [s]: telemetry never holds a trial long."""

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
        # comm may hold spaces and parentheses: it ends at the last ')'.
        comm = raw[raw.index("(") + 1 : raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2 :].split()
        # After comm: state is field 3; utime and stime are fields 14 and 15 (1-based).
        out[task.name] = (comm, int(fields[11]) + int(fields[12]))
    return out


def thread_cpu(
    before: Mapping[str, tuple[str, int]], after: Mapping[str, tuple[str, int]], wall_s: float
) -> list[dict[str, Any]]:
    """Return per thread its CPU use over the window [% of one CPU], busiest first.

    Threads present at both ends only; a count that went backwards (a reused thread id) is None.
    """
    ticks = os.sysconf("SC_CLK_TCK")
    rows: list[tuple[float, dict[str, Any]]] = []
    for tid, (name, end) in after.items():
        if tid not in before or wall_s <= 0:
            continue
        delta = end - before[tid][1]
        percent = None if delta < 0 else 100.0 * delta / ticks / wall_s
        rows.append((percent or 0.0, {"tid": int(tid), "name": name, "cpu_percent": percent}))
    rows.sort(key=lambda row: -row[0])
    out = [row for _, row in rows]
    return out


def _delta(after: float | None, before: float | None) -> float | None:
    """Return ``after - before``; None when either is missing or the counter went backwards."""
    if after is None or before is None or after < before:
        return None
    return after - before


@dataclass
class TrialTelemetry:
    """What the DUT did during one trial (see the module docstring for every figure)."""

    frame_size_bytes: int
    load_pps: float
    """Offered load per direction [pps]."""
    duration_s: float
    loss_ratio: float | None
    valid: bool
    wall_s: float
    """Window from the stats clear to the snapshot after the trial [s]."""
    pmds: dict[str, dict[str, float]] = field(default_factory=dict)
    """PMD thread → counters of ``pmd-stats-show`` (``main`` is the non-PMD threads)."""
    rxq: list[RxqPlacement] = field(default_factory=list)
    ports: dict[str, dict[str, float | None]] = field(default_factory=dict)
    """Interface → change of each statistics counter over the window (None: went backwards)."""
    threads: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Process (``ovs-vswitchd``, ``generator``) → per-thread CPU over the window."""
    perf_show: str | None = None
    """``pmd-perf-show`` as OVS printed it (None when not collected)."""
    notes: list[str] = field(default_factory=list)
    """What was not collected, and why."""

    def totals(self) -> dict[str, float | None]:
        """Return the PMDs' sums and derived figures (None where the counters are missing).

        Keys: ``packets``, ``cycles_per_packet``, ``pmd_busy_percent`` and
        ``<counter>_percent`` for each of :data:`HIT_COUNTERS`.
        """
        pmds = [c for key, c in self.pmds.items() if key != "main"]
        if not pmds:
            return {"packets": None, "cycles_per_packet": None, "pmd_busy_percent": None}

        def total(name: str) -> float | None:
            values = [c[name] for c in pmds if name in c]
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

    def to_json(self) -> dict[str, Any]:
        """Return the trial's telemetry as written to ``ovsperf-telemetry.json``."""
        return {
            "frame_size_bytes": self.frame_size_bytes,
            "load_pps": self.load_pps,
            "duration_s": self.duration_s,
            "loss_ratio": self.loss_ratio,
            "valid": self.valid,
            "wall_s": round(self.wall_s, 6),
            "totals": self.totals(),
            "pmds": self.pmds,
            "rxq": [vars(r) for r in self.rxq],
            "ports": self.ports,
            "threads": self.threads,
            "pmd_perf_show": self.perf_show,
            "notes": self.notes,
        }


class TelemetryCollector:
    """Snapshot the DUT around a trial (:meth:`start`, then :meth:`finish`).

    :param appctl: runs ``ovs-appctl ARGS`` against the DUT (raises on failure or timeout).
    :param ports: returns port name → live counters (``rx_packets``, ``rx_dropped``, ``tx_packets``,
        ``tx_dropped``; None where OVS has none).
    :param processes: name → PID whose threads' CPU time is measured (``ovs-vswitchd``,
        ``generator``).
    """

    def __init__(
        self,
        appctl: Callable[..., str],
        ports: Callable[[], Mapping[str, Mapping[str, float | None]]],
        processes: Mapping[str, int],
        proc: Path = Path("/proc"),
    ) -> None:
        self.appctl = appctl
        self.ports = ports
        self.processes = dict(processes)
        self.proc = proc
        self._started = 0.0
        self._notes: list[str] = []
        self._ticks: dict[str, dict[str, tuple[str, int]]] = {}
        self._ports: Mapping[str, Mapping[str, float | None]] = {}

    def _try(self, what: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except Exception as err:  # noqa: BLE001 - telemetry never fails a trial; the note says why
            self._notes.append(f"{what}: not collected ({type(err).__name__}: {str(err).strip()[:200]})")
            log.debug("Telemetry: %s", self._notes[-1])
            return None

    def _ticks_of(self, name: str, pid: int) -> dict[str, tuple[str, int]] | None:
        try:
            return read_thread_ticks(pid, self.proc)
        except OSError as err:
            self._notes.append(f"CPU of {name} (PID {pid}): not collected ({err.strerror or err})")
            return None

    def start(self) -> None:
        """Clear OVS's PMD counters and take the first snapshots (ports, threads)."""
        self._notes = []
        self._try("pmd-stats-clear", lambda: self.appctl("dpif-netdev/pmd-stats-clear"))
        self._ports = self._try("port counters", self.ports) or {}
        self._ticks = {}
        for name, pid in self.processes.items():
            ticks = self._ticks_of(name, pid)
            if ticks is not None:
                self._ticks[name] = ticks
        self._started = time.monotonic()

    def finish(
        self, frame_size: int, load_pps: float, duration_s: float, loss_ratio: float | None, valid: bool
    ) -> TrialTelemetry:
        """Take the second snapshots and return the trial's telemetry."""
        wall = time.monotonic() - self._started
        telemetry = TrialTelemetry(
            frame_size, load_pps, duration_s, loss_ratio, valid, wall, notes=self._notes
        )
        stats = self._try("pmd-stats-show", lambda: self.appctl("dpif-netdev/pmd-stats-show"))
        if stats is not None:
            telemetry.pmds = parse_pmd_stats(stats)
            if not [k for k in telemetry.pmds if k != "main"]:
                telemetry.notes.append("pmd-stats-show: no PMD thread (kernel datapath?): not collected")
        rxq = self._try("pmd-rxq-show", lambda: self.appctl("dpif-netdev/pmd-rxq-show"))
        if rxq is not None:
            telemetry.rxq = parse_pmd_rxq(rxq)
        telemetry.perf_show = self._try(
            "pmd-perf-show", lambda: self.appctl("dpif-netdev/pmd-perf-show", "-nh")
        )
        ports = self._try("port counters", self.ports)
        if ports is not None and self._ports:
            for port, counters in ports.items():
                first = self._ports.get(port, {})
                telemetry.ports[port] = {k: _delta(v, first.get(k)) for k, v in sorted(counters.items())}
                if any(v is None for v in telemetry.ports[port].values()):
                    telemetry.notes.append(f"port {port}: a counter went backwards (reset or wrapped)")
        for name, start_ticks in self._ticks.items():
            end_ticks = self._ticks_of(name, self.processes[name])
            if end_ticks is not None:
                telemetry.threads[name] = thread_cpu(start_ticks, end_ticks, wall)
        return telemetry


class TelemetryGenerator(TrafficGenerator):
    """Wrap a generator: collect DUT telemetry around every trial of at least ``min_duration_s``.

    ``sink(telemetry)`` receives each trial's :class:`TrialTelemetry`. Shorter trials (MLRsearch's
    early exploration) pass through untouched: telemetry covers the trials a result rests on.
    """

    def __init__(
        self,
        inner: TrafficGenerator,
        collector: TelemetryCollector,
        min_duration_s: float,
        sink: Callable[[TrialTelemetry], None],
    ) -> None:
        self.inner = inner
        self.collector = collector
        self.min_duration_s = min_duration_s
        self.sink = sink
        self.pid = inner.pid

    @property
    def raw_result(self) -> object:
        """The inner generator's raw answer to the last trial (for the cross-check)."""
        return getattr(self.inner, "raw_result", None)

    def wait_link(self, timeout_s: float) -> tuple[PortInfo, ...]:
        """Wait for the inner generator's links."""
        return self.inner.wait_link(timeout_s)

    def ports(self) -> tuple[PortInfo, ...]:
        """Return the inner generator's ports."""
        return self.inner.ports()

    def run_trial(self, spec: TrialSpec) -> TrialResult:
        """Run the trial; around it, when long enough, collect the DUT's telemetry."""
        if spec.duration_s < self.min_duration_s:
            return self.inner.run_trial(spec)
        self.collector.start()
        result = self.inner.run_trial(spec)
        telemetry = self.collector.finish(
            spec.frame_size_bytes, spec.rate_pps, spec.duration_s, result.loss_ratio, result.valid
        )
        self.sink(telemetry)
        return result

    def close(self) -> None:
        """Close the inner generator."""
        self.inner.close()
