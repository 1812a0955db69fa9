"""Define the comparison records of the reporting package: verdicts, thresholds, cells.

Data flows ``load.py`` (VSperf files → :class:`~reporting.resultmodel.ResultSet`, records in
``resultmodel.py``) → ``compare.py`` (→ :class:`Comparison`) → ``document.py`` (``report.json``)
→ ``render.py`` (HTML, graphs). Nothing here knows VSperf column names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

from ovsperf_common.errors import FieldError
from ovsperf_common.framemix import TrafficKey
from ovsperf_common.spec import SpecEnum
from ovsperf_common.verdict import Overall
from reporting.resultmodel import HasTraffic, LatencyPoint, TelemetryPoint, TestRun


class Verdict(SpecEnum):
    """Outcome of one (test, deployment, frame size) cell of a comparison."""

    PASS = "PASS"
    """No change beyond the thresholds (or, with repeats, confidently none)."""
    REGRESSION = "REGRESSION"
    """Throughput dropped by at least the regression threshold (significantly, with repeats)."""
    IMPROVEMENT = "IMPROVEMENT"
    """Throughput rose by at least the improvement threshold; never a failure."""
    UNSTABLE = "UNSTABLE"
    """Repeats too noisy to decide: run more repeats."""
    INVALID = "INVALID"
    """Zero, missing or unparsable throughput on a side, a frame size the current side (or a
    baseline CSV that lost rows) lacks, or a test the baseline has but the current side lacks;
    no comparison possible."""
    NO_BASELINE = "NO_BASELINE"
    """A new test or frame size: valid current results, but no baseline side measured it (and none
    failed it).
    Shown, not compared; neither a pass nor a failure, so it does not decide the exit code."""


class Method(SpecEnum):
    """How a cell was compared."""

    SINGLE = "single"
    """One valid run per side: % of baseline against fixed thresholds (no noise estimate)."""
    ONE_SAMPLE_T = "one-sample-t"
    """Repeats on one side only: one-sample t-test of those samples against the other's value."""
    WELCH_T = "welch-t"
    """Repeats on both sides: Welch's unequal-variance t-test (scipy.stats.ttest_ind)."""
    NONE = "none"
    """No comparison possible (INVALID, NO_BASELINE)."""


@dataclass(frozen=True)
class Thresholds:
    """Colouring / verdict thresholds for single-run comparisons, and statistics settings."""

    regression_percent: float = 5.0
    """A relative change ≤ −this is a REGRESSION (single run; with repeats also significant) [%]."""
    improvement_percent: float = 5.0
    """A relative change ≥ +this is an IMPROVEMENT [%]."""
    warning_percent: float = 2.0
    """A cell with |relative change| ≥ this is coloured as a warning [%]."""
    alpha: float = 0.05
    """Significance level of the t-tests and 1 − confidence of the intervals (repeats) [1]."""

    def __post_init__(self) -> None:
        for name in ("regression_percent", "improvement_percent", "warning_percent"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and 0 < value < 100):
                raise FieldError(f"{value!r} is invalid; expected a percentage in (0, 100).", field=name)
        if not (isinstance(self.alpha, int | float) and 0 < self.alpha < 0.5):
            raise FieldError(
                f"{self.alpha!r} is invalid; expected a significance level in (0, 0.5).", field="alpha"
            )


@dataclass(frozen=True)
class TesterVerdict:
    """A tester's recorded decision on one comparison (shown on the page)."""

    verdict: str
    """'PASS' or 'FAIL'."""
    bug_id: str | None
    """Bug tracker id the tester filed, if any."""
    comment: str | None
    """Free text."""
    tester: str | None
    """Who decided."""
    recorded_at: datetime
    """When, timezone-aware UTC."""


@dataclass(frozen=True)
class BuildNote:
    """What the current side tested, as its delivery names it (shown under the report's title)."""

    name: str
    """The Koji build's NVRs, else the OVS/DPDK versions (``resultstore.model.build_name``)."""
    tag: str | None = None
    """The Koji tag the build came from."""
    url: str | None = None
    """The Jenkins build that submitted the run; linked only when it is an http(s) URL."""


@dataclass(frozen=True)
class SideStats:
    """The valid throughput samples of one side for one cell."""

    samples_pps: tuple[float, ...]
    """Aggregate Rx rates, one per valid run [pps]."""

    @property
    def n(self) -> int:
        """Number of samples [1]."""
        return len(self.samples_pps)

    @property
    def mean_pps(self) -> float:
        """Arithmetic mean [pps]."""
        return sum(self.samples_pps) / len(self.samples_pps)

    @property
    def stdev_pps(self) -> float | None:
        """Sample standard deviation (n − 1) [pps]; None with fewer than two samples."""
        if self.n < 2:
            return None
        mean = self.mean_pps
        return math.sqrt(sum((x - mean) ** 2 for x in self.samples_pps) / (self.n - 1))


@dataclass(frozen=True)
class RunValue:
    """One result directory's value in a cell (for per-result columns)."""

    label: str
    """Short label of the result (its ``results_<ts>`` name)."""
    rx_pps: float | None
    """None when the run lacks this size or its row is invalid [pps]."""
    rel_change_percent: float | None
    """Against the baseline mean [%]."""


