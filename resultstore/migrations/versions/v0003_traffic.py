"""Schema version 3: series know the traffic besides the frame size (frame-size mixes, flow counts).

Adds ``traffic`` (``''`` for one frame size at one flow, else the mix's name and/or ``flows=N``;
a mix has frame size 0) to ``samples``, ``trend_marks`` and ``trend_cache``, and puts it into
their unique keys and the series index. Rows recorded so far get ``''``: what they measured.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_SAMPLE_CELL = ("result_id", "test", "deployment", "frame_size", "metric", "repeat")
_CACHE_SERIES = ("scenario", "test", "deployment", "frame_size", "metric")


def _with_traffic(columns: tuple[str, ...]) -> list[str]:
    """Return ``columns`` with ``traffic`` after ``frame_size``."""
    out = list(columns)
    out.insert(out.index("frame_size") + 1, "traffic")
    return out


def _traffic_column() -> sa.Column[str]:
    """Return a new ``traffic`` column (a Column object belongs to one table)."""
    return sa.Column("traffic", sa.String(255), nullable=False, server_default="")


def upgrade() -> None:
    """Add ``traffic`` and rebuild the keys that name a series cell; set the schema version to 3."""
    op.drop_index("ix_samples_series", table_name="samples")
    with op.batch_alter_table("samples") as batch:
        batch.add_column(_traffic_column())
        batch.drop_constraint("uq_samples_cell", type_="unique")
        batch.create_unique_constraint("uq_samples_cell", _with_traffic(_SAMPLE_CELL))
    op.create_index("ix_samples_series", "samples", ["test", "deployment", "frame_size", "traffic", "metric"])
    with op.batch_alter_table("trend_marks") as batch:
        batch.add_column(_traffic_column())
    with op.batch_alter_table("trend_cache") as batch:
        batch.add_column(_traffic_column())
        batch.drop_constraint("uq_trend_cache_series", type_="unique")
        batch.create_unique_constraint("uq_trend_cache_series", _with_traffic(_CACHE_SERIES))
    op.execute(sa.text("UPDATE ovsperf_schema SET version = 3"))


def downgrade() -> None:
    """Not supported: the store is never downgraded (restore a backup instead)."""
    raise NotImplementedError("the results store is not downgraded; restore a backup")
