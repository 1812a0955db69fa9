"""Read an input file only when it is a regular file: a FIFO, device or socket never blocks a command.

Opening a FIFO for reading waits for a writer, for ever; reading a character device (``/dev/zero``)
never ends. Every file a command reads by a name its user gives (a password file, a state file,
an SSH key) is opened here with ``O_NONBLOCK`` (so that opening a FIFO returns at once), checked
with ``fstat`` on the open descriptor (no race with a rename), and read only when it is a regular
file. Symbolic links are followed: a link to a regular file is a regular file.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Final

MAX_INPUT_BYTES: Final = 16 * 1024 * 1024
"""Default upper bound of a file read here [B]: configuration-sized inputs, never data."""

_KINDS: Final = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotRegularFileError(OSError):
    """The path names something other than a regular file (FIFO, device, socket, directory).

    An :class:`OSError` (``errno.EINVAL``), so that every caller's ``except OSError`` reports it;
    ``strerror`` says what the path is, e.g. ``"it is a FIFO (named pipe), not a regular file"``.
    """


def file_kind(mode: int) -> str:
    """Return what a ``st_mode`` names, as a phrase: ``"a FIFO (named pipe)"``, ``"a regular file"``."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse(path: Path, mode: int) -> NotRegularFileError:
    return NotRegularFileError(errno.EINVAL, f"it is {file_kind(mode)}, not a regular file", str(path))


def require_regular(path: Path) -> None:
    """Raise unless ``path`` is (a link to) a regular file; for a file a library opens itself.

    :raises FileNotFoundError: when it does not exist.
    :raises NotRegularFileError: when it is a FIFO, device, socket or directory.
    :raises OSError: when it cannot be examined.
    """
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise _refuse(path, mode)


def read_regular_bytes(path: Path, *, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """Return the contents of the regular file ``path``, at most ``max_bytes`` [B].

    Never blocks on a FIFO (opened non-blocking, refused after ``fstat``).

    :raises FileNotFoundError: when it does not exist.
    :raises NotRegularFileError: when it is not a regular file, or larger than ``max_bytes``
        (``errno.EFBIG``).
    :raises OSError: when it cannot be opened or read.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(path, info.st_mode)
        if info.st_size > max_bytes:
            raise NotRegularFileError(errno.EFBIG, f"it is larger than {max_bytes} B", str(path))
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=True) as stream:
            fd = -1
            data = stream.read(max_bytes + 1)
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > max_bytes:  # grew while read
        raise NotRegularFileError(errno.EFBIG, f"it is larger than {max_bytes} B", str(path))
    return data


def read_regular_text(path: Path, *, encoding: str = "utf-8", max_bytes: int = MAX_INPUT_BYTES) -> str:
    """Return the text of the regular file ``path`` (:func:`read_regular_bytes`, then decoded).

    :raises NotRegularFileError: when it is not a regular file or too large.
    :raises OSError: when it cannot be opened or read.
    :raises UnicodeDecodeError: when it is not ``encoding`` text.
    """
    return read_regular_bytes(path, max_bytes=max_bytes).decode(encoding)
