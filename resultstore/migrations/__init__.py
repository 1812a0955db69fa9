"""Alembic migrations of the results store (see :mod:`resultstore.migrate`)."""
