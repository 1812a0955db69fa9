"""Every measured number of a result as samples: test × frame size × metric × repeat, plus the build.

The store keeps these so that each number can be followed over builds (:mod:`resultstore.trend`).
They are read from VSperf results directories with :mod:`reporting.load`, the same reader
``generate-report`` uses, so every layout it reads can be recorded.

Metrics (name → unit, source), one per entry of :data:`reporting.metrics.METRICS` (which holds
each one's unit, direction, display and loader; ``tests/resultstore/test_metrics.py`` checks this
table against it):

==========================  ======  ==========================================================
``ndr_fps``                 fps     RFC 2544 throughput at 0 % loss (``throughput_rx_fps``),
                                    both directions summed, as VSperf writes it
``pdr_fps``                 fps     throughput at the run's PDR goal (``pdr_rx_fps``, or the
                                    first goal when it is not 0; docs/results-format.md)
``mrr_fps``                 fps     maximum receive rate of a continuous test (``*_cont``)
``frame_loss_percent``      %       frame loss the generator reported at the NDR row
``latency_avg_ns``          ns      VSperf's average latency at the NDR row (when measured)
``latency_p50_ns_<L>pct``   ns      median latency at L % of the PDR load (ovsperf-latency.json)
``latency_p99_ns_<L>pct``   ns      99th percentile at L % of the PDR load
``latency_p999_ns_<L>pct``  ns      99.9th percentile at L % of the PDR load
``cycles_per_packet``       cycles  PMD processing cycles / packets of the trial the NDR rests on
                                    (``ovsperf-telemetry.json``; lower is better)
``pmd_busy_percent``        %       PMD processing / (idle + processing) cycles, same trial
==========================  ======  ==========================================================

Telemetry of a VSperf test (``"window": "test"``: every frame size of the test in one window,
search trials included) is not stored: it has no frame size, and its mean moves with the path
each search took, not only with the build; the report still compares it run against run.

Frame sizes are Ethernet frames including the FCS [B]. Rows a reader marked invalid (missing,
zero or physically impossible throughput) give no sample: an absent number is a gap in the
series, never a zero.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ovsperf_common.metadata import BUILD_KEY, MetadataError, build_record
from reporting.metrics import METRICS
from reporting.model import BuildNote
from reporting.resultmodel import ResultSet, TestRun
from resultstore.model import build_name


@dataclass(frozen=True)
class Sample:
    """One measured number of one result."""

    test: str
    """VSperf test name, e.g. ``phy2phy_tput``."""
    deployment: str
    """VSperf deployment, e.g. ``p2p``, ``pvp``."""
    frame_size: int
    """Ethernet frame size including FCS [B]; 0 for a frame-size mix."""
    metric: str
    """Metric name (module docstring table)."""
    repeat: int
    """0 for the first run of this test in the result, 1 for the next, … ."""
    value: float
    """The number, in the metric's unit."""
    traffic: str = ""
    """The mix and/or flows (:attr:`ovsperf_common.framemix.TrafficKey.store_label`)."""


@dataclass(frozen=True)
class BuildInfo:
    """What was measured: versions, hosts and start time of one result."""

    started_at: datetime | None
    """Start of the measurement (UTC), ordering the builds of a trend; None when unknown."""
    ovs_version: str | None
    dpdk_version: str | None
    qemu_version: str | None
    hosts: tuple[str, ...]
    nvrs: tuple[str, ...] = ()
    """The Koji build NVRs of the metadata's ``build`` record; empty when it has none."""


def _run_samples(run: TestRun, repeat: int) -> list[Sample]:
    """Return the samples of one test run: every metric's loader, in registry order."""
    out: list[Sample] = []
    for metric in METRICS.values():
        for traffic, name, value in metric.samples(run):
            if value is not None and math.isfinite(value) and value >= 0:
                out.append(
                    Sample(
                        run.test,
                        run.deployment,
                        traffic.frame_size_bytes,
                        name,
                        repeat,
                        float(value),
                        traffic.store_label,
                    )
                )
    return out


