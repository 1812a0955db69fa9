"""Bound every wait by a monotonic deadline and report progress while waiting (STYLE.md §5)."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from ovsperf_common.errors import OvsperfError

T = TypeVar("T")


class DeadlineExceededError(TimeoutError):
    """A wait ran out of time; the message names what was awaited and for how long."""


class StopRequestedError(OvsperfError):
    """A wait was given up because a stop was requested (SIGTERM, SIGINT); the message names it."""


@dataclass
class Deadline:
    """A point in ``time.monotonic()`` time after which waiting for ``what`` must stop.

    Create with :meth:`in_seconds`. ``what`` is a phrase for messages, e.g.
    ``"OVS vhost-user port 'dpdkvhostuser0' to come up"``.
    """

    what: str
    """What is awaited, for log and error messages."""
    timeout_s: float
    """Total allowed time [s]."""
    start: float = field(default_factory=time.monotonic)
    """``time.monotonic()`` at creation [s]."""

    @classmethod
    def in_seconds(cls, timeout_s: float, what: str) -> Deadline:
        """Return a deadline ``timeout_s`` seconds from now.

        :raises ValueError: when ``timeout_s`` is not positive.
        """
        if timeout_s <= 0:
            raise ValueError(f"Timeout for {what} must be positive, got {timeout_s!r} s.")
        return cls(what=what, timeout_s=timeout_s)

    def elapsed_s(self) -> float:
        """Return the time since creation [s]."""
        return time.monotonic() - self.start

    def remaining_s(self) -> float:
        """Return the time left, never negative [s]."""
        return max(0.0, self.timeout_s - self.elapsed_s())

    def expired(self) -> bool:
        """Return whether the deadline has passed."""
        return self.remaining_s() <= 0.0

    def check(self) -> None:
        """Raise if the deadline has passed.

        :raises DeadlineExceededError: naming ``what`` and the time waited.
        """
        if self.expired():
            raise DeadlineExceededError(f"Timed out after {self.elapsed_s():.1f} s waiting for {self.what}.")

    def poll(
        self,
        probe: Callable[[], T | None],
        *,
        interval_s: float = 0.5,
        log: logging.Logger | None = None,
        progress_every_s: float = 60.0,
    ) -> T:
        """Call ``probe`` until it returns something other than ``None``; return that.

        Sleeps ``interval_s`` between calls and logs elapsed/remaining time at INFO every
        ``progress_every_s`` seconds on ``log``.

        :raises DeadlineExceededError: when the deadline passes first.
        """
        next_progress = progress_every_s
        while True:
            value = probe()
            if value is not None:
                return value
            self.check()
            if log is not None and self.elapsed_s() >= next_progress:
                log.info(
                    "Still waiting for %s: %.0f s elapsed, %.0f s left.",
                    self.what,
                    self.elapsed_s(),
                    self.remaining_s(),
                )
                next_progress += progress_every_s
            time.sleep(min(interval_s, max(self.remaining_s(), 0.01)))


MAX_LOAD_FACTOR = 4.0
"""Most a wait is stretched for a loaded machine [1] (load-scaled waits stay bounded)."""


def load_per_cpu() -> tuple[float, int] | None:
    """Return (1-minute load average, online CPUs) of this machine, or ``None`` when unknown."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return None
    return load, os.cpu_count() or 1


def load_scaled_timeout(timeout_s: float, max_factor: float = MAX_LOAD_FACTOR) -> float:
    """Return ``timeout_s`` stretched by the machine's load: × load average per CPU, in [1, ``max_factor``].

    For waits whose length depends on how busy the machine is (a daemon starting, a socket
    appearing): at load average 7 on 2 CPUs a 30 s wait becomes 105 s; an idle machine keeps
    30 s; no load makes it longer than ``max_factor`` × ``timeout_s`` [s].
    """
    known = load_per_cpu()
    if known is None:
        return timeout_s
    load, cpus = known
    return timeout_s * min(max_factor, max(1.0, load / cpus))


def overload_note() -> str:
    """Return a sentence saying the machine is overloaded now (load average above its CPUs), or ``""``.

    Appended to a load-scaled wait's timeout message: the wait may have failed because the
    machine was too busy, not because what was awaited is broken.
    """
    known = load_per_cpu()
    if known is None or known[0] <= known[1]:
        return ""
    load, cpus = known
    return (
        f" The machine was overloaded (load average {load:.1f} on {cpus} CPUs; the wait allowed up to "
        f"{MAX_LOAD_FACTOR:g}× its time for load): retry when it is less busy."
    )


def run_within(
    timeout_s: float,
    what: str,
    call: Callable[[], T],
    *,
    cancel: Callable[[], None] | None = None,
    stop_requested: Callable[[], bool] | None = None,
    poll_s: float = 0.1,
) -> T:
    """Return ``call()``, or raise once ``timeout_s`` has passed, whatever ``call`` is waiting for.

    For client libraries whose timeouts hold per socket read only (xmlrpc through beaker-client,
    koji's requests session, smtplib): a server that trickles one byte or one line at a time could
    hold such a call for ever. ``call`` runs in a daemon thread; when the deadline passes, this
    returns at once and the thread is abandoned (its socket times out on its own, the process can
    still exit). ``cancel`` is then called (e.g. to shut the call's socket down, so that the thread
    ends too), also when the wait ends early: ``stop_requested()`` (asked every ``poll_s`` [s],
    e.g. a SIGTERM handler's flag) returned true, or an exception (``KeyboardInterrupt``) stopped it.

    :raises DeadlineExceededError: naming ``what`` when ``timeout_s`` [s] passes first.
    :raises StopRequestedError: naming ``what`` when ``stop_requested()`` returned true first.
    :raises BaseException: whatever ``call`` raised.
    """
    outcome: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(call())
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread below
            failure.append(err)

    deadline = Deadline(what=what, timeout_s=max(timeout_s, 0.0))
    worker = threading.Thread(target=target, name=f"deadline:{what}", daemon=True)
    worker.start()
    finished = False
    try:
        while True:
            worker.join(min(poll_s, deadline.remaining_s()) if stop_requested else deadline.remaining_s())
            if not worker.is_alive():
                finished = True
                break
            if stop_requested is not None and stop_requested():
                raise StopRequestedError(f"Stopped on request after {deadline.elapsed_s():.1f} s of {what}.")
            if deadline.expired():
                raise DeadlineExceededError(f"Timed out after {timeout_s:.1f} s waiting for {what}.")
    finally:
        if not finished and cancel is not None:
            cancel()
    if failure:
        raise failure[0]
    return outcome[0]
