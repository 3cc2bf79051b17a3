"""The latest quotes: per match, bookmaker and phase, the quote an answer serves (the latest
one valid before kickoff), so that answering reads these rows and not the price history.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)
PHASE_LENGTH = 8

# The stored quotes' latest valid one per group, by the service's rule of recency: undated
# ones are valid and older than any dated one; then the capture time (never later than the
# receipt), the receipt, and the id. Each row is marked chosen when its quote was received.
BACKFILL = """
INSERT INTO latest_quotes (match_id, bookmaker_id, phase, quote_id, received_at, chosen_at)
SELECT match_id, bookmaker_id, phase, id, received_at, received_at FROM (
    SELECT q.match_id, q.bookmaker_id, q.phase, q.id, q.received_at,
        ROW_NUMBER() OVER (
            PARTITION BY q.match_id, q.bookmaker_id, q.phase
            ORDER BY CASE WHEN q.captured_at IS NULL THEN 0 ELSE 1 END DESC,
                (CASE WHEN q.captured_at > q.received_at THEN q.received_at ELSE q.captured_at END)
                DESC, q.received_at DESC, q.id DESC
        ) AS quote_rank
    FROM odds_quotes q JOIN matches m ON m.id = q.match_id
    WHERE q.captured_at IS NULL OR (
        CASE WHEN q.captured_at > q.received_at THEN q.received_at ELSE q.captured_at END
    ) < m.kickoff
) ranked
WHERE quote_rank = 1
"""


def upgrade() -> None:
    op.create_table(
        "latest_quotes",
        sa.Column("match_id", sa.Integer(), nullable=False),
        sa.Column("bookmaker_id", sa.Integer(), nullable=False),
        sa.Column("phase", sa.String(PHASE_LENGTH), nullable=False),
        sa.Column("quote_id", sa.Integer(), nullable=False),
        sa.Column("received_at", UTC_DATETIME, nullable=False),
        sa.Column("chosen_at", UTC_DATETIME, nullable=False),
        sa.CheckConstraint("phase IN ('pre', 'closing')", name=op.f("ck_latest_quotes_phase_code")),
        sa.ForeignKeyConstraint(
            ["match_id"],
            ["matches.id"],
            name=op.f("fk_latest_quotes_match_id_matches"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["bookmaker_id"],
            ["bookmakers.id"],
            name=op.f("fk_latest_quotes_bookmaker_id_bookmakers"),
        ),
        sa.ForeignKeyConstraint(
            ["quote_id"],
            ["odds_quotes.id"],
            name=op.f("fk_latest_quotes_quote_id_odds_quotes"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("match_id", "bookmaker_id", "phase", name=op.f("pk_latest_quotes")),
    )
    op.create_index("ix_latest_quotes_quote_id", "latest_quotes", ["quote_id"])
    op.create_index("ix_latest_quotes_chosen_at", "latest_quotes", ["chosen_at"])
    op.execute(BACKFILL)


def downgrade() -> None:
    op.drop_index("ix_latest_quotes_chosen_at", table_name="latest_quotes")
    op.drop_index("ix_latest_quotes_quote_id", table_name="latest_quotes")
    op.drop_table("latest_quotes")
