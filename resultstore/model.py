"""Describe what the results store holds: results, comparisons and tester verdicts (frozen records).

These records are what :class:`resultstore.store.ResultStore` returns; the database tables behind
them live in :mod:`resultstore.schema` and never leave the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ovsperf_common import fields
from ovsperf_common.errors import FieldError
from ovsperf_common.framemix import TrafficKey
from ovsperf_common.spec import SpecEnum
from resultstore.errors import InvalidRecordError


def check_name(value: object, field: str) -> str:
    """Return ``value`` if it is a safe result or scenario name (``ovsperf_common.fields.safe_name``).

    :raises InvalidRecordError: naming ``field`` when it is not.
    """
    if not fields.is_safe_name(value):
        try:
            fields.safe_name(value, field)
        except FieldError as err:
            raise InvalidRecordError(f"{field} {err.reason}", field=field) from err
    assert isinstance(value, str)
    return value


class ReviewDecision(SpecEnum):
    """A tester's decision on one comparison, after reviewing it (the role CQE had).

    Not the statistics' verdict of a cell (``reporting.compare.StatisticalVerdict``).
    """

    PASS = "PASS"
    """The comparison is acceptable; its current result may serve as a baseline."""
    FAIL = "FAIL"
    """The comparison shows a real problem (usually with a bug id)."""


class ResultStatus(SpecEnum):
    """Where ``process-ci-results`` put a result."""

    PROCESSED = "processed"
    """Compared and moved to ``ci_processed``."""
    FAILED = "failed"
    """Could not be compared; moved to ``ci_failed`` with the reason."""


@dataclass(frozen=True)
class ResultRecord:
    """One result directory ``process-ci-results`` took from ``ci_in``."""

    id: int
    """Database id."""
    name: str
    """Directory name in ``ci_in`` (unique in the store)."""
    scenario: str | None
    """Scenario name from ``ovsperf-metadata.json``; None when it could not be read."""
    location: Path
    """Where the result directory is now (under ``ci_processed`` or ``ci_failed``)."""
    vsperf_dirs: tuple[Path, ...]
    """VSperf ``results_<timestamp>`` directories inside ``location`` (absolute)."""
    status: ResultStatus
    """Processed or failed."""
    failure_reason: str | None
    """Why it failed; None when processed."""
    metadata: Mapping[str, Any]
    """The parsed ``ovsperf-metadata.json`` (versions, job id, hosts), empty when unreadable."""
    received_at: datetime
    """When the pass took it (timezone-aware UTC)."""
    fingerprint: str | None = None
    """SHA-256 (hex) of the delivery's file list and data files; tells a re-run of the same
    delivery from a different delivery under the same name. None when not computed."""


@dataclass(frozen=True)
class VerdictRecord:
    """A tester's decision on one comparison; the newest one per comparison counts."""

    id: int
    """Database id (grows with time)."""
    comparison_id: int
    """The comparison decided on."""
    decision: ReviewDecision
    """PASS or FAIL."""
    bug_id: str | None
    """Bug tracker id, e.g. ``RHBZ#1234567``; None when not given."""
    comment: str | None
    """Free text; None when not given."""
    tester: str | None
    """Who decided (login name); None when unknown."""
    recorded_at: datetime
    """When (timezone-aware UTC)."""


@dataclass(frozen=True)
class ComparisonRecord:
    """One report: a current result compared with a baseline, and the tester's latest verdict."""

    id: int
    """Database id; what ``ovsperf-results show|verdict`` take."""
    result_name: str
    """Name of the current result."""
    scenario: str | None
    """Scenario of the current result."""
    baseline_result_name: str | None
    """Name of the stored result used as baseline; None when the baseline came from a directory."""
    baseline_dirs: tuple[Path, ...]
    """Baseline VSperf result directories the report was generated from."""
    current_dirs: tuple[Path, ...]
    """Current VSperf result directories (at their location after the move)."""
    report_dir: Path
    """Directory holding ``index.html`` and ``report.json``."""
    title: str | None
    """Page title given to the report generator."""
    overall: str
    """Overall verdict of the report: PASS, REGRESSION, INVALID or NO_RESULTS."""
    counts: Mapping[str, int]
    """Verdict name → number of (test, frame size) cells."""
    warnings: tuple[str, ...]
    """Warnings of the report generator (each names a file and row)."""
    thresholds: Mapping[str, float]
    """The report generator's thresholds, by field name ([%] or [1] as named there)."""
    created_at: datetime
    """When the comparison was first recorded (timezone-aware UTC)."""
    verdict: VerdictRecord | None
    """The newest tester verdict; None while nobody has decided."""


