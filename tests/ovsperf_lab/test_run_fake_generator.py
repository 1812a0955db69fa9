"""Orchestration against a real sandboxed OVS with the deterministic fake generator.

The fake sends nothing into OVS, so these tests exercise start-up, topology, search, results,
partial results and teardown (also when OVS or the generator dies mid-search) in seconds; the
real traffic runs are in test_lab_real.py.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hdrh.histogram import HdrHistogram

from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import VsperfTest
from ovsperf_common.framemix import BUILTIN_MIXES, item_name
from ovsperf_common.labfiles import CSV_COLUMNS, GOAL_COLUMNS, LATENCY_FILE, TRIALS_FILE
from ovsperf_common.metadata import METADATA_FILE
from ovsperf_lab import run as run_module
from ovsperf_lab.errors import OvsError, TrafficGeneratorError
from ovsperf_lab.generators.api import GeneratorRequest, TrafficGenerator
from ovsperf_lab.machine import probe_machine
from ovsperf_lab.model import TrialSpec
from ovsperf_lab.plan import LabOptions, LabPlan, SearchMethod, plan_run
from ovsperf_lab.resultrow import FrameSizeResult
from ovsperf_lab.results import ResultPart, ResultsWriter
from ovsperf_lab.run import RunObserver, run_lab
from ovsperf_lab.search.binary import TrialKind
from reporting.api import generate_report
from reporting.load import load_results_dir
from resultstore.samples import samples_from_sets
from tests.ovsperf_lab.fakes import FakeTrafficGenerator

pytestmark = pytest.mark.dpdk
CATALOG = load_catalog()
FACTS = probe_machine()


def plan(name: str = "OVS_DPDK1q", sizes: tuple[int, ...] = (64, 1518)):  # type: ignore[no-untyped-def]
    opts = LabOptions(
        frame_sizes_bytes=sizes, search_trial_s=1, validation_trial_s=2, search=SearchMethod.BINARY
    )
    return plan_run(CATALOG.get(name), FACTS, opts)


def mlr_plan(sizes: tuple[int, ...] = (64, 1518), **options: object):  # type: ignore[no-untyped-def]
    opts = LabOptions(frame_sizes_bytes=sizes, **options)  # type: ignore[arg-type]
    return plan_run(CATALOG.get("OVS_DPDK1q"), FACTS, opts)


def assert_nothing_left(state_root: Path) -> None:
    assert list(state_root.iterdir()) == []


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_complete_p2p_run(tmp_path: Path, state_root: Path) -> None:
    requests: list[GeneratorRequest] = []

    def factory(req: GeneratorRequest) -> TrafficGenerator:
        requests.append(req)
        return FakeTrafficGenerator(capacity_pps=700_000.0)

    outcome = run_lab(plan(), FACTS, output_root=tmp_path, state_root=state_root, generator_factory=factory)
    assert outcome.complete and outcome.reason is None
    assert_nothing_left(state_root)
    assert requests[0].sockets()[0].name == "tg0.sock" and requests[0].file_prefix.startswith("ovsperf-lab-")
    [csv_path] = outcome.csv_paths
    assert csv_path.name == "result_0_phy2phy_tput_p2p.csv"
    assert csv_path.read_bytes().count(b"\r\n") == 3  # header + 2 rows, VSperf's CRLF
    rows = read_csv(csv_path)
    assert list(rows[0]) == [*CSV_COLUMNS, *GOAL_COLUMNS]
    assert [r["packet_size"] for r in rows] == ["64", "1518"]
    assert (rows[0]["loss_goal_percent"], rows[0]["search_method"], rows[0]["pdr_throughput_rx_fps"]) == (
        "0",
        "binary",
        "",
    )
    ndr64 = float(rows[0]["throughput_rx_fps"])
    assert 0.98 * 1.4e6 <= ndr64 <= 1.4e6  # both directions, within 1 % granularity below capacity
    assert rows[0]["frame_loss_percent"] == "0.000000"
    assert float(rows[0]["avg_latency_ns"]) == 20000.0
    assert 0.98 * 1.4e6 <= float(rows[1]["throughput_rx_fps"]) <= 1.4e6
    meta = json.loads((outcome.results_dir / METADATA_FILE).read_text())
    assert meta["complete"] is True and meta["scenario"] == "OVS_DPDK1q"
    assert meta["ovs_version"].startswith("3.") and meta["dpdk_version"].startswith("22.11")
    trials = json.loads((outcome.results_dir / TRIALS_FILE).read_text())["trials"]
    assert len(trials) == meta["trial_count"] >= 4
    # The fake never connects to OVS: the cross-check must say OVS saw nothing of it.
    search = [t for t in trials if t["kind"] == "search"]
    assert search[0]["crosscheck"]["ok"] is False
    assert "OVS did not report RX counters for port 1" in search[0]["crosscheck"]["mismatches"][0]
    md = (outcome.results_dir / "result_0_phy2phy_tput_p2p.md").read_text()
    assert f"* vSwitch: OvsDpdkVhost, Version: {meta['ovs_version']}, GIT tag: None" in md
    assert list(outcome.results_dir.glob("vswitchd_*.log"))
    # reporting reads it like Beaker results, and renders a report of it.
    loaded = load_results_dir(outcome.results_dir)
    assert loaded.ovs_version == meta["ovs_version"] and loaded.dpdk_version == meta["dpdk_version"]
    [run] = loaded.runs
    assert (run.test, run.deployment, run.vswitch) == ("phy2phy_tput", "p2p", "OvsDpdkVhost")
    assert [t.frame_size_bytes for t in run.rows] == [64, 1518]
    assert run.rows[0].rx_pps == ndr64 and run.rows[0].latency_avg_ns == 20000.0
    assert run.rows[0].frame_loss_percent == 0.0
    report = generate_report([outcome.results_dir], [outcome.results_dir], tmp_path / "report")
    assert report.index_html.is_file() and report.overall == "PASS"
    names = sorted(p.name for p in outcome.results_dir.iterdir())
    assert names[-1] == "vswitchd_" + outcome.results_dir.name.removeprefix("results_") + ".log"


class KillOvsAt(RunObserver):
    def __init__(self, state_root: Path, trial: int) -> None:
        self.state_root = state_root
        self.trial = trial
        self.size = ""

    def frame_size_started(self, test: VsperfTest, what: str, number: int, total: int) -> None:
        self.size = what

    def trial_started(self, index: int, kind: TrialKind, rate_pps: float, duration_s: float) -> None:
        if self.size == "1518 B" and index == self.trial:
            [run_dir] = list(self.state_root.iterdir())
            state = json.loads((run_dir / "state.json").read_text())
            pid = next(p["pid"] for p in state["processes"] if p["name"] == "ovs-vswitchd")
            os.kill(pid, signal.SIGKILL)


def test_ovs_crash_mid_search_keeps_partial_results_and_cleans_up(tmp_path: Path, state_root: Path) -> None:
    gens: list[FakeTrafficGenerator] = []

    def factory(req: GeneratorRequest) -> TrafficGenerator:
        gens.append(FakeTrafficGenerator(capacity_pps=700_000.0))
        return gens[-1]

    with pytest.raises(OvsError, match=r"ovs-vswitchd \(PID \d+\) died"):
        run_lab(
            plan(),
            FACTS,
            output_root=tmp_path,
            state_root=state_root,
            generator_factory=factory,
            observer=KillOvsAt(state_root, 2),
        )
    assert_nothing_left(state_root)
    assert gens[0].closed == 1
    [results] = list(tmp_path.iterdir())
    rows = read_csv(results / "result_0_phy2phy_tput_p2p.csv")
    assert [r["packet_size"] for r in rows] == ["64"]
    meta = json.loads((results / METADATA_FILE).read_text())
    assert meta["complete"] is False and "ovs-vswitchd" in meta["incomplete_reason"]
    assert "INCOMPLETE" in (results / "result_0_phy2phy_tput_p2p.md").read_text()


def test_generator_crash_mid_search(tmp_path: Path, state_root: Path) -> None:
    def factory(req: GeneratorRequest) -> TrafficGenerator:
        # 64 B: a search and a validation trial; dies in the first 1518 B trial.
        return FakeTrafficGenerator(capacity_pps=1e9, fail_at_trial=3)

    with pytest.raises(TrafficGeneratorError, match="died in trial 3"):
        run_lab(plan(), FACTS, output_root=tmp_path, state_root=state_root, generator_factory=factory)
    assert_nothing_left(state_root)
    [results] = list(tmp_path.iterdir())
    assert [r["packet_size"] for r in read_csv(results / "result_0_phy2phy_tput_p2p.csv")] == ["64"]
    assert json.loads((results / METADATA_FILE).read_text())["complete"] is False


def test_failed_search_for_one_size_is_reported_others_kept(tmp_path: Path, state_root: Path) -> None:
    def factory(req: GeneratorRequest) -> TrafficGenerator:
        def cap(spec: TrialSpec) -> float:
            return 0.0 if spec.frame_size_bytes == 64 else 1e9

        return FakeTrafficGenerator(capacity_for=cap)

    outcome = run_lab(plan(), FACTS, output_root=tmp_path, state_root=state_root, generator_factory=factory)
    assert not outcome.complete and "phy2phy_tput: 64 B: could not pass" in (outcome.reason or "")
    assert [r["packet_size"] for r in read_csv(outcome.csv_paths[0])] == ["1518"]
    assert_nothing_left(state_root)


def test_keyboard_interrupt_tears_down(tmp_path: Path, state_root: Path) -> None:
    class Interrupt(RunObserver):
        def trial_started(self, index: int, kind: TrialKind, rate_pps: float, duration_s: float) -> None:
            if index == 2:
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_lab(
            plan(),
            FACTS,
            output_root=tmp_path,
            state_root=state_root,
            generator_factory=lambda req: FakeTrafficGenerator(),
            observer=Interrupt(),
        )
    assert_nothing_left(state_root)
    [results] = list(tmp_path.iterdir())
    meta = json.loads((results / METADATA_FILE).read_text())
    assert meta["complete"] is False and "interrupted" in meta["incomplete_reason"]


def test_repeats_write_one_vsperf_index_each_and_report_as_samples(tmp_path: Path, state_root: Path) -> None:
    capacities = iter((700_000.0, 690_000.0, 710_000.0))

    def factory(req: GeneratorRequest) -> TrafficGenerator:
        return FakeTrafficGenerator(capacity_pps=next(capacities))

    opts = LabOptions(
        frame_sizes_bytes=(64,), search_trial_s=1, validation_trial_s=2, repeats=3, search=SearchMethod.BINARY
    )
    outcome = run_lab(
        plan_run(CATALOG.get("OVS_DPDK1q"), FACTS, opts),
        FACTS,
        output_root=tmp_path,
        state_root=state_root,
        generator_factory=factory,
    )
    assert outcome.complete
    assert [p.name for p in outcome.csv_paths] == [f"result_{i}_phy2phy_tput_p2p.csv" for i in range(3)]
    ndr = [float(read_csv(p)[0]["throughput_rx_fps"]) for p in outcome.csv_paths]
    granularity = 0.01 * 14_880_952  # 1 % of 64 B line rate [pps]
    for value, capacity in zip(ndr, (700_000.0, 690_000.0, 710_000.0), strict=True):
        assert 2 * (capacity - granularity) <= value <= 2 * capacity  # each repeat its own capacity
    assert len(set(ndr)) > 1
    meta = json.loads((outcome.results_dir / METADATA_FILE).read_text())
    assert meta["repeats"] == 3
    assert sorted(meta["throughput"]) == [f"result_{i}_phy2phy_tput" for i in range(3)]
    trials = json.loads((outcome.results_dir / TRIALS_FILE).read_text())["trials"]
    assert sorted({t["result_index"] for t in trials}) == [0, 1, 2]
    loaded = load_results_dir(outcome.results_dir)
    assert [r.index for r in loaded.runs] == [0, 1, 2]
    report = generate_report([outcome.results_dir], [outcome.results_dir], tmp_path / "report")
    [cell] = json.loads(report.report_json.read_text())["tests"][0]["rows"]
    # The same three samples on both sides: no change, p = 1; n = 3 with this spread is too few to
    # rule out a 5 % change, so the verdict may be UNSTABLE, never REGRESSION or IMPROVEMENT.
    assert cell["method"] == "welch-t" and cell["rel_change_percent"] == 0.0 and cell["p_value"] == 1.0
    assert cell["verdict"] in ("PASS", "UNSTABLE")
    assert cell["current_n"] == 3 and sorted(cell["current_samples_fps"]) == sorted(ndr)
    assert_nothing_left(state_root)


def test_mlr_run_writes_ndr_pdr_latency_and_every_trial(tmp_path: Path, state_root: Path) -> None:
    def factory(req: GeneratorRequest) -> TrafficGenerator:
        return FakeTrafficGenerator(capacity_pps=700_000.0, latency_ns=8_000.0)

    outcome = run_lab(
        mlr_plan(latency_trial_s=2.0),
        FACTS,
        output_root=tmp_path,
        state_root=state_root,
        generator_factory=factory,
    )
    assert outcome.complete, outcome.reason
    assert_nothing_left(state_root)
    rows = read_csv(outcome.results_dir / "result_0_phy2phy_tput_p2p.csv")
    assert list(rows[0]) == [*CSV_COLUMNS, *GOAL_COLUMNS]
    for row in rows:
        ndr, pdr = float(row["throughput_rx_fps"]), float(row["pdr_throughput_rx_fps"])
        assert (row["search_method"], row["loss_goal_percent"], row["pdr_loss_goal_percent"]) == (
            "mlr",
            "0",
            "0.5",
        )
        # Conditional throughput within the 0.5 % goal width below the capacity, both directions.
        assert 2 * 700_000 * 0.99 <= ndr <= pdr <= 2 * 700_000 * 1.005
        assert float(row["tx_rate_fps"]) >= ndr and float(row["pdr_tx_rate_fps"]) >= pdr
        size = int(row["packet_size"])
        assert float(row["pdr_throughput_rx_mbps"]) == pytest.approx(pdr * (size + 20) * 8 / 1e6, abs=1e-3)
        # VSperf's latency columns hold the 90 % PDR level: the fake's 8 us, min 4 us, max 24 us.
        assert (float(row["min_latency_ns"]), float(row["avg_latency_ns"]), float(row["max_latency_ns"])) == (
            4000.0,
            8000.0,
            24000.0,
        )
    latency = json.loads((outcome.results_dir / LATENCY_FILE).read_text())
    assert latency["schema"] == 1 and "HdrHistogram V2" in latency["histogram_encoding"]
    assert [(e["csv"], e["frame_size_bytes"]) for e in latency["results"]] == [
        ("result_0_phy2phy_tput_p2p.csv", 64),
        ("result_0_phy2phy_tput_p2p.csv", 1518),
    ]
    entry = latency["results"][0]
    assert entry["pdr_loss_goal_percent"] == 0.5
    assert [lv["percent_of_pdr"] for lv in entry["levels"]] == [0.0, 10.0, 50.0, 90.0]
    assert entry["levels"][0]["load_fps_per_direction"] == 9001.0
    top = entry["levels"][-1]
    assert top["load_fps_per_direction"] == pytest.approx(0.9 * entry["pdr_fps_per_direction"])
    histogram = HdrHistogram.decode(top["all"]["hdrh"])
    assert (
        histogram.get_total_count()
        == top["all"]["rx_packets"]
        == round(top["load_fps_per_direction"] * 2) * 2
    )
    assert top["all"]["p50_ns"] == pytest.approx(8000, rel=1e-3) and top["all"]["p999_ns"] == pytest.approx(
        16000, rel=1e-3
    )
    trials = json.loads((outcome.results_dir / TRIALS_FILE).read_text())
    assert trials["schema"] == 2
    search = [t for t in trials["trials"] if t["kind"] == "search"]
    assert search and all(t["search"] == "mlr" for t in search)
    marked = {(m["goal_loss_percent"], m["bound"]) for t in search for m in t["relevant_to"]}
    assert marked == {(0.0, "lower"), (0.0, "upper"), (0.5, "lower"), (0.5, "upper")}
    assert len([t for t in trials["trials"] if t["kind"] == "latency"]) == 8
    meta = json.loads((outcome.results_dir / METADATA_FILE).read_text())
    assert meta["search_method"] == "mlr" and meta["mlr"]["goals_percent"] == [0.0, 0.5]
    [entry64, _] = meta["throughput"]["result_0_phy2phy_tput"]
    assert [g["loss_goal_percent"] for g in entry64["goals"]] == [0.0, 50.0 / 100]
    assert entry64["goals"][0]["throughput_rx_fps"] == pytest.approx(float(rows[0]["throughput_rx_fps"]))
    assert load_results_dir(outcome.results_dir).runs[0].rows[0].rx_pps == float(rows[0]["throughput_rx_fps"])


def test_mlr_search_past_its_limit_is_incomplete_with_its_bounds(tmp_path: Path, state_root: Path) -> None:
    def factory(req: GeneratorRequest) -> TrafficGenerator:
        def slow(spec: TrialSpec) -> float:
            time.sleep(0.02)
            return 700_000.0

        return FakeTrafficGenerator(capacity_for=slow)

    outcome = run_lab(
        mlr_plan(sizes=(64,), search_duration_max_s=0.1),
        FACTS,
        output_root=tmp_path,
        state_root=state_root,
        generator_factory=factory,
    )
    assert not outcome.complete
    assert "64 B: MLRsearch stopped after" in (outcome.reason or "") and "bounds found: 0 %: [" in (
        outcome.reason or ""
    )
    assert outcome.csv_paths == []
    meta = json.loads((outcome.results_dir / METADATA_FILE).read_text())
    assert meta["complete"] is False and "bounds found" in meta["incomplete_reason"]
    trials = json.loads((outcome.results_dir / TRIALS_FILE).read_text())["trials"]
    assert trials and all(t["search"] == "mlr" for t in trials)
    assert_nothing_left(state_root)


def test_generator_crash_mid_mlr_search_keeps_what_was_measured(tmp_path: Path, state_root: Path) -> None:
    counts: list[int] = []

    def factory(req: GeneratorRequest) -> TrafficGenerator:
        gen = FakeTrafficGenerator(capacity_pps=700_000.0)
        counts.append(0)
        return gen

    class CrashSecond(RunObserver):
        sizes = 0

        def frame_size_started(self, test: VsperfTest, what: str, number: int, total: int) -> None:
            self.sizes = number

        def mlr_trial_finished(self, number: int, trial: object) -> None:
            if self.sizes == 2 and number == 3:
                raise TrafficGeneratorError("ovsperf-trafficgen exited with status -9")

    with pytest.raises(TrafficGeneratorError, match="exited"):
        run_lab(
            mlr_plan(latency_levels_percent=(50.0,), latency_trial_s=1.0),
            FACTS,
            output_root=tmp_path,
            state_root=state_root,
            generator_factory=factory,
            observer=CrashSecond(),
        )
    assert_nothing_left(state_root)
    [results] = list(tmp_path.iterdir())
    assert [r["packet_size"] for r in read_csv(results / "result_0_phy2phy_tput_p2p.csv")] == ["64"]
    assert [e["frame_size_bytes"] for e in json.loads((results / LATENCY_FILE).read_text())["results"]] == [
        64
    ]
    trials = json.loads((results / TRIALS_FILE).read_text())["trials"]
    assert len([t for t in trials if t["frame_size_bytes"] == 1518]) == 3
    assert json.loads((results / METADATA_FILE).read_text())["complete"] is False


def test_mix_and_flow_sweep_through_results_report_and_store(tmp_path: Path, state_root: Path) -> None:
    """--frame-sizes 64,imix --flows 1,1000: four searches, VSperf rows named by profile and flow
    count, L1 rates and line rate of the mix, per-size counts, a report row per profile and flow
    count with a throughput-against-flows graph, and store samples filed apart."""
    gens: list[FakeTrafficGenerator] = []

    def factory(req: GeneratorRequest) -> TrafficGenerator:
        gens.append(FakeTrafficGenerator(capacity_pps=700_000.0))
        return gens[-1]

    imix = BUILTIN_MIXES["imix"]
    plan_ = mlr_plan(sizes=(64, imix), flows=1, flow_sweep=(1, 1000), latency_levels_percent=())
    outcome = run_lab(plan_, FACTS, output_root=tmp_path, state_root=state_root, generator_factory=factory)
    assert outcome.complete
    specs = gens[0].specs
    assert {(item_name(s.frame_size_bytes), s.flows) for s in specs} == {
        ("64", 1),
        ("imix", 1),
        ("64", 1000),
        ("imix", 1000),
    }
    rows = read_csv(outcome.results_dir / "result_0_phy2phy_tput_p2p.csv")
    assert [(r["packet_size"], r["stream_count"]) for r in rows] == [
        ("64", "1"),
        ("imix", "1"),
        ("64", "1000"),
        ("imix", "1000"),
    ]
    mix_row = rows[1]
    rx = float(mix_row["throughput_rx_fps"])
    average = (64 * 7 + 594 * 4 + 1518) / 12  # 361.83 B
    assert 0.98 * 1.4e6 <= rx <= 1.4e6
    assert float(mix_row["throughput_rx_mbps"]) == pytest.approx(rx * (average + 20) * 8 / 1e6, abs=1e-3)
    line = 10e9 / ((average + 20) * 8)  # per direction, 3,273,679.6 frames/s
    assert float(mix_row["throughput_rx_percent"]) == pytest.approx(100 * rx / (2 * line), abs=1e-3)
    trials = json.loads((outcome.results_dir / TRIALS_FILE).read_text())["trials"]
    mixed = [t for t in trials if t.get("packet_size") == "imix" and t.get("flows") == 1000]
    assert mixed and all(t["frame_size_bytes"] == 0 for t in mixed)
    per_size = mixed[-1]["per_size"][0]
    assert [p["frame_size_bytes"] for p in per_size] == [64, 594, 1518]
    assert sum(p["rx_packets"] for p in per_size) == mixed[-1]["rx_packets"][0]
    assert per_size[0]["tx_packets"] * 4 == pytest.approx(per_size[1]["tx_packets"] * 7, rel=1e-3)

    loaded = load_results_dir(outcome.results_dir)
    [run] = loaded.runs
    assert sorted({(t.traffic.frame_label, t.flows) for t in run.rows}, key=lambda k: (k[1] or 0, k[0])) == [
        ("64", 1),
        ("imix", 1),
        ("64", 1000),
        ("imix", 1000),
    ]
    report = generate_report([outcome.results_dir], [outcome.results_dir], tmp_path / "report")
    document = json.loads(report.report_json.read_text())
    [test] = document["tests"]
    assert test["has_flows"] is True
    assert (report.index_html.parent / test["flows_graph"]).stat().st_size > 10_000
    keys = {(r["packet_size"], r["flows"], r["metric"]) for r in test["rows"]}
    assert ("imix", 1000, "NDR") in keys and ("64", 1, "PDR 0.5 %") in keys and len(keys) == 8
    assert all(r["verdict"] == "PASS" for r in test["rows"])  # each compared with itself only
    junit = (report.index_html.parent / "junit.xml").read_text()
    assert 'name="imix 1000fl NDR"' in junit and 'name="64B 1fl PDR 0.5 %"' in junit
    html = report.index_html.read_text()
    assert '<th rowspan="2">flows</th>' in html and "<td>imix</td><td>1000</td>" in html
    samples = samples_from_sets([loaded])
    ndr = {(s.frame_size, s.traffic) for s in samples if s.metric == "ndr_fps"}
    assert ndr == {(64, ""), (0, "imix"), (64, "flows=1000"), (0, "imix flows=1000")}


class RecordingWriter(ResultsWriter):
    """The real results writer, recording what the run gives it as its sink."""

    last: RecordingWriter | None = None

    def __init__(self, output_root: Path, started: datetime) -> None:
        super().__init__(output_root, started)
        self.calls: list[tuple[str, object]] = []
        RecordingWriter.last = self

    def trials(self, part: ResultPart, records: Sequence[dict[str, Any]]) -> None:
        self.calls.append(("trials", [dict(r) for r in records]))
        super().trials(part, records)

    def row(self, part: ResultPart, row: FrameSizeResult | None) -> Path | None:
        self.calls.append(("row", row))
        return super().row(part, row)


def recorded_run(
    monkeypatch: pytest.MonkeyPatch, plan_: LabPlan, tmp_path: Path, state_root: Path, **gen: Any
):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(run_module, "ResultsWriter", RecordingWriter)
    outcome = run_lab(
        plan_,
        FACTS,
        output_root=tmp_path,
        state_root=state_root,
        generator_factory=lambda req: FakeTrafficGenerator(**gen),
    )
    assert RecordingWriter.last is not None and RecordingWriter.last.path == outcome.results_dir
    return outcome, RecordingWriter.last.calls


def searches(calls: list[tuple[str, object]]) -> list[tuple[list[list[dict[str, Any]]], object]]:
    """Split the sink's calls into searches: (every trials call's records, the row call's row)."""
    split: list[tuple[list[list[dict[str, Any]]], object]] = []
    pending: list[list[dict[str, Any]]] = []
    for name, value in calls:
        if name == "trials":
            pending.append(value)  # type: ignore[arg-type]
        else:
            split.append((pending, value))
            pending = []
    assert pending == []
    return split


