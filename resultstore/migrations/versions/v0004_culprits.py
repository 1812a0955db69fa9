"""Schema version 4: a series' regression at one result can be linked to its culprit build.

Adds the ``culprits`` table: per result and series cell (test, deployment, frame size, traffic,
metric), the first bad build an ``ovsperf-lab bisect`` found (its label), its page and JSON, and
the steps' evidence (``ovsperf-results culprit``). Rows recorded so far are kept as they are.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``culprits``; set the schema version to 4."""
    op.create_table(
        "culprits",
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
        sa.Column("traffic", sa.String(255), nullable=False, server_default=""),
        sa.Column("metric", sa.String(64), nullable=False),
        sa.Column("culprit_build", sa.String(255), nullable=False),
        sa.Column("bisect_page", sa.Text, nullable=False),
        sa.Column("bisect_json", sa.Text, nullable=False),
        sa.Column("evidence", sa.JSON, nullable=False),
        sa.Column("tester", sa.String(255)),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.execute(sa.text("UPDATE ovsperf_schema SET version = 4"))


def downgrade() -> None:
    """Not supported: the store is never downgraded (restore a backup instead)."""
    raise NotImplementedError("the results store is not downgraded; restore a backup")
