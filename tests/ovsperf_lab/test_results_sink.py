"""The results writer as the run's sink: trials as they end, one row per search, the metadata last."""

from __future__ import annotations

import csv
import json
from datetime import datetime
from pathlib import Path

from ovsperf_catalog.model import GuestLoopback, VsperfTest
from ovsperf_common.labfiles import TELEMETRY_FILE, TRIALS_FILE
from ovsperf_common.metadata import METADATA_FILE
from ovsperf_lab.machine import probe_machine
from ovsperf_lab.measure import search_config
from ovsperf_lab.plan import LabOptions, SearchMethod, plan_run
from ovsperf_lab.results import ResultPart, ResultsSink, ResultsWriter
from tests.ovsperf_lab.test_plan import CATALOG, facts
from tests.ovsperf_lab.test_results import ENV, found

STARTED = datetime(2026, 1, 2, 3, 4, 5)
CSV_NAME = "result_0_phy2phy_tput_p2p.csv"


def part(searches: int, index: int = 0, test: VsperfTest = VsperfTest.PHY2PHY_TPUT) -> ResultPart:
    guest = None if test is VsperfTest.PHY2PHY_TPUT else GuestLoopback.TESTPMD
    return ResultPart(index, test, ENV, guest, STARTED, searches)


def sizes(writer: ResultsWriter) -> list[str]:
    with (writer.path / CSV_NAME).open(newline="") as handle:
        return [row["packet_size"] for row in csv.DictReader(handle)]


def incomplete(writer: ResultsWriter) -> bool:
    md = "INCOMPLETE" in (writer.path / CSV_NAME.replace(".csv", ".md")).read_text()
    rst = "INCOMPLETE" in (writer.path / CSV_NAME.replace(".csv", ".rst")).read_text()
    assert md == rst == (not writer.tests["result_0_phy2phy_tput_p2p"]["complete"])
    return md


def trials(writer: ResultsWriter) -> list[dict[str, object]]:
    document = json.loads((writer.path / TRIALS_FILE).read_text())
    assert document["schema"] == 2
    return list(document["trials"])


def finish(writer: ResultsWriter) -> dict[str, object]:
    writer.finish(scenario="OVS_DPDK1q", complete=False, reason="test", hosts={}, extra={"x": 1})
    return dict(json.loads((writer.path / METADATA_FILE).read_text()))


def test_the_writer_is_a_results_sink(tmp_path: Path) -> None:
    sink: ResultsSink = ResultsWriter(tmp_path, STARTED)
    assert sink.row(part(1), found(64, 5e5)) == tmp_path / "results_2026-01-02_03-04-05" / CSV_NAME


def test_a_failed_search_leaves_the_earlier_rows_written(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path, STARTED)
    three = part(3)
    assert writer.row(three, found(64, 5e5)) == writer.path / CSV_NAME
    assert sizes(writer) == ["64"] and incomplete(writer)
    assert writer.row(three, None) is None  # nothing new to show, and not the last search
    assert sizes(writer) == ["64"] and incomplete(writer)
    assert writer.row(three, found(1518, 5e5)) == writer.path / CSV_NAME
    assert sizes(writer) == ["64", "1518"] and incomplete(writer)  # one search failed


def test_a_part_is_complete_once_every_search_gave_a_row(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path, STARTED)
    two = part(2)
    writer.row(two, found(64, 5e5))
    assert incomplete(writer)
    writer.row(two, found(1518, 5e5))
    assert sizes(writer) == ["64", "1518"] and not incomplete(writer)


def test_a_failed_last_search_rewrites_the_part_as_incomplete(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path, STARTED)
    two = part(2)
    writer.row(two, found(64, 5e5))
    (writer.path / CSV_NAME).unlink()
    assert writer.row(two, None) == writer.path / CSV_NAME
    assert sizes(writer) == ["64"] and incomplete(writer)


def test_a_part_without_rows_writes_no_csv(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path, STARTED)
    assert writer.row(part(1), None) is None
    assert not (writer.path / CSV_NAME).exists()
    assert finish(writer)["tests"] == []


