"""A calibration exponent per model version.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("model_versions") as batch:
        batch.add_column(
            sa.Column("calibration", sa.Float(), server_default=sa.text("1.0"), nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("model_versions") as batch:
        batch.drop_column("calibration")
