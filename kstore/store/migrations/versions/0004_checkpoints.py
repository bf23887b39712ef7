"""Recorders' positions: one JSON value per recorder key, written with its events.

A recorder (the offsets tailer: ``offsets/<cluster>/<topic>``) stores where it stopped
in the same transaction as the events it read up to there, so a crash can never leave
one without the other. Not derived from the log: ``rebuild`` leaves it alone, and a
downgrade past this revision forgets every position (recorders then start again and
their deterministic event ids keep the log free of duplicates).

Revision ID: 0004_checkpoints
Revises: 0003_analytics
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_checkpoints"
down_revision = "0003_analytics"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "kstore_checkpoints",
        sa.Column("key", sa.String, primary_key=True),
        sa.Column("position", sa.String, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("kstore_checkpoints")
