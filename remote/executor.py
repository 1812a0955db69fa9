"""Put the tasks on a host and run one of them there, as restraint would under Beaker.

* :func:`upload`: copies what the tasks execute — ``beaker_tasks/`` and the Python packages they
  run on the host (``ovsperf_common``, ``ovsperf_catalog``, ``vsperf_configs``: ``vsperf-config``
  and the ``python3 -m`` helpers), plus what a task of the plan needs beyond them
  (:data:`TASK_UPLOADS`: the engine ``ovsperf``'s lab and generator source) — over SFTP into a new
  run directory. The copy is made in a hidden
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
import shlex
import stat
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol

import paramiko

from ovsperf_common.runner import one_line
from remote.errors import RemoteError
from remote.plan import RemoteStep
from remote.ssh import Session, sudo_prefix

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[1]

UPLOADED = ("beaker_tasks", "ovsperf_common", "ovsperf_catalog", "vsperf_configs")
"""Top-level directories of the repository the tasks need on the host."""

TASK_UPLOADS = {
    "build_trafficgen": ("trafficgen",),
    "ovsperf_test": ("ovsperf_lab", "templates", "pyproject.toml", "packaging/constraints.txt"),
}
"""What a task needs beyond :data:`UPLOADED`, by task: directories or files of the repository
(``build_trafficgen`` builds ``trafficgen/``; ``ovsperf_test`` runs ``ovsperf_lab`` and its
templates from a venv whose requirements come from ``pyproject.toml``, pinned by the constraints)."""

NOT_UPLOADED = (("trafficgen", "build"),)
"""Path prefixes never copied: the generator's local build (the host builds its own)."""

PARAM_NAME_RE = re.compile(r"\A[A-Z][A-Z0-9_]{0,63}\Z")
"""A task parameter is an environment variable: upper case, as Beaker passes them."""


class LineSink(Protocol):
    """Where a task's prefixed lines go (a text stream such as ``sys.stderr``)."""

    def write(self, text: str, /) -> int:
        """Write ``text``."""

    def flush(self) -> None:
        """Flush."""


@dataclass(frozen=True)
class TaskOutcome:
    """How one task ended on one host."""

    task: str
    exit_status: int
    log_file: Path


def uploaded_tops(tasks: Iterable[str] = ()) -> tuple[str, ...]:
    """Return what :func:`upload` copies for a plan of ``tasks``: :data:`UPLOADED`, then their extras."""
    tops = list(UPLOADED)
    for task in tasks:
        tops += [top for top in TASK_UPLOADS.get(task, ()) if top not in tops]
    return tuple(tops)


def upload_files(root: Path, tasks: Iterable[str] = ()) -> Iterator[Path]:
    """Yield the files :func:`upload` copies for a plan of ``tasks``, sorted per top.

    Those of :func:`uploaded_tops` under ``root`` (a top that is a file: itself), without caches,
    bytecode, symbolic links or :data:`NOT_UPLOADED`.
    """
    for top in uploaded_tops(tasks):
        start = root / top
        paths = [start] if start.is_file() else sorted(start.rglob("*"))
        for path in paths:
            relative = path.relative_to(root).parts
            skip = (
                "__pycache__" in path.parts
                or path.suffix == ".pyc"
                or path.is_symlink()
                or any(relative[: len(prefix)] == prefix for prefix in NOT_UPLOADED)
            )
            if not skip and path.is_file():
                yield path


REBOOT_REQUEST = "reboot-requested"
"""File in the run directory the ``rstrnt-reboot`` stand-in creates: the task asked for a reboot."""


def reboot_shim(remote_dir: str) -> str:
    """Return the ``bin/rstrnt-reboot`` the run directory gets: it records the request and returns.

    Under restraint ``rstrnt-reboot`` reboots and the task runs again with ``RSTRNT_REBOOTCOUNT``
    one higher; here the task exits after it (``task_reboot``), and the runner reboots the host
    over SSH and runs the task again (docs/remote.md).
    """
    request = shlex.quote(str(PurePosixPath(remote_dir) / REBOOT_REQUEST))
    return (
        "#!/bin/sh\n"
        "# ovsperf-remote: the task asks for a reboot; the runner reboots the host over SSH.\n"
        f": > {request}\n"
    )


