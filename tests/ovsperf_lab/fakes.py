"""A deterministic traffic generator for testing the search and the results writer (STYLE.md §7)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ovsperf_common.framemix import FrameMix
from ovsperf_lab.errors import TrafficGeneratorError
from ovsperf_lab.generators.api import PortInfo, TrafficGenerator
from ovsperf_lab.model import DirectionResult, TrialResult, TrialSpec


@dataclass
class FakeTrafficGenerator(TrafficGenerator):
    """Forward at most ``capacity_pps`` per direction; lose exactly the excess.

    ``capacity_for(spec)`` may override the capacity per trial (e.g. lower for long trials);
    ``max_tx_pps`` is the generator's own limit (trials above it are invalid, TX-limited),
    ``max_tx_for(spec)`` overrides it per trial;
    ``invalid_trials`` lists 1-based trial numbers that come back invalid; ``fail_at_trial``
    raises :class:`TrafficGeneratorError` on that trial (a crashed generator).
    """

    capacity_pps: float = 750_000.0
    max_tx_pps: float = 1e12
    max_tx_for: Callable[[TrialSpec], float] | None = None
    capacity_for: Callable[[TrialSpec], float] | None = None
    invalid_trials: frozenset[int] = frozenset()
    fail_at_trial: int | None = None
    latency_ns: float = 20_000.0
    link_speed_mbps: int | None = 10_000
    specs: list[TrialSpec] = field(default_factory=list)
    closed: int = 0

    def ports(self) -> tuple[PortInfo, ...]:
        return tuple(PortInfo(i, f"02:00:00:00:00:0{i}", self.link_speed_mbps, True) for i in (0, 1))

    def run_trial(self, spec: TrialSpec) -> TrialResult:
        self.specs.append(spec)
        number = len(self.specs)
        if self.fail_at_trial == number:
            raise TrafficGeneratorError(f"fake generator died in trial {number}")
        capacity = self.capacity_for(spec) if self.capacity_for else self.capacity_pps
        achieved = min(spec.rate_pps, self.max_tx_for(spec) if self.max_tx_for else self.max_tx_pps)
        tx = round(achieved * spec.duration_s)
        rx = min(tx, round(capacity * spec.duration_s))
        pairs = ((0, 1), (1, 0)) if spec.bidirectional else ((0, 1),)
        directions = tuple(
            DirectionResult(
                tx_port=a,
                rx_port=b,
                tx_packets=tx,
                rx_packets=rx,
                tx_pps=tx / spec.duration_s,
                tx_duration_s=spec.duration_s,
                reordered_packets=0,
                duplicate_packets=0,
                latency_min_ns=self.latency_ns / 2 if rx else None,
                latency_avg_ns=self.latency_ns if rx else None,
                latency_max_ns=self.latency_ns * 3 if rx else None,
                latency_p50_ns=self.latency_ns if rx else None,
                latency_p99_ns=self.latency_ns * 2 if rx else None,
                latency_p999_ns=self.latency_ns * 2.5 if rx else None,
                latency_histogram=self._histogram(rx) if spec.latency_histogram else None,
                per_size=_split(spec, tx, rx),
            )
            for a, b in pairs
        )
        if achieved < spec.rate_pps * 0.995:
            reason = f"achieved TX {achieved:.0f} < requested {spec.rate_pps:.0f} pps"
            return TrialResult(spec, directions, False, reason)
        if number in self.invalid_trials:
            return TrialResult(spec, directions, False, "injected invalid trial")
        return TrialResult(spec, directions, True)

    def _histogram(self, rx: int) -> tuple[tuple[float, int], ...]:
        """Buckets: one frame at half the latency, 1 % at twice it, one at three times, the rest at it."""
        if rx < 3:
            return ((self.latency_ns, rx),) if rx else ()
        tail = rx // 100
        return (
            (self.latency_ns / 2, 1),
            (self.latency_ns, rx - 2 - tail),
            (self.latency_ns * 2, tail),
            (self.latency_ns * 3, 1),
        )

    def close(self) -> None:
        self.closed += 1


def _split(spec: TrialSpec, tx: int, rx: int) -> tuple[tuple[int, int, int], ...] | None:
    """Split a mix trial's counts over its sizes by weight (the last size takes the remainder)."""
    if not isinstance(spec.frame_size_bytes, FrameMix):
        return None
    entries = spec.frame_size_bytes.entries
    total = sum(w for _, w in entries)
    out = []
    for i, (size, weight) in enumerate(entries):
        last = i == len(entries) - 1
        out.append(
            (
                size,
                tx - sum(t for _, t, _ in out) if last else tx * weight // total,
                rx - sum(r for _, _, r in out) if last else rx * weight // total,
            )
        )
    return tuple(out)
