"""Team merges: what folding a team into another changed, so that it can be undone.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "team_merges",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("alias_id", sa.Integer(), nullable=False),
        sa.Column("team_name", sa.String(length=100), nullable=False),
        sa.Column("aliases", sa.JSON(), nullable=False),
        sa.Column("merged_at", UTC_DATETIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["alias_id"],
            ["team_aliases.id"],
            name=op.f("fk_team_merges_alias_id_team_aliases"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_team_merges")),
        sa.UniqueConstraint("alias_id", name=op.f("uq_team_merges_alias_id")),
    )
    op.create_table(
        "team_merge_matches",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("merge_id", sa.Integer(), nullable=False),
        sa.Column("match_id", sa.Integer(), nullable=True),
        sa.Column("change", sa.String(length=8), nullable=False),
        sa.CheckConstraint(
            "change IN ('home', 'away', 'merged')", name=op.f("ck_team_merge_matches_change_code")
        ),
        sa.ForeignKeyConstraint(
            ["match_id"],
            ["matches.id"],
            name=op.f("fk_team_merge_matches_match_id_matches"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["merge_id"],
            ["team_merges.id"],
            name=op.f("fk_team_merge_matches_merge_id_team_merges"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_team_merge_matches")),
    )
    op.create_index(op.f("ix_team_merge_matches_match_id"), "team_merge_matches", ["match_id"])
    op.create_index(op.f("ix_team_merge_matches_merge_id"), "team_merge_matches", ["merge_id"])


def downgrade() -> None:
    op.drop_table("team_merge_matches")
    op.drop_table("team_merges")
