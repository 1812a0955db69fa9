"""Classification of ci_in entries, the pass lock, and no-replace moves."""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

import pytest

from ciflow.errors import MoveError
from ciflow.inbox import pass_lock, scan
from ciflow.model import (
    LOCK_NAME,
    OutcomeKind,
    PassSummary,
    ResultOutcome,
)
from ciflow.moves import free_destination, move_result
from ciflow.resultdir import read_metadata, vsperf_result_dirs
from ovsperf_common.atomicio import rename_no_replace
from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.resultdir import fingerprint
from tests.ciflow.helpers import CANDIDATE, MARKER, REPEATS, deliver

HOUR_S = 3600.0


def states(ci_in: Path, now: float, quiet_s: float = 60.0, timeout_s: float = 6 * HOUR_S) -> dict[str, str]:
    return {
        e.name: e.state.value
        for e in scan(ci_in, quiet_period_s=quiet_s, marker_timeout_s=timeout_s, now=now)
    }


def test_quiet_period_uses_ctime_which_rsync_cannot_backdate(tmp_path: Path) -> None:
    result = deliver(tmp_path, "r")
    old = time.time() - 10 * HOUR_S
    for path in [result, *result.rglob("*")]:
        os.utime(path, (old, old), follow_symlinks=False)  # what `rsync -a` does to mtimes
    now = time.time()
    assert states(tmp_path, now) == {"r": "busy"}  # ctime is still "just now"
    assert states(tmp_path, now + 61) == {"r": "ready"}


def test_missing_marker_waits_then_is_rejected(tmp_path: Path) -> None:
    deliver(tmp_path, "r", marker=False)
    now = time.time()
    assert states(tmp_path, now + 120) == {"r": "busy"}
    assert states(tmp_path, now + 7 * HOUR_S) == {"r": "rejected"}
    entry = scan(tmp_path, quiet_period_s=0, marker_timeout_s=HOUR_S, now=now + 2 * HOUR_S)[0]
    assert MARKER in (entry.reason or "")


@pytest.mark.parametrize(
    ("name", "busy"),
    [
        (".result_0_phy2phy_tput_p2p.csv.a1B2c3", True),  # rsync temporary
        ("result_0_phy2phy_tput_p2p.csv.part", True),
        ("download.partial", True),
        (".hidden-but-not-rsync", False),
        ("result_0_phy2phy_tput_p2p.csv", False),
    ],
)
def test_copy_temporaries_mark_result_busy(tmp_path: Path, name: str, busy: bool) -> None:
    result = deliver(tmp_path, "r")
    (result / "results_2018-04-10_22-01-55" / name).write_bytes(b"x")
    now = time.time() + 120
    assert states(tmp_path, now) == {"r": "busy" if busy else "ready"}
    if busy:  # a temporary left behind for hours is not waited for forever
        assert states(tmp_path, now + 7 * HOUR_S) == {"r": "rejected"}


def test_special_files_and_symlinks_are_rejected(tmp_path: Path) -> None:
    fifo_result = deliver(tmp_path, "fifo")
    os.mkfifo(fifo_result / "pipe")
    inside = deliver(tmp_path, "inside-link")
    (inside / "latest").symlink_to("results_2018-04-10_22-01-55")  # stays inside: fine
    (tmp_path / "link").symlink_to(inside)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    got = states(tmp_path, time.time() + 120)
    assert got == {"fifo": "rejected", "inside-link": "ready", "link": "rejected", "dangling": "rejected"}


def test_scan_skips_hidden_entries_and_lock(tmp_path: Path) -> None:
    deliver(tmp_path, ".partial-copy")
    (tmp_path / LOCK_NAME).write_text("1\n")
    assert states(tmp_path, time.time() + 120) == {}


def test_lock_is_exclusive_and_released(tmp_path: Path) -> None:
    lock = tmp_path / LOCK_NAME
    with pass_lock(lock) as first:
        assert first
        with pass_lock(lock) as second:
            assert not second
    with pass_lock(lock) as again:
        assert again
    assert lock.read_text().strip() == str(os.getpid())


def test_lock_refuses_a_symlink(tmp_path: Path) -> None:
    from ciflow.errors import CiflowError

    (tmp_path / "target").write_text("")
    (tmp_path / LOCK_NAME).symlink_to(tmp_path / "target")
    with pytest.raises(CiflowError, match="Cannot open lock file"), pass_lock(tmp_path / LOCK_NAME):
        pass


def test_rename_never_replaces_even_an_empty_directory(tmp_path: Path) -> None:
    source = tmp_path / "a"
    source.mkdir()
    (source / "f").write_text("data")
    target = tmp_path / "b"
    target.mkdir()  # plain rename(2) would silently replace this empty directory
    with pytest.raises(FileExistsError):
        rename_no_replace(source, target)
    with pytest.raises(MoveError, match="Cannot move"):
        move_result(source, target)
    assert (source / "f").read_text() == "data"
    target.rmdir()
    move_result(source, target)
    assert (target / "f").read_text() == "data" and not source.exists()


