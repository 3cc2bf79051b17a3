"""Feeds: a fetch skipped while another of its source runs, and where each document was
last read from.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

STATUS_CHECK = "ck_fetch_runs_status_code"
# fetch_runs is rebuilt on SQLite: it keeps the AUTOINCREMENT of 0010 (ids never reused).
KEEP_COUNTER = {"sqlite_autoincrement": True}


def upgrade() -> None:
    with op.batch_alter_table("fetch_runs", table_kwargs=KEEP_COUNTER) as batch:
        batch.drop_constraint(op.f(STATUS_CHECK), type_="check")
        batch.create_check_constraint(
            op.f(STATUS_CHECK), "status IN ('running', 'succeeded', 'failed', 'skipped')"
        )
    with op.batch_alter_table("fetched_documents") as batch:
        batch.add_column(sa.Column("final_url", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("fetched_documents") as batch:
        batch.drop_column("final_url")
    # A skipped run did nothing: the older schema records it as a failed one.
    op.execute("UPDATE fetch_runs SET status = 'failed' WHERE status = 'skipped'")
    with op.batch_alter_table("fetch_runs", table_kwargs=KEEP_COUNTER) as batch:
        batch.drop_constraint(op.f(STATUS_CHECK), type_="check")
        batch.create_check_constraint(
            op.f(STATUS_CHECK), "status IN ('running', 'succeeded', 'failed')"
        )
