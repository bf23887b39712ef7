"""Analytics: per-rebalance and per-topic counts instead of per-(member, topic) holdings.

``kstore_holdings`` (one row per member and topic of every rebalance: millions of rows
on a long stream of a large group) gives way to ``kstore_rebalance_stats`` (one row per
AssignmentCompleted) and ``kstore_topic_stats`` (one per rebalance and topic), filled by
``kstore.store.analytics_rows`` at append time, so that ``queries/metrics.sql`` reads
about as many rows as there are rebalances. ``kstore init`` rebuilds the projections
after the upgrade; a downgrade recreates ``kstore_holdings`` empty (the older kstore's
``kstore rebuild`` fills it again).

Revision ID: 0005_rebalance_stats
Revises: 0004_checkpoints
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_rebalance_stats"
down_revision = "0004_checkpoints"
branch_labels = None
depends_on = None


def _key() -> list[sa.Column[object]]:
    return [
        sa.Column("cluster", sa.String, nullable=False),
        sa.Column("group_id", sa.String, nullable=False),
        sa.Column("timeline", sa.String, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
    ]


def _counts(*names: str) -> list[sa.Column[object]]:
    return [sa.Column(name, sa.Integer, nullable=False) for name in names]


def upgrade() -> None:
    op.drop_table("kstore_holdings")
    op.create_table(
        "kstore_rebalance_stats",
        *_key(),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("at", sa.DateTime, nullable=False),
        sa.Column("members", sa.Integer, nullable=False),
        sa.Column("imbalance", sa.Integer, nullable=True),
        sa.Column("excess", sa.Integer, nullable=True),
    )
    op.create_table(
        "kstore_topic_stats",
        *_key(),
        sa.Column("topic", sa.String, nullable=False),
        *_counts("assigned", "moved", "new", "revoked", "unassigned", "retainable", "kept"),
        *_counts("double_assigned", "subscribers"),
        sa.Column("imbalance", sa.Integer, nullable=True),
    )


def downgrade() -> None:
    op.drop_table("kstore_topic_stats")
    op.drop_table("kstore_rebalance_stats")
    op.create_table(
        "kstore_holdings",
        *_key(),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("member", sa.String, nullable=False),
        sa.Column("topic", sa.String, nullable=False),
        *_counts("partitions", "shared", "kept", "missing"),
    )
