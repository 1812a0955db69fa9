"""DUT telemetry over a trial's window: OVS's PMD counters, rx-queue placement, port and thread CPU.

Around a measured trial (:class:`TelemetryCollector`): ``ovs-appctl dpif-netdev/pmd-stats-clear``
before; after it ``pmd-stats-show`` (packets, EMC / SMC / megaflow hits, upcalls, idle and
processing cycles, OVS's own average processing cycles per packet; in OVS 4.0 an alias that
prints ``pmd-perf-show``), ``pmd-rxq-show`` (queue → PMD placement and usage), ``pmd-perf-show``
(kept as text; the counters are read from it when ``pmd-stats-show`` gave none), the ports' live
counters (rx/tx packets and drops from ``ovs-ofctl dump-ports``: the database's ``statistics``
column lags by up to ``stats-update-interval``, 5 s; the change over the window), and the CPU
time of every thread of ``ovs-vswitchd`` and of the generator from ``/proc/<pid>/task/*/stat``
(utime + stime, ``proc(5)``; the change over the window divided by the wall time).

Derived figures (cycles per packet, PMD busy %, hits by level) come from OVS's own counters by
the formulas in :mod:`ovsperf_common.ovsstats`, which the Beaker task's telemetry shares.

Anything that cannot be read (an OVS without PMDs, a command that times out, a counter that went
backwards) is recorded as ``None`` with a note saying why: "not collected", never a zero.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ovsperf_common.framemix import FrameSizeItem, item_json
from ovsperf_common.ovsstats import (
    RxqPlacement,
    counter_delta,
    parse_pmd_rxq,
    pmd_counters,
    pmd_totals,
    read_thread_ticks,
    thread_cpu,
)
from ovsperf_lab.generators.api import PortInfo, TrafficGenerator
from ovsperf_lab.model import TrialResult, TrialSpec

log = logging.getLogger(__name__)

APPCTL_TIMEOUT_S = 5
"""Deadline of each ``ovs-appctl`` call of the collector [s]: telemetry never holds a trial long."""


@dataclass
class TrialTelemetry:
    """What the DUT did during one trial (see the module docstring for every figure)."""

    frame_size_bytes: FrameSizeItem
    """Frame size including FCS [B] or the mix of the trial."""
    load_pps: float
    """Offered load per direction [pps]."""
    duration_s: float
    loss_ratio: float | None
    valid: bool
    wall_s: float
    """Window from the stats clear to the snapshot after the trial [s]."""
    flows: int = 1
    """Flows per direction of the trial [1]."""
    pmds: dict[str, dict[str, float]] = field(default_factory=dict)
    """PMD thread → counters of ``pmd-stats-show`` or ``pmd-perf-show`` (``main``: the non-PMD threads)."""
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
        """Return the PMDs' sums and derived figures (:func:`ovsperf_common.ovsstats.pmd_totals`)."""
        return pmd_totals(self.pmds)

    def to_json(self) -> dict[str, Any]:
        """Return the trial's telemetry as written to ``ovsperf-telemetry.json``."""
        return {
            **item_json(self.frame_size_bytes),
            "flows": self.flows,
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
        self,
        frame_size: FrameSizeItem,
        load_pps: float,
        duration_s: float,
        loss_ratio: float | None,
        valid: bool,
        *,
        flows: int = 1,
    ) -> TrialTelemetry:
        """Take the second snapshots and return the trial's telemetry (``flows`` per direction [1])."""
        wall = time.monotonic() - self._started
        telemetry = TrialTelemetry(
            frame_size, load_pps, duration_s, loss_ratio, valid, wall, flows=flows, notes=self._notes
        )
        stats = self._try("pmd-stats-show", lambda: self.appctl("dpif-netdev/pmd-stats-show"))
        rxq = self._try("pmd-rxq-show", lambda: self.appctl("dpif-netdev/pmd-rxq-show"))
        if rxq is not None:
            telemetry.rxq = parse_pmd_rxq(rxq)
        telemetry.perf_show = self._try(
            "pmd-perf-show", lambda: self.appctl("dpif-netdev/pmd-perf-show", "-nh")
        )
        telemetry.pmds = pmd_counters(stats, telemetry.perf_show)
        if stats is not None and not [k for k in telemetry.pmds if k != "main"]:
            telemetry.notes.append("pmd-stats-show: no PMD thread (kernel datapath?): not collected")
        ports = self._try("port counters", self.ports)
        if ports is not None and self._ports:
            for port, counters in ports.items():
                first = self._ports.get(port, {})
                telemetry.ports[port] = {
                    k: counter_delta(v, first.get(k)) for k, v in sorted(counters.items())
                }
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
            spec.frame_size_bytes,
            spec.rate_pps,
            spec.duration_s,
            result.loss_ratio,
            result.valid,
            flows=spec.flows,
        )
        self.sink(telemetry)
        return result

    def close(self) -> None:
        """Close the inner generator."""
        self.inner.close()
