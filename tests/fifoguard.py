"""A FIFO given as an input file, and a watchdog that frees a reader blocked on it (so tests never hang)."""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def fifo_watchdog(fifo: Path, timeout_s: float = 5.0) -> Iterator[list[bool]]:
    """Create the FIFO ``fifo``; yield a list that holds True once the watchdog had to free a reader.

    After ``timeout_s`` [s] the watchdog keeps opening the FIFO's write end and closing it: a reader
    blocked in ``open()`` or ``read()`` sees end-of-file and goes on, so code that waits on the FIFO
    (the defect under test) ends instead of hanging; the test then asserts the list is still empty.
    """
    os.mkfifo(fifo)
    freed: list[bool] = []
    done = threading.Event()

    def free_readers() -> None:
        if done.wait(timeout_s):
            return
        while not done.is_set():
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as err:
                if err.errno not in (errno.ENXIO, errno.ENOENT):  # ENXIO: no reader right now
                    raise
            else:
                freed.append(True)
                os.close(fd)
            done.wait(0.05)

    watchdog = threading.Thread(target=free_readers, name="fifo-watchdog", daemon=True)
    watchdog.start()
    try:
        yield freed
    finally:
        done.set()
        watchdog.join(5)
