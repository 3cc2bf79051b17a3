"""The flag ledger: every value flag of the board as first raised, its later events, and
how it fared once its match was settled.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)
CODE_MAX_LENGTH = 64
VALUE_SOURCE_MAX_LENGTH = 64
WORD_LENGTH = 16


def _floats(*names: str, nullable: bool) -> list[sa.Column]:  # type: ignore[type-arg]
    return [sa.Column(name, sa.Float(), nullable=nullable) for name in names]


def upgrade() -> None:
    op.create_table(
        "value_flags",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("match_id", sa.Integer(), nullable=False),
        sa.Column("outcome", sa.String(1), nullable=False),
        sa.Column("bookmaker", sa.String(CODE_MAX_LENGTH), nullable=False),
        *_floats("price", "net_price", "expected_value", "probability", nullable=False),
        sa.Column("value_source", sa.String(VALUE_SOURCE_MAX_LENGTH), nullable=False),
        sa.Column("model_version", sa.Integer(), nullable=True),
        sa.Column("raised_at", UTC_DATETIME, nullable=False),
        sa.Column("status", sa.String(WORD_LENGTH), nullable=False),
        sa.Column("best_net_price", sa.Float(), nullable=False),
        sa.Column("result", sa.String(1), nullable=True),
        *_floats("flat_return", "close_home", "close_draw", "close_away", nullable=True),
        sa.Column("close_origin", sa.String(WORD_LENGTH), nullable=True),
        sa.Column("close_captured_at", UTC_DATETIME, nullable=True),
        *_floats("closing_probability", "clv", nullable=True),
        sa.Column("settled_at", UTC_DATETIME, nullable=True),
        sa.CheckConstraint("outcome IN ('1', 'X', '2')", name=op.f("ck_value_flags_outcome_code")),
        sa.CheckConstraint(
            "result IS NULL OR result IN ('1', 'X', '2')", name=op.f("ck_value_flags_result_code")
        ),
        sa.CheckConstraint(
            "status IN ('open', 'withdrawn', 'settled')", name=op.f("ck_value_flags_status_code")
        ),
        sa.CheckConstraint(
            "close_origin IN ('live', 'season_file')",
            name=op.f("ck_value_flags_close_origin_code"),
        ),
        sa.ForeignKeyConstraint(
            ["match_id"],
            ["matches.id"],
            name=op.f("fk_value_flags_match_id_matches"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_value_flags")),
        sa.UniqueConstraint("match_id", "outcome", name=op.f("uq_value_flags_match_id_outcome")),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_value_flags_raised_at", "value_flags", ["raised_at"])
    op.create_index("ix_value_flags_status", "value_flags", ["status"])
    op.create_table(
        "value_flag_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("flag_id", sa.Integer(), nullable=False),
        sa.Column("change", sa.String(WORD_LENGTH), nullable=False),
        sa.Column("at", UTC_DATETIME, nullable=False),
        sa.Column("bookmaker", sa.String(CODE_MAX_LENGTH), nullable=True),
        *_floats("price", "net_price", "expected_value", "probability", nullable=True),
        sa.Column("model_version", sa.Integer(), nullable=True),
        sa.CheckConstraint(
            "change IN ('improved', 'withdrawn', 'raised_again')",
            name=op.f("ck_value_flag_events_change_code"),
        ),
        sa.ForeignKeyConstraint(
            ["flag_id"],
            ["value_flags.id"],
            name=op.f("fk_value_flag_events_flag_id_value_flags"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_value_flag_events")),
    )
    op.create_index("ix_value_flag_events_flag_id", "value_flag_events", ["flag_id"])


def downgrade() -> None:
    op.drop_table("value_flag_events")
    op.drop_table("value_flags")
