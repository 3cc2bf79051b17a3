"""The track record's daily aggregates, and what they cover.

A database that already holds a track record gets the aggregates marked as not filled:
answers compute the days they lack from the entries until ``oddsboost migrate`` (or the
next writer of the track record) fills them.

Revision ID: 0012
Revises: 0010
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)
BOOKMAKER_MAX_LENGTH = 100


def _key() -> list[sa.Column]:  # type: ignore[type-arg]
    return [
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("competition_id", sa.Integer(), nullable=False),
        sa.Column("model_version", sa.Integer(), nullable=True),
    ]


def _sums(*names: str) -> list[sa.Column]:  # type: ignore[type-arg]
    return [sa.Column(name, sa.Float(), nullable=False) for name in names]


def _constraints(table: str) -> list[sa.Constraint]:
    return [
        sa.ForeignKeyConstraint(
            ["competition_id"],
            ["competitions.id"],
            name=op.f(f"fk_{table}_competition_id_competitions"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}")),
    ]


def upgrade() -> None:
    op.create_table(
        "track_record_days",
        *_key(),
        sa.Column("matches", sa.Integer(), nullable=False),
        *_sums("served_log_loss", "served_brier", "served_rps", "served_hits"),
        *_sums("consensus_log_loss", "consensus_brier", "consensus_rps", "consensus_hits"),
        *_sums("difference_sum", "difference_squares"),
        sa.Column("bets", sa.Integer(), nullable=False),
        sa.Column("bets_with_closing", sa.Integer(), nullable=False),
        *_sums("clv_sum", "clv_squares", "return_sum", "return_squares"),
        *_constraints("track_record_days"),
    )
    op.create_index("ix_track_record_days_day", "track_record_days", ["day"])
    op.create_table(
        "track_record_bookmakers",
        *_key(),
        sa.Column("bookmaker", sa.String(BOOKMAKER_MAX_LENGTH), nullable=False),
        sa.Column("matches", sa.Integer(), nullable=False),
        *_sums("log_loss", "brier", "rps", "hits"),
        *_sums("served_log_loss", "served_brier", "served_rps", "served_hits"),
        *_sums("difference_sum", "difference_squares"),
        *_constraints("track_record_bookmakers"),
    )
    op.create_index("ix_track_record_bookmakers_day", "track_record_bookmakers", ["day"])
    op.create_index(
        "ix_track_record_bookmakers_bookmaker_day", "track_record_bookmakers", ["bookmaker", "day"]
    )
    op.create_table(
        "track_record_bankroll",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("kickoff", UTC_DATETIME, nullable=False),
        sa.Column("competition_id", sa.Integer(), nullable=False),
        sa.Column("model_version", sa.Integer(), nullable=True),
        sa.Column("bets", sa.Integer(), nullable=False),
        sa.Column("growth", sa.Float(), nullable=False),
        *_constraints("track_record_bankroll"),
    )
    op.create_index("ix_track_record_bankroll_day", "track_record_bankroll", ["day"])
    op.create_index("ix_track_record_bankroll_kickoff", "track_record_bankroll", ["kickoff"])
    op.create_table(
        "track_record_reliability",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("outcome", sa.SmallInteger(), nullable=False),
        sa.Column("bin", sa.SmallInteger(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("predicted", sa.Float(), nullable=False),
        sa.Column("observed", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_track_record_reliability")),
    )
    op.create_index("ix_track_record_reliability_day", "track_record_reliability", ["day"])
    state = op.create_table(
        "track_record_state",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kelly_fraction", sa.Float(), nullable=True),
        sa.Column("stake_cap", sa.Float(), nullable=True),
        sa.Column("reliability_bins", sa.Integer(), nullable=True),
        sa.Column("complete", sa.Boolean(), nullable=False),
        sa.Column("filled_until", sa.Date(), nullable=True),
        sa.Column("entries_through", sa.Integer(), nullable=False),
        sa.Column("matches_through", UTC_DATETIME, nullable=True),
        sa.Column("checked_at", UTC_DATETIME, nullable=True),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_track_record_state")),
    )
    logged = op.get_bind().execute(sa.text("SELECT EXISTS (SELECT 1 FROM prediction_log)"))
    # An empty log is covered by empty aggregates; a log already kept is not, yet.
    op.bulk_insert(
        state,
        [
            {
                "id": 1,
                "complete": not logged.scalar(),
                "entries_through": 0,
                "revision": 0,
            }
        ],
    )


def downgrade() -> None:
    op.drop_table("track_record_state")
    op.drop_index("ix_track_record_reliability_day", table_name="track_record_reliability")
    op.drop_table("track_record_reliability")
    op.drop_index("ix_track_record_bankroll_kickoff", table_name="track_record_bankroll")
    op.drop_index("ix_track_record_bankroll_day", table_name="track_record_bankroll")
    op.drop_table("track_record_bankroll")
    op.drop_index("ix_track_record_bookmakers_bookmaker_day", table_name="track_record_bookmakers")
    op.drop_index("ix_track_record_bookmakers_day", table_name="track_record_bookmakers")
    op.drop_table("track_record_bookmakers")
    op.drop_index("ix_track_record_days_day", table_name="track_record_days")
    op.drop_table("track_record_days")
