"""Talk to interactive ``dpdk-testpmd`` (``-i``) over its pipes: commands in, answers up to the prompt out.

A thread reads testpmd's output (stdout and stderr merged) into a buffer of at most
:data:`MAX_BUFFER_CHARS`; :meth:`Console.answers` writes commands in one go and cuts one answer
per command at each ``testpmd> `` prompt, each within a deadline (progress logged every
:data:`PROGRESS_EVERY_S`). An answer must start with the command's echo (testpmd's ``cmdline``
echoes what it reads): text before the echo (an asynchronous event line) is skipped and logged, an
answer without it is an error; an answer with an error line (:func:`~ovsperf_lab.generators.
testpmd_text.error_lines`) is an error. A testpmd that misses a deadline is killed by PID.
"""

from __future__ import annotations

import codecs
import logging
import os
import threading
import time

from ovsperf_common.deadline import Deadline
from ovsperf_lab.errors import TrafficGeneratorError
from ovsperf_lab.generators.process import DpdkProcess
from ovsperf_lab.generators.testpmd_text import error_lines, excerpt

log = logging.getLogger(__name__)

PROMPT = "testpmd> "
"""What interactive testpmd prints when it is ready for the next command."""

MAX_BUFFER_CHARS = 1 << 20
"""Most output kept while awaiting a prompt [characters]: more is an error (a runaway testpmd)."""

PROGRESS_EVERY_S = 60.0
"""Interval of the "still waiting" log lines of a long wait [s]."""

_TAIL_CHARS = 4000


class _Output:
    """What one testpmd process printed, filled by :meth:`pump`'s thread."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.buffer = ""
        """Output not yet consumed by an answer."""
        self.scanned = 0
        """Characters of :attr:`buffer` already searched for a prompt (none there)."""
        self.tail = ""
        """The last output, for error messages."""
        self.eof = False
        """Whether the process closed its output (it exited)."""
        self.overflow = False
        """Whether more than :data:`MAX_BUFFER_CHARS` came without a prompt (the rest was dropped)."""

    def pump(self, fd: int, pid: int) -> None:
        """Read ``fd`` until end of file (runs in its own thread)."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            text = decoder.decode(chunk, final=not chunk)
            with self.cond:
                if len(self.buffer) + len(text) > MAX_BUFFER_CHARS:
                    self.overflow = True
                else:
                    self.buffer += text
                self.tail = (self.tail + text)[-_TAIL_CHARS:]
                self.eof = not chunk
                self.cond.notify_all()
            if text:
                log.debug("testpmd[%d]: %s", pid, text.rstrip("\n"))
            if not chunk:
                return

    def take_answer(self) -> str | None:
        """Return and consume the output up to the next prompt, ``None`` when there is none yet.

        Searches only what came since the last search (the caller holds :attr:`cond`).
        """
        at = self.buffer.find(PROMPT, max(self.scanned - len(PROMPT) + 1, 0))
        if at < 0:
            self.scanned = len(self.buffer)
            return None
        answer, self.buffer = self.buffer[:at], self.buffer[at + len(PROMPT) :]
        self.scanned = 0
        return answer