def test_a_searchs_trials_replace_those_sent_before_and_stay_after_it(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path, STARTED)
    p2p, pvp = part(2), part(1, index=1, test=VsperfTest.PVP_TPUT)
    writer.trials(p2p, [{"n": 1, "relevant_to": []}])
    assert trials(writer) == [
        {"result_index": 0, "test": "phy2phy_tput", "deployment": "p2p", "n": 1, "relevant_to": []}
    ]
    writer.trials(p2p, [{"n": 1, "relevant_to": ["lower"]}, {"n": 2, "relevant_to": []}])
    writer.row(p2p, None)
    writer.trials(p2p, [{"n": 3}])
    writer.row(p2p, found(64, 5e5))
    writer.trials(pvp, [{"n": 4}])
    assert trials(writer) == [
        {"result_index": 0, "test": "phy2phy_tput", "deployment": "p2p", "n": 1, "relevant_to": ["lower"]},
        {"result_index": 0, "test": "phy2phy_tput", "deployment": "p2p", "n": 2, "relevant_to": []},
        {"result_index": 0, "test": "phy2phy_tput", "deployment": "p2p", "n": 3},
        {"result_index": 1, "test": "pvp_tput", "deployment": "pvp", "n": 4},
    ]
    assert finish(writer)["trial_count"] == 4


def test_telemetry_is_written_with_each_row_and_what_follows_at_the_end(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path, STARTED)
    two = part(2)
    writer.telemetry(two, {"n": 1})
    assert not (writer.path / TELEMETRY_FILE).exists()  # kept until the search ends
    writer.row(two, found(64, 5e5))
    writer.telemetry(two, {"n": 2})
    assert [t["n"] for t in json.loads((writer.path / TELEMETRY_FILE).read_text())["trials"]] == [1]
    finish(writer)
    [first, second] = json.loads((writer.path / TELEMETRY_FILE).read_text())["trials"]
    assert first == {"result_index": 0, "test": "phy2phy_tput", "deployment": "p2p", "csv": CSV_NAME, "n": 1}
    assert second["n"] == 2


def test_the_loss_goal_is_a_ratio_from_the_options_to_the_writer_which_shows_percent(tmp_path: Path) -> None:
    """'--loss 0.5' is 0.005 in the plan, the search and the row; 0.5 in the CSV and the metadata."""
    options = LabOptions(loss_percent=0.5, search=SearchMethod.BINARY)
    plan = plan_run(CATALOG.get("OVS_DPDK1q"), facts(probe_machine()), options)
    assert (options.loss_ratio_limit, plan.loss_ratio_limit, plan.max_loss_ratio) == (0.005, 0.005, 0.005)
    config = search_config(plan, 64, 1, 10_000)
    assert config.loss_ratio_limit == 0.005 and config.rate_granularity_pps == 0.01 * 14_880_952.380952381
    row = found(64, 5e5, loss_ratio_limit=config.loss_ratio_limit)
    assert row.goals[0].loss_ratio_limit == 0.005
    assert row.to_json()["goals"][0]["loss_goal_percent"] == 0.5
    writer = ResultsWriter(tmp_path, STARTED)
    writer.row(part(1), row)
    with (writer.path / CSV_NAME).open(newline="") as handle:
        [written] = list(csv.DictReader(handle))
    assert (written["loss_goal_percent"], written["pdr_loss_goal_percent"]) == ("0.5", "")
    goals = LabOptions(goals_percent=(0.5, 0.0))
    mlr = plan_run(CATALOG.get("OVS_DPDK1q"), facts(probe_machine()), goals)
    assert goals.loss_ratio_goals == (0.0, 0.005) and mlr.max_loss_ratio == 0.005
    assert goals.mlr_config(64, 1e6, flows=4).loss_ratio_goals == (0.0, 0.005)
    # MLRsearch leaves the binary search's limit at the scenario's (the metadata's loss_ratio_limit).
    assert mlr.loss_ratio_limit == 0.0
