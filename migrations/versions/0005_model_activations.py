"""Every activation of a model version, by a refit or an operator; the newest match a
version was fitted on.

The versions activated before this revision were all promoted by refits, each once: each
gets the activation its ``activated_at`` records. Their newest match is not known (NULL).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("model_versions") as batch:
        batch.add_column(sa.Column("newest_kickoff", UTC_DATETIME, nullable=True))
    activations = op.create_table(
        "model_activations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("previous_version_id", sa.Integer(), nullable=True),
        sa.Column("activated_at", UTC_DATETIME, nullable=False),
        sa.Column("activated_by", sa.String(length=8), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.CheckConstraint(
            "activated_by IN ('refit', 'api', 'cli')",
            name=op.f("ck_model_activations_activated_by_code"),
        ),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["model_versions.id"],
            name=op.f("fk_model_activations_version_id_model_versions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["previous_version_id"],
            ["model_versions.id"],
            name=op.f("fk_model_activations_previous_version_id_model_versions"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["refit_runs.id"],
            name=op.f("fk_model_activations_run_id_refit_runs"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_activations")),
    )
    op.create_index("ix_model_activations_activated_at", "model_activations", ["activated_at"])
    op.create_index("ix_model_activations_version_id", "model_activations", ["version_id"])
    _record_past_activations(activations)


def _record_past_activations(activations: sa.Table) -> None:
    versions = sa.table(
        "model_versions",
        sa.column("id", sa.Integer()),
        sa.column("activated_at", UTC_DATETIME),
    )
    runs = sa.table(
        "refit_runs",
        sa.column("id", sa.Integer()),
        sa.column("version_id", sa.Integer()),
    )
    connection = op.get_bind()
    activated = connection.execute(
        sa.select(versions.c.id, versions.c.activated_at)
        .where(versions.c.activated_at.is_not(None))
        .order_by(versions.c.activated_at, versions.c.id)
    ).all()
    run_of = dict(
        connection.execute(
            sa.select(runs.c.version_id, sa.func.min(runs.c.id))
            .where(runs.c.version_id.is_not(None))
            .group_by(runs.c.version_id)
        ).all()
    )
    rows = [
        {
            "version_id": version_id,
            "previous_version_id": activated[index - 1][0] if index else None,
            "activated_at": activated_at,
            "activated_by": "refit",
            "reason": None,
            "run_id": run_of.get(version_id),
        }
        for index, (version_id, activated_at) in enumerate(activated)
    ]
    if rows:
        op.bulk_insert(activations, rows)


def downgrade() -> None:
    op.drop_table("model_activations")
    with op.batch_alter_table("model_versions") as batch:
        batch.drop_column("newest_kickoff")
