"""Track record: what was served for each match at kickoff, and its rolling score.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "prediction_log",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("match_id", sa.Integer(), nullable=False),
        sa.Column("kickoff", UTC_DATETIME, nullable=False),
        sa.Column("logged_at", UTC_DATETIME, nullable=False),
        sa.Column("model_version", sa.Integer(), nullable=True),
        sa.Column("served", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["match_id"],
            ["matches.id"],
            name=op.f("fk_prediction_log_match_id_matches"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_prediction_log")),
        sa.UniqueConstraint("match_id", name=op.f("uq_prediction_log_match_id")),
    )
    op.create_index("ix_prediction_log_kickoff", "prediction_log", ["kickoff"])
    op.create_table(
        "rolling_scores",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("computed_at", UTC_DATETIME, nullable=False),
        sa.Column("days", sa.Integer(), nullable=False),
        sa.Column("matches", sa.Integer(), nullable=False),
        sa.Column("served_minus_consensus_log_loss", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rolling_scores")),
    )


def downgrade() -> None:
    op.drop_table("rolling_scores")
    op.drop_index("ix_prediction_log_kickoff", table_name="prediction_log")
    op.drop_table("prediction_log")