class Console:
    """The command line of one running interactive testpmd (``process``, stdout and stderr merged).

    ``reply_timeout_s`` bounds each answer [s].
    """

    def __init__(self, process: DpdkProcess, reply_timeout_s: float) -> None:
        self.process = process
        self.reply_timeout_s = reply_timeout_s
        self._out = _Output()
        self.answered_at: list[float] = []
        """``time.monotonic()`` when each answer of the last :meth:`answers` call arrived [s]."""
        assert process.proc.stdout is not None
        threading.Thread(
            target=self._out.pump,
            args=(process.proc.stdout.fileno(), process.pid),
            daemon=True,
            name=f"testpmd-out-{process.pid}",
        ).start()

    def tail(self) -> list[str]:
        """Return testpmd's last output lines (stdout and stderr), for error messages."""
        with self._out.cond:
            return self._out.tail.splitlines()

    def until_prompt(self, deadline: Deadline, what: str) -> str:
        """Return the output up to the next prompt, waiting at most until ``deadline``.

        Logs progress every :data:`PROGRESS_EVERY_S` [s].

        :raises TrafficGeneratorError: on timeout or more than :data:`MAX_BUFFER_CHARS` of output
            without a prompt (testpmd is killed either way), or when it exits.
        """
        out = self._out
        next_progress_s = PROGRESS_EVERY_S
        with out.cond:
            while True:
                answer = out.take_answer()
                if answer is not None:
                    return answer
                if out.eof or out.overflow or deadline.expired():
                    break
                out.cond.wait(max(min(deadline.remaining_s(), next_progress_s - deadline.elapsed_s()), 0.001))
                if deadline.elapsed_s() >= next_progress_s and not deadline.expired():
                    log.info(
                        "Still waiting for %s: %.0f s elapsed, %.0f s left.",
                        deadline.what,
                        deadline.elapsed_s(),
                        deadline.remaining_s(),
                    )
                    next_progress_s += PROGRESS_EVERY_S
            eof, overflow = out.eof and not out.overflow, out.overflow
        if eof:
            raise self.process.died(what, self.tail)
        self.process.kill()
        self.process.stop()
        if overflow:
            last = excerpt("\n".join(self.tail()[-5:]))
            raise TrafficGeneratorError(
                f"testpmd PID {self.process.pid} printed more than {MAX_BUFFER_CHARS} characters without "
                f"a prompt while {what}; testpmd was killed. Its last output: {last}."
            )
        raise TrafficGeneratorError(
            f"Timed out after {deadline.elapsed_s():.1f} s waiting for {deadline.what}; testpmd was killed."
        )

    def answers(self, *lines: str) -> list[str]:
        """Send ``lines`` in one write and return each one's answer (its echo removed).

        Each answer must come within :attr:`reply_timeout_s` [s], start with its command's echo
        (text before the echo is skipped) and hold no error line.

        :raises TrafficGeneratorError: when testpmd is closed, exits, does not answer in time (it
            is then killed), or an answer lacks its echo or has an error line (quoted; testpmd
            keeps running).
        """
        if self.process.stopped:
            raise TrafficGeneratorError(f"testpmd PID {self.process.pid} is already closed.")
        stdin = self.process.proc.stdin
        assert stdin is not None
        try:
            stdin.write("".join(f"{line}\n" for line in lines).encode())
            stdin.flush()
        except (BrokenPipeError, OSError):
            raise self.process.died(f"sending '{lines[0]}'", self.tail) from None
        pid = self.process.pid
        raw = []
        self.answered_at = []
        for line in lines:
            raw.append(
                self.until_prompt(
                    Deadline.in_seconds(self.reply_timeout_s, f"testpmd PID {pid} to answer '{line}'"),
                    f"answering '{line}'",
                )
            )
            self.answered_at.append(time.monotonic())
        return [answer_of(line, out) for line, out in zip(lines, raw, strict=True)]

    def exchange(self, *lines: str) -> str:
        """Send ``lines`` in one write and return the answer to the last one (see :meth:`answers`)."""
        return self.answers(*lines)[-1]


def answer_of(command: str, output: str) -> str:
    """Return the answer to ``command`` in ``output`` (what came before the next prompt), echo removed.

    ``output`` starts with the echo of ``command``; a line before it (an asynchronous event such as
    a link state change) is skipped and logged.

    :raises TrafficGeneratorError: quoting ``output`` when it has no echo of ``command``, or the
        answer has an error line.
    """
    lines = output.split("\n")
    try:
        at = [line.strip() for line in lines].index(command)
    except ValueError:
        raise TrafficGeneratorError(
            f"testpmd's output before the prompt has no echo of '{command}': {excerpt(output)}."
        ) from None
    if at:
        skipped = excerpt("\n".join(lines[:at]))
        log.info("Skipped testpmd output before the echo of '%s': %s", command, skipped)
    answer = "\n".join(lines[at + 1 :])
    errors = error_lines(answer)
    if errors:
        raise TrafficGeneratorError(
            f"testpmd refused '{command}': {excerpt(errors[0])}; its answer: {excerpt(answer)}."
        )
    return answer
