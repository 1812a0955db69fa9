"""What ``ovsperf-vlab guest-test`` checks in a run's results and leftovers, on a fixture results dir.

The runs themselves (real guests, minutes of TCG) are ``make vlab-test``'s.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ovsperf_common.labfiles import COL_RX_FPS, GUEST_BOOT_KEY, GUEST_COLUMN, GUEST_MARKER
from ovsperf_common.metadata import METADATA_FILE
from vlab import guesttest
from vlab.cli import main
from vlab.config import VlabError

WHERE = "'ovsperf-lab run --config X'"


def write_rows(results: Path, test: str, rows: list[dict[str, str]]) -> None:
    header = [COL_RX_FPS, "packet_size", GUEST_COLUMN]
    lines = [",".join(header)] + [",".join(row.get(h, "") for h in header) for row in rows]
    (results / f"result_0_{test}_pvp.csv").write_text("\n".join(lines) + "\n")


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A results directory as a PVVP run through two guests leaves it."""
    out = tmp_path / "results_2026-11-27_034400"
    out.mkdir()
    write_rows(out, "pvvp_tput", [{COL_RX_FPS: "2500.5", "packet_size": "64", GUEST_COLUMN: "linux_bridge"}])
    (out / "guest-serial_2026-11-27_034400.log").write_text(f"Linux\n{GUEST_MARKER} enp0s3 enp0s4\n")
    (out / "guest-2-serial_2026-11-27_034400.log").write_text(
        f"Linux\n[  9.1] {GUEST_MARKER} enp0s3 enp0s4\n"
    )
    metadata = {"scenario": "OVS_DPDK1q_PVVP", GUEST_BOOT_KEY: {"result_0_pvvp_tput": [41.2, 43.9]}}
    (out / METADATA_FILE).write_text(json.dumps(metadata))
    return out


def test_rows_need_a_positive_ndr_and_the_images_loopback(results: Path) -> None:
    assert guesttest._check_rows(results, "pvvp_tput", WHERE) == 2500.5
    write_rows(results, "pvvp_tput", [{COL_RX_FPS: "0", GUEST_COLUMN: "linux_bridge"}])
    with pytest.raises(VlabError, match=r"'throughput_rx_fps' \(the NDR\) is not positive .*\['0'\]"):
        guesttest._check_rows(results, "pvvp_tput", WHERE)
    write_rows(results, "pvvp_tput", [{COL_RX_FPS: "10", GUEST_COLUMN: "testpmd"}])
    with pytest.raises(VlabError, match=r"'guest_loopback_app' is \['testpmd'\], not 'linux_bridge'"):
        guesttest._check_rows(results, "pvvp_tput", WHERE)
    with pytest.raises(VlabError, match=r"wrote no result row for 'pvp_tput'"):
        guesttest._check_rows(results, "pvp_tput", WHERE)


def test_every_guests_console_must_show_the_marker(results: Path) -> None:
    guesttest._check_consoles(results, 2, WHERE)
    (results / "guest-2-serial_2026-11-27_034400.log").write_text("Linux\nkernel panic\n")
    with pytest.raises(VlabError, match=r"the console log 'guest-2-serial' of guest 2 lacks"):
        guesttest._check_consoles(results, 2, WHERE)
    (results / "guest-2-serial_2026-11-27_034400.log").write_text(GUEST_MARKER)
    with pytest.raises(VlabError, match=r"the console log 'guest-3-serial' of guest 3 lacks"):
        guesttest._check_consoles(results, 3, WHERE)


