"""Put the tasks on a host and run one of them there, as restraint would under Beaker.

* :func:`upload`: copies what the tasks execute — ``beaker_tasks/`` and the Python packages they
  run on the host (``ovsperf_common``, ``vsperf_configs``, ``jobcreator``: ``vsperf-config`` and
  the ``python3 -m`` helpers) — over SFTP into a new run directory. The copy is made in a hidden
  sibling and renamed into place at the end (SFTP ``rename``, atomic on one file system), so a run
  never starts on a half-copied tree; an existing run directory is never replaced.
* :func:`run_task`: ``beaker_tasks/<task>/runtest.sh`` with the step's parameters in its
  environment (``env NAME=VALUE ...``, every word shell-quoted), as root (``sudo -n`` when the
  login user is not root), each output line to the terminal prefixed ``[host task]`` and to the
  host's log file, within a deadline.
"""

from __future__ import annotations

import logging
import re
import secrets
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TextIO

import paramiko

from ovsperf_common.runner import one_line
from remote.errors import RemoteError
from remote.plan import RemoteStep
from remote.ssh import Session, sudo_prefix

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[1]

UPLOADED = ("beaker_tasks", "ovsperf_common", "vsperf_configs", "jobcreator")
"""Top-level directories of the repository the tasks need on the host."""

PARAM_NAME_RE = re.compile(r"\A[A-Z][A-Z0-9_]{0,63}\Z")
"""A task parameter is an environment variable: upper case, as Beaker passes them."""


@dataclass(frozen=True)
class TaskOutcome:
    """How one task ended on one host."""

    task: str
    exit_status: int
    log_file: Path


def _files(root: Path) -> Iterator[Path]:
    """Yield the files under ``UPLOADED`` of ``root``, without caches and bytecode, sorted."""
    for top in UPLOADED:
        for path in sorted((root / top).rglob("*")):
            skip = "__pycache__" in path.parts or path.suffix == ".pyc" or path.is_symlink()
            if not skip and path.is_file():
                yield path


def upload(session: Session, remote_dir: str, *, local_root: Path = REPO_ROOT) -> int:
    """Copy the tasks and their helpers to ``remote_dir`` on the host (module docstring).

    :returns: the number of files copied.
    :raises RemoteError: when ``remote_dir`` is not an absolute path, already exists, or the
        copy fails (the hidden temporary copy is removed then).
    """
    target = PurePosixPath(remote_dir)
    if not target.is_absolute() or ".." in target.parts or not one_line(remote_dir) == remote_dir:
        raise RemoteError(f"The run directory '{one_line(remote_dir)}' is not an absolute path on the host.")
    temporary = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"
    sftp = session.sftp()
    try:
        try:
            sftp.stat(str(target))
        except FileNotFoundError:
            pass
        else:
            raise RemoteError(f"{session.name}:{target} exists already; a run directory is never replaced.")
        _mkdirs(sftp, target.parent)
        sftp.mkdir(str(temporary), mode=0o755)
        count = 0
        made = {temporary}
        for path in _files(local_root):
            relative = path.relative_to(local_root)
            destination = temporary.joinpath(*relative.parts)
            missing, parent = [], destination.parent
            while parent not in made:
                missing.append(parent)
                parent = parent.parent
            for directory in reversed(missing):
                sftp.mkdir(str(directory), mode=0o755)
                made.add(directory)
            sftp.put(str(path), str(destination))
            sftp.chmod(str(destination), stat.S_IMODE(path.stat().st_mode))
            count += 1
        sftp.posix_rename(str(temporary), str(target))
    except (OSError, paramiko.SSHException) as err:
        _remove_tree(session, temporary)
        raise RemoteError(f"Cannot copy the tasks to {session.name}:{target}: {one_line(err)}.") from err
    finally:
        sftp.close()
    log.info("Copied %d files to %s:%s.", count, session.name, target)
    return count


def _mkdirs(sftp: paramiko.SFTPClient, path: PurePosixPath) -> None:
    for directory in [*reversed(path.parents), path]:
        try:
            sftp.stat(str(directory))
        except FileNotFoundError:
            sftp.mkdir(str(directory), mode=0o755)


def _remove_tree(session: Session, path: PurePosixPath) -> None:
    """Remove our hidden temporary copy (best effort; its name is ours by construction)."""
    if not path.name.startswith(".") or not path.name.endswith(".tmp"):
        return
    try:
        session.run(["rm", "-rf", "--", str(path)], 60)
    except RemoteError as err:
        log.warning("Cannot remove %s on %s: %s", path, session.name, err)


def task_argv(session: Session, remote_dir: str, step: RemoteStep, extra: dict[str, str]) -> list[str]:
    """Return the argv that runs ``step`` on the host as root with its parameters in the environment.

    :raises RemoteError: when a parameter name is not an environment variable name.
    """
    env = [*step.params, *sorted(extra.items())]
    for name, _ in env:
        if not PARAM_NAME_RE.match(name):
            raise RemoteError(f"Task parameter '{one_line(name)}' of {step.task} is not NAME in [A-Z0-9_].")
    script = str(PurePosixPath(remote_dir) / "beaker_tasks" / step.task / "runtest.sh")
    return [*sudo_prefix(session), "env", *(f"{k}={v}" for k, v in env), "bash", script]


def run_task(
    session: Session,
    remote_dir: str,
    step: RemoteStep,
    log_file: Path,
    *,
    timeout_s: float,
    extra: dict[str, str] | None = None,
    console: TextIO | None = None,
) -> TaskOutcome:
    """Run one task on the host; stream its lines to ``console`` (stderr) and append them to ``log_file``.

    :param extra: more environment, e.g. ``RSTRNT_REBOOTCOUNT`` after a reboot.
    :raises RemoteError: when the task does not end within ``timeout_s`` (it is stopped with its
        children) or the connection drops.
    """
    out = console if console is not None else sys.stderr
    prefix = f"[{session.name} {step.task}]"
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("a", encoding="utf-8") as handle:

        def line(stream: str, text: str) -> None:
            shown = one_line(text)
            handle.write(f"{shown}\n" if stream == "stdout" else f"stderr: {shown}\n")
            handle.flush()
            out.write(f"{prefix} {shown}\n")
            out.flush()

        argv = task_argv(session, remote_dir, step, extra or {})
        handle.write(f"# {one_line(' '.join(argv))}\n")
        result = session.run(argv, timeout_s, line)
    return TaskOutcome(step.task, result.exit_status, log_file)
