"""Create or upgrade the results store's tables in place with Alembic; refuse a newer store.

Three cases on open: an empty database gets every migration; a store written before migrations
existed (tables of schema version 1, no ``alembic_version``) is stamped ``0001`` and upgraded; a
migrated store is upgraded to the newest revision. Each runs in one transaction (SQLite and
PostgreSQL both have transactional DDL), so a failed upgrade leaves the store as it was.
"""

from __future__ import annotations

import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect, text

from resultstore.errors import SchemaVersionError
from resultstore.schema import SCHEMA_VERSION

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
"""Alembic's script location (``env.py`` and ``versions/``)."""

PRE_MIGRATION_REVISION = "0001"
"""The revision a store created before migrations existed is at (schema version 1)."""


def _config(connection: Connection) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """Return the newest migration's revision id."""
    head = ScriptDirectory.from_config(_config_without_connection()).get_current_head()
    assert head is not None
    return head


def _config_without_connection() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def upgrade(connection: Connection, url: str) -> None:
    """Bring the database behind ``connection`` to the newest schema; commit is the caller's.

    :param url: the store's URL with its password masked, for messages.
    :raises SchemaVersionError: when the database was written by a newer ovsperf (a revision or a
        schema version this one does not know), or holds tables of an unknown layout.
    """
    # Alembic's own INFO lines ("Context impl …") are noise at -v; keep them for -vv (DEBUG).
    logging.getLogger("alembic").setLevel(
        logging.DEBUG if log.isEnabledFor(logging.DEBUG) else logging.WARNING
    )
    tables = set(inspect(connection).get_table_names())
    config = _config(connection)
    scripts = ScriptDirectory.from_config(config)
    current = MigrationContext.configure(connection).get_current_revision()
    if current is None and "results" in tables:
        version = connection.execute(text("SELECT MAX(version) FROM ovsperf_schema")).scalar()
        if version != 1:
            raise SchemaVersionError(
                f"the store has tables but no migration record and schema version {version!r}; "
                f"this ovsperf knows versions 1 to {SCHEMA_VERSION}.",
                url=url,
            )
        log.info("Results store %s predates migrations (schema version 1): upgrading it in place.", url)
        command.stamp(config, PRE_MIGRATION_REVISION)
        current = PRE_MIGRATION_REVISION
    if current is not None:
        try:
            scripts.get_revision(current)
        except Exception as err:
            raise SchemaVersionError(
                f"schema revision {current!r} is newer than this ovsperf's ({scripts.get_current_head()}); "
                "upgrade ovsperf.",
                url=url,
            ) from err
    if current != scripts.get_current_head():
        log.debug("Upgrading results store %s from revision %s.", url, current or "(empty)")
        command.upgrade(config, "head")
