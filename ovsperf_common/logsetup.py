"""Configure logging for a command line entry point (only the shared runner calls this).

Every line the handler writes passes through :func:`ovsperf_common.secrets.mask`: a password,
token or URL credential that reached a log message (a server's fault text, a URL, a config dump)
is shown as ``***``. Then its control characters other than newline and tab are escaped
(:func:`ovsperf_common.errorfmt.escape_controls`): a third-party line (a matplotlib glyph
warning, an SSH server's banner) cannot send a raw ESC or CR to the terminal; and a message
longer than :data:`~ovsperf_common.errorfmt.MAX_ECHO_CHARS` keeps only its start and end.
"""

from __future__ import annotations

import logging
import sys

from ovsperf_common.errorfmt import bounded, escape_controls
from ovsperf_common.secrets import mask

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

CHATTY_LIBRARIES = ("alembic.runtime.plugins", "alembic.runtime.migration", "paramiko.transport")
"""Third-party loggers whose INFO lines are their own bookkeeping (alembic announces each plugin and
migration context, paramiko each SFTP channel): shown from ``-v`` on, WARNING and above always."""


class MaskingFormatter(logging.Formatter):
    """Format a record as usual (its message bounded), then mask the secrets and escape controls.

    Masking and escaping cover the whole text (message and traceback); newlines and tabs stay.
    """

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        """Return the record's line with its message bounded in length."""
        record.message = bounded(mask(record.message))
        return super().formatMessage(record)

    def format(self, record: logging.LogRecord) -> str:
        """Return the formatted record with its secrets masked and its control characters escaped."""
        return escape_controls(mask(super().format(record)), keep="\n\t")


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
    handler.setFormatter(MaskingFormatter(LOG_FORMAT))
    handler._ovsperf = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    for name in CHATTY_LIBRARIES:
        logging.getLogger(name).setLevel(logging.DEBUG if verbose > 0 else max(level, logging.WARNING))