def test_boot_times_are_read_from_the_metadata(results: Path) -> None:
    assert guesttest._boot_times(results, 2, WHERE) == [41.2, 43.9]
    path = results / METADATA_FILE
    path.write_text(json.dumps({GUEST_BOOT_KEY: {"result_1_pvp_tput": [9.0], "result_0_pvp_tput": [8.5]}}))
    assert guesttest._boot_times(results, 1, WHERE) == [8.5]  # the first test's
    with pytest.raises(VlabError, match=r"field 'guest_boot_s.result_0_pvp_tput' is \[8.5\], not 2 boot"):
        guesttest._boot_times(results, 2, WHERE)
    path.write_text(json.dumps({"scenario": "X"}))
    with pytest.raises(VlabError, match=rf"'{path}' has no 'guest_boot_s'"):
        guesttest._boot_times(results, 1, WHERE)
    path.unlink()
    with pytest.raises(VlabError, match="cannot read"):
        guesttest._boot_times(results, 1, WHERE)


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    """The processes a test starts: what is still running at its end gets SIGKILL, by pid."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        yield procs
    finally:
        for proc in (p for p in procs if p.poll() is None):
            proc.kill()
            proc.wait(timeout=10)


def test_leftovers_are_only_the_runs_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, started: list[subprocess.Popen[bytes]]
) -> None:
    token = str(tmp_path / "olab-gXYZ")
    state_root = Path(token)
    state_root.mkdir()
    hugepages = tmp_path / "hugepages"
    hugepages.mkdir()
    monkeypatch.setattr(guesttest, "HUGEPAGE_DIR", hugepages)
    (hugepages / "rtemap_0").write_text("")  # there before the run
    before = set(os.listdir(hugepages))
    assert guesttest._leftovers(token, 4242, state_root, before) == []
    ours = subprocess.Popen(["sleep", "60"], env={**os.environ, guesttest.RUN_ENV: token})
    theirs = subprocess.Popen(["sleep", "61"], env={**os.environ, guesttest.RUN_ENV: token + "-other"})
    plain = subprocess.Popen(["sleep", "62"])
    started += [ours, theirs, plain]
    (state_root / "ovsperf-lab-20261127034400-4242").mkdir()
    for name in ("ovsperf-lab-20261127034400-4242-ovsmap_0", "ovsperf-lab-20261127034400-999-ovsmap_0",
                 "rtemap_1", "ovsperf-lab-20261127034400-42420-ovsmap_0"):  # fmt: skip
        (hugepages / name).write_text("")
    found = guesttest._leftovers(token, 4242, state_root, before)
    assert found == [
        f"process {ours.pid} (sleep 60)",
        f"'{state_root / 'ovsperf-lab-20261127034400-4242'}' in the state root",
        "hugepage file 'ovsperf-lab-20261127034400-4242-ovsmap_0'",
    ]


def test_a_stop_signals_the_run_alone_then_kills_its_group(
    tmp_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    # A leader that exits on SIGTERM: its child (in its group) is not signalled by the stop.
    pidfile = tmp_path / "child.pid"
    script = f"sleep 60 & echo $! > {pidfile}; trap 'exit 0' TERM; while :; do sleep 0.1; done"
    leader = subprocess.Popen(["bash", "-c", script], start_new_session=True)
    started.append(leader)
    deadline = time.monotonic() + 10
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(pidfile.read_text())
    guesttest._stop(leader, WHERE, grace_s=10.0)
    assert leader.returncode == 0
    try:
        os.kill(child, 0)  # still there: ovsperf-lab's teardown, not this stop, ends what it started
    finally:
        os.kill(child, signal.SIGKILL)
    # A leader that ignores SIGTERM is killed with its group after the grace period, without raising.
    code = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\n"
    stubborn = subprocess.Popen([sys.executable, "-c", code + "time.sleep(60)"], stdout=subprocess.PIPE,
                                start_new_session=True)  # fmt: skip
    started.append(stubborn)
    assert stubborn.stdout is not None and stubborn.stdout.readline() == b"ready\n"
    start = time.monotonic()
    guesttest._stop(stubborn, WHERE, grace_s=0.5)
    assert stubborn.returncode == -signal.SIGKILL and time.monotonic() - start < 5.0


def test_a_results_dir_that_cannot_be_made_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a user's file")
    code = main(["guest-test", str(tmp_path / "g.qcow2"), "--results-dir", str(blocker / "sub")])
    assert code == 2
    err = capsys.readouterr().err
    assert f"'--results-dir' '{blocker / 'sub'}' cannot be made a directory" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]  # no image built first


def test_the_stderr_log_never_replaces_a_users_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    output = tmp_path / "out"
    output.mkdir()
    users = output / "OVS_DPDK1q_PVVP.stderr.log"
    users.write_text("mine")
    seen: list[str] = []

    def fake_run(
        argv: list[str], err: object, image: Path, token: str, where: str
    ) -> tuple[int, str, int, int]:
        seen.append(where)
        return 3, "", 0, 1

    monkeypatch.setattr(guesttest, "_run_sampling", fake_run)
    options = guesttest.GuestTestOptions(image=tmp_path / "g.qcow2", mirror="http://m")
    state_root = tmp_path / "state"
    state_root.mkdir()
    with pytest.raises(VlabError, match="exited with status 3"):
        guesttest._checked_run(
            options, tmp_path / "g.qcow2", output, "OVS_DPDK1q_PVVP", "pvvp_tput", 2, state_root
        )
    assert users.read_text() == "mine"
    [log] = [p.name for p in output.iterdir() if p != users]
    assert log.startswith("OVS_DPDK1q_PVVP.") and log.endswith(".stderr.log")
    assert f"(log '{output / log}')" in seen[0]


def test_a_failed_run_names_what_it_keeps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fails(*args: object) -> list[tuple[str, ...]]:
        raise VlabError("'ovsperf-lab run' exited with status 2: boom")

    monkeypatch.setattr(guesttest, "_checked_run", fails)
    options = guesttest.GuestTestOptions(image=tmp_path / "g.qcow2", mirror="http://m")
    with pytest.raises(VlabError) as raised:
        guesttest._one_run(options, tmp_path / "g.qcow2", tmp_path, "S", "pvp_tput", 1)
    assert str(raised.value).endswith(
        f"boom Kept: the output directory '{tmp_path}'."
    )  # empty state root: gone
