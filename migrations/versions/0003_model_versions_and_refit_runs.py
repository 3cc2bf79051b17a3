"""Model versions (at most one active) and refit runs.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "model_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("algorithm", sa.String(length=32), nullable=False),
        sa.Column("method", sa.String(length=32), nullable=False),
        sa.Column("phase", sa.String(length=8), nullable=False),
        sa.Column("rounds", sa.Integer(), nullable=False),
        sa.Column("window_start", UTC_DATETIME, nullable=False),
        sa.Column("window_end", UTC_DATETIME, nullable=False),
        sa.Column("n_matches", sa.Integer(), nullable=False),
        sa.Column("bookmakers", sa.JSON(), nullable=False),
        sa.Column("rounds_grid", sa.JSON(), nullable=False),
        sa.Column("validation", sa.JSON(), nullable=False),
        sa.Column("is_active", sa.Boolean(), nullable=False),
        sa.Column("activated_at", UTC_DATETIME, nullable=True),
        sa.Column("rejected_reason", sa.Text(), nullable=True),
        sa.Column("project_version", sa.String(length=32), nullable=False),
        sa.Column("fit_seconds", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_versions")),
    )
    op.create_index("ix_model_versions_created_at", "model_versions", ["created_at"])
    op.create_index(
        "uq_model_versions_one_active",
        "model_versions",
        ["is_active"],
        unique=True,
        sqlite_where=sa.text("is_active"),
        postgresql_where=sa.text("is_active"),
    )
    op.create_table(
        "refit_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("trigger", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("started_at", UTC_DATETIME, nullable=False),
        sa.Column("finished_at", UTC_DATETIME, nullable=True),
        sa.Column("until", UTC_DATETIME, nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("version_id", sa.Integer(), nullable=True),
        sa.Column("host", sa.String(length=255), nullable=True),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.CheckConstraint(
            "status IN ('queued', 'running', 'succeeded', 'rejected', 'failed', 'skipped')",
            name=op.f("ck_refit_runs_status_code"),
        ),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["model_versions.id"],
            name=op.f("fk_refit_runs_version_id_model_versions"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_refit_runs")),
    )
    op.create_index("ix_refit_runs_started_at", "refit_runs", ["started_at"])


def downgrade() -> None:
    op.drop_table("refit_runs")
    op.drop_table("model_versions")
