"""The newest quote receipt and the newest match change, each read from an index.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_odds_quotes_received_at", "odds_quotes", ["received_at"])
    op.create_index("ix_matches_updated_at", "matches", ["updated_at"])


def downgrade() -> None:
    op.drop_index("ix_matches_updated_at", table_name="matches")
    op.drop_index("ix_odds_quotes_received_at", table_name="odds_quotes")
