"""Unpack a results tarball safely: one ``results_<ts>/`` tree of plain files and directories, nothing else.

``vsperf_test`` packs its results with ``tar -C <parent> -czf results_<ts>.tar.gz results_<ts>``,
so a good tarball holds exactly one top directory named like the tarball. Every member is checked
before it is written (a :mod:`tarfile` extraction filter wrapping Python's ``'data'`` filter,
PEP 706), and the first bad one stops the extraction (the caller removes the partial tree):

- a name that is absolute, holds ``..``, or is outside ``results_<ts>/``;
- a symbolic or hard link whose target is absolute or leaves ``results_<ts>/``;
- a device file, FIFO or anything else that is not a file, directory or link;
- more members than :attr:`~beakerwatch.fetch.Limits.max_members`, or a member larger than the
  whole unpacked cap.

The gzip stream was already checked whole by :mod:`beakerwatch.fetch`; a damaged tar structure
inside it still fails here (``tarfile.TarError``).
"""

from __future__ import annotations

import logging
import posixpath
import tarfile
import zlib
from pathlib import Path

from beakerwatch.errors import BeakerWatchError, UnusableResultsError
from beakerwatch.fetch import Limits
from ovsperf_common.runner import one_line

log = logging.getLogger(__name__)


def _short(name: str) -> str:
    """Return a member name for a message: control characters escaped, at most 200 characters."""
    text = one_line(name)
    return text if len(text) <= 200 else text[:199] + "…"


def _inside(top: str, name: str) -> bool:
    """Return whether the relative POSIX path ``name`` is ``top`` or below it, without ``..``."""
    parts = name.split("/")
    return bool(parts) and parts[0] == top and ".." not in parts and not posixpath.isabs(name)


def unpack(tarball: Path, dest: Path, top: str, limits: Limits, label: str | None = None) -> Path:
    """Extract ``tarball`` into the existing, empty directory ``dest``; return ``dest / top``.

    :param top: the one directory the tarball must hold, ``results_<ts>``.
    :param label: the tarball's name in messages (default: the file's name).
    :raises UnusableResultsError: naming the tarball and the first offending member (see the module
        docstring), or when the tar structure is damaged or ``top`` is missing.
    :raises BeakerWatchError: when ``dest`` cannot be written (a full disk: the job stays tracked).
    """
    count = 0
    shown = label or tarball.name

    def check(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo:
        nonlocal count
        count += 1
        name = member.name.rstrip("/")
        what = f"member '{_short(member.name)}' of '{shown}'"
        if count > limits.max_members:
            raise UnusableResultsError(f"'{shown}' holds more than {limits.max_members} members.")
        if (
            posixpath.isabs(member.name)
            or not _inside(top, posixpath.normpath(name))
            or name != posixpath.normpath(name)
        ):
            raise UnusableResultsError(f"The {what} is not a plain path inside '{top}/'.")
        if member.issym() or member.islnk():
            base = posixpath.dirname(name) if member.issym() else ""
            target = posixpath.normpath(posixpath.join(base, member.linkname))
            if posixpath.isabs(member.linkname) or not _inside(top, target):
                raise UnusableResultsError(
                    f"The {what} is a link to '{_short(member.linkname)}', outside '{top}/'."
                )
        elif not (member.isfile() or member.isdir()):
            kind = (
                "device file"
                if member.ischr() or member.isblk()
                else "FIFO"
                if member.isfifo()
                else "special file"
            )
            raise UnusableResultsError(
                f"The {what} is a {kind}; a results tarball holds files and directories only."
            )
        if member.size > limits.max_unpacked_bytes:
            raise UnusableResultsError(
                f"The {what} is {member.size} B, over the unpacked cap of {limits.max_unpacked_bytes} B."
            )
        filtered = tarfile.data_filter(member, path)
        return filtered

    try:
        with tarfile.open(tarball, mode="r:gz") as archive:
            archive.errorlevel = 2
            archive.extractall(dest, filter=check)
    except UnusableResultsError:
        raise
    except (tarfile.TarError, EOFError, zlib.error, UnicodeError) as err:
        raise UnusableResultsError(f"'{shown}' cannot be unpacked: {err}.") from err
    except OSError as err:
        raise BeakerWatchError(f"Cannot unpack '{shown}' into '{dest}': {err.strerror or err}.") from err
    root = dest / top
    if not root.is_dir() or root.is_symlink():
        raise UnusableResultsError(f"'{shown}' holds no '{top}/' directory.")
    log.debug("Unpacked '%s': %d members.", tarball.name, count)
    return root
