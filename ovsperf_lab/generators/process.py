"""Run one DPDK generator process: start it in its own session, stop it by PID, remove its files.

Shared by the backends that drive a DPDK program over stdin/stdout
(:mod:`~ovsperf_lab.generators.dpdk`, :mod:`~ovsperf_lab.generators.testpmd`). A
:class:`DpdkProcess` starts the command with pipes in a new session, keeps the last lines of its
stderr (when stderr is not merged into stdout), stops it (the program's quit line, then SIGTERM,
then SIGKILL, always by PID, each with a deadline) and removes what DPDK leaves under its EAL file
prefix: ``<hugepage_dir>/<file_prefix>map_*`` and ``<runtime_dir>/<file_prefix>``.
:class:`ProcessGenerator` is the base of a backend that owns one such process.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import signal
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Self

from ovsperf_lab.errors import LabError, TrafficGeneratorError
from ovsperf_lab.generators.api import MAX_RING_SIZE, MIN_RING_SIZE, TrafficGenerator

log = logging.getLogger(__name__)

QUIT_TIMEOUT_S = 10.0
"""Time a process has to exit after its quit line [s]."""
TERM_TIMEOUT_S = 5.0
"""Time a process has to exit after SIGTERM, and to be reaped after SIGKILL [s]."""
STDERR_TAIL_LINES = 30
"""Lines of stderr kept for error messages [1]."""


@dataclass(frozen=True)
class ProcessKind:
    """How one backend's program is driven: the same for every process of that backend."""

    label: str
    """Its name in messages (``'testpmd'``: "testpmd PID 123 exited …")."""
    quit_line: str
    """What :meth:`DpdkProcess.stop` writes first (``'quit\\n'``)."""
    text: bool
    """Whether the pipes carry ``str`` (line-buffered) rather than ``bytes``."""
    merge_stderr: bool
    """Whether stderr goes into stdout; otherwise a thread of its own reads it."""


class StartConfig(Protocol):
    """The fields every DPDK backend's configuration has (``GeneratorConfig``, ``FlowgenConfig``)."""

    @property
    def file_prefix(self) -> str | None:
        """EAL ``--file-prefix``; ``None``: the backend makes one."""

    @property
    def queues(self) -> int:
        """RX and TX queues per port [1]."""

    @property
    def ring_size(self) -> int | None:
        """TX descriptors per queue [descriptors]; ``None``: the program's default."""

    @property
    def memory_mb(self) -> int:
        """EAL ``-m`` [MiB]."""

    @property
    def startup_timeout_s(self) -> float:
        """Time allowed for start-up [s]."""

    @property
    def reply_margin_s(self) -> float:
        """Time allowed for one answer [s] (beyond what the command takes)."""

    @property
    def hugepage_dir(self) -> Path:
        """Hugetlbfs mount where DPDK would leave ``<file_prefix>map_*`` files."""

    @property
    def runtime_dir(self) -> Path:
        """DPDK runtime directory root."""


def check_start_fields(config: StartConfig) -> None:
    """Check the fields every DPDK backend's configuration has (``None``: the backend's default).

    ``file_prefix`` a file name; ``queues`` an integer in [1, 8]; ``ring_size`` in
    [:data:`~ovsperf_lab.generators.api.MIN_RING_SIZE`, :data:`~ovsperf_lab.generators.api.MAX_RING_SIZE`]
    [descriptors]; ``memory_mb`` at least 16 [MiB]; the two timeouts positive [s].

    :raises TrafficGeneratorError: naming the first field out of range and its value.
    """
    prefix, queues, ring = config.file_prefix, config.queues, config.ring_size
    if prefix is not None and (not prefix or "/" in prefix):
        raise TrafficGeneratorError(f"Field 'file_prefix' is not a file name: {prefix!r}.")
    if type(queues) is not int or not 1 <= queues <= 8:
        raise TrafficGeneratorError(f"Field 'queues' must be an integer in [1, 8], got {queues!r}.")
    if ring is not None and (type(ring) is not int or not MIN_RING_SIZE <= ring <= MAX_RING_SIZE):
        raise TrafficGeneratorError(
            f"Field 'ring_size' must be in [{MIN_RING_SIZE}, {MAX_RING_SIZE}], got {ring!r}."
        )
    if config.memory_mb < 16:
        raise TrafficGeneratorError(f"Field 'memory_mb' must be >= 16, got {config.memory_mb!r}.")
    for name in ("startup_timeout_s", "reply_margin_s"):
        if not getattr(config, name) > 0:
            raise TrafficGeneratorError(f"Field {name!r} must be positive, got {getattr(config, name)!r}.")


