"""Schema version 2: every measured number kept (samples), build versions on results, trend marks.

Adds nullable columns to ``results`` (start time, OVS / DPDK / QEMU versions, hosts) and the
``samples``, ``trend_marks`` and ``trend_cache`` tables; rows recorded so far are kept as they
are. Results recorded before this revision have no samples: ``ovsperf-results import`` backfills
them from their directories.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the version-2 columns and tables; set the schema version to 2."""
    with op.batch_alter_table("results") as batch:
        batch.add_column(sa.Column("started_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("ovs_version", sa.String(255), nullable=True))
        batch.add_column(sa.Column("dpdk_version", sa.String(255), nullable=True))
        batch.add_column(sa.Column("qemu_version", sa.String(255), nullable=True))
        batch.add_column(sa.Column("hosts", sa.String(1024), nullable=True))
    op.create_table(
        "samples",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "result_id",
            sa.Integer,
            sa.ForeignKey("results.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        ),
        sa.Column("test", sa.String(128), nullable=False),
        sa.Column("deployment", sa.String(64), nullable=False),
        sa.Column("frame_size", sa.Integer, nullable=False),
        sa.Column("metric", sa.String(64), nullable=False),
        sa.Column("repeat", sa.Integer, nullable=False),
        sa.Column("value", sa.Float, nullable=False),
        sa.UniqueConstraint(
            "result_id", "test", "deployment", "frame_size", "metric", "repeat", name="uq_samples_cell"
        ),
    )
    op.create_index("ix_samples_series", "samples", ["test", "deployment", "frame_size", "metric"])
    op.create_table(
        "trend_marks",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "result_id",
            sa.Integer,
            sa.ForeignKey("results.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        ),
        sa.Column("test", sa.String(128), nullable=False),
        sa.Column("deployment", sa.String(64), nullable=False),
        sa.Column("frame_size", sa.Integer, nullable=False),
        sa.Column("metric", sa.String(64), nullable=False),
        sa.Column("bug_id", sa.String(255)),
        sa.Column("comment", sa.Text),
        sa.Column("tester", sa.String(255)),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "trend_cache",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("scenario", sa.String(255), nullable=False),
        sa.Column("test", sa.String(128), nullable=False),
        sa.Column("deployment", sa.String(64), nullable=False),
        sa.Column("frame_size", sa.Integer, nullable=False),
        sa.Column("metric", sa.String(64), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("analysis", sa.JSON, nullable=False),
        sa.Column("analysed_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint(
            "scenario", "test", "deployment", "frame_size", "metric", name="uq_trend_cache_series"
        ),
    )
    op.execute(sa.text("UPDATE ovsperf_schema SET version = 2"))


def downgrade() -> None:
    """Not supported: the store is never downgraded (restore a backup instead)."""
    raise NotImplementedError("the results store is not downgraded; restore a backup")
