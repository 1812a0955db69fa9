"""Bound every wait by a monotonic deadline and report progress while waiting (STYLE.md §5)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")


class DeadlineExceededError(TimeoutError):
    """A wait ran out of time; the message names what was awaited and for how long."""


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


def run_within(timeout_s: float, what: str, call: Callable[[], T]) -> T:
    """Return ``call()``, or raise once ``timeout_s`` has passed, whatever ``call`` is waiting for.

    For client libraries whose timeouts hold per socket read only (xmlrpc through beaker-client,
    koji's requests session): a server that trickles one byte at a time could hold such a call
    for ever. ``call`` runs in a daemon thread; when the deadline passes, this returns at once and
    the thread is abandoned (its socket times out on its own, the process can still exit).

    :raises DeadlineExceededError: naming ``what`` when ``timeout_s`` [s] passes first.
    :raises BaseException: whatever ``call`` raised.
    """
    outcome: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(call())
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread below
            failure.append(err)

    worker = threading.Thread(target=target, name=f"deadline:{what}", daemon=True)
    worker.start()
    worker.join(max(timeout_s, 0.0))
    if worker.is_alive():
        raise DeadlineExceededError(f"Timed out after {timeout_s:.1f} s waiting for {what}.")
    if failure:
        raise failure[0]
    return outcome[0]