def samples_from_sets(sets: Sequence[ResultSet]) -> list[Sample]:
    """Return every sample of the VSperf results directories ``sets`` (one result's runs).

    The same test found several times (repeats in one directory, or several directories of one
    result) gets repeat numbers 0, 1, … in directory and CSV order; a (test, frame size, metric)
    cell measured twice in one run keeps its first value.
    """
    counters: dict[tuple[str, str], int] = defaultdict(int)
    seen: set[tuple[str, str, int, str, str, int]] = set()
    out: list[Sample] = []
    for result_set in sets:
        for run in result_set.runs:
            key = (run.test, run.deployment)
            repeat = counters[key]
            counters[key] += 1
            for sample in _run_samples(run, repeat):
                cell = (
                    sample.test,
                    sample.deployment,
                    sample.frame_size,
                    sample.traffic,
                    sample.metric,
                    sample.repeat,
                )
                if cell not in seen:
                    seen.add(cell)
                    out.append(sample)
    return out


def _parse_time(text: str | None) -> datetime | None:
    """Parse an ISO 8601 time (``Z`` or an offset; a naive one is taken as UTC)."""
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


_MAIN_PACKAGE = {
    "ovs": re.compile(r"\Aopenvswitch(?:\d+(?:\.\d+)*)?\Z"),
    "dpdk": re.compile(r"\Adpdk\Z"),
    "qemu": re.compile(r"\Aqemu-kvm\Z"),
}
"""The package whose NVR names a component (``openvswitch3.1``, not ``openvswitch3.1-test``)."""


def build_info(sets: Sequence[ResultSet], metadata: Mapping[str, Any] | None) -> BuildInfo:
    """Return the versions, hosts and start time of a result.

    Versions are the package NVRs of the metadata's ``packages`` (``rpm -qa`` on the DUT: e.g.
    ``openvswitch3.1-3.1.0-65.el9fdp.x86_64``, which tells two builds of one version apart), else
    VSperf's environment (``* vSwitch: …, Version: …``); the start time is the metadata's
    ``started_at``, else the earliest test start VSperf recorded (DUT local time, taken as UTC),
    else the results directory's timestamp; ``nvrs`` the Koji build the collector recorded
    (``build.nvrs``, :class:`ovsperf_common.metadata.BuildRecord`).
    """
    meta = dict(metadata or {})
    raw_packages = meta.get("packages")
    packages: dict[str, Any] = raw_packages if isinstance(raw_packages, dict) else {}

    def version(component: str, attr: str) -> str | None:
        for name in sorted(packages):
            value = packages[name]
            if _MAIN_PACKAGE[component].match(name) and isinstance(value, str) and value.strip():
                return f"{name}-{value.strip()}"
        for result_set in sets:
            found = getattr(result_set, attr)
            if found:
                return str(found)
        return None

    started = _parse_time(meta.get("started_at") if isinstance(meta.get("started_at"), str) else None)
    if started is None:
        starts = [t for t in (_parse_time(s.start_time) for s in sets) if t is not None]
        started = min(starts) if starts else None
    hosts_field = meta.get("hosts")
    if isinstance(hosts_field, dict):
        hosts = tuple(str(v) for v in hosts_field.values() if isinstance(v, str))
    elif isinstance(hosts_field, list):
        hosts = tuple(str(v) for v in hosts_field if isinstance(v, str))
    else:
        hosts = ()
    try:
        record = build_record(meta.get(BUILD_KEY))
    except MetadataError:
        record = None  # read_metadata refuses it; a caller passing raw metadata gets no NVRs
    return BuildInfo(
        started_at=started,
        ovs_version=version("ovs", "ovs_version"),
        dpdk_version=version("dpdk", "dpdk_version"),
        qemu_version=version("qemu", "qemu_version"),
        hosts=hosts,
        nvrs=() if record is None else record.nvrs,
    )


def build_note(sets: Sequence[ResultSet], metadata: Mapping[str, Any] | None) -> BuildNote | None:
    """Return what a result tested, for its report (:class:`reporting.model.BuildNote`); None when unknown.

    The name is :func:`resultstore.model.build_name` of :func:`build_info`; the Koji tag and the
    Jenkins build come from the metadata's ``build`` record.
    """
    info = build_info(sets, metadata)
    name = build_name(info.ovs_version, info.dpdk_version, info.nvrs)
    if name is None:
        return None
    try:
        record = build_record(dict(metadata or {}).get(BUILD_KEY))
    except MetadataError:
        record = None
    if record is None:
        return BuildNote(name)
    return BuildNote(name, record.tag, record.jenkins_build_url)
