"""Define every metric a result is followed by: one frozen record per metric, in one registry.

A :class:`Metric` says what the results store, the trend verdicts, the trend pages and
``ovsperf-results`` need to know of a number: its name as stored (``ndr_fps``), its unit, which
direction is better, how it is judged (:class:`Judgement`), how it is shown (scale, unit and
precision: fps as Mpps = fps / 1e6) and drawn (axis title), and its *loader*, which reads its
values from one :class:`~reporting.resultmodel.TestRun`. :data:`METRICS` is the registry, in
the order of the table of :mod:`resultstore.samples`; nothing guesses a metric's unit or
direction from its name's suffix. CONTRIBUTING.md, "How to add a metric", says how to add one.

A **family** is a metric with one parameter in its name, ``<L>``: ``latency_p99_ns_<L>pct`` is
stored once per load level, e.g. ``latency_p99_ns_90pct`` (99th percentile at 90 % of the PDR
load). :func:`metric` finds the family of a stored name and returns it with the parameter filled in.

The record follows Apache Otava's ``Metric`` (direction, scale, unit: otava ``series.py``),
with what a trend page and a store need besides.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from types import MappingProxyType

from ovsperf_common.errors import FieldError
from ovsperf_common.framemix import TrafficKey
from ovsperf_common.spec import SpecEnum
from reporting.errors import ReportingError
from reporting.resultmodel import TelemetryPoint, TestRun

Reading = tuple[TrafficKey, str, float | None]
"""One value a loader read: (frame size or mix and flows, the family's parameter or ``''``,
the value in the metric's unit or None when not measured)."""

Loader = Callable[[TestRun], Iterable[Reading]]
"""Read one metric's values from one test run (one row per frame size, load level, …)."""

PARAMETER = "<L>"
"""The placeholder of a family's parameter in its name (a load level, ``f"{percent:g}"``)."""

_PARAMETER_RE = r"(?P<parameter>[0-9][0-9.e+-]*)"
"""What a parameter may be in a stored name: a number as ``format(x, 'g')`` writes it."""

_NAME_RE = re.compile(r"\A[a-z][a-z0-9_.+-]*(?:<L>[a-z0-9_.+-]*)?\Z")
"""A metric's name: a family's holds one :data:`PARAMETER`; a member of one, its value (``99.5``)."""


class Unit(SpecEnum):
    """The unit a metric's values are stored in."""

    FPS = "fps"
    """Frames per second, both directions summed [frame/s]."""
    PERCENT = "%"
    """Percent [%]."""
    NS = "ns"
    """Nanoseconds [ns]."""
    CYCLES = "cycles"
    """TSC cycles [cycles]."""


class Judgement(SpecEnum):
    """How a metric counts in a report and on the trend pages."""

    DECIDES = "decides"
    """Compared with statistics against the thresholds and judged over builds (trend verdict):
    decides the cell's verdict and the exit code."""
    MARKED = "marked"
    """Compared, and a change of at least the regression threshold marked; never decides."""
    SHOWN = "shown"
    """Stored, shown and drawn; not judged (on a shared machine its tail is the scheduler's)."""


@dataclass(frozen=True)
class Metric:
    """One metric: how it is named, stored, judged, shown, drawn, and read from a test run."""

    name: str
    """The name as stored (``ndr_fps``); a family's holds :data:`PARAMETER` (``latency_p99_ns_<L>pct``)."""
    unit: Unit
    """The unit of the stored values."""
    higher_is_better: bool
    """True when a rise is an improvement (throughput); False for latency, loss, cycles."""
    judgement: Judgement
    """Whether a trend verdict decides it (:attr:`Judgement.DECIDES`) or it is only shown."""
    label: str
    """Short name on pages (legend, ``metric`` column): ``NDR``, ``p99 at <L> % of PDR``."""
    description: str
    """What it is and where it comes from (the table of :mod:`resultstore.samples`)."""
    loader: Loader
    """Reads its values from one test run (see :data:`Loader`)."""
    quantity: str
    """What a trend page's axis shows, lower case: ``throughput``, ``latency``."""
    qualifier: str = ""
    """How it was measured, for the axis title: ``both directions``."""
    display_unit: str = ""
    """The unit shown (``Mpps``); empty: the stored unit."""
    scale: float = 1.0
    """Shown value = stored value / scale [1] (1e6 from fps to Mpps). A divisor, where Otava's is a
    factor (``1.0e-6``): ``x / 1e6`` is the number the pages always drew, ``x * 1e-6`` differs from
    it in the last bit for about a third of the values."""
    number_format: str = ".4g"
    """``format()`` spec of a shown value (``.4f``: 4 decimals)."""
    option: str | None = None
    """The value naming it to ``ovsperf-results trend/expect --metric`` (judged metrics only)."""
    colour: str = "#444444"
    """Its colour on the trend pages."""

    def __post_init__(self) -> None:
        if not _NAME_RE.match(self.name):
            raise FieldError(
                f"{self.name!r} is not a metric name; expected lower-case letters, digits and '_', "
                f"with at most one {PARAMETER!r} (a family).",
                field="name",
            )
        Unit.from_spec(self.unit, field="unit")
        Judgement.from_spec(self.judgement, field="judgement")
        if not self.scale > 0:
            raise FieldError(f"{self.scale!r} is not a positive scale.", field="scale")
        if (self.option is not None) != (self.judgement is Judgement.DECIDES):
            raise FieldError(
                f"Metric '{self.name}': {self.option!r} is invalid; an option (its '--metric' value) "
                "is given exactly to the metrics a trend verdict decides.",
                field="option",
            )

    @property
    def is_family(self) -> bool:
        """Return whether the name holds a parameter (one series per parameter value)."""
        return PARAMETER in self.name

    @property
    def shown_unit(self) -> str:
        """Return the unit a shown value is in: :attr:`display_unit`, else the stored unit."""
        return self.display_unit or self.unit.value

    @property
    def axis_title(self) -> str:
        """Return the trend pages' y-axis title: ``throughput, both directions [Mpps]``."""
        what = f"{self.quantity}, {self.qualifier}" if self.qualifier else self.quantity
        return f"{what} [{self.shown_unit}]"

    def stored_name(self, parameter: str = "") -> str:
        """Return the name a value is stored under: the family's name with ``parameter`` filled in.

        :raises ReportingError: when a family gets no parameter, or a plain metric one.
        """
        if self.is_family != bool(parameter):
            wanted = "a parameter" if self.is_family else "no parameter"
            raise ReportingError(f"Metric '{self.name}' takes {wanted}; got {parameter!r}.")
        return self.name.replace(PARAMETER, parameter)

    def shown(self, value: float) -> float:
        """Return a stored value in the shown unit (/ :attr:`scale`)."""
        return value / self.scale

    def number(self, value: float) -> str:
        """Return a stored value as shown, without its unit: ``7.0000`` for 7e6 fps."""
        return format(self.shown(value), self.number_format)

    def text(self, value: float) -> str:
        """Return a stored value as shown, with its unit: ``7.0000 Mpps``, ``1200 ns``."""
        return f"{self.number(value)} {self.shown_unit}"

    def compare(
        self, baseline: float | None, current: float | None, regression_percent: float
    ) -> tuple[float | None, bool]:
        """Return current / baseline − 1 [%] and whether the change is marked.

        Marked: a :attr:`Judgement.MARKED` metric worse by at least ``regression_percent`` [%]
        (a rise when lower is better). The change is None unless both sides have a value and the
        baseline is not 0.
        """
        if not baseline or current is None:
            return None, False
        change = (current / baseline - 1.0) * 100.0
        worse = -change if self.higher_is_better else change
        return change, self.judgement is Judgement.MARKED and worse >= regression_percent

    def samples(self, run: TestRun) -> Iterator[tuple[TrafficKey, str, float | None]]:
        """Yield (traffic, stored name, value) of every value the loader reads from ``run``."""
        for traffic, parameter, value in self.loader(run):
            yield traffic, self.stored_name(parameter), value


# Loaders: each reads one metric's values from one TestRun (a family's with their parameter).


def _continuous(run: TestRun) -> bool:
    """Return whether ``run`` is a continuous test (``*_cont``: a maximum receive rate, no search)."""
    return run.test.endswith("_cont")


def _ndr_rows(run: TestRun) -> Iterator[Reading]:
    for row in run.rows:
        if row.valid and row.loss_goal_percent == 0:
            yield row.traffic, "", row.rx_pps


def _ndr(run: TestRun) -> Iterator[Reading]:
    return iter(()) if _continuous(run) else _ndr_rows(run)


def _mrr(run: TestRun) -> Iterator[Reading]:
    return _ndr_rows(run) if _continuous(run) else iter(())


def _pdr(run: TestRun) -> Iterator[Reading]:
    for row in run.rows:
        if row.valid and row.loss_goal_percent != 0:
            yield row.traffic, "", row.rx_pps


def _frame_loss(run: TestRun) -> Iterator[Reading]:
    for row in run.rows:
        if row.valid and row.loss_goal_percent == 0:
            yield row.traffic, "", row.frame_loss_percent


def _latency_avg(run: TestRun) -> Iterator[Reading]:
    for row in run.rows:
        if row.valid and row.loss_goal_percent == 0:
            yield row.traffic, "", row.latency_avg_ns or None  # MoonGen writes 0: not measured


def _telemetry_points(run: TestRun) -> Iterator[tuple[TrafficKey, TelemetryPoint]]:
    for point in run.telemetry:
        if point.frame_size_bytes is not None:  # a VSperf whole-test window: no frame size
            yield TrafficKey(point.frame_size_bytes, point.mix, point.flows), point


def _cycles_per_packet(run: TestRun) -> Iterator[Reading]:
    for traffic, point in _telemetry_points(run):
        yield traffic, "", point.cycles_per_packet


def _pmd_busy(run: TestRun) -> Iterator[Reading]:
    for traffic, point in _telemetry_points(run):
        yield traffic, "", point.pmd_busy_percent


def _at_levels(field: str) -> Loader:
    """Return the loader of a :class:`~reporting.resultmodel.LatencyPoint` field at each load level."""

    def load(run: TestRun) -> Iterator[Reading]:
        for point in run.latency:
            if point.valid:
                yield point.traffic, f"{point.percent_of_pdr:g}", getattr(point, field)

    return load


def _throughput(name: str, label: str, colour: str, loader: Loader, description: str) -> Metric:
    """Return a throughput metric [fps], shown in Mpps, judged over builds."""
    return Metric(
        name, Unit.FPS, True, Judgement.DECIDES, label, description, loader, "throughput",
        qualifier="both directions", display_unit="Mpps", scale=1e6, number_format=".4f",
        option=label.lower(), colour=colour,
    )  # fmt: skip


def _latency(name: str, label: str, loader: Loader, description: str) -> Metric:
    """Return a latency metric [ns], lower is better, shown and drawn, not judged."""
    if PARAMETER in name:
        description += " at L % of the PDR load (ovsperf-latency.json)"
    return Metric(name, Unit.NS, False, Judgement.SHOWN, label, description, loader, "latency",
                  qualifier="one-way", number_format=".0f")  # fmt: skip


_ENTRIES = (
    _throughput("ndr_fps", "NDR", "#1f5fa8", _ndr, "RFC 2544 throughput at 0 % loss, both directions summed"),
    _throughput("pdr_fps", "PDR", "#7a3db8", _pdr, "throughput at the run's PDR goal"),
    _throughput("mrr_fps", "MRR", "#2a7f62", _mrr, "maximum receive rate of a continuous test (*_cont)"),
    Metric("frame_loss_percent", Unit.PERCENT, False, Judgement.SHOWN, "frame loss",
           "frame loss the generator reported at the NDR row", _frame_loss, "frame loss"),
    _latency("latency_avg_ns", "average latency", _latency_avg, "VSperf's average latency at the NDR row"),
    _latency("latency_p50_ns_<L>pct", "p50 at <L> % of PDR", _at_levels("p50_ns"), "median latency"),
    _latency("latency_p99_ns_<L>pct", "p99 at <L> % of PDR", _at_levels("p99_ns"), "99th percentile"),
    _latency("latency_p999_ns_<L>pct", "p99.9 at <L> % of PDR", _at_levels("p999_ns"), "99.9th percentile"),
    Metric("cycles_per_packet", Unit.CYCLES, False, Judgement.MARKED, "cycles / packet",
           "PMD processing cycles / packets of the trial the NDR rests on (ovsperf-telemetry.json)",
           _cycles_per_packet, "cycles per packet", number_format=".0f"),
    Metric("pmd_busy_percent", Unit.PERCENT, False, Judgement.SHOWN, "PMD busy",
           "PMD processing / (idle + processing) cycles, same trial", _pmd_busy, "PMD busy"),
)  # fmt: skip


def _registry(entries: Iterable[Metric]) -> MappingProxyType[str, Metric]:
    """Return ``entries`` by name, read-only.

    :raises ReportingError: when two entries share a name.
    """
    out: dict[str, Metric] = {}
    for entry in entries:
        if entry.name in out:
            raise ReportingError(f"Metric '{entry.name}' is registered twice; names are unique.")
        out[entry.name] = entry
    return MappingProxyType(out)


METRICS = _registry(_ENTRIES)
"""Every metric by its name (a family's with :data:`PARAMETER`), in the order of the samples table."""

THROUGHPUT_METRICS: tuple[str, ...] = tuple(
    m.name for m in METRICS.values() if m.judgement is Judgement.DECIDES
)
"""The metrics a trend verdict decides (NDR, PDR, MRR); the others are shown, not judged."""

OPTIONS: MappingProxyType[str, str] = MappingProxyType(
    {m.option: m.name for m in METRICS.values() if m.option is not None}
)
"""``ovsperf-results --metric`` value → metric name: ``ndr`` → ``ndr_fps``."""

_FAMILIES = tuple(
    (re.compile(re.escape(m.name).replace(re.escape(PARAMETER), _PARAMETER_RE) + r"\Z"), m)
    for m in METRICS.values()
    if m.is_family
)


def find(name: str) -> Metric | None:
    """Return the metric stored as ``name``, a family's with its parameter filled in; None when unknown.

    ``latency_p99_ns_90pct`` gives the family ``latency_p99_ns_<L>pct`` with name and label
    ``latency_p99_ns_90pct`` and ``p99 at 90 % of PDR``.
    """
    found = METRICS.get(name)
    if found is not None:
        return None if found.is_family else found  # a family's own name is never stored
    for pattern, family in _FAMILIES:
        match = pattern.match(name)
        if match:
            parameter = match.group("parameter")
            return replace(family, name=name, label=family.label.replace(PARAMETER, parameter))
    return None


def metric(name: str) -> Metric:
    """Return the metric stored as ``name`` (:func:`find`).

    :raises ReportingError: when no metric or family of :data:`METRICS` has that name.
    """
    found = find(name)
    if found is None:
        known = ", ".join(f"'{n}'" for n in METRICS)
        raise ReportingError(f"'{name}' is no metric this ovsperf knows; expected one of {known}.")
    return found


def metric_unit(name: str) -> str:
    """Return the unit the values of metric ``name`` are stored in: ``fps``, ``%``, ``ns`` or ``cycles``.

    :raises ReportingError: for an unknown metric.
    """
    return metric(name).unit.value


def higher_is_better(name: str) -> bool:
    """Return whether a rise of metric ``name`` is an improvement (throughput) or not (latency, loss).

    :raises ReportingError: for an unknown metric.
    """
    return metric(name).higher_is_better
