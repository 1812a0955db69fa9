"""Connect to the results store's database: URLs, the default SQLite file, engines with safe settings.

``--db`` values and ``$OVSPERF_RESULTS_DB`` become SQLAlchemy URLs here; an SQLite engine gets
foreign keys, WAL and a busy timeout on every connection. Passwords never leave this module
unmasked in messages (:func:`masked_url`).
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ovsperf_common.deadline import Deadline
from ovsperf_common.installgroups import GROUPS_OF_MODULE
from ovsperf_common.regularfile import require_regular
from resultstore.errors import StoreDatabaseError

if TYPE_CHECKING:
    from sqlalchemy import Engine

DB_ENV_VAR = "OVSPERF_RESULTS_DB"
"""Environment variable naming the database (URL or SQLite file path) when ``--db`` is not given."""

SQLITE_BUSY_TIMEOUT_S = 30.0
"""How long an SQLite writer waits for another one to finish [s]."""

_URL_HINT = "give e.g. 'sqlite:////path/results.sqlite' or 'postgresql+psycopg://user@host/db'."


def default_database_path() -> Path:
    """Return the default SQLite file: ``$XDG_DATA_HOME/ovsperf/results.sqlite``.

    ``$XDG_DATA_HOME`` defaults to ``~/.local/share`` (XDG Base Directory specification).
    """
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "ovsperf" / "results.sqlite"


def database_url(spec: str | Path | None) -> str:
    """Turn a ``--db`` value into an SQLAlchemy URL.

    ``None`` → ``$OVSPERF_RESULTS_DB`` or the default SQLite file; a value containing ``://`` is a
    URL and used as it is; anything else is an SQLite file path (made absolute).
    """
    if spec is None or str(spec) == "":
        spec = os.environ.get(DB_ENV_VAR) or default_database_path()
    text = str(spec)
    if "://" in text:
        return text
    return f"sqlite:///{Path(text).expanduser().absolute()}"


def masked_url(url: str) -> str:
    """Return ``url`` with any password replaced by ``***`` (safe for logs and messages)."""
    from sqlalchemy.engine import make_url  # here: the names above serve `--help` without SQLAlchemy
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparsable database URL>"


def check_sqlite_file(path: Path, shown: str) -> None:
    """Accept an SQLite file path only when it is a regular file, or a new file in a directory.

    SQLite writes ``<path>-journal``, ``-wal`` and ``-shm`` beside the file: ``--db /dev/null``
    created ``/dev/null-journal``; a FIFO would block the open for ever; a dangling symbolic link
    would create its target wherever it points.

    :param shown: the URL for the message, password masked.
    :raises StoreDatabaseError: naming what the path is instead.
    """
    try:
        require_regular(path)
    except FileNotFoundError:
        if path.is_symlink():
            raise StoreDatabaseError(
                f"'{path}' is a symbolic link to a missing file; give the SQLite file itself.", url=shown
            ) from None
        if not path.parent.is_dir():
            raise StoreDatabaseError(f"'{path.parent}' is not a directory.", url=shown) from None
        # A new file: SQLite creates it.
    except OSError as err:  # NotRegularFileError: a device, FIFO, socket or directory
        raise StoreDatabaseError(
            f"'{path}': {err.strerror}; give an SQLite file (a new one is created).", url=shown
        ) from err


def _set_sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """Enable foreign keys, WAL and a busy timeout on every new SQLite connection.

    The switch to WAL is stored in the file, so only a new file's first connection makes it.
    SQLite does not call the busy handler for it: while another process holds the new file's
    write lock (creating the schema), ``PRAGMA journal_mode=WAL`` fails at once with "database is
    locked" (two of three processes first opening a new store failed this way about 1 round in
    20). It is retried every 20 ms until the file is in WAL mode or ``SQLITE_BUSY_TIMEOUT_S``
    passes; then the last error is raised (``sqlite3.OperationalError``).
    """
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
        deadline = Deadline.in_seconds(SQLITE_BUSY_TIMEOUT_S, "the SQLite file's switch to WAL")
        while True:
            try:
                if cursor.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    cursor.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or deadline.expired():
                    raise
                time.sleep(0.02)
    finally:
        cursor.close()


def open_engine(url: str, *, create_directory: bool = True) -> Engine:
    """Return an engine for ``url``; an SQLite file's parent directory is created when missing.

    :param create_directory: when false, a missing SQLite directory is an error instead.
    :raises StoreDatabaseError: when the URL is invalid, names an unknown database type, the
        SQLite directory is missing (and may not be) or cannot be created, or the SQLite path is
        not a regular file or a new one (:func:`check_sqlite_file`).
    """
    from sqlalchemy import create_engine, event
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError

    shown = masked_url(url)
    try:
        parsed = make_url(url)
    except ArgumentError as err:
        raise StoreDatabaseError(f"not a database URL; {_URL_HINT}", url=shown) from err
    is_sqlite = parsed.get_backend_name() == "sqlite"
    if is_sqlite and parsed.database not in (None, "", ":memory:"):
        directory = Path(str(parsed.database)).parent
        if not create_directory and not directory.is_dir():
            raise StoreDatabaseError(
                f"directory '{directory}' does not exist; give the store process-ci-results writes "
                "(--db, or $OVSPERF_RESULTS_DB).",
                url=shown,
            )
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StoreDatabaseError(f"cannot create its directory: {err.strerror}.", url=shown) from err
        check_sqlite_file(Path(str(parsed.database)), shown)
    try:
        engine = create_engine(url, pool_pre_ping=not is_sqlite)
    except ModuleNotFoundError as err:
        if (err.name or "").split(".")[0] in GROUPS_OF_MODULE:
            raise  # an install group is missing (psycopg: 'ovsperf[postgresql]'): the runner names it
        raise StoreDatabaseError(f"cannot use this URL ({err}); {_URL_HINT}", url=shown) from err
    except (ArgumentError, ImportError, SQLAlchemyError) as err:
        raise StoreDatabaseError(f"cannot use this URL ({err}); {_URL_HINT}", url=shown) from err
    if is_sqlite:
        event.listen(engine, "connect", _set_sqlite_pragmas)
    return engine
