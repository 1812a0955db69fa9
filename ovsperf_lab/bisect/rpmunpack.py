"""Unpack an RPM's files into a directory without ``rpm --root`` or ``cpio``: ``rpm2cpio`` + a newc reader.

``rpm2cpio FILE`` writes the payload as a cpio archive in the "new ASCII" (``newc``, magic
``070701``) format (rpm's ``lib/rpmfi.c``/``rpmcpio.c``; format: the cpio(5) manual page, "New ASCII
Format"): per entry a 110-byte header of 13 fields in 8 hex digits, the name (NUL-terminated,
padded to 4 bytes), the data (padded to 4 bytes), up to the entry ``TRAILER!!!``. Regular files,
directories and symbolic links are written; device nodes, FIFOs and sockets are skipped; of hard
links only the entry carrying the data (rpm writes it with the last link) is written. A name that
is absolute, has a ``..`` part, or passes through a symbolic link written before is refused, so
nothing lands outside the target directory.
"""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from ovsperf_lab.errors import LabError

RPM2CPIO_TIMEOUT_S = 300.0
"""Longest ``rpm2cpio`` run [s]."""

_MAGIC = b"070701"
_HEADER_BYTES = 110
_TRAILER = "TRAILER!!!"


class UnpackError(LabError):
    """An RPM could not be unpacked: no ``rpm2cpio``, a damaged payload, or an unsafe name."""


def _pad(length: int) -> int:
    return (4 - length % 4) % 4


def _read(stream: BinaryIO, size: int, what: str) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise UnpackError(f"The cpio payload ends inside {what} ({len(data)} of {size} B).")
    return data


def _safe_target(root: Path, name: str, links: set[Path]) -> Path | None:
    """Return where entry ``name`` goes under ``root`` (``None`` for ``.``).

    :raises UnpackError: for an absolute name, a ``..`` part, or a path through a written link.
    """
    parts = PurePosixPath(name.removeprefix("./")).parts
    if not parts or parts == (".",):
        return None
    if PurePosixPath(name).is_absolute() or ".." in parts:
        raise UnpackError(f"The payload names {name!r}, which would leave the target directory.")
    target = root.joinpath(*parts)
    for parent in target.parents:
        if parent in links:
            raise UnpackError(f"The payload writes {name!r} through the symbolic link '{parent}'.")
    return target


def extract_newc(stream: BinaryIO, root: Path) -> int:
    """Write the entries of a ``newc`` cpio stream under ``root``.

    :returns: the number of regular files written [1].
    :raises UnpackError: for a damaged stream or an unsafe name (see the module docstring).
    """
    links: set[Path] = set()
    files = 0
    while True:
        header = _read(stream, _HEADER_BYTES, "an entry header")
        if header[:6] != _MAGIC:
            raise UnpackError(f"Not a newc cpio entry (magic {header[:6]!r}, expected {_MAGIC!r}).")
        try:
            fields = [int(header[6 + 8 * i : 14 + 8 * i], 16) for i in range(13)]
        except ValueError as err:
            raise UnpackError(f"A cpio header holds a field that is not hex: {header!r}.") from err
        mode, filesize, namesize = fields[1], fields[6], fields[11]
        raw_name = _read(stream, namesize, "an entry name")
        _read(stream, _pad(_HEADER_BYTES + namesize), "the name padding")
        name = raw_name.rstrip(b"\0").decode("utf-8", "surrogateescape")
        if name == _TRAILER:
            return files
        data = _read(stream, filesize, f"the data of {name!r}")
        _read(stream, _pad(filesize), "the data padding")
        target = _safe_target(root, name, links)
        if target is None:
            continue
        if stat.S_ISDIR(mode):
            target.mkdir(parents=True, exist_ok=True)
        elif stat.S_ISLNK(mode):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)
            os.symlink(data.decode("utf-8", "surrogateescape"), target)
            links.add(target)
        elif stat.S_ISREG(mode):
            if filesize == 0 and fields[4] > 1:
                continue  # a hard link whose data comes with a later link of the same inode
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)
            target.write_bytes(data)
            target.chmod(stat.S_IMODE(mode) & 0o755 | 0o200)
            files += 1


def unpack_rpm(rpm: Path, root: Path) -> int:
    """Unpack ``rpm``'s files under ``root`` (``rpm2cpio``, then :func:`extract_newc`).

    :returns: the number of regular files written [1].
    :raises UnpackError: when ``rpm2cpio`` is missing, fails or times out, or the payload is damaged
        or unsafe; the message names the RPM.
    """
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile(dir=root.parent) as payload:
        try:
            done = subprocess.run(
                ["rpm2cpio", str(rpm)],
                stdout=payload,
                stderr=subprocess.PIPE,
                timeout=RPM2CPIO_TIMEOUT_S,
                check=False,
            )
        except FileNotFoundError as err:
            raise UnpackError("'rpm2cpio' is not installed (Debian: apt-get install rpm2cpio).") from err
        except subprocess.TimeoutExpired as err:
            raise UnpackError(f"'rpm2cpio {rpm.name}' took longer than {RPM2CPIO_TIMEOUT_S:g} s.") from err
        if done.returncode != 0:
            why = done.stderr.decode("utf-8", "replace").strip().splitlines() or ["no output"]
            raise UnpackError(f"'rpm2cpio {rpm.name}' failed (exit {done.returncode}): {why[-1]}")
        payload.seek(0)
        try:
            return extract_newc(payload, root)
        except UnpackError as err:
            raise UnpackError(f"RPM '{rpm.name}': {err}") from err
