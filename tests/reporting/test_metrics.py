"""The metric registry: lookups of stored names (families included), display, loaders, refusals."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ovsperf_common.errors import FieldError
from ovsperf_common.framemix import TrafficKey
from reporting.errors import ReportingError
from reporting.load import load_results_dir
from reporting.metrics import (
    METRICS,
    OPTIONS,
    THROUGHPUT_METRICS,
    Judgement,
    Unit,
    find,
    higher_is_better,
    metric,
    metric_unit,
)
from tests.reporting.test_goals_latency import level, row, write_dir, write_latency


def test_the_registry_is_frozen_and_in_table_order() -> None:
    assert list(METRICS)[:5] == ["ndr_fps", "pdr_fps", "mrr_fps", "frame_loss_percent", "latency_avg_ns"]
    with pytest.raises(TypeError):
        METRICS["x"] = METRICS["ndr_fps"]  # type: ignore[index]
    with pytest.raises(AttributeError):
        METRICS["ndr_fps"].unit = Unit.NS  # type: ignore[misc]
    assert THROUGHPUT_METRICS == ("ndr_fps", "pdr_fps", "mrr_fps")
    assert dict(OPTIONS) == {"ndr": "ndr_fps", "pdr": "pdr_fps", "mrr": "mrr_fps"}


@pytest.mark.parametrize(
    ("name", "unit", "better", "judgement"),
    [
        ("ndr_fps", "fps", True, Judgement.DECIDES),
        ("mrr_fps", "fps", True, Judgement.DECIDES),
        ("frame_loss_percent", "%", False, Judgement.SHOWN),
        ("latency_avg_ns", "ns", False, Judgement.SHOWN),
        ("latency_p50_ns_0pct", "ns", False, Judgement.SHOWN),
        ("latency_p999_ns_99.5pct", "ns", False, Judgement.SHOWN),
        ("cycles_per_packet", "cycles", False, Judgement.MARKED),
        ("pmd_busy_percent", "%", False, Judgement.SHOWN),
    ],
)
def test_a_stored_name_finds_its_metric(name: str, unit: str, better: bool, judgement: Judgement) -> None:
    found = metric(name)
    assert (found.name, found.unit.value, found.higher_is_better, found.judgement) == (
        name,
        unit,
        better,
        judgement,
    )
    assert metric_unit(name) == unit and higher_is_better(name) is better


def test_a_family_member_gets_its_parameter_in_name_and_label() -> None:
    p99 = metric("latency_p99_ns_90pct")
    assert (p99.name, p99.label) == ("latency_p99_ns_90pct", "p99 at 90 % of PDR")
    p999 = metric("latency_p999_ns_90pct")  # not the p99 family with a '9' left over
    assert (p999.name, p999.label) == ("latency_p999_ns_90pct", "p99.9 at 90 % of PDR")
    assert METRICS["latency_p99_ns_<L>pct"].stored_name("90") == "latency_p99_ns_90pct"


@pytest.mark.parametrize(
    "name", ["ndr_pps", "latency_p99_ns_pct", "latency_p99_ns_<L>pct", "latency_p95_ns_90pct", "", "NDR_FPS"]
)
def test_an_unknown_name_is_refused_with_the_known_ones(name: str) -> None:
    assert find(name) is None
    with pytest.raises(ReportingError, match=rf"'{name}' is no metric this ovsperf knows; .*'ndr_fps'"):
        metric(name)


def test_values_are_shown_in_their_display_unit() -> None:
    assert metric("ndr_fps").text(14_880_952.0) == "14.8810 Mpps"
    assert metric("ndr_fps").axis_title == "throughput, both directions [Mpps]"
    assert metric("latency_p99_ns_90pct").text(12_345.6) == "12346 ns"
    assert metric("cycles_per_packet").text(393.6) == "394 cycles"
    assert metric("frame_loss_percent").text(0.0123456) == "0.01235 %"


def test_a_record_is_checked() -> None:
    ndr = METRICS["ndr_fps"]
    with pytest.raises(FieldError, match="'ndr fps' is not a metric name"):
        replace(ndr, name="ndr fps")
    with pytest.raises(FieldError, match=r"-1\.0 is not a positive scale"):
        replace(ndr, scale=-1.0)
    with pytest.raises(FieldError, match="exactly to the metrics a trend verdict decides"):
        replace(ndr, judgement=Judgement.SHOWN)
    with pytest.raises(ReportingError, match="takes a parameter"):
        METRICS["latency_p99_ns_<L>pct"].stored_name()
    with pytest.raises(ReportingError, match="takes no parameter"):
        ndr.stored_name("90")


def test_loaders_read_every_metric_of_a_run(tmp_path: Path) -> None:
    path = write_dir(tmp_path, "2026-01-01_00-00-00", [row(64, 1.0e6, 2.0e6), row(1518, 0.0, 1.6e6)])
    write_latency(path, [level(90, {5_000: 998, 40_000: 2})])
    [run] = load_results_dir(path).runs
    read = {name: list(m.samples(run)) for name, m in METRICS.items()}
    size64 = TrafficKey(64)
    assert read["ndr_fps"] == [(size64, "ndr_fps", 1.0e6)]  # 1518 B: an invalid (zero) row, no value
    assert read["pdr_fps"] == [(size64, "pdr_fps", 2.0e6), (TrafficKey(1518), "pdr_fps", 1.6e6)]
    assert read["mrr_fps"] == []  # not a continuous test
    assert read["latency_avg_ns"] == [(size64, "latency_avg_ns", None)]  # not measured: None, never 0
    [(traffic, name, value)] = read["latency_p999_ns_<L>pct"]
    assert (traffic, name) == (size64, "latency_p999_ns_90pct") and value == pytest.approx(40_000, rel=1e-3)
    assert read["cycles_per_packet"] == []  # no telemetry collected


def test_a_change_is_marked_only_for_a_marked_metric_that_got_worse() -> None:
    cycles = METRICS["cycles_per_packet"]  # lower is better
    change, marked = cycles.compare(400.0, 440.0, 5.0)
    assert change == pytest.approx(10.0) and marked
    change, marked = cycles.compare(400.0, 360.0, 5.0)
    assert change == pytest.approx(-10.0) and not marked
    assert cycles.compare(400.0, 419.0, 5.0)[1] is False  # +4.75 %: under the threshold
    assert cycles.compare(None, 440.0, 5.0) == (None, False)
    assert cycles.compare(0.0, 440.0, 5.0) == (None, False)  # no change from a zero baseline
    assert cycles.compare(400.0, None, 5.0) == (None, False)
    # Judged or shown metrics are never marked here: their verdicts come from elsewhere.
    assert metric("ndr_fps").compare(1e6, 0.8e6, 5.0)[1] is False
    change, marked = metric("latency_p99_ns_90pct").compare(1e4, 2e4, 5.0)
    assert change == pytest.approx(100.0) and not marked
