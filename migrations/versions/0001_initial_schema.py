"""Initial schema: competitions, teams and aliases, matches, bookmakers, odds quotes.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "bookmakers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("code", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bookmakers")),
        sa.UniqueConstraint("code", name=op.f("uq_bookmakers_code")),
    )
    op.create_table(
        "competitions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("code", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_competitions")),
        sa.UniqueConstraint("code", name=op.f("uq_competitions_code")),
    )
    op.create_table(
        "teams",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_teams")),
        sa.UniqueConstraint("name", name=op.f("uq_teams_name")),
    )
    op.create_table(
        "team_aliases",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("alias", sa.String(length=100), nullable=False),
        sa.Column("team_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["team_id"],
            ["teams.id"],
            name=op.f("fk_team_aliases_team_id_teams"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_team_aliases")),
        sa.UniqueConstraint("alias", name=op.f("uq_team_aliases_alias")),
    )
    op.create_index(op.f("ix_team_aliases_team_id"), "team_aliases", ["team_id"])

    op.create_table(
        "matches",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("competition_id", sa.Integer(), nullable=False),
        sa.Column("season", sa.String(length=16), nullable=False),
        sa.Column("kickoff", UTC_DATETIME, nullable=False),
        sa.Column("kickoff_date", sa.Date(), nullable=False),
        sa.Column("kickoff_time_known", sa.Boolean(), nullable=False),
        sa.Column("home_team_id", sa.Integer(), nullable=False),
        sa.Column("away_team_id", sa.Integer(), nullable=False),
        sa.Column("home_goals", sa.SmallInteger(), nullable=True),
        sa.Column("away_goals", sa.SmallInteger(), nullable=True),
        sa.Column("result", sa.String(length=1), nullable=True),
        sa.Column("external_id", sa.String(length=100), nullable=True),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("updated_at", UTC_DATETIME, nullable=False),
        sa.CheckConstraint(
            "result IS NULL OR result IN ('1', 'X', '2')", name=op.f("ck_matches_result_code")
        ),
        sa.CheckConstraint(
            "(result IS NULL AND home_goals IS NULL AND away_goals IS NULL) OR "
            "(result IS NOT NULL AND home_goals >= 0 AND away_goals >= 0)",
            name=op.f("ck_matches_settled_with_goals"),
        ),
        sa.CheckConstraint("home_team_id <> away_team_id", name=op.f("ck_matches_distinct_teams")),
        sa.ForeignKeyConstraint(
            ["away_team_id"], ["teams.id"], name=op.f("fk_matches_away_team_id_teams")
        ),
        sa.ForeignKeyConstraint(
            ["competition_id"],
            ["competitions.id"],
            name=op.f("fk_matches_competition_id_competitions"),
        ),
        sa.ForeignKeyConstraint(
            ["home_team_id"], ["teams.id"], name=op.f("fk_matches_home_team_id_teams")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_matches")),
        sa.UniqueConstraint(
            "competition_id",
            "home_team_id",
            "away_team_id",
            "kickoff_date",
            name=op.f("uq_matches_competition_id_home_team_id_away_team_id_kickoff_date"),
        ),
        sa.UniqueConstraint("external_id", name=op.f("uq_matches_external_id")),
    )
    op.create_index(op.f("ix_matches_away_team_id"), "matches", ["away_team_id"])
    op.create_index(op.f("ix_matches_home_team_id"), "matches", ["home_team_id"])
    op.create_index(op.f("ix_matches_season"), "matches", ["season"])
    op.create_index("ix_matches_kickoff", "matches", ["kickoff"])
    op.create_index("ix_matches_competition_id_kickoff", "matches", ["competition_id", "kickoff"])
    op.create_index(
        "ix_matches_settled_kickoff",
        "matches",
        ["kickoff"],
        sqlite_where=sa.text("result IS NOT NULL"),
        postgresql_where=sa.text("result IS NOT NULL"),
    )

    op.create_table(
        "odds_quotes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("match_id", sa.Integer(), nullable=False),
        sa.Column("bookmaker_id", sa.Integer(), nullable=False),
        sa.Column("phase", sa.String(length=8), nullable=False),
        sa.Column("home", sa.Float(), nullable=False),
        sa.Column("draw", sa.Float(), nullable=False),
        sa.Column("away", sa.Float(), nullable=False),
        sa.Column("captured_at", UTC_DATETIME, nullable=True),
        sa.Column("received_at", UTC_DATETIME, nullable=False),
        sa.CheckConstraint("phase IN ('pre', 'closing')", name=op.f("ck_odds_quotes_phase_code")),
        sa.CheckConstraint(
            "home > 1 AND draw > 1 AND away > 1 AND home <= 1000 AND draw <= 1000 AND away <= 1000",
            name=op.f("ck_odds_quotes_price_range"),
        ),
        sa.ForeignKeyConstraint(
            ["bookmaker_id"], ["bookmakers.id"], name=op.f("fk_odds_quotes_bookmaker_id_bookmakers")
        ),
        sa.ForeignKeyConstraint(
            ["match_id"],
            ["matches.id"],
            name=op.f("fk_odds_quotes_match_id_matches"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_odds_quotes")),
        sa.UniqueConstraint(
            "match_id",
            "bookmaker_id",
            "phase",
            "captured_at",
            name=op.f("uq_odds_quotes_match_id_bookmaker_id_phase_captured_at"),
        ),
    )
    op.create_index("ix_odds_quotes_bookmaker_id", "odds_quotes", ["bookmaker_id"])
    op.create_index(
        "uq_odds_quotes_undated",
        "odds_quotes",
        ["match_id", "bookmaker_id", "phase"],
        unique=True,
        sqlite_where=sa.text("captured_at IS NULL"),
        postgresql_where=sa.text("captured_at IS NULL"),
    )


def downgrade() -> None:
    op.drop_table("odds_quotes")
    op.drop_table("matches")
    op.drop_table("team_aliases")
    op.drop_table("teams")
    op.drop_table("competitions")
    op.drop_table("bookmakers")
