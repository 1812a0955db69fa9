"""Configure logging for a command line entry point (only ``cli.py`` modules call this)."""

from __future__ import annotations

import logging
import sys

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging(verbose: int = 0, quiet: int = 0) -> None:
    """Send log records to stderr at a level chosen by ``-v``/``-q`` counts.

    Default level INFO; each ``-v`` lowers it by one step (DEBUG), each ``-q`` raises it
    (WARNING, ERROR). Replaces handlers installed earlier so repeated in-process ``main()``
    calls (tests) do not duplicate output.
    """
    level = logging.INFO - 10 * verbose + 10 * quiet
    level = max(logging.DEBUG, min(logging.CRITICAL, level))
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_ovsperf", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler._ovsperf = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
