"""Find the results in ``ci_in`` that are complete, and hold the lock that makes a pass exclusive.

A result is taken only when all of these hold (otherwise it is left for the next pass):

* its ``ovsperf-metadata.json`` marker exists (the writer puts it there last);
* no copy temporaries are inside: rsync's ``.<file>.XXXXXX`` and ``.~tmp~/`` (``--delay-updates``),
  ``*.part``, ``*.partial``, ``*.tmp`` (left for at most the marker timeout, then rejected);
* nothing in it changed (ctime, which ``rsync -a`` cannot backdate, and mtime) for the quiet period.

Entries that can never be compared are rejected (moved to ``ci_failed`` by the caller): symbolic
links (never followed, so ``ci_in/x -> /etc`` is harmless), unsafe names (``..``, control
characters, leading ``-``), non-directories, and directories containing device files or symlinks
leading outside the result. Hidden entries (leading ``.``) are ignored: that is where copies in
progress and the pass lock live.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from ciflow.errors import CiflowError
from ciflow.model import EntryState, InboxEntry
from ovsperf_common.filelock import LockError, exclusive_lock, holder_pid
from ovsperf_common.metadata import METADATA_FILE
from ovsperf_common.resultdir import MAX_DELIVERY_ENTRIES
from resultstore.errors import InvalidRecordError
from resultstore.model import check_name

log = logging.getLogger(__name__)

FAILED_SUFFIXES = (".FAILED.txt", ".FAILED.json")
"""Reason files written beside failed results; ignored if they are moved back into ``ci_in``."""

_RSYNC_TEMP = re.compile(r"^\..+\.[A-Za-z0-9]{6}$")
_PARTIAL_SUFFIXES = (".part", ".partial", ".tmp")


@contextlib.contextmanager
def pass_lock(lock_path: Path) -> Iterator[bool]:
    """Hold an exclusive ``flock`` on ``lock_path`` while the ``with`` block runs.

    Yields True when the lock was taken, False when another pass holds it (the caller then does
    nothing). The lock dies with the process, so a crashed pass never blocks the next one
    (:func:`ovsperf_common.filelock.exclusive_lock`).

    :raises CiflowError: when the lock file cannot be created or locked.
    """
    with contextlib.ExitStack() as held:
        try:
            taken = held.enter_context(exclusive_lock(lock_path))
        except LockError as err:
            raise CiflowError(str(err)) from err
        if not taken:
            pid = holder_pid(lock_path)
            log.info(
                "Another pass%s holds '%s'; nothing to do.", "" if pid is None else f" (pid {pid})", lock_path
            )
        yield taken


def scan(
    ci_in: Path, *, quiet_period_s: float, marker_timeout_s: float, now: float | None = None
) -> list[InboxEntry]:
    """Classify every non-hidden entry of ``ci_in``; return them sorted by name.

    ``now`` is the wall-clock time to judge the quiet period against (default: now) [s since epoch].

    :raises CiflowError: when ``ci_in`` cannot be listed.
    """
    now = time.time() if now is None else now
    try:
        names = sorted(entry.name for entry in os.scandir(ci_in))
    except OSError as err:
        raise CiflowError(f"Cannot list ci_in '{ci_in}': {err.strerror}.") from err
    entries = []
    for name in names:
        if name.startswith(".") or name.endswith(FAILED_SUFFIXES):
            continue
        entry = classify(
            ci_in / name, quiet_period_s=quiet_period_s, marker_timeout_s=marker_timeout_s, now=now
        )
        log.debug(
            "ci_in entry '%s': %s%s", name, entry.state.value, f" ({entry.reason})" if entry.reason else ""
        )
        entries.append(entry)
    return entries


def classify(path: Path, *, quiet_period_s: float, marker_timeout_s: float, now: float) -> InboxEntry:
    """Decide whether the ``ci_in`` entry at ``path`` is ready, still busy, or to be rejected."""
    name = path.name

    def result(state: EntryState, reason: str | None = None) -> InboxEntry:
        return InboxEntry(name=name, path=path, state=state, reason=reason)

    try:
        st = path.lstat()
    except FileNotFoundError:
        return result(EntryState.BUSY, "disappeared while scanning")
    if stat.S_ISLNK(st.st_mode):
        return result(
            EntryState.REJECTED,
            f"'{path}' is a symbolic link (to '{os.readlink(path)}'); ci_in takes real directories only.",
        )
    try:
        check_name(name, "Result name")
    except InvalidRecordError as err:
        return result(EntryState.REJECTED, str(err))
    if not stat.S_ISDIR(st.st_mode):
        if now - max(st.st_ctime, st.st_mtime) < quiet_period_s:
            return result(EntryState.BUSY, "a file changed within the quiet period")
        return result(EntryState.REJECTED, f"'{path}' is not a directory; a result is a directory.")
    return _classify_tree(path, quiet_period_s=quiet_period_s, marker_timeout_s=marker_timeout_s, now=now)


def _classify_tree(root: Path, *, quiet_period_s: float, marker_timeout_s: float, now: float) -> InboxEntry:
    name = root.name
    newest = 0.0
    count = 0
    busy_reason: str | None = None
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            st = directory.lstat()
            children = list(os.scandir(directory))
        except OSError as err:
            reason = f"cannot read '{directory}': {err.strerror}"
            with contextlib.suppress(OSError):
                age_s = now - root.lstat().st_ctime
                if age_s >= marker_timeout_s:  # not an rsync still fixing permissions
                    return InboxEntry(name, root, EntryState.REJECTED, f"{reason} ({age_s / 3600:.1f} h).")
            return InboxEntry(name, root, EntryState.BUSY, reason)
        newest = max(newest, st.st_ctime, st.st_mtime)
        for child in children:
            count += 1
            if count > MAX_DELIVERY_ENTRIES:
                return InboxEntry(name, root, EntryState.REJECTED, f"more than {MAX_DELIVERY_ENTRIES} files.")
            try:
                cst = child.stat(follow_symlinks=False)
            except FileNotFoundError:
                busy_reason = f"'{child.path}' vanished while scanning"
                continue
            newest = max(newest, cst.st_ctime, cst.st_mtime)
            rel = Path(child.path).relative_to(root)
            if _is_copy_temporary(child.name) and busy_reason is None:
                busy_reason = f"copy in progress ('{rel}' present)"
            if stat.S_ISLNK(cst.st_mode):
                target = os.readlink(child.path)
                resolved = (Path(directory) / target).resolve()
                if not resolved.is_relative_to(root.resolve()):
                    return InboxEntry(
                        name,
                        root,
                        EntryState.REJECTED,
                        f"'{rel}' is a symbolic link to '{target}', outside the result.",
                    )
            elif stat.S_ISDIR(cst.st_mode):
                stack.append(Path(child.path))
            elif not stat.S_ISREG(cst.st_mode):
                return InboxEntry(
                    name, root, EntryState.REJECTED, f"'{rel}' is not a regular file, directory or symlink."
                )
    age_s = now - newest
    if busy_reason is not None:
        if age_s >= marker_timeout_s:
            return InboxEntry(
                name, root, EntryState.REJECTED, f"{busy_reason} and unchanged for {age_s / 3600:.1f} h."
            )
        return InboxEntry(name, root, EntryState.BUSY, busy_reason)
    if age_s < quiet_period_s:
        return InboxEntry(
            name, root, EntryState.BUSY, f"changed {age_s:.0f} s ago (quiet period {quiet_period_s:.0f} s)"
        )
    marker = root / METADATA_FILE
    if not marker.exists() and not marker.is_symlink():
        if age_s >= marker_timeout_s:
            return InboxEntry(
                name,
                root,
                EntryState.REJECTED,
                f"no '{METADATA_FILE}' after {age_s / 3600:.1f} h without changes; the copy never finished "
                "or the writer does not write the marker.",
            )
        return InboxEntry(name, root, EntryState.BUSY, f"no '{METADATA_FILE}' yet")
    return InboxEntry(name, root, EntryState.READY)


def _is_copy_temporary(name: str) -> bool:
    """Return whether ``name`` looks like a file an unfinished copy is writing."""
    return name == ".~tmp~" or _RSYNC_TEMP.match(name) is not None or name.endswith(_PARTIAL_SUFFIXES)