def test_free_destination_numbers_instead_of_replacing(tmp_path: Path) -> None:
    assert free_destination(tmp_path, "r") == tmp_path / "r"
    (tmp_path / "r").mkdir()
    (tmp_path / "r.1").symlink_to("nowhere")  # a dangling symlink counts as taken
    assert free_destination(tmp_path, "r") == tmp_path / "r.2"


def test_move_of_missing_source_is_a_move_error(tmp_path: Path) -> None:
    with pytest.raises(MoveError) as err:
        move_result(tmp_path / "gone", tmp_path / "dest")
    assert err.value.source == tmp_path / "gone"
    assert isinstance(err.value.__cause__, OSError) and err.value.__cause__.errno == errno.ENOENT


def test_vsperf_dirs_found_at_any_layout(tmp_path: Path) -> None:
    assert vsperf_result_dirs(REPEATS) == (REPEATS / "results_2018-04-11_03-30-12",)
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "result_0_phy2phy_tput_p2p.csv").write_text("x")
    assert vsperf_result_dirs(flat) == (flat,)
    assert vsperf_result_dirs(tmp_path / "flat" / "missing") == ()


def test_metadata_keeps_every_field(tmp_path: Path) -> None:
    result = deliver(tmp_path, "r", CANDIDATE, metadata={"kernel": "5.14.0-70.el9"})
    metadata = read_metadata(result)
    assert metadata.scenario == "OVS_DPDK1q_GUEST_DPDK1q"
    assert metadata.extra["kernel"] == "5.14.0-70.el9"


def _outcome(kind: OutcomeKind, overall: str | None = None) -> ResultOutcome:
    return ResultOutcome("r", kind, Path("/x"), overall=overall)


@pytest.mark.parametrize(
    ("summary", "expected"),
    [
        (PassSummary(), ExitCode.NO_RESULTS),
        (PassSummary(lock_busy=True), ExitCode.NO_RESULTS),
        (PassSummary((_outcome(OutcomeKind.DEFERRED),)), ExitCode.NO_RESULTS),
        (PassSummary((_outcome(OutcomeKind.PROCESSED, "PASS"),)), ExitCode.OK),
        (PassSummary((_outcome(OutcomeKind.PROCESSED, "PASS"), _outcome(OutcomeKind.DEFERRED))), ExitCode.OK),
        (
            PassSummary(
                (_outcome(OutcomeKind.PROCESSED, "PASS"), _outcome(OutcomeKind.PROCESSED, "REGRESSION"))
            ),
            ExitCode.REGRESSION,
        ),
        (PassSummary((_outcome(OutcomeKind.PROCESSED, "INVALID"),)), ExitCode.ERROR),
        (
            PassSummary((_outcome(OutcomeKind.PROCESSED, "REGRESSION"), _outcome(OutcomeKind.FAILED))),
            ExitCode.ERROR,
        ),
        (PassSummary((_outcome(OutcomeKind.ERROR),)), ExitCode.ERROR),
    ],
)
def test_exit_code_table(summary: PassSummary, expected: ExitCode) -> None:
    assert summary.exit_code is expected


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ({}, None),
        ({"status": "PASS"}, None),
        ({"complete": True}, None),
        ({"complete": False, "incomplete_reason": "SIGTERM at 512 B"}, "SIGTERM at 512 B"),
        ({"status": "FAIL", "missing_tests": ["pvp_tput"]}, "tests without results: pvp_tput"),
    ],
)
def test_metadata_incomplete_reason(tmp_path: Path, extra: dict[str, object], reason: str | None) -> None:
    got = read_metadata(deliver(tmp_path, "r", metadata=extra)).incomplete_reason
    assert got == reason if reason is None else reason in (got or "")


def test_fingerprint_follows_content_not_times(tmp_path: Path) -> None:
    first = deliver(tmp_path, "a", CANDIDATE)
    second = deliver(tmp_path, "b", CANDIDATE)
    assert fingerprint(first) == fingerprint(second)  # same delivery under another name
    old = time.time() - HOUR_S
    os.utime(second / MARKER, (old, old))
    assert fingerprint(first) == fingerprint(second)
    csv = next(second.rglob("result_0_*.csv"))
    csv.write_bytes(csv.read_bytes().replace(b"13777605", b"13777606"))  # one digit of one rate
    assert fingerprint(first) != fingerprint(second)
    third = deliver(tmp_path, "c", CANDIDATE)
    (third / "extra.log").write_text("x")
    assert fingerprint(first) != fingerprint(third)