@dataclass(frozen=True, order=True)
class SeriesKey:
    """One trend series: a scenario's test at one frame size and one metric, over builds."""

    scenario: str
    """Catalog scenario (``OVS_DPDK1q``, …); ``-`` for results recorded without one."""
    test: str
    """VSperf test, e.g. ``phy2phy_tput``."""
    deployment: str
    """VSperf deployment, e.g. ``p2p``."""
    frame_size: int
    """Ethernet frame size including FCS [B]; 0 for a frame-size mix."""
    metric: str
    """Metric name (:mod:`resultstore.samples`)."""
    traffic: str = ""
    """The mix and/or flows (:attr:`ovsperf_common.framemix.TrafficKey.store_label`); ``''`` for a
    plain frame size at one flow."""

    @property
    def traffic_key(self) -> TrafficKey:
        """Return the frame size or mix and flows of the series."""
        return TrafficKey.from_store(self.frame_size, self.traffic)

    @property
    def label(self) -> str:
        """Return ``scenario / test / 64 B / ndr_fps`` (``imix, 1000 flows`` in place of ``64 B``)."""
        return f"{self.scenario} / {self.test} / {self.traffic_key.text()} / {self.metric}"


def build_name(ovs_version: str | None, dpdk_version: str | None, nvrs: tuple[str, ...] = ()) -> str | None:
    """Return what a build tested, for people; None when nothing is known.

    The Koji build's NVRs when the delivery recorded them (``openvswitch3.1-3.1.0-65.el9fdp``),
    else the OVS and DPDK versions: a package NVR from the DUT's ``rpm -qa`` as it is
    (``openvswitch3.1-3.1.0-10.el9.x86_64``), a bare version from VSperf's environment with its
    component (``OVS 2.9.1``).
    """
    if nvrs:
        return " + ".join(nvrs)
    parts = []
    for component, version in (("OVS", ovs_version), ("DPDK", dpdk_version)):
        if version:
            parts.append(version if version[0].isalpha() else f"{component} {version}")
    return ", ".join(parts) or None


@dataclass(frozen=True)
class SeriesPoint:
    """One build in a series: its values (repeats) and what identifies the build."""

    result_name: str
    """The result's name in the store."""
    built_at: datetime
    """Start of the measurement (UTC), else when the result was received."""
    values: tuple[float, ...]
    """The build's values, one per repeat, in the metric's unit."""
    ovs_version: str | None
    dpdk_version: str | None
    qemu_version: str | None
    report: Path | None
    """``index.html`` of the result's newest report, None when it has none."""
    tester_decision: str | None
    """The tester's newest verdict (PASS / FAIL) on that report, None when none."""
    tester_bug: str | None
    """Its bug id."""
    build_nvrs: tuple[str, ...] = ()
    """The Koji build NVRs the delivery's metadata recorded (``build.nvrs``); empty when none."""

    @property
    def build(self) -> str:
        """Return the build's name for people (:func:`build_name`), else the result's name."""
        return build_name(self.ovs_version, self.dpdk_version, self.build_nvrs) or self.result_name


@dataclass(frozen=True)
class Series:
    """A series and its builds in build order (oldest first)."""

    key: SeriesKey
    points: tuple[SeriesPoint, ...]


@dataclass(frozen=True)
class TrendMark:
    """A tester's note that the change of one series at one result is expected (not re-alarmed)."""

    id: int
    result_name: str
    key: SeriesKey
    bug_id: str | None
    comment: str | None
    tester: str | None
    recorded_at: datetime
