"""The log: events, the per-stream heads, snapshots.

Revision ID: 0001_log
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_log"
down_revision = None
branch_labels = None
depends_on = None


def _stream() -> list[sa.Column[object]]:
    return [
        sa.Column("cluster", sa.String, nullable=False),
        sa.Column("group_id", sa.String, nullable=False),
        sa.Column("timeline", sa.String, nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "kstore_events",
        sa.Column("position", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("event_id", sa.String, nullable=False, unique=True),
        *_stream(),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("type", sa.String, nullable=False),
        sa.Column("at", sa.DateTime, nullable=False),
        sa.Column("at_offset_s", sa.Integer, nullable=False),
        sa.Column("schema_version", sa.SmallInteger, nullable=False),
        sa.Column("data", sa.String, nullable=False),
        sa.UniqueConstraint("cluster", "group_id", "timeline", "version"),
    )
    op.create_table(
        "kstore_streams",
        *_stream(),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("first_at", sa.DateTime, nullable=False),
        sa.Column("last_at", sa.DateTime, nullable=False),
        sa.Column("generation", sa.Integer, nullable=True),
        sa.Column("last_position", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("cluster", "group_id", "timeline"),
    )
    op.create_table(
        "kstore_snapshots",
        *_stream(),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("state", sa.String, nullable=False),
        sa.PrimaryKeyConstraint("cluster", "group_id", "timeline", "version"),
    )


def downgrade() -> None:
    op.drop_table("kstore_snapshots")
    op.drop_table("kstore_streams")
    op.drop_table("kstore_events")
