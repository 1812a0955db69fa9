"""Issue 25, "Paths and shells": ``ovsperf-lab cleanup`` removes only the files its runs created.

A state file's DPDK file prefixes become ``<runtime dir>/<prefix>`` and ``<hugepages>/<prefix>map_*``:
a prefix with ``../`` removed a directory elsewhere, an empty one the whole runtime directory (every
other DPDK application's state). DPDK's directories are stand-ins under ``tmp_path`` here.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import ovsperf_lab.state as lab_state
from ovsperf_common.exitcodes import ExitCode
from ovsperf_lab.cli import main
from ovsperf_lab.state import LabRunState, TrackedProcess


@pytest.fixture
def dpdk_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Stand-ins for /var/run/dpdk (holding another application's 'rte' directory) and /dev/hugepages."""
    runtime, hugepages = tmp_path / "run-dpdk", tmp_path / "hugepages"
    (runtime / "rte").mkdir(parents=True)
    (runtime / "rte" / "config").write_text("another DPDK application\n")
    hugepages.mkdir()
    (hugepages / "rtemap_0").write_text("")
    monkeypatch.setattr(lab_state, "DPDK_RUNTIME_DIR", runtime)
    monkeypatch.setattr(lab_state, "HUGEPAGE_DIR", hugepages)
    return runtime, hugepages


def _orphan(state_root: Path, prefixes: list[str]) -> LabRunState:
    """Write a run whose owner is gone, with ``prefixes`` as its file prefixes."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    state = LabRunState.create(state_root, "ovsperf-lab-orphan")
    state.owner = TrackedProcess("ovsperf-lab", dead.pid, 1)
    state.file_prefixes = prefixes
    state.save()
    return state


@pytest.mark.parametrize(
    "prefix", ["../victim", "", "ovsperf-lab-orphan-tg/../../victim", "ovsperf-lab-other-tg"]
)
def test_cleanup_refuses_a_prefix_that_is_not_the_runs_own(
    capsys: pytest.CaptureFixture[str],
    state_root: Path,
    tmp_path: Path,
    dpdk_dirs: tuple[Path, Path],
    prefix: str,
) -> None:
    runtime, hugepages = dpdk_dirs
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("keep me\n")
    (runtime / "ovsperf-lab-other-tg").mkdir()  # another (live) run's directory
    orphan = _orphan(state_root, ["ovsperf-lab-orphan-ovs", prefix])
    (runtime / "ovsperf-lab-orphan-ovs").mkdir()
    code = main(["--state-dir", str(state_root), "cleanup"])
    out, err = capsys.readouterr()
    assert code == ExitCode.ERROR and out == ""
    (line,) = [line for line in err.splitlines() if line.startswith("ovsperf-lab: error: ")]
    assert f"Cleanup incomplete: '{orphan.run_dir}'" in line
    assert f"DPDK file prefix {prefix!r} is not one of run 'ovsperf-lab-orphan'" in line
    # Nothing of that state file was acted on: the run is left for a person to look at.
    assert (victim / "precious").read_text() == "keep me\n"
    assert sorted(p.name for p in runtime.iterdir()) == [
        "ovsperf-lab-orphan-ovs",
        "ovsperf-lab-other-tg",
        "rte",
    ]
    assert (runtime / "rte" / "config").exists() and (hugepages / "rtemap_0").exists()
    assert orphan.run_dir.exists()


def test_cleanup_removes_the_runs_own_prefixes(
    capsys: pytest.CaptureFixture[str], state_root: Path, dpdk_dirs: tuple[Path, Path]
) -> None:
    runtime, hugepages = dpdk_dirs
    orphan = _orphan(state_root, ["ovsperf-lab-orphan-ovs"])
    (runtime / "ovsperf-lab-orphan-ovs").mkdir()
    (hugepages / "ovsperf-lab-orphan-ovsmap_0").write_text("")
    assert main(["--state-dir", str(state_root), "cleanup"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert f"removed {runtime / 'ovsperf-lab-orphan-ovs'}" in out
    assert sorted(p.name for p in runtime.iterdir()) == ["rte"]
    assert sorted(p.name for p in hugepages.iterdir()) == ["rtemap_0"]
    assert not orphan.run_dir.exists()


@pytest.mark.parametrize(
    ("field", "value"), [("pid", "self"), ("pid", 1), ("pid", True), ("start_ticks", "0")]
)
def test_cleanup_refuses_a_process_that_is_not_a_pid(
    capsys: pytest.CaptureFixture[str],
    state_root: Path,
    dpdk_dirs: tuple[Path, Path],
    field: str,
    value: object,
) -> None:
    orphan = _orphan(state_root, [])
    # start_ticks -1 matches no process: even unchecked, nothing real could be signalled.
    record = {"name": "ovs-vswitchd", "pid": 4321, "start_ticks": -1, field: value}
    text = (
        orphan.run_dir.joinpath("state.json")
        .read_text()
        .replace('"processes": []', f'"processes": [{json.dumps(record)}]')
    )
    orphan.run_dir.joinpath("state.json").write_text(text)
    assert main(["--state-dir", str(state_root), "cleanup"]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert f"process 'ovs-vswitchd' has {field} {value!r}, not a whole number" in err
    assert orphan.run_dir.exists()