def unkeyed(trial: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in trial.items() if k not in ("result_index", "test", "deployment")}


def test_sink_gets_one_row_per_search_and_each_trial_as_it_ends(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, state_root: Path
) -> None:
    """Binary search, '--loss 0.5': 64 B passes, 1518 B fails; the 64 B row stays written."""
    opts = LabOptions(
        frame_sizes_bytes=(64, 1518),
        search_trial_s=1,
        validation_trial_s=2,
        loss_percent=0.5,
        search=SearchMethod.BINARY,
        telemetry=False,
    )
    outcome, calls = recorded_run(
        monkeypatch,
        plan_run(CATALOG.get("OVS_DPDK1q"), FACTS, opts),
        tmp_path,
        state_root,
        capacity_for=lambda spec: 0.0 if spec.frame_size_bytes == 1518 else 700_000.0,
    )
    assert not outcome.complete and "phy2phy_tput: 1518 B: could not pass" in (outcome.reason or "")
    [(first, row64), (second, failed)] = searches(calls)
    assert isinstance(row64, FrameSizeResult) and row64.frame_size_bytes == 64 and failed is None
    for calls_of_search in (first, second):
        # One call per trial as it ends, each the one before plus that trial.
        assert [len(c) for c in calls_of_search] == list(range(1, len(calls_of_search) + 1))
        assert all(c[:-1] == calls_of_search[i] for i, c in enumerate(calls_of_search[1:]))
    assert [t["index"] for t in first[-1]] == list(range(1, len(first) + 1)) and first[-1][-1][
        "kind"
    ] == "validation"
    written = json.loads((outcome.results_dir / TRIALS_FILE).read_text())["trials"]
    assert [unkeyed(t) for t in written] == first[-1] + second[-1]
    assert all(t["search"] == "binary" and t["frame_size_bytes"] == 1518 for t in second[-1])
    # The failed search leaves the earlier row written, the test marked incomplete.
    rows = read_csv(outcome.results_dir / "result_0_phy2phy_tput_p2p.csv")
    assert [r["packet_size"] for r in rows] == ["64"]
    assert "INCOMPLETE" in (outcome.results_dir / "result_0_phy2phy_tput_p2p.md").read_text()
    # The loss goal: 0.5 % on the command line, a ratio in the metadata, percent in the CSV.
    assert (rows[0]["loss_goal_percent"], rows[0]["pdr_loss_goal_percent"]) == ("0.5", "")
    meta = json.loads((outcome.results_dir / METADATA_FILE).read_text())
    assert meta["loss_ratio_limit"] == 0.005 and meta["mlr"] is None
    assert [g["loss_goal_percent"] for g in meta["throughput"]["result_0_phy2phy_tput"][0]["goals"]] == [0.5]
    assert_nothing_left(state_root)


