"""The bettor's book: the bets a user placed, settled when their results arrive, and the
audit trail of every change to them.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)
CODE_MAX_LENGTH = 64
VALUE_SOURCE_MAX_LENGTH = 64
PRICE_TEXT_MAX_LENGTH = 16
BET_NOTE_MAX_LENGTH = 500
WORD_LENGTH = 16


def _floats(*names: str, nullable: bool) -> list[sa.Column]:  # type: ignore[type-arg]
    return [sa.Column(name, sa.Float(), nullable=nullable) for name in names]


def upgrade() -> None:
    op.create_table(
        "bets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("match_id", sa.Integer(), nullable=False),
        sa.Column("outcome", sa.String(1), nullable=False),
        sa.Column("bookmaker", sa.String(CODE_MAX_LENGTH), nullable=False),
        sa.Column("price", sa.Float(), nullable=False),
        sa.Column("price_text", sa.String(PRICE_TEXT_MAX_LENGTH), nullable=False),
        sa.Column("stake", sa.Float(), nullable=False),
        sa.Column("placed_at", UTC_DATETIME, nullable=False),
        sa.Column("flag_id", sa.Integer(), nullable=True),
        sa.Column("source", sa.String(VALUE_SOURCE_MAX_LENGTH), nullable=True),
        sa.Column("note", sa.String(BET_NOTE_MAX_LENGTH), nullable=True),
        sa.Column("status", sa.String(WORD_LENGTH), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("updated_at", UTC_DATETIME, nullable=False),
        sa.Column("result", sa.String(1), nullable=True),
        *_floats("returned", "profit", "close_price", "closing_probability", "clv", nullable=True),
        sa.Column("close_origin", sa.String(WORD_LENGTH), nullable=True),
        sa.Column("close_captured_at", UTC_DATETIME, nullable=True),
        sa.Column("settled_at", UTC_DATETIME, nullable=True),
        sa.CheckConstraint("outcome IN ('1', 'X', '2')", name=op.f("ck_bets_outcome_code")),
        sa.CheckConstraint(
            "result IS NULL OR result IN ('1', 'X', '2')", name=op.f("ck_bets_result_code")
        ),
        sa.CheckConstraint(
            "status IN ('open', 'won', 'lost', 'void')", name=op.f("ck_bets_status_code")
        ),
        sa.CheckConstraint(
            "close_origin IN ('live', 'season_file')", name=op.f("ck_bets_close_origin_code")
        ),
        sa.CheckConstraint("stake > 0", name=op.f("ck_bets_positive_stake")),
        sa.CheckConstraint("price > 1", name=op.f("ck_bets_price_above_one")),
        sa.ForeignKeyConstraint(
            ["match_id"], ["matches.id"], name=op.f("fk_bets_match_id_matches"), ondelete="RESTRICT"
        ),
        sa.ForeignKeyConstraint(
            ["flag_id"],
            ["value_flags.id"],
            name=op.f("fk_bets_flag_id_value_flags"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bets")),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_bets_match_id", "bets", ["match_id"])
    op.create_index("ix_bets_placed_at", "bets", ["placed_at"])
    op.create_index("ix_bets_status", "bets", ["status"])
    op.create_table(
        "bet_changes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("bet_id", sa.Integer(), nullable=False),
        sa.Column("change", sa.String(WORD_LENGTH), nullable=False),
        sa.Column("channel", sa.String(WORD_LENGTH), nullable=False),
        sa.Column("at", UTC_DATETIME, nullable=False),
        sa.Column("before", sa.JSON(), nullable=True),
        sa.Column("after", sa.JSON(), nullable=True),
        sa.CheckConstraint(
            "change IN ('created', 'corrected', 'deleted')",
            name=op.f("ck_bet_changes_change_code"),
        ),
        sa.CheckConstraint(
            "channel IN ('api', 'cli', 'import', 'merge')", name=op.f("ck_bet_changes_channel_code")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bet_changes")),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_bet_changes_bet_id", "bet_changes", ["bet_id"])


def downgrade() -> None:
    op.drop_table("bet_changes")
    op.drop_table("bets")