TREND_MIN_HISTORY = 10
"""Earlier builds a series needs before its trend verdict, not the baseline verdict, decides a cell.

With fewer, change points are too uncertain (jumpavg needs a group to compare with); the single
baseline comparison decides as before. docs/trending.md states the rule."""


class TrendVerdict(SpecEnum):
    """What a cell's build history says of the build.

    ``resultstore.trend`` derives it from the per-build
    :class:`reporting.changepoints.ChangePointVerdict` and the testers' marks.
    """

    REGRESSION = "REGRESSION"
    """A change point to a worse group starts at this build, or such a change is still open."""
    PROGRESSION = "PROGRESSION"
    """A change point to a better group starts at this build."""
    NORMAL = "NORMAL"
    """The build belongs to the group before it."""
    OUTLIER = "OUTLIER"
    """A build (or a short run of one or two builds) far off the group it lies in (docs/trending.md)."""
    EXPECTED = "EXPECTED"
    """A regression a tester marked as expected (bug id or comment): shown, not alarmed."""
    NO_HISTORY = "NO_HISTORY"
    """No earlier build in the series: no trend possible."""


@dataclass(frozen=True)
class TrendCell:
    """The trend verdict of one cell: this build judged against its series' history."""

    verdict: TrendVerdict
    history: int
    """Earlier builds in the series [1]."""
    reason: str
    """One sentence: the step, where the change started, its confidence or the tester's mark."""
    step_percent: float | None = None
    """Step between the new group's and the previous group's averages [%]."""
    confidence: float | None = None
    """1 − 2^−Δbits of that change point [0, 1] (reporting.changepoints)."""
    since: str | None = None
    """Result (its name in the store) where the change started: what ``ovsperf-results expect`` takes."""
    since_build: str | None = None
    """What that result tested, for people: the Koji NVRs or the OVS/DPDK versions."""
    trend_page: str | None = None
    """Link to the series' trend page (relative to the report page), when one is written."""

    @property
    def decides(self) -> bool:
        """Return whether this verdict, not the baseline's, decides the cell (:data:`TREND_MIN_HISTORY`)."""
        return self.history >= TREND_MIN_HISTORY and self.verdict is not TrendVerdict.NO_HISTORY


@dataclass(frozen=True)
class Cell(HasTraffic):
    """The comparison of one (test, deployment, frame size or mix, flows, loss goal)."""

    frame_size_bytes: int
    """Ethernet frame size including FCS [B]; 0 for a mix (:attr:`mix`)."""
    baseline: SideStats | None
    current: SideStats | None
    line_rate_pps: float | None
    """Theoretical aggregate line rate for this size [pps]."""
    rel_change_percent: float | None
    """current mean / baseline mean − 1 [%]."""
    ci_low_percent: float | None
    """Lower bound of the (1 − alpha) confidence interval of the relative change [%]."""
    ci_high_percent: float | None
    p_value: float | None
    method: Method
    verdict: Verdict
    reason: str
    """One sentence explaining the verdict."""
    warn: bool
    """True when |relative change| ≥ the warning threshold (colouring)."""
    baseline_latency_avg_ns: float | None = None
    current_latency_avg_ns: float | None = None
    baseline_latency_max_ns: float | None = None
    current_latency_max_ns: float | None = None
    baseline_frame_loss_percent: float | None = None
    current_frame_loss_percent: float | None = None
    per_result: tuple[RunValue, ...] = ()
    loss_goal_percent: float = 0.0
    """The loss-ratio goal of the compared throughputs [%]: 0 is the NDR."""
    trend: TrendCell | None = None
    """What the build history says, when the report was given it (``--db``, process-ci-results)."""
    mix: str = ""
    """The frame-size mix's name when :attr:`frame_size_bytes` is 0."""
    flows: int | None = None
    """Flows per direction (VSperf ``stream_count``) [1]; ``None`` when the results do not say."""

    @property
    def decision(self) -> Verdict:
        """Return the verdict that counts for the overall verdict and the exit code.

        The baseline :attr:`verdict`, unless the trend decides (:attr:`TrendCell.decides`): then a
        trend REGRESSION is a REGRESSION, and a baseline REGRESSION the history does not confirm
        (NORMAL, OUTLIER, PROGRESSION, EXPECTED) is a PASS. INVALID and NO_BASELINE stay.
        """
        trend = self.trend
        if trend is None or not trend.decides or self.verdict in (Verdict.INVALID, Verdict.NO_BASELINE):
            return self.verdict
        if trend.verdict is TrendVerdict.REGRESSION:
            return Verdict.REGRESSION
        return Verdict.PASS if self.verdict is Verdict.REGRESSION else self.verdict