UPLOADED_INVENTORY = "inventory.yaml"
"""Name of the user's local inventory in the run directory (``INVENTORY=inventory.yaml``: the tasks
resolve a relative inventory against the run directory, ``task_repo_path``)."""


def upload(
    session: Session,
    remote_dir: str,
    *,
    local_root: Path = REPO_ROOT,
    inventory: Path | None = None,
    tasks: Iterable[str] = (),
) -> int:
    """Copy the tasks and their helpers to ``remote_dir`` on the host (module docstring).

    :param tasks: the host's steps' task names: what they need beyond :data:`UPLOADED` is copied too
        (:data:`TASK_UPLOADS`).

    Also writes ``bin/rstrnt-reboot`` (:func:`reboot_shim`), first on the tasks' ``PATH``, and
    copies ``inventory`` (a local file) to :data:`UPLOADED_INVENTORY`.

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
        for path in upload_files(local_root, tasks):
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
        if inventory is not None:
            sftp.put(str(inventory), str(temporary / UPLOADED_INVENTORY))
            sftp.chmod(str(temporary / UPLOADED_INVENTORY), 0o644)
        sftp.mkdir(str(temporary / "bin"), mode=0o755)
        with sftp.open(str(temporary / "bin" / "rstrnt-reboot"), "w") as handle:
            handle.write(reboot_shim(str(target)))
        sftp.chmod(str(temporary / "bin" / "rstrnt-reboot"), 0o755)
        sftp.posix_rename(str(temporary), str(target))
    except (OSError, paramiko.SSHException) as err:
        _remove_tree(session, temporary)
        raise RemoteError(f"Cannot copy the tasks to {session.name}:{target}: {one_line(err)}.") from err
    finally:
        sftp.close()
    log.info("Copied %d files to %s:%s.", count, session.name, target)
    return count


def _mkdirs(sftp: paramiko.SFTPClient, path: PurePosixPath) -> None:
    """Make ``path`` and its parents.

    One made meanwhile by someone else is fine (SFTP says only "Failure" for an existing directory).
    """
    for directory in [*reversed(path.parents), path]:
        try:
            sftp.stat(str(directory))
        except FileNotFoundError:
            try:
                sftp.mkdir(str(directory), mode=0o755)
            except OSError:
                if not stat.S_ISDIR(sftp.stat(str(directory)).st_mode or 0):
                    raise


def _remove_tree(session: Session, path: PurePosixPath) -> None:
    """Remove our hidden temporary copy (best effort; its name is ours by construction)."""
    if not path.name.startswith(".") or not path.name.endswith(".tmp"):
        return
    try:
        session.run(["rm", "-rf", "--", str(path)], 60)
    except RemoteError as err:
        log.warning("Cannot remove %s on %s: %s", path, session.name, err)


DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""The tasks' ``PATH`` after the run directory's ``bin`` (root's usual one)."""


def task_argv(session: Session, remote_dir: str, step: RemoteStep, extra: dict[str, str]) -> list[str]:
    """Return the argv that runs ``step`` on the host as root with its parameters in the environment.

    ``PATH`` starts with the run directory's ``bin`` (``rstrnt-reboot``), then ``extra``'s ``PATH``
    or :data:`DEFAULT_PATH`; ``extra`` comes after the step's parameters (``--env`` may not change
    them: refused by the caller).

    :raises RemoteError: when a parameter name is not an environment variable name.
    """
    more = dict(extra)
    more["PATH"] = f"{PurePosixPath(remote_dir) / 'bin'}:{more.get('PATH', DEFAULT_PATH)}"
    env = [*step.params, *sorted(more.items())]
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
    console: LineSink | None = None,
    cancel: threading.Event | None = None,
) -> TaskOutcome:
    """Run one task on the host; stream its lines to ``console`` (stderr) and append them to ``log_file``.

    :param extra: more environment, e.g. ``RSTRNT_REBOOTCOUNT`` after a reboot.
    :param cancel: stops the task (with its children) when set (:meth:`Session.run`).
    :raises CancelledError: when ``cancel`` was set.
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
        result = session.run(argv, timeout_s, line, cancel=cancel)
    return TaskOutcome(step.task, result.exit_status, log_file)