class DpdkProcess:
    """One started DPDK program with pipes to its stdin and stdout.

    ``kind`` says how it is driven; ``program`` (its binary) and ``file_prefix`` (its EAL prefix)
    name it in messages, and ``config``'s ``hugepage_dir`` and ``runtime_dir`` say where
    :meth:`stop` looks for what it leaves behind.

    :raises TrafficGeneratorError: when the program cannot be started (the message names ``program``).
    """

    def __init__(
        self, cmd: Sequence[str], kind: ProcessKind, config: StartConfig, *, program: str, file_prefix: str
    ) -> None:
        label, text, merge_stderr = kind.label, kind.text, kind.merge_stderr
        self.label = label
        self.file_prefix = file_prefix
        self.hugepage_dir = config.hugepage_dir
        self.runtime_dir = config.runtime_dir
        self.quit_line = kind.quit_line
        self.stopped = False
        """Whether :meth:`stop` has run (the process is gone and its files removed)."""
        self.remote_stop: Callable[[], None] | None = None
        """For a program on a TG host (the local process is its ssh client): ends the remote
        process by its PID and removes its DPDK files there, instead of the local removal; called
        at most once, when the quit line is not answered or when :meth:`stop` cleans up."""
        self._remote_stopped = False
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        log.info("Starting %s (file prefix '%s').", label, file_prefix)
        log.debug("%s command: %s", label, " ".join(cmd))
        try:
            self.proc = subprocess.Popen(
                list(cmd),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                text=text,
                bufsize=1 if text else -1,
                start_new_session=True,
            )
        except OSError as err:
            raise TrafficGeneratorError(f"Cannot start {label} '{program}': {err}.") from err
        self.pid: int = self.proc.pid
        self._stderr_thread: threading.Thread | None = None
        if not merge_stderr:
            self._stderr_thread = threading.Thread(
                target=self._pump_stderr, daemon=True, name=f"{label}-err-{self.pid}"
            )
            self._stderr_thread.start()

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
            line = line.rstrip("\n")
            self._stderr.append(line)
            log.debug("%s[%d]: %s", self.label, self.pid, line)

    def stderr_tail(self) -> list[str]:
        """Return the last :data:`STDERR_TAIL_LINES` lines of stderr (none when merged into stdout)."""
        return list(self._stderr)

    @property
    def returncode(self) -> int | None:
        """Return the process's exit code, ``None`` while it runs."""
        return self.proc.poll()

    def kill(self) -> None:
        """Send SIGKILL by PID if it still runs, and reap it (at most :data:`TERM_TIMEOUT_S`)."""
        if self.proc.poll() is None:
            log.warning("Killing %s PID %d.", self.label, self.pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=TERM_TIMEOUT_S)

    def stop(self) -> None:
        """Stop the process and remove its DPDK files; idempotent.

        Writes :attr:`quit_line` and closes stdin, waits :data:`QUIT_TIMEOUT_S`; then SIGTERM and
        :data:`TERM_TIMEOUT_S`; then SIGKILL — always by PID. Afterwards removes
        ``<hugepage_dir>/<file_prefix>map_*`` and ``<runtime_dir>/<file_prefix>``.
        """
        if self.stopped:
            return
        self.stopped = True
        proc = self.proc
        stdin = proc.stdin
        if proc.poll() is None and stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                stdin.write(self.quit_line if isinstance(stdin, io.TextIOBase) else self.quit_line.encode())
                stdin.flush()
        with contextlib.suppress(OSError, ValueError):
            if stdin is not None:
                stdin.close()
        try:
            proc.wait(timeout=QUIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            if self.remote_stop is not None:
                log.warning(
                    "%s PID %d ignored its quit command; ending it on the TG host.", self.label, self.pid
                )
                self._stop_remote()
            log.warning("%s PID %d ignored its quit command; sending SIGTERM.", self.label, self.pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=TERM_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.kill()
        if proc.returncode not in (0, None):
            log.warning("%s PID %d exited with code %s.", self.label, self.pid, proc.returncode)
        self.remove_leftovers()

    def _stop_remote(self) -> None:
        """Run :attr:`remote_stop` once; a TG that cannot be reached is logged, not raised (teardown)."""
        if self.remote_stop is None or self._remote_stopped:
            return
        self._remote_stopped = True
        try:
            self.remote_stop()
        except LabError as err:
            log.warning("%s: %s", self.label, err)

    def remove_leftovers(self) -> None:
        """Remove ``<hugepage_dir>/<file_prefix>map_*`` and ``<runtime_dir>/<file_prefix>``.

        When the program runs on a TG host, :attr:`remote_stop` removes them there instead.
        """
        if self.remote_stop is not None:
            self._stop_remote()
            return
        for path in sorted(self.hugepage_dir.glob(f"{self.file_prefix}map_*")):
            log.info("Removing leftover hugepage file '%s'.", path)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        runtime = self.runtime_dir / self.file_prefix
        if runtime.is_dir():
            shutil.rmtree(runtime, ignore_errors=True)

    def died(self, what: str, output_tail: Callable[[], list[str]] | None = None) -> TrafficGeneratorError:
        """Return the error for a process found gone while ``what``, after stopping and cleaning up.

        The message has its exit code (``None`` if it is not reaped within :data:`TERM_TIMEOUT_S`)
        and its last five non-blank lines of ``output_tail()`` (default: :meth:`stderr_tail`).
        """
        try:
            code: int | None = self.proc.wait(timeout=TERM_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = None
        self.stop()
        if self._stderr_thread is not None:
            self._stderr_thread.join(timeout=TERM_TIMEOUT_S)  # its last lines explain the exit
        lines = [line.strip() for line in (output_tail or self.stderr_tail)() if line.strip()][-5:]
        return TrafficGeneratorError(
            f"{self.label} PID {self.pid} exited (code {code}) while {what}: "
            f"{'; '.join(lines) if lines else 'no output'}"
        )


class ProcessGenerator(TrafficGenerator):
    """A traffic generator owning one :class:`DpdkProcess` (its ``__init__`` sets ``_process``, ``pid``)."""

    _process: DpdkProcess

    def close(self) -> None:
        """Stop the process and remove what it may leave behind; idempotent (:meth:`DpdkProcess.stop`).

        Sends its quit command and waits; then SIGTERM, then SIGKILL, always by PID. Afterwards
        removes ``<hugepage_dir>/<file_prefix>map_*`` and ``<runtime_dir>/<file_prefix>``.
        """
        self._process.stop()

    @property
    def returncode(self) -> int | None:
        """Return the process's exit code, ``None`` while it runs."""
        return self._process.returncode

    def __enter__(self) -> Self:
        return self
