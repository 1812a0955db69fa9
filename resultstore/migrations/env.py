"""Alembic environment of the results store: run the migrations on the connection we are given.

:func:`resultstore.migrate.upgrade` passes an open connection in ``config.attributes``; there is no
``alembic.ini`` and no URL here (the store's URL, with its password, never reaches Alembic's logs).
"""

from __future__ import annotations

from alembic import context

from resultstore.schema import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
