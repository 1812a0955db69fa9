"""Trend verdicts and pages name each build by what it tested, and imports keep the scenario.

Beaker deliveries are named after VSperf's results directory (``results_<timestamp>``): a change
point "since results_2026-01-13_14-00-00" tells a tester nothing; "since
openvswitch3.1-3.1.0-13.el9fdp" does. Imported results take the scenario of the
``ovsperf-metadata.json`` nearest above (or inside) their results directory.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ovsperf_common.metadata import RunMetadata, write
from resultstore.cli import main
from resultstore.connect import database_url
from resultstore.model import ResultStatus, SeriesPoint, build_name
from resultstore.samples import BuildInfo, Sample
from resultstore.store import ResultStore
from resultstore.trend import analyse_series

T0 = datetime(2026, 1, 1, 14, 0, tzinfo=UTC)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "results"
CANDIDATE = EXAMPLES / "candidate_ovs-2.9.1_dpdk-17.11.2"


def record_nightlies(store: ResultStore, levels: list[float]) -> list[str]:
    """Record one Beaker delivery per level, named as the task names them, with its Koji build."""
    names = []
    for day, level in enumerate(levels, start=1):
        name = f"results_{(T0 + timedelta(days=day)):%Y-%m-%d_%H-%M-%S}"
        store.record_result(
            name=name,
            scenario="OVS_DPDK1q",
            location=Path("/srv/ci_processed") / name,
            vsperf_dirs=[],
            status=ResultStatus.PROCESSED,
            metadata={"scenario": "OVS_DPDK1q", "build": {"nvrs": [f"openvswitch3.1-3.1.0-{day}.el9fdp"]}},
        )
        noise = 1 + 0.002 * (day % 3)
        samples = [Sample("phy2phy_tput", "p2p", 64, "ndr_fps", 0, level * noise)]
        info = BuildInfo(T0 + timedelta(days=day), "openvswitch3.1-3.1.0.x86_64", None, None, ("dut1",))
        store.record_samples(name, info, samples)
        names.append(name)
    return names


def test_an_open_regression_names_the_build_it_started_with(store_url: str, tmp_path: Path) -> None:
    levels = [14.0e6] * 12 + [12.6e6] * 4  # -10 % from the 13th build on
    with ResultStore.open(store_url) as store:
        names = record_nightlies(store, levels)
        series = store.series(metrics=["ndr_fps"])
        assert [p.build for p in series[0].points][12] == "openvswitch3.1-3.1.0-13.el9fdp"
        trends, _ = analyse_series(series, store.trend_marks())
    last = trends[0].last
    assert last.verdict.value == "REGRESSION"
    assert (last.since, last.since_build) == (names[12], "openvswitch3.1-3.1.0-13.el9fdp")
    assert last.reason.startswith("regression since build openvswitch3.1-3.1.0-13.el9fdp, -10.")
    assert f"'ovsperf-results expect {names[12]}'" in last.reason
    assert "since results_" not in last.reason

    out_dir = tmp_path / "pages"
    assert main(["--db", store_url, "trend", "--output-dir", str(out_dir)]) == 0
    index = (out_dir / "index.html").read_text(encoding="utf-8")
    assert "openvswitch3.1-3.1.0-16.el9fdp<br>" in index  # the newest build
    assert f'openvswitch3.1-3.1.0-13.el9fdp<br><span class="result">result {names[12]}</span>' in index


def test_build_names_from_what_is_known() -> None:
    assert build_name("2.9.1", "17.11.2") == "OVS 2.9.1, DPDK 17.11.2"
    assert build_name("openvswitch3.1-3.1.0-10.el9.x86_64", None) == "openvswitch3.1-3.1.0-10.el9.x86_64"
    assert build_name("2.9.1", "17.11.2", ("openvswitch3.1-3.1.0-65.el9fdp", "dpdk-23.11-1.el9")) == (
        "openvswitch3.1-3.1.0-65.el9fdp + dpdk-23.11-1.el9"
    )
    assert build_name(None, None) is None
    point = SeriesPoint("results_2026", T0, (1.0,), None, None, None, None, None, None)
    assert point.build == "results_2026"  # nothing known: the result's name


def scenarios_of(db: str) -> dict[str, str | None]:
    with ResultStore.open(database_url(db)) as store:
        return {
            name: record.scenario
            for name in ("results_2018-04-10_22-01-55", "night-7", "results_2018-03-05_21-14-07")
            if (record := store.result(name)) is not None
        }


def test_import_takes_the_scenario_of_the_metadata_above_or_inside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    # ovsperf-lab and the Beaker task write the metadata into the results directory itself; a
    # lab keeps its runs two levels down (<out>/<host>/results_<ts>): the old import only looked
    # one level down for metadata and recorded these without a scenario ("-" on the pages).
    lab = tmp_path / "lab-out" / "dut1"
    results = next(CANDIDATE.glob("results_*"))
    shutil.copytree(results, lab / results.name)
    write(lab / results.name, RunMetadata(scenario="OVS_DPDK1q", producer="ovsperf-lab"))
    # A delivery as ci_processed keeps it, imported through its results directory.
    delivery = tmp_path / "ci_processed" / "night-7"
    shutil.copytree(EXAMPLES / "baseline_ovs-2.9.0_dpdk-17.11", delivery)
    write(delivery, RunMetadata(scenario="OVS_DPDK2q", producer="vsperf_test"))
    db = str(tmp_path / "results.sqlite")

    assert main(["--db", db, "import", str(tmp_path / "lab-out"), str(next(delivery.glob("results_*")))]) == 0
    assert sorted(capsys.readouterr().out.splitlines()) == [
        "recorded night-7",
        "recorded results_2018-04-10_22-01-55",
    ]
    assert scenarios_of(db) == {"results_2018-04-10_22-01-55": "OVS_DPDK1q", "night-7": "OVS_DPDK2q"}
    pages = tmp_path / "pages"
    assert main(["--db", db, "trend", "--output-dir", str(pages)]) == 0
    index = (pages / "index.html").read_text(encoding="utf-8")
    assert index.count(">OVS_DPDK1q</a>") == 14 and index.count(">OVS_DPDK2q</a>") == 14
    assert ">-</a>" not in index

    # A bare VSperf directory has no scenario to take: recorded without one, and said so.
    bare = tmp_path / "bare"
    shutil.copytree(EXAMPLES / "baseline_ovs-2.9.0_dpdk-17.11", bare)
    assert main(["--db", db, "import", str(bare)]) == 0
    assert "holds no ovsperf-metadata.json and no --scenario was given" in caplog.text
    assert scenarios_of(db)["results_2018-03-05_21-14-07"] is None
