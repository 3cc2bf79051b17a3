"""Value flags: the value-source chain in force when a flag was raised, and an index on when
flags were scored (every track-record request reads the newest).

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MAX_CHAIN_LENGTH = 200


def upgrade() -> None:
    # Null for the flags raised before: the chain they were raised under is not known.
    op.add_column(
        "value_flags", sa.Column("value_chain", sa.String(MAX_CHAIN_LENGTH), nullable=True)
    )
    op.create_index("ix_value_flags_settled_at", "value_flags", ["settled_at"])


def downgrade() -> None:
    op.drop_index("ix_value_flags_settled_at", table_name="value_flags")
    with op.batch_alter_table("value_flags", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.drop_column("value_chain")
