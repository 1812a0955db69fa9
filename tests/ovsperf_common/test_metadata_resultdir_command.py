"""The results delivery contract, results-directory discovery, fingerprints and bounded commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ovsperf_common import metadata, resultdir
from ovsperf_common.command import CommandError, run_command

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def test_write_then_read_round_trips_and_leaves_no_temporary(tmp_path: Path) -> None:
    md = metadata.RunMetadata(
        scenario="OVS_DPDK1q",
        producer="ovsperf-lab",
        complete=False,
        incomplete_reason="64 B found no rate",
        tests=[{"index": 0, "test": "phy2phy_tput", "deployment": "p2p"}],
        hosts={"dut": "localhost"},
        packages={"openvswitch": "3.1.0-2"},
        extra={"trial_count": 42},
    )
    path = metadata.write(tmp_path, md)
    assert path == tmp_path / "ovsperf-metadata.json"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ovsperf-metadata.json"]
    data = json.loads(path.read_text())
    assert data["schema"] == 2
    assert data["complete"] is False
    assert data["trial_count"] == 42
    assert metadata.read(tmp_path) == md


def test_reads_both_schema_1_dialects(tmp_path: Path) -> None:
    beaker = {"schema": 1, "scenario": "OVS_DPDK1q", "status": "FAIL", "missing_tests": ["pvp_tput"]}
    (tmp_path / "ovsperf-metadata.json").write_text(json.dumps(beaker))
    md = metadata.read(tmp_path)
    assert (md.complete, md.producer) == (False, "vsperf_test")
    assert md.incomplete_reason == "the producer reported status FAIL (tests without results: pvp_tput)"
    assert md.extra == {"status": "FAIL", "missing_tests": ["pvp_tput"]}
    lab = {"schema": 1, "tool": "ovsperf-lab", "scenario": "OVS_DPDK1q", "complete": True, "ndr": {}}
    (tmp_path / "ovsperf-metadata.json").write_text(json.dumps(lab))
    md = metadata.read(tmp_path)
    assert (md.complete, md.incomplete_reason, md.extra["tool"]) == (True, None, "ovsperf-lab")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"[1, 2]", "must hold a JSON object"),
        (b"{not json", "not readable UTF-8 JSON"),
        (b"\xff\xfe", "not readable UTF-8 JSON"),
        (b'{"schema": 1}', "has no 'scenario' field"),
        (b'{"scenario": "../etc"}', "field 'scenario'"),
        (b'{"scenario": "S", "complete": "yes"}', "field 'complete'"),
        (b'{"scenario": "S", "schema": 7}', "field 'schema'"),
        (b'{"scenario": "S", "tests": {}}', "field 'tests'"),
        (b'{"scenario": "S", "x": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nests JSON deeper"),
    ],
)
def test_bad_files_name_the_file_and_field(tmp_path: Path, content: bytes, message: str) -> None:
    (tmp_path / "ovsperf-metadata.json").write_bytes(content)
    with pytest.raises(metadata.MetadataError, match=message) as info:
        metadata.read(tmp_path)
    assert str(tmp_path / "ovsperf-metadata.json") in str(info.value)


def test_missing_symlinked_or_huge_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(metadata.MetadataError, match="missing or not a regular file"):
        metadata.read(tmp_path)
    real = tmp_path / "real.json"
    real.write_text('{"scenario": "S"}')
    (tmp_path / "ovsperf-metadata.json").symlink_to(real)
    with pytest.raises(metadata.MetadataError, match="missing or not a regular file"):
        metadata.read(tmp_path)
    (tmp_path / "ovsperf-metadata.json").unlink()
    (tmp_path / "ovsperf-metadata.json").write_bytes(b" " * (metadata.MAX_METADATA_BYTES + 1))
    with pytest.raises(metadata.MetadataError, match="larger than"):
        metadata.read(tmp_path)


def test_incomplete_without_reason_is_refused() -> None:
    with pytest.raises(metadata.MetadataError, match="incomplete run must say why"):
        metadata.RunMetadata(scenario="S", producer="p", complete=False)
    with pytest.raises(metadata.MetadataError, match="belong to the schema"):
        metadata.RunMetadata(scenario="S", producer="p", extra={"complete": True})


def test_module_entry_writes_what_the_beaker_task_passes(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ovsperf_common.metadata",
            str(tmp_path),
            "--scenario",
            "OVS_DPDK1q",
            "--producer",
            "vsperf_test",
            "--test",
            "0:phy2phy_tput:p2p",
            "--missing-test",
            "pvp_tput",
            "--host",
            "dut=dut01",
            "--host",
            "trafficgen=",
            "--packages-file",
            "-",
            "--set",
            "beaker_job_id=J:12",
            "--set",
            "vsperf_commit=",
        ],
        input="openvswitch 2.17.0-1.el8.x86_64\ndpdk 21.11-1.el8.x86_64\n",
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(tmp_path / "ovsperf-metadata.json")
    md = metadata.read(tmp_path)
    assert md.complete is False
    assert md.incomplete_reason == "tests without results: pvp_tput"
    assert md.tests == [{"index": 0, "test": "phy2phy_tput", "deployment": "p2p"}]
    assert md.hosts == {"dut": "dut01", "trafficgen": None}
    assert md.packages == {"openvswitch": "2.17.0-1.el8.x86_64", "dpdk": "21.11-1.el8.x86_64"}
    assert md.extra == {"beaker_job_id": "J:12", "vsperf_commit": None, "missing_tests": ["pvp_tput"]}
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "ovsperf_common.metadata",
            str(tmp_path),
            "--scenario",
            "a b",
            "--producer",
            "x",
        ],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "field 'scenario'" in bad.stderr


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("result_0_phy2phy_tput_p2p.csv", (0, "phy2phy_tput", "p2p")),
        ("result_12_pvp_tput_pvp.csv", (12, "pvp_tput", "pvp")),
        ("result_phy2phy_tput_p2p.csv", (None, "phy2phy_tput", "p2p")),
        ("result_0_phy2phy_tput_P2P.csv", None),
        ("results_0_x_p2p.csv", None),
        ("result_0_x_p2p.csv.tmp", None),
    ],
)
def test_result_csv_name_rule(name: str, parts: tuple[int | None, str, str] | None) -> None:
    parsed = resultdir.parse_result_csv_name(name)
    if parts is None:
        assert parsed is None
        assert not resultdir.is_result_csv(name)
    else:
        assert parsed is not None
        assert (parsed.index, parsed.test, parsed.deployment) == parts
        assert resultdir.result_csv_name(parsed.test, parsed.deployment, parsed.index) == name


def test_result_csv_name_refuses_what_would_not_parse_back() -> None:
    assert resultdir.result_csv_name("phy2phy_tput", "p2p", 3) == "result_3_phy2phy_tput_p2p.csv"
    for test, deployment in (("a/b", "p2p"), ("", "p2p"), ("x", "P2P"), ("x", "")):
        with pytest.raises(ValueError, match="no valid CSV name"):
            resultdir.result_csv_name(test, deployment)


def _results(root: Path, name: str, csvs: tuple[str, ...] = ("result_0_phy2phy_tput_p2p.csv",)) -> Path:
    path = root / name
    path.mkdir(parents=True)
    for csv in csvs:
        (path / csv).write_text("throughput_rx_fps\n1\n")
    return path


def test_find_results_dirs(tmp_path: Path) -> None:
    a = _results(tmp_path / "delivery", "results_2026-11-23_10-00-00")
    b = _results(tmp_path / "delivery" / "nested", "results_2026-11-23_11-00-00")
    _results(tmp_path / "delivery", ".hidden")
    _results(tmp_path / "delivery" / "a" / "b" / "c", "too_deep")
    (tmp_path / "delivery" / "results_2026-11-23_12-00-00").symlink_to(a)
    found = resultdir.find_results_dirs(tmp_path / "delivery")
    assert found.dirs == (b, a) or found.dirs == tuple(sorted((a, b)))
    assert found.skipped_links == (tmp_path / "delivery" / "results_2026-11-23_12-00-00",)
    assert resultdir.find_results_dirs(a).dirs == (a,)
    flat = _results(tmp_path, "flat")
    assert resultdir.find_results_dirs(flat).dirs == (flat,)
    assert resultdir.find_results_dirs(tmp_path / "delivery" / "nested").dirs == (b,)
    with pytest.raises(FileNotFoundError):
        resultdir.find_results_dirs(tmp_path / "missing")
    with pytest.raises(NotADirectoryError):
        resultdir.find_results_dirs(a / "result_0_phy2phy_tput_p2p.csv")


def test_fingerprint_tells_same_results_from_different_ones(tmp_path: Path) -> None:
    first = _results(tmp_path / "one", "results_2026-11-23_10-00-00")
    second = _results(tmp_path / "two", "results_2026-11-23_10-00-00")
    assert resultdir.fingerprint(tmp_path / "one") == resultdir.fingerprint(tmp_path / "two")
    (second / "result_0_phy2phy_tput_p2p.csv").write_text("throughput_rx_fps\n2\n")  # same size
    assert resultdir.fingerprint(first) != resultdir.fingerprint(second)


def test_resultdir_module_entry(tmp_path: Path) -> None:
    path = _results(tmp_path, "results_2026-11-23_10-00-00", ("result_0_a_p2p.csv", "result_1_b_pvp.csv"))
    (path / "notes.csv").write_text("x")
    run = [sys.executable, "-m", "ovsperf_common.resultdir"]
    done = subprocess.run([*run, "csvs", str(path)], capture_output=True, text=True, env=_env(), timeout=60)
    assert (done.returncode, done.stdout.split()) == (
        0,
        [str(path / "result_0_a_p2p.csv"), str(path / "result_1_b_pvp.csv")],
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    done = subprocess.run([*run, "csvs", str(empty)], capture_output=True, text=True, env=_env(), timeout=60)
    assert (done.returncode, done.stdout) == (3, "")
    done = subprocess.run(
        [*run, "dirs", str(tmp_path / "x")], capture_output=True, text=True, env=_env(), timeout=60
    )
    assert done.returncode == 2 and "no such results directory" in done.stderr


def test_run_command_returns_status_and_output() -> None:
    program = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(4)"
    done = run_command([sys.executable, "-c", program], timeout_s=30, what="a test program")
    assert (done.returncode, done.stdout, done.stderr) == (4, "out\n", "err\n")
    echoed = run_command(["cat"], timeout_s=30, what="cat", input_text="hello")
    assert echoed.stdout == "hello"


def test_run_command_kills_a_program_that_outlives_its_deadline(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    script = f"sleep 30 & echo $! > {pidfile}; wait"
    start = time.monotonic()
    with pytest.raises(CommandError, match=r"did not finish within 0\.5 s") as info:
        run_command(["sh", "-c", script], timeout_s=0.5, what="a slow program")
    assert time.monotonic() - start < 10
    assert info.value.argv0 == "sh"
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the program's own child survived the timeout")


def test_run_command_missing_executable() -> None:
    with pytest.raises(CommandError, match="Cannot run a tool: '/nonexistent/tool'"):
        run_command(["/nonexistent/tool"], timeout_s=5, what="a tool")


def test_run_within_returns_raises_or_gives_up_by_its_deadline() -> None:
    from ovsperf_common.deadline import DeadlineExceededError, run_within

    assert run_within(5, "a quick call", lambda: 42) == 42
    with pytest.raises(KeyError):
        run_within(5, "a failing call", lambda: {}["x"])
    start = time.monotonic()
    with pytest.raises(DeadlineExceededError, match=r"Timed out after 0\.3 s waiting for a stuck call"):
        run_within(0.3, "a stuck call", lambda: time.sleep(30))
    assert time.monotonic() - start < 2
