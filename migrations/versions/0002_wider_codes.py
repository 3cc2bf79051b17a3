"""Competition and bookmaker codes up to 64 characters (The Odds API sport keys reach 33).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    for table in ("competitions", "bookmakers"):
        with op.batch_alter_table(table) as batch:
            batch.alter_column(
                "code", existing_type=sa.String(length=32), type_=sa.String(length=64)
            )


def downgrade() -> None:
    for table in ("competitions", "bookmakers"):
        with op.batch_alter_table(table) as batch:
            batch.alter_column(
                "code", existing_type=sa.String(length=64), type_=sa.String(length=32)
            )
