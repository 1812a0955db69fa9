"""The one lock-file helper: exclusive, holder's pid written, try once or wait under a deadline."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ovsperf_common.filelock import LockError, LockTimeoutError, exclusive_lock, holder_pid

HOLD = """
import sys
from pathlib import Path
from ovsperf_common.filelock import exclusive_lock
with exclusive_lock(Path(sys.argv[1])) as taken:
    print(taken, flush=True)
    sys.stdin.readline()
"""


def test_try_once_is_exclusive_writes_the_pid_and_releases(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    with exclusive_lock(lock) as first:
        assert first is True
        assert lock.read_text() == f"{os.getpid()}\n"
        with exclusive_lock(lock) as second:
            assert second is False
        assert holder_pid(lock) == os.getpid()
    with exclusive_lock(lock) as again:
        assert again is True


def test_another_process_holds_it_until_it_lets_go(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock)],
        cwd=Path(__file__).resolve().parents[2],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline() == "True\n"
        with exclusive_lock(lock) as taken:
            assert taken is False
        assert holder_pid(lock) == holder.pid
        start = time.monotonic()
        with (
            pytest.raises(LockTimeoutError) as err,
            exclusive_lock(lock, timeout_s=0.3, what="the test lock"),
        ):
            pass
        assert 0.3 <= time.monotonic() - start < 5
        assert err.value.holder_pid == holder.pid
        assert str(err.value).startswith("Timed out after 0.3 s waiting for the test lock.")
        holder.stdin.write("\n")
        holder.stdin.flush()
        with exclusive_lock(lock, timeout_s=10) as taken:
            assert taken is True
            assert holder_pid(lock) == os.getpid()
    finally:
        holder.kill()
        holder.wait()


def test_waiting_takes_it_as_soon_as_it_is_free(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    ready = threading.Event()
    released = threading.Event()

    def hold() -> None:
        with exclusive_lock(lock) as taken:
            assert taken
            ready.set()
            time.sleep(0.3)
        released.set()

    thread = threading.Thread(target=hold)
    thread.start()
    ready.wait(10)
    with exclusive_lock(lock, timeout_s=10) as taken:
        assert taken is True
        assert released.is_set()
    thread.join()


def test_zero_timeout_tries_once(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    with exclusive_lock(lock, timeout_s=0) as taken:
        assert taken is True
        with pytest.raises(LockTimeoutError) as err, exclusive_lock(lock, timeout_s=0):
            pass
    assert err.value.holder_pid == os.getpid()
    assert "waiting for the lock '" in str(err.value)


def test_a_symlink_or_missing_directory_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("keep\n")
    link = tmp_path / "x.lock"
    link.symlink_to(target)
    with pytest.raises(LockError, match=r"^Cannot open lock file '.*x\.lock': Too many levels"):
        with exclusive_lock(link):
            pass
    assert target.read_text() == "keep\n"
    assert holder_pid(link) is None
    with pytest.raises(LockError, match="Cannot open lock file"), exclusive_lock(tmp_path / "no" / "x.lock"):
        pass
