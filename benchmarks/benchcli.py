"""What every benchmark script shares: its option parser and how it ends when it is told to stop.

A benchmark is run as a script (``.venv/bin/python benchmarks/bench_x.py``, see each docstring):
its directory is ``sys.path[0]``, so this module is imported as ``benchcli``; :data:`REPO` is put on
``sys.path`` here, so ``tests.*`` helpers (stand-in hubs, sshd hosts) import as well.

:func:`parser` answers ``--help`` with the benchmark's docstring before anything is started.
:func:`stop_on_sigterm` turns SIGTERM (``timeout``, a CI job cancelled, ``kill``) into
``KeyboardInterrupt``, so the benchmark's ``with`` and ``finally`` blocks stop the servers,
daemons and namespaces it started, as they do on Ctrl-C.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType, TracebackType

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(1, str(REPO))


def parser(doc: str | None) -> argparse.ArgumentParser:
    """Return an option parser whose ``--help`` prints the benchmark's docstring ``doc`` verbatim."""
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def _one_line(kind: type[BaseException], error: BaseException, trace: TracebackType | None) -> None:
    if issubclass(kind, KeyboardInterrupt):
        reason = str(error) or "Ctrl-C"
        print(f"{Path(sys.argv[0]).name}: stopped ({reason}); what it started is stopped.", file=sys.stderr)
        return
    sys.__excepthook__(kind, error, trace)


def stop_on_sigterm() -> None:
    """Make SIGTERM unwind the main thread like Ctrl-C (every ``finally`` runs); call it first in main.

    The interruption ends the benchmark with one line on stderr instead of a traceback.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)
        sys.excepthook = _one_line
