"""Alerts: the outbox of webhook deliveries written with the flag events they announce, and
every attempt to send one.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_DATETIME = sa.DateTime(timezone=True)
WORD_LENGTH = 16
HOST_MAX_LENGTH = 255
ERROR_MAX_LENGTH = 200


def upgrade() -> None:
    op.create_table(
        "alert_deliveries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("flag_id", sa.Integer(), nullable=False),
        sa.Column("event", sa.String(WORD_LENGTH), nullable=False),
        sa.Column("receiver_key", sa.String(64), nullable=False),
        sa.Column("receiver_kind", sa.String(WORD_LENGTH), nullable=False),
        sa.Column("host", sa.String(HOST_MAX_LENGTH), nullable=False),
        sa.Column("message", sa.JSON(), nullable=False),
        sa.Column("net_price", sa.Float(), nullable=False),
        sa.Column("status", sa.String(WORD_LENGTH), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", UTC_DATETIME, nullable=False),
        sa.Column("next_attempt_at", UTC_DATETIME, nullable=True),
        sa.Column("claimed_until", UTC_DATETIME, nullable=True),
        sa.Column("delivered_at", UTC_DATETIME, nullable=True),
        sa.CheckConstraint(
            "event IN ('raised', 'raised_again', 'improved', 'test')",
            name=op.f("ck_alert_deliveries_event_code"),
        ),
        sa.CheckConstraint(
            "receiver_kind IN ('webhook', 'discord', 'telegram')",
            name=op.f("ck_alert_deliveries_receiver_kind_code"),
        ),
        sa.CheckConstraint(
            "status IN ('pending', 'delivered', 'failed')",
            name=op.f("ck_alert_deliveries_status_code"),
        ),
        sa.ForeignKeyConstraint(
            ["flag_id"],
            ["value_flags.id"],
            name=op.f("fk_alert_deliveries_flag_id_value_flags"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_deliveries")),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_alert_deliveries_flag_id", "alert_deliveries", ["flag_id"])
    op.create_index(
        "ix_alert_deliveries_status_next_attempt_at",
        "alert_deliveries",
        ["status", "next_attempt_at"],
    )
    op.create_table(
        "alert_attempts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("delivery_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("started_at", UTC_DATETIME, nullable=False),
        sa.Column("duration_seconds", sa.Float(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.String(ERROR_MAX_LENGTH), nullable=True),
        sa.Column("next_attempt_at", UTC_DATETIME, nullable=True),
        sa.ForeignKeyConstraint(
            ["delivery_id"],
            ["alert_deliveries.id"],
            name=op.f("fk_alert_attempts_delivery_id_alert_deliveries"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_attempts")),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_alert_attempts_delivery_id", "alert_attempts", ["delivery_id"])


def downgrade() -> None:
    op.drop_table("alert_attempts")
    op.drop_table("alert_deliveries")
