"""Feeds: every run of a fetch, and the validators of the documents they read.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "fetch_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("trigger", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("started_at", UTC_DATETIME, nullable=False),
        sa.Column("finished_at", UTC_DATETIME, nullable=True),
        sa.Column("requests", sa.Integer(), nullable=False),
        sa.Column("changed", sa.Integer(), nullable=False),
        sa.Column("matches", sa.Integer(), nullable=False),
        sa.Column("quotes", sa.Integer(), nullable=False),
        sa.Column("results", sa.Integer(), nullable=False),
        sa.Column("skipped", sa.Integer(), nullable=False),
        sa.Column("quota_remaining", sa.Integer(), nullable=True),
        sa.Column("quota_used", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "source IN ('the-odds-api', 'football-data')", name=op.f("ck_fetch_runs_source_code")
        ),
        sa.CheckConstraint(
            "status IN ('running', 'succeeded', 'failed')", name=op.f("ck_fetch_runs_status_code")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_fetch_runs")),
    )
    op.create_index("ix_fetch_runs_started_at", "fetch_runs", ["started_at"])
    op.create_table(
        "fetched_documents",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("url", sa.String(length=500), nullable=False),
        sa.Column("etag", sa.String(length=255), nullable=True),
        sa.Column("last_modified", sa.String(length=64), nullable=True),
        sa.Column("checked_at", UTC_DATETIME, nullable=False),
        sa.Column("changed_at", UTC_DATETIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_fetched_documents")),
        sa.UniqueConstraint("url", name=op.f("uq_fetched_documents_url")),
    )


def downgrade() -> None:
    op.drop_table("fetched_documents")
    op.drop_index("ix_fetch_runs_started_at", table_name="fetch_runs")
    op.drop_table("fetch_runs")