def test_sink_gets_mlr_trials_then_their_goal_marks_then_latency(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, state_root: Path
) -> None:
    """MLRsearch, '--goal 0.5' alone: one goal column of 0.5 %, no PDR column."""
    outcome, calls = recorded_run(
        monkeypatch,
        mlr_plan(
            sizes=(64,),
            goals_percent=(0.5,),
            latency_levels_percent=(50.0,),
            latency_trial_s=1.0,
            telemetry=False,
        ),
        tmp_path,
        state_root,
        capacity_pps=700_000.0,
    )
    assert outcome.complete, outcome.reason
    [(sent, row)] = searches(calls)
    assert isinstance(row, FrameSizeResult) and [g.loss_ratio_limit for g in row.goals] == [0.005]
    *growing, marked, with_latency = sent
    assert [len(c) for c in growing] == list(range(1, len(growing) + 1))
    assert all(t["relevant_to"] == [] and t["kind"] == "search" for t in growing[-1])
    assert [unkeyed({**t, "relevant_to": []}) for t in marked] == growing[-1]
    assert {(m["goal_loss_percent"], m["bound"]) for t in marked for m in t["relevant_to"]} == {
        (0.5, "lower"),
        (0.5, "upper"),
    }
    assert with_latency[:-1] == marked and with_latency[-1]["kind"] == "latency"
    written = json.loads((outcome.results_dir / TRIALS_FILE).read_text())["trials"]
    assert [unkeyed(t) for t in written] == with_latency
    [csv_row] = read_csv(outcome.results_dir / "result_0_phy2phy_tput_p2p.csv")
    assert (csv_row["loss_goal_percent"], csv_row["pdr_loss_goal_percent"]) == ("0.5", "")
    [latency] = json.loads((outcome.results_dir / LATENCY_FILE).read_text())["results"]
    assert latency["pdr_loss_goal_percent"] == 0.5
    meta = json.loads((outcome.results_dir / METADATA_FILE).read_text())
    # The metadata's loss_ratio_limit is the binary search's (the scenario's); the goals are in 'mlr'.
    assert meta["loss_ratio_limit"] == 0.0 and meta["mlr"]["goals_percent"] == [0.5]
    assert [g["loss_goal_percent"] for g in meta["throughput"]["result_0_phy2phy_tput"][0]["goals"]] == [0.5]
    assert_nothing_left(state_root)
