"""Analytics: compact per-rebalance projections and views over the log.

Tables (filled by ``kstore.store.analytics_rows``, rebuilt by ``kstore init``):
``kstore_holdings``, ``kstore_members_at``, ``kstore_topics_at``,
``kstore_double_assignments``, ``kstore_revocations``. Views (docs/analytics.md):
``kstore_rebalances`` (one row per AssignmentCompleted), ``kstore_rebalance_starts``
(one per RebalanceStarted), ``kstore_member_events`` (joins, leaves, replacements and
subscription changes) and ``kstore_topic_events`` (topic changes and deletions).

Revision ID: 0003_analytics
Revises: 0002_projections
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_analytics"
down_revision = "0002_projections"
branch_labels = None
depends_on = None

_VIEWS = {
    "kstore_rebalances": """
        SELECT cluster, group_id, timeline, version, "at",
               CAST(json_extract(data, '$.generation') AS INTEGER) AS generation,
               json_extract_string(data, '$.strategy') AS strategy,
               json_extract_string(data, '$.protocol') AS protocol,
               json_extract_string(data, '$.leader') AS leader
        FROM kstore_events WHERE type = 'AssignmentCompleted'""",
    "kstore_rebalance_starts": """
        SELECT cluster, group_id, timeline, version, "at",
               CAST(json_extract(data, '$.generation') AS INTEGER) AS generation,
               json_extract_string(data, '$.reason') AS reason
        FROM kstore_events WHERE type = 'RebalanceStarted'""",
    "kstore_member_events": """
        SELECT cluster, group_id, timeline, version, "at", type,
               coalesce(json_extract_string(data, '$.member_id'),
                        json_extract_string(data, '$.new_member_id')) AS member,
               json_extract_string(data, '$.old_member_id') AS old_member,
               CAST(json_extract(data, '$.topics') AS VARCHAR[]) AS topics,
               json_extract_string(data, '$.reason') AS reason
        FROM kstore_events
        WHERE type IN ('MemberJoined', 'MemberLeft', 'MemberReplaced', 'SubscriptionChanged')""",
    "kstore_topic_events": """
        SELECT cluster, group_id, timeline, version, "at", type,
               json_extract_string(data, '$.topic') AS topic,
               CAST(json_extract(data, '$.partitions') AS INTEGER) AS partitions
        FROM kstore_events WHERE type IN ('TopicChanged', 'TopicDeleted')""",
}


def _key() -> list[sa.Column[object]]:
    return [
        sa.Column("cluster", sa.String, nullable=False),
        sa.Column("group_id", sa.String, nullable=False),
        sa.Column("timeline", sa.String, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "kstore_holdings",
        *_key(),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("member", sa.String, nullable=False),
        sa.Column("topic", sa.String, nullable=False),
        sa.Column("partitions", sa.Integer, nullable=False),
        sa.Column("shared", sa.Integer, nullable=False),
        sa.Column("kept", sa.Integer, nullable=False),
        sa.Column("missing", sa.Integer, nullable=False),
    )
    op.create_table(
        "kstore_members_at",
        *_key(),
        sa.Column("member", sa.String, nullable=False),
        sa.Column("topic", sa.String, nullable=True),
    )
    op.create_table(
        "kstore_topics_at",
        *_key(),
        sa.Column("topic", sa.String, nullable=False),
        sa.Column("partitions", sa.Integer, nullable=False),
    )
    op.create_table(
        "kstore_double_assignments",
        *_key(),
        sa.Column("topic", sa.String, nullable=False),
        sa.Column("partition", sa.Integer, nullable=False),
        sa.Column("member", sa.String, nullable=False),
    )
    op.create_table(
        "kstore_revocations",
        *_key(),
        sa.Column("member", sa.String, nullable=False),
        sa.Column("topic", sa.String, nullable=False),
        sa.Column("partition", sa.Integer, nullable=False),
    )
    for name, body in _VIEWS.items():
        op.execute(f"CREATE VIEW {name} AS {body}")


def downgrade() -> None:
    for name in reversed(_VIEWS):
        op.execute(f"DROP VIEW {name}")
    for table in (
        "kstore_revocations",
        "kstore_double_assignments",
        "kstore_topics_at",
        "kstore_members_at",
        "kstore_holdings",
    ):
        op.drop_table(table)