@dataclass(frozen=True)
class LatencyCell(HasTraffic):
    """Latency percentiles of one frame size at one share of the PDR load, baseline against current.

    Informational: no verdict (latency on a shared machine is the tail of its scheduler).
    """

    frame_size_bytes: int
    """Ethernet frame size including FCS [B]."""
    percent_of_pdr: float
    """Load as a share of each side's own PDR load [%]."""
    baseline: LatencyPoint | None
    """The baseline's latency (several runs merged); ``None`` when not measured."""
    current: LatencyPoint | None
    mix: str = ""
    """The frame-size mix's name when :attr:`frame_size_bytes` is 0."""
    flows: int | None = None
    """Flows per direction [1]; ``None`` when the results do not say."""
    """The current side's latency (several runs merged); ``None`` when not measured."""

    def rel_change_percent(self, key: str) -> float | None:
        """Return current / baseline − 1 of percentile ``key`` (e.g. ``'p99_ns'``) [%].

        ``None`` unless both sides have it.
        """
        if self.baseline is None or self.current is None:
            return None
        base = getattr(self.baseline, key)
        return None if not base else (getattr(self.current, key) / base - 1.0) * 100.0


@dataclass(frozen=True)
class TelemetryCell:
    """The DUT's own view of one frame size, baseline against current (:mod:`reporting.telemetry`)."""

    frame_size_bytes: int | None
    """Ethernet frame size including FCS [B]; None: VSperf's whole-test window (every size)."""
    baseline: tuple[TelemetryPoint, ...]
    """The baseline runs' points (empty: not collected)."""
    current: tuple[TelemetryPoint, ...]
    """The current runs' points (empty: not collected)."""
    baseline_cycles_per_packet: float | None
    """Mean over the baseline runs [cycles]."""
    current_cycles_per_packet: float | None
    """Mean over the current runs [cycles]."""
    cycles_change_percent: float | None
    """current / baseline − 1 of cycles per packet [%]; positive is worse."""
    marked: bool
    """True when cycles per packet rose by at least the regression threshold."""
    baseline_busy_percent: float | None
    """PMD busy [%], baseline mean."""
    current_busy_percent: float | None
    """PMD busy [%], current mean."""
    mix: str = ""
    """The frame-size mix's name when :attr:`frame_size_bytes` is 0."""
    flows: int | None = None
    """Flows per direction [1]; ``None`` when the results do not say."""

    @property
    def label(self) -> str:
        """Return the frame column's text: ``'64'``, the mix's name, or ``''`` for a whole-test window."""
        if self.frame_size_bytes is None:
            return ""
        return TrafficKey(self.frame_size_bytes, self.mix, self.flows).frame_label


@dataclass(frozen=True)
class TestComparison:
    """All cells of one (test, deployment)."""

    __test__ = False  # not a pytest class

    test: str
    deployment: str
    cells: tuple[Cell, ...]
    """Ascending by frame size (sizes, then mixes), flows, then loss goal."""
    baseline_runs: tuple[TestRun, ...]
    current_runs: tuple[TestRun, ...]
    latency: tuple[LatencyCell, ...] = ()
    """Latency at shares of the PDR load, by frame size then load; empty when neither side has it."""
    telemetry: tuple[TelemetryCell, ...] = ()
    """DUT telemetry by frame size; empty when neither side has it."""

    @property
    def has_flow_counts(self) -> bool:
        """Return whether the test measured more than one flow count (a ``--flows`` sweep)."""
        return len({c.flows for c in self.cells}) > 1

    @property
    def has_latency(self) -> bool:
        """True when any cell carries a measured latency."""
        return any(
            v is not None for c in self.cells for v in (c.baseline_latency_avg_ns, c.current_latency_avg_ns)
        )

    @property
    def has_frame_loss(self) -> bool:
        """True when any cell carries a generator-reported frame loss."""
        return any(
            v is not None
            for c in self.cells
            for v in (c.baseline_frame_loss_percent, c.current_frame_loss_percent)
        )


@dataclass(frozen=True)
class Comparison:
    """Baseline against current for every test found on either side."""

    tests: tuple[TestComparison, ...]
    thresholds: Thresholds
    warnings: tuple[str, ...] = field(default=())
    """Comparison-level warnings (tests or frame sizes on one side only)."""
    link_bps: float = 2 * 10e9
    """Aggregate line speed used for the theoretical line rate [bit/s]."""
    link_source: str = "assumed 2 × 10 GbE"
    """How ``link_bps`` was found."""

    @property
    def counts(self) -> dict[str, int]:
        """Verdict name → number of cells (every verdict listed, zeros included)."""
        counts = {v.value: 0 for v in Verdict}
        for test in self.tests:
            for cell in test.cells:
                counts[cell.decision.value] += 1
        return counts

    @property
    def overall(self) -> Overall:
        """Return the page's overall verdict, decided by the compared cells only.

        NO_RESULTS with no cells; else REGRESSION if any; else INVALID if any cell is INVALID, or
        when every cell is NO_BASELINE (nothing was compared, so nothing passed); else PASS.
        NO_BASELINE cells (new tests) never decide it otherwise.
        """
        counts = self.counts
        if not any(counts.values()):
            return Overall.NO_RESULTS
        if counts[Verdict.REGRESSION.value]:
            return Overall.REGRESSION
        compared = sum(counts.values()) - counts[Verdict.NO_BASELINE.value]
        if counts[Verdict.INVALID.value] or not compared:
            return Overall.INVALID
        return Overall.PASS
