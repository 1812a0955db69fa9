"""ovsperf-results import / trend / expect as a user runs them, and their bad input."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ovsperf_common.metadata import RunMetadata, write
from resultstore.cli import main
from resultstore.connect import database_url
from resultstore.store import ResultStore
from tests.resultstore.history import add_builds

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "results"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_import_every_layout_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "results.sqlite")
    # A delivery as process-ci-results keeps it (metadata + results directory) beside bare VSperf dirs.
    delivery = tmp_path / "ci_processed" / "night-7"
    shutil.copytree(EXAMPLES / "candidate_ovs-2.9.1_dpdk-17.11.2", delivery)
    write(delivery, RunMetadata(scenario="OVS_DPDK2q", producer="beaker", started_at="2026-03-01T02:00:00Z"))
    code, out, _ = run(["--db", db, "import", str(EXAMPLES), str(tmp_path / "ci_processed")], capsys)
    assert code == 0
    assert sorted(out) == [
        "recorded night-7",
        "recorded results_2018-03-05_21-14-07",
        "recorded results_2018-04-10_22-01-55",
    ]
    with ResultStore.open(database_url(db)) as store:
        count = store.sample_count()
        night = store.result("night-7")
        assert night is not None and night.scenario == "OVS_DPDK2q"
        series = store.series(scenario="OVS_DPDK2q")
        assert series and all(
            p.built_at.isoformat() == "2026-03-01T02:00:00+00:00" for s in series for p in s.points
        )
        assert {p.ovs_version for s in series for p in s.points} == {"2.9.1"}
    assert count == 42  # 14 cells: NDR, frame loss and latency avg where measured
    # Importing again records nothing twice.
    code, out, _ = run(["--db", db, "import", str(EXAMPLES), str(delivery)], capsys)
    assert code == 0
    assert all(line.startswith("already recorded") for line in out) and len(out) == 3
    with ResultStore.open(database_url(db)) as store:
        assert store.sample_count() == count
        assert len([s for s in store.series() for _ in s.points]) == len(
            [p for s in store.series() for p in s.points]
        )


def test_import_bad_directories(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "results.sqlite")
    code, out, err = run(["--db", db, "import", str(tmp_path / "missing")], capsys)
    assert code == 2 and out == [] and "No such results directory" in err
    (tmp_path / "empty").mkdir()
    code, out, err = run(["--db", db, "import", str(tmp_path / "empty")], capsys)
    assert code == 3 and out == [] and "no VSperf results directory" in err


def test_trend_pages_and_their_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "results.sqlite")
    out_dir = tmp_path / "trend"
    with ResultStore.open(database_url(db)) as store:
        pass
    code, out, err = run(["--db", db, "trend", "--output-dir", str(out_dir)], capsys)
    assert code == 3 and "No series" in err and not out_dir.exists()

    with ResultStore.open(database_url(db)) as store:
        add_builds(store, [7e6])
    code, out, err = run(["--db", db, "trend", "--output-dir", str(out_dir)], capsys)
    assert code == 0 and out == [str(out_dir / "index.html")]
    assert "no trend possible yet" in err
    assert "NO_HISTORY" in (out_dir / "index.html").read_text(encoding="utf-8")

    with ResultStore.open(database_url(db)) as store:
        add_builds(store, [7e6] * 25 + [6.4e6] * 5, start=1)
    code, out, err = run(
        ["--db", db, "trend", "--output-dir", str(out_dir), "--scenario", "OVS_DPDK1q"], capsys
    )
    assert code == 0
    index = (out_dir / "index.html").read_text(encoding="utf-8")
    first_row = index.index('<tr class="row-')
    assert index[first_row : first_row + 30].startswith('<tr class="row-regression"')
    assert sorted(p.name for p in (out_dir / "series").iterdir()) == [
        "OVS_DPDK1q__phy2phy_tput__p2p__1518.html",
        "OVS_DPDK1q__phy2phy_tput__p2p__64.html",
    ]
    assert (out_dir / "plotly.min.js").stat().st_size > 1_000_000

    code, out, err = run(["--db", db, "trend", "--output-dir", str(out_dir), "--scenario", "NOPE"], capsys)
    assert code == 2 and "'NOPE' has no results" in err and "OVS_DPDK1q" in err
    code, out, err = run(["--db", db, "trend", "--output-dir", str(out_dir), "--since", "2026-13-01"], capsys)
    assert code == 2 and "not a date" in err
    code, out, err = run(["--db", db, "trend", "--output-dir", str(out_dir), "--metric", "pdr"], capsys)
    assert code == 3
    code, out, err = run(["--db", db, "trend", "--output-dir", str(out_dir), "--metric", "latency"], capsys)
    assert code == 2 and "invalid choice: 'latency'" in err


def test_trend_never_replaces_a_users_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "results.sqlite")
    with ResultStore.open(database_url(db)) as store:
        add_builds(store, [7e6] * 3)
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "todo.txt").write_text("mine\n")
    code, out, err = run(["--db", db, "trend", "--output-dir", str(mine)], capsys)
    assert code == 2 and out == [] and "not written by 'ovsperf-results trend'" in err
    assert [p.name for p in mine.iterdir()] == ["todo.txt"]


def test_expect_marks_a_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "results.sqlite")
    with ResultStore.open(database_url(db)) as store:
        names = add_builds(store, [7e6] * 20 + [6.3e6] * 5)
    argv = ["--db", db, "expect", names[20], "--test", "phy2phy_tput", "--frame-size", "64"]
    code, out, err = run(argv, capsys)
    assert code == 2 and "give a bug id or a comment" in err
    code, out, err = run([*argv, "--bug", "FDP-77", "--tester", "qe"], capsys)
    assert code == 0
    assert out == [f"marked expected: OVS_DPDK1q / phy2phy_tput / 64 B / ndr_fps at {names[20]}"]
    code, out, err = run([*argv[:-2], "--frame-size", "128", "--bug", "FDP-77"], capsys)
    assert code == 2 and "no NDR sample of test 'phy2phy_tput' at 128 B" in err
    code, out, err = run(["--db", db, "trend", "--output-dir", str(tmp_path / "t")], capsys)
    assert code == 0
    index = (tmp_path / "t" / "index.html").read_text(encoding="utf-8")
    assert "EXPECTED" in index and "FDP-77" in index
