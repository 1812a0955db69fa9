"""Hold an exclusive ``flock`` on a lock file so that one process at a time does a piece of work.

The lock file is opened with ``O_NOFOLLOW`` (a symbolic link planted at its path is refused, never
followed) and locked with ``flock(2)``; the holder writes its pid into it, so that a process that
finds the lock taken can say who holds it. The kernel drops the lock when its holder's descriptor
closes, so a killed holder never blocks the next one; the file itself stays.

Two ways to take it: try once and learn whether it was taken (a pass that has nothing to do when
another one runs), or wait for it at most a timeout, polling under a
:class:`~ovsperf_common.deadline.Deadline` (a reader that must not lose its turn).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from ovsperf_common.deadline import Deadline, DeadlineExceededError
from ovsperf_common.errors import OvsperfError

log = logging.getLogger(__name__)

POLL_S = 0.05
"""Pause between two attempts while waiting for a lock [s]."""


class LockError(OvsperfError):
    """The lock file cannot be opened or locked (another holder is not an error: see the callers)."""


class LockTimeoutError(LockError):
    """Another process held the lock for longer than the caller would wait."""

    def __init__(self, message: str, *, holder_pid: int | None) -> None:
        self.holder_pid = holder_pid
        """Pid the holder wrote into the lock file; ``None`` when unreadable (or not written yet)."""
        super().__init__(message)


@contextlib.contextmanager
def exclusive_lock(
    path: Path, *, timeout_s: float | None = None, what: str | None = None, poll_s: float = POLL_S
) -> Iterator[bool]:
    """Hold the exclusive ``flock`` of the lock file ``path`` (created ``0644``) while the block runs.

    With ``timeout_s`` ``None`` the lock is tried once: yields True when it was taken, False when
    another process holds it (then nothing is held). With a ``timeout_s`` [s] it is tried every
    ``poll_s`` [s] until taken (yields True) or the timeout passes; a timeout of 0 or less tries
    once. Once taken, this process's pid replaces the file's content; the lock is released when
    the block ends.

    :param what: the awaited lock for the timeout message (default ``"the lock '<path>'"``).
    :raises LockError: ``"Cannot open lock file '<path>': <reason>."`` (e.g. ``path`` is a symbolic
        link or its directory does not exist) or ``"Cannot lock '<path>': <reason>."``.
    :raises LockTimeoutError: with the message of
        :class:`~ovsperf_common.deadline.DeadlineExceededError` and the holder's pid, when
        ``timeout_s`` passes first.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
    except OSError as err:
        raise LockError(f"Cannot open lock file '{path}': {err.strerror}.") from err
    try:
        if timeout_s is None:
            taken = _try_lock(fd, path)
        else:
            deadline = Deadline(what=what or f"the lock '{path}'", timeout_s=max(timeout_s, 0.0))
            try:
                taken = deadline.poll(lambda: _try_lock(fd, path) or None, interval_s=poll_s, log=log)
            except DeadlineExceededError as err:
                raise LockTimeoutError(str(err), holder_pid=_read_pid(fd)) from err
        if not taken:
            yield False
            return
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def holder_pid(path: Path) -> int | None:
    """Return the pid the holder of the lock file ``path`` wrote into it; ``None`` when unreadable."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        try:
            return _read_pid(fd)
        finally:
            os.close(fd)
    return None


def _try_lock(fd: int, path: Path) -> bool:
    """Return whether the lock was taken; False when another process holds it.

    :raises LockError: when ``flock`` fails otherwise.
    """
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        if err.errno not in (errno.EWOULDBLOCK, errno.EACCES):
            raise LockError(f"Cannot lock '{path}': {err.strerror}.") from err
        return False
    return True


def _read_pid(fd: int) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        return int(os.pread(fd, 32, 0).decode("ascii").strip())
    return None
