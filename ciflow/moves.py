"""Move result directories between ``ci_in``, ``ci_processed`` and ``ci_failed`` without ever half-moving.

Within one file system a move is one ``renameat2(RENAME_NOREPLACE)`` call: atomic, and it never
replaces an existing destination. Across file systems the result is copied to a hidden sibling of
the destination, flushed, renamed into place, and only then is the source renamed to a hidden name
and removed; a failed copy (e.g. a full disk) removes the partial copy and leaves the source as it
was.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

from ciflow.errors import MoveError
from ovsperf_common.atomicio import rename_no_replace

log = logging.getLogger(__name__)

MOVING_SUFFIX = ".moving"
"""Suffix of the hidden temporary a cross-file-system move copies into."""

MOVED_AWAY_SUFFIX = ".moved-away"
"""Suffix of the hidden name a source gets once its copy is complete, before it is removed."""

_MAX_SUFFIX = 1000


def free_destination(directory: Path, name: str) -> Path:
    """Return ``directory/name``, or ``directory/name.1``, ``.2``, ... whichever does not exist yet.

    :raises MoveError: when 1000 suffixes are taken.
    """
    candidate = directory / name
    for suffix in range(1, _MAX_SUFFIX + 1):
        if not os.path.lexists(candidate):
            return candidate
        candidate = directory / f"{name}.{suffix}"
    raise MoveError(
        f"'{directory}' already holds '{name}' and {_MAX_SUFFIX} numbered copies; clean it up.",
        source=directory / name,
    )


def move_result(source: Path, destination: Path) -> None:
    """Move the result ``source`` (directory, file or symlink) to ``destination``, never replacing it.

    :raises MoveError: when the move failed; ``source`` is then complete and unchanged, and
        nothing was left at ``destination``.
    """
    try:
        rename_no_replace(source, destination)
    except OSError as err:
        if err.errno != errno.EXDEV:
            raise MoveError(
                f"Cannot move '{source}' to '{destination}': {err.strerror}.",
                source=source,
            ) from err
    else:
        _fsync_dir(destination.parent)
        _fsync_dir(source.parent)
        log.debug("Renamed '%s' to '%s'.", source, destination)
        return
    _copy_then_remove(source, destination)


def _copy_failure(err: OSError | shutil.Error) -> str:
    """Return a copy failure in one readable line.

    ``shutil.copytree`` gathers every failed file into one ``shutil.Error`` whose text is the repr
    of a list (kilobytes on a full disk); this names the first failure and counts the others.
    """
    if isinstance(err, shutil.Error) and err.args and isinstance(err.args[0], list) and err.args[0]:
        failures = err.args[0]
        first = failures[0]
        reason = first[2] if isinstance(first, tuple) and len(first) == 3 else first
        more = f" (and {len(failures) - 1} more file(s))" if len(failures) > 1 else ""
        return f"{reason}{more}"
    if isinstance(err, OSError) and err.strerror:
        return f"{err.strerror} ('{err.filename}')" if err.filename else err.strerror
    return str(err)


def _copy_then_remove(source: Path, destination: Path) -> None:
    """Move across file systems: copy to a hidden temporary, rename in, then remove the source."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", suffix=MOVING_SUFFIX, dir=destination.parent))
    staged = tmp / "data"
    try:
        if source.is_symlink() or not source.is_dir():
            shutil.copy2(source, staged, follow_symlinks=False)
        else:
            shutil.copytree(source, staged, symlinks=True, copy_function=_copy_regular_file)
        _fsync_tree(staged)
        rename_no_replace(staged, destination)
    except (OSError, shutil.Error) as err:
        shutil.rmtree(tmp, ignore_errors=True)
        raise MoveError(
            f"Cannot copy '{source}' to '{destination}' (another file system): {_copy_failure(err)}; "
            "the source is unchanged.",
            source=source,
        ) from err
    shutil.rmtree(tmp, ignore_errors=True)
    _fsync_dir(destination.parent)
    # The copy is complete at `destination`; hide the source first so a partly removed
    # source can never be taken for a new result by the next pass.
    try:
        doomed = Path(
            tempfile.mkdtemp(prefix=f".{source.name}.", suffix=MOVED_AWAY_SUFFIX, dir=source.parent)
        )
        os.rename(source, doomed / "data")
    except OSError as err:
        log.warning(
            "Copied '%s' to '%s' but cannot remove the source: %s.", source, destination, err.strerror
        )
        return
    shutil.rmtree(doomed, ignore_errors=True)
    log.debug("Copied '%s' to '%s' (another file system) and removed the source.", source, destination)


def _age_s(path: Path) -> float:
    """Return the time since ``path`` last changed [s]; 0 when it vanished."""
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return 0.0


def sweep_temporaries(directory: Path, suffixes: tuple[str, ...] = (), min_age_s: float = 0.0) -> list[Path]:
    """Remove what interrupted moves (or, with ``suffixes``, report writes) left in ``directory``.

    Only call this while holding the pass lock: then no move is running, so a hidden
    ``*.moving`` directory is an abandoned partial copy (its source is still whole) and a hidden
    ``*.moved-away`` one is a source whose copy had completed. The reports directory is swept for
    the hidden ``.<name>.*.tmp`` / ``.<name>.*.old`` directories of an interrupted atomic report
    write (``ovsperf_common.atomicio.atomic_directory``) by passing those suffixes, with
    ``min_age_s`` so that a page ``ovsperf-results`` is re-rendering right now is left alone [s].

    :returns: the paths removed.
    """
    removed: list[Path] = []
    try:
        names = [e.name for e in os.scandir(directory)]
    except OSError as err:
        log.warning("Cannot list '%s' for leftover temporaries: %s.", directory, err.strerror)
        return removed
    for name in names:
        path = directory / name
        if (
            name.startswith(".")
            and name.endswith((MOVING_SUFFIX, MOVED_AWAY_SUFFIX, *suffixes))
            and not path.is_symlink()
            and path.is_dir()
            and _age_s(path) >= min_age_s
        ):
            shutil.rmtree(path, ignore_errors=True)
            log.info("Removed '%s' left by an interrupted move or report write.", path)
            removed.append(path)
    return removed


def _copy_regular_file(source: str, destination: str) -> str:
    """Copy one regular file with its metadata; refuse devices, FIFOs and sockets.

    :raises OSError: for a special file (reading a device could never end).
    """
    mode = os.lstat(source).st_mode
    if not stat.S_ISREG(mode):
        raise OSError(errno.EINVAL, "not a regular file; special files are not copied", source)
    return str(shutil.copy2(source, destination, follow_symlinks=False))


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _fsync_tree(root: Path) -> None:
    """Flush every file and directory under ``root`` to disk.

    :raises OSError: when a file cannot be flushed (e.g. the disk is full).
    """
    if root.is_symlink() or not root.is_dir():
        if not root.is_symlink():
            _fsync_file(root)
        return
    for current, _dirs, files in os.walk(root):
        for file_name in files:
            path = Path(current) / file_name
            if not path.is_symlink():
                _fsync_file(path)
        _fsync_dir(Path(current))


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
