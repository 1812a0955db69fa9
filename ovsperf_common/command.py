"""Run an external program with a deadline that holds whatever the program does.

Every subprocess the project starts to completion goes through :func:`run_command`: a missing
executable, a program that outlives its timeout (it and its process group are killed) and an
unreadable output all become :class:`CommandError` with one readable line, never a traceback or
a wait without end. Long-lived children (OVS, the generator) are managed by their owners.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from ovsperf_common.errors import OvsperfError


class CommandError(OvsperfError):
    """A program could not be run or did not finish in time; ``argv0`` names it."""

    def __init__(self, message: str, *, argv0: str) -> None:
        self.argv0 = argv0
        """The program that failed."""
        super().__init__(message)


def run_command(
    argv: Sequence[str | Path],
    *,
    timeout_s: float,
    what: str,
    env: Mapping[str, str] | None = None,
    input_text: str | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` to completion within ``timeout_s``; return it with its exit status and output.

    The program runs in its own process group, so a timeout kills whatever it started too.
    Output is decoded as UTF-8 with replacement characters. A non-zero exit status is not an
    error here: the caller reads ``returncode``.

    :param what: a phrase for messages, e.g. ``"createrepo_c on '/srv/repo'"``.
    :raises CommandError: when the executable is missing or not executable, or when the program is
        still running after ``timeout_s`` seconds (it is killed first).
    :raises ValueError: when ``timeout_s`` is not positive.
    """
    if timeout_s <= 0:
        raise ValueError(f"Timeout for {what} must be positive, got {timeout_s!r} s.")
    args = [str(a) for a in argv]
    try:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as err:
        raise CommandError(f"Cannot run {what}: '{args[0]}': {err.strerror}.", argv0=args[0]) from err
    try:
        out, err_out = proc.communicate(
            input=input_text.encode("utf-8") if input_text is not None else None, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise CommandError(
            f"{what} did not finish within {timeout_s:g} s and was stopped.", argv0=args[0]
        ) from None
    except BaseException:
        _kill_group(proc)
        raise
    return subprocess.CompletedProcess(
        args, proc.returncode, out.decode("utf-8", "replace"), err_out.decode("utf-8", "replace")
    )


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill ``proc``'s process group (started by us, ``start_new_session``) and reap ``proc``."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # an unkillable (D state) child: stop waiting, keep the deadline
        pass
