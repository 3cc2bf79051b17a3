"""Quotes: when the same prices were last seen again, and the moment a live close was seen
to hold.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.add_column("odds_quotes", sa.Column("seen_at", UTC_DATETIME, nullable=True))
    # A stored quote was last seen, as far as anyone knows, when it was received.
    op.execute("UPDATE odds_quotes SET seen_at = received_at")
    with op.batch_alter_table("odds_quotes") as batch:
        batch.alter_column("seen_at", existing_type=UTC_DATETIME, nullable=False)
    op.add_column("value_flags", sa.Column("close_seen_at", UTC_DATETIME, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("value_flags", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.drop_column("close_seen_at")
    with op.batch_alter_table("odds_quotes") as batch:
        batch.drop_column("seen_at")
