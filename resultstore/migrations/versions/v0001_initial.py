"""Schema version 1: results, comparisons, tester verdicts (the store as ovsperf first created it).

A store created before migrations existed holds exactly these tables and is stamped with this
revision instead of running it (:func:`resultstore.migrate.upgrade`).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the version-1 tables."""
    op.create_table(
        "ovsperf_schema",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("version", sa.Integer, nullable=False),
    )
    op.create_table(
        "results",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(255), nullable=False, unique=True),
        sa.Column("scenario", sa.String(255), index=True),
        sa.Column("location", sa.Text, nullable=False),
        sa.Column("vsperf_dirs", sa.JSON, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("failure_reason", sa.Text),
        sa.Column("metadata_json", sa.JSON, nullable=False),
        sa.Column("fingerprint", sa.String(64)),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("status IN ('processed', 'failed')", name="ck_results_status"),
    )
    op.create_table(
        "comparisons",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "result_id",
            sa.Integer,
            sa.ForeignKey("results.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        ),
        sa.Column("baseline_result_id", sa.Integer, sa.ForeignKey("results.id", ondelete="SET NULL")),
        sa.Column("baseline_dirs", sa.JSON, nullable=False),
        sa.Column("current_dirs", sa.JSON, nullable=False),
        sa.Column("report_dir", sa.Text, nullable=False),
        sa.Column("title", sa.Text),
        sa.Column("overall", sa.String(32), nullable=False),
        sa.Column("counts", sa.JSON, nullable=False),
        sa.Column("warnings", sa.JSON, nullable=False),
        sa.Column("thresholds", sa.JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("result_id", "report_dir", name="uq_comparisons_result_report"),
    )
    op.create_table(
        "verdicts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "comparison_id",
            sa.Integer,
            sa.ForeignKey("comparisons.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        ),
        sa.Column("decision", sa.String(8), nullable=False),
        sa.Column("bug_id", sa.String(255)),
        sa.Column("comment", sa.Text),
        sa.Column("tester", sa.String(255)),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("decision IN ('PASS', 'FAIL')", name="ck_verdicts_decision"),
    )
    op.execute(sa.text("INSERT INTO ovsperf_schema (id, version) VALUES (1, 1)"))


def downgrade() -> None:
    """Not supported: the store is never downgraded (restore a backup instead)."""
    raise NotImplementedError("the results store is not downgraded; restore a backup")
