"""Write files and directories atomically so a reader never sees a half-written output.

A crash, a full disk or an exception leaves the previous version in place and no temporary
file behind (write to a sibling temporary, ``fsync``, then ``os.replace``; POSIX rename(2) is
atomic within one file system).

Only what is ours is replaced: a target that exists and is not a regular file (a device node such
as ``/dev/null``, a FIFO, a socket, a directory, a symbolic link) is refused with
:class:`UnsafeTargetError`, never renamed over — as root, ``--output /dev/null`` must not replace
``/dev/null``.

:func:`rename_no_replace` is the other half: a rename that never replaces what is at its
destination (a result moved into ``ci_failed``, a delivery renamed into ``ci_in``).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

TEMPORARY_SUFFIXES = (".tmp", ".old")
"""Suffixes of the hidden ``.<name>.<random><suffix>`` siblings the writers here create; a killed
process can leave them behind (``process-ci-results`` sweeps its reports directory for them)."""

_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_libc = ctypes.CDLL(None, use_errno=True)
_renameat2 = getattr(_libc, "renameat2", None)


class UnsafeTargetError(OSError):
    """The output path exists and is not a regular file; it is left untouched.

    An ``OSError`` so that every caller that already reports write failures reports this one too.
    """


def rename_no_replace(source: Path, destination: Path) -> None:
    """Rename ``source`` to ``destination`` atomically, failing if ``destination`` exists.

    Uses ``renameat2(2)`` with ``RENAME_NOREPLACE`` (Linux >= 3.15, glibc >= 2.28). On file systems
    without it, checks then renames: that is safe only where the callers serialise themselves
    (``process-ci-results`` holds its pass lock while it moves).

    :raises FileExistsError: when ``destination`` exists (even an empty directory, which plain
        ``rename(2)`` would replace).
    :raises OSError: as ``rename(2)`` does (``EXDEV`` across file systems).
    """
    if _renameat2 is not None:
        result = _renameat2(
            _AT_FDCWD, os.fsencode(source), _AT_FDCWD, os.fsencode(destination), _RENAME_NOREPLACE
        )
        if result == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOSYS):
            raise OSError(err, os.strerror(err), str(source), None, str(destination))
    if os.path.lexists(destination):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(destination))
    os.rename(source, destination)


def check_replaceable(path: Path) -> None:
    """Raise unless ``path`` is absent or a regular file (not a symlink) that may be replaced.

    :raises UnsafeTargetError: naming the path and what it is (device, FIFO, socket, directory, link).
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISREG(info.st_mode):
        return
    kinds = (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    )
    kind = next((name for test, name in kinds if test(info.st_mode)), "not a regular file")
    raise UnsafeTargetError(
        errno.EEXIST, f"'{path}' exists and is {kind}; only a regular file is replaced, choose another path"
    )


def atomic_write_bytes(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` atomically.

    :raises UnsafeTargetError: when ``path`` exists and is not a regular file (left untouched).
    :raises OSError: when the directory is not writable or the disk is full; ``path`` is then
        unchanged and no temporary file remains.
    """
    path = Path(path)
    check_replaceable(path)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


def atomic_write_text(path: Path, text: str, mode: int = 0o644) -> None:
    """Replace ``path`` with ``text`` encoded as UTF-8, atomically (see :func:`atomic_write_bytes`).

    :raises UnsafeTargetError: when ``path`` exists and is not a regular file.
    :raises OSError: when writing fails; ``path`` is unchanged.
    """
    atomic_write_bytes(path, text.encode("utf-8"), mode)


@contextlib.contextmanager
def atomic_directory(path: Path) -> Iterator[Path]:
    """Build a directory in a sibling temporary and swap it into ``path`` on success.

    Yields the temporary directory to fill. On normal exit the old ``path`` (if any) is
    replaced: it is first renamed aside, the new one renamed in, then the old one removed, so
    at every instant either the complete old or the complete new directory is at ``path``
    (except for the two renames' gap, where ``path`` briefly does not exist). On an exception
    the temporary is removed and ``path`` is untouched.

    :raises OSError: when the parent directory is not writable or the disk is full.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o755)
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
            old.rmdir()
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
