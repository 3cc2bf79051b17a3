"""Matches: a revision counting the changes of their quotes, which the stamps of the board
and of the match page compare.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "matches",
        sa.Column("quotes_revision", sa.Integer(), nullable=False, server_default="0"),
    )


def downgrade() -> None:
    with op.batch_alter_table("matches", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.drop_column("quotes_revision")
