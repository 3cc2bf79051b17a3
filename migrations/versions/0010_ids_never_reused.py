"""Ids the API shows are never handed out again: their SQLite tables are AUTOINCREMENT.

Without it SQLite gives a new row the largest id in use plus one, so the id of the newest
match, team, model version, activation, refit run or fetch run, once its row is deleted,
was the next row's. Each table is rebuilt (batch mode copies its rows, ids and all, and
its constraints and indexes); the counter starts at the largest id it holds. An id freed
before this revision, above every id left, may still be handed out once more. PostgreSQL's
sequences never go back: nothing changes there.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("matches", "teams", "model_versions", "model_activations", "refit_runs", "fetch_runs")


def _rebuild(*, autoincrement: bool) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for table in TABLES:
        with op.batch_alter_table(
            table, recreate="always", table_kwargs={"sqlite_autoincrement": autoincrement}
        ):
            pass


def upgrade() -> None:
    _rebuild(autoincrement=True)


def downgrade() -> None:
    _rebuild(autoincrement=False)
