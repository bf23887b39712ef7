"""Projections for analytics: assignment rows and per-partition ownership changes.

Both are derived from the log; ``kstore init`` rebuilds them after an upgrade.

Revision ID: 0002_projections
Revises: 0001_log
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_projections"
down_revision = "0001_log"
branch_labels = None
depends_on = None


def _stream() -> list[sa.Column[object]]:
    return [
        sa.Column("cluster", sa.String, nullable=False),
        sa.Column("group_id", sa.String, nullable=False),
        sa.Column("timeline", sa.String, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "kstore_assignments",
        *_stream(),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("member", sa.String, nullable=False),
        sa.Column("topic", sa.String, nullable=False),
        sa.Column("partition", sa.Integer, nullable=False),
    )
    op.create_table(
        "kstore_ownership",
        *_stream(),
        sa.Column("generation", sa.Integer, nullable=True),
        sa.Column("at", sa.DateTime, nullable=False),
        sa.Column("topic", sa.String, nullable=False),
        sa.Column("partition", sa.Integer, nullable=False),
        sa.Column("previous_owner", sa.String, nullable=True),
        sa.Column("owner", sa.String, nullable=False),
        sa.Column("cause", sa.String, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("kstore_ownership")
    op.drop_table("kstore_assignments")
