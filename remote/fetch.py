"""Bring a results directory back from a host over SFTP, whole or not at all.

The copy is made in a hidden ``.<name>.<random>.partial`` directory beside the target, the metadata
file (``ovsperf-metadata.json``) copied last, and renamed into place at the end: a reader of the
collector directory (``process-ci-results`` waits for the metadata file) never sees a half-copied
delivery, and a failure (connection dropped, disk full) leaves nothing behind. An existing target
is never replaced. Names from the host are checked before they become local paths (one that is
not UTF-8 fails the fetch with a message naming the byte); symbolic links on the host are not
followed (skipped, with a warning).
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import stat
from pathlib import Path, PurePosixPath

import paramiko

from ovsperf_common.metadata import METADATA_FILE
from ovsperf_common.resultdir import RESULTS_DIR_RE
from ovsperf_common.runner import one_line
from remote.errors import RemoteError
from remote.ssh import Session

log = logging.getLogger(__name__)

MAX_FILES = 100_000
"""Most files one results directory may hold [1]; more is not a VSperf run."""
MAX_BYTES = 64 * 1024**3
"""Most bytes one results directory may hold [B] (MoonGen logs of a long run are a few GiB)."""


def _safe(name: str) -> bool:
    """Return whether a directory entry name from the host can be a local file name as it is."""
    return name not in ("", ".", "..") and "/" not in name and "\0" not in name and name.isprintable()


def _walk(
    sftp: paramiko.SFTPClient, root: PurePosixPath, relative: PurePosixPath | None = None
) -> list[tuple[PurePosixPath, int, int]]:
    """Return (path relative to ``root``, mode, size) of every regular file below ``root``.

    :raises RemoteError: for an unsafe name, or more than :data:`MAX_FILES` files.
    """
    found: list[tuple[PurePosixPath, int, int]] = []
    relative = relative or PurePosixPath()
    for entry in sorted(sftp.listdir_attr(str(root / relative)), key=lambda e: e.filename):
        if not _safe(entry.filename):
            raise RemoteError(f"'{one_line(entry.filename)}' in {root / relative} is not a usable file name.")
        path = relative / entry.filename
        mode = entry.st_mode or 0
        if stat.S_ISDIR(mode):
            found += _walk(sftp, root, path)
        elif stat.S_ISREG(mode):
            found.append((path, mode, entry.st_size or 0))
        else:
            log.warning("Not fetching %s: not a regular file or directory.", root / path)
        if len(found) > MAX_FILES:
            raise RemoteError(f"{root} holds more than {MAX_FILES} files; not a results directory.")
    return found


def fetch_results(session: Session, remote_path: str, collector: Path) -> Path:
    """Copy the host's results directory ``remote_path`` into ``collector`` (module docstring).

    :returns: the delivered directory, ``collector/<results_...>``.
    :raises RemoteError: when the name is not a VSperf results directory's, the target exists, the
        directory is too large, or the copy fails (nothing is left in ``collector`` then).
    """
    source = PurePosixPath(remote_path)
    if not source.is_absolute() or not RESULTS_DIR_RE.match(source.name):
        raise RemoteError(
            f"{session.name} named '{one_line(remote_path)}' as its results; not an absolute "
            "results_<date>_<time> directory."
        )
    collector.mkdir(parents=True, exist_ok=True)
    target = collector / source.name
    if target.exists() or target.is_symlink():
        raise RemoteError(f"'{target}' exists already; a delivery is never replaced.")
    partial = collector / f".{source.name}.{secrets.token_hex(4)}.partial"
    sftp = session.sftp()
    try:
        files = _walk(sftp, source)
        total = sum(size for _, _, size in files)
        if total > MAX_BYTES:
            raise RemoteError(f"{source} holds {total} B, more than {MAX_BYTES} B.")
        # The metadata file last, as vsperf_test's rsync sends it (its presence means "complete").
        files.sort(key=lambda f: (f[0].name == METADATA_FILE, str(f[0])))
        partial.mkdir(mode=0o755)
        for relative, mode, _ in files:
            local = partial.joinpath(*relative.parts)
            local.parent.mkdir(parents=True, exist_ok=True)
            sftp.get(str(source / relative), str(local))
            local.chmod(0o755 if mode & 0o111 else 0o644)
        os.rename(partial, target)
    except UnicodeDecodeError as err:  # paramiko decodes SFTP file names as UTF-8, strictly
        shutil.rmtree(partial, ignore_errors=True)
        raise RemoteError(
            f"Cannot fetch {session.name}:{source}: a file name below it is not UTF-8 (it holds byte "
            f"0x{err.object[err.start]:02x}); rename it on the host. Nothing was delivered."
        ) from err
    except (OSError, paramiko.SSHException, EOFError, RemoteError) as err:
        shutil.rmtree(partial, ignore_errors=True)
        raise RemoteError(
            f"Cannot fetch {session.name}:{source} into {collector}: {one_line(err) or type(err).__name__}; "
            "nothing was delivered (the results stay on the host)."
        ) from err
    finally:
        sftp.close()
    log.info("Fetched %d files (%d B) from %s:%s into %s.", len(files), total, session.name, source, target)
    return target
