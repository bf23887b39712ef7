"""The store's tables as SQLAlchemy metadata, and the schema revisions this code knows.

The alembic migrations in ``migrations/versions`` own the schema; this metadata is what
the newest migration produces (``alembic check`` compares the two) and what the store's
queries are written against. ``REVISIONS`` lists the migration ids oldest first, so a
command can tell an older store (upgrade with ``kstore init``) from a newer one
(refused) without loading alembic.
"""

from __future__ import annotations

import sqlalchemy as sa

__all__ = [
    "ASSIGNMENTS",
    "CHECKPOINTS",
    "EVENTS",
    "HEAD",
    "OWNERSHIP",
    "PROJECTIONS",
    "REVISIONS",
    "SNAPSHOTS",
    "STREAMS",
    "metadata",
]

REVISIONS: tuple[str, ...] = (
    "0001_log",
    "0002_projections",
    "0003_analytics",
    "0004_checkpoints",
    "0005_rebalance_stats",
)
HEAD = REVISIONS[-1]

metadata = sa.MetaData()


def _stream_columns() -> list[sa.Column[object]]:
    return [
        sa.Column("cluster", sa.String, nullable=False),
        sa.Column("group_id", sa.String, nullable=False),
        sa.Column("timeline", sa.String, nullable=False),
    ]


EVENTS = sa.Table(
    "kstore_events",
    metadata,
    # Global position, given out under the store's write lock (one writer at a time).
    sa.Column("position", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("event_id", sa.String, nullable=False, unique=True),
    *_stream_columns(),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("type", sa.String, nullable=False),
    # UTC; the offset the event was written with is kept so it reads back as written.
    sa.Column("at", sa.DateTime, nullable=False),
    sa.Column("at_offset_s", sa.Integer, nullable=False),
    sa.Column("schema_version", sa.SmallInteger, nullable=False),
    sa.Column("data", sa.String, nullable=False),
    sa.UniqueConstraint("cluster", "group_id", "timeline", "version"),
)

STREAMS = sa.Table(
    "kstore_streams",
    metadata,
    *_stream_columns(),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("first_at", sa.DateTime, nullable=False),
    sa.Column("last_at", sa.DateTime, nullable=False),
    sa.Column("generation", sa.Integer, nullable=True),
    sa.Column("last_position", sa.BigInteger, nullable=False),
    sa.PrimaryKeyConstraint("cluster", "group_id", "timeline"),
)

SNAPSHOTS = sa.Table(
    "kstore_snapshots",
    metadata,
    *_stream_columns(),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("state", sa.String, nullable=False),
    sa.PrimaryKeyConstraint("cluster", "group_id", "timeline", "version"),
)

# Recorders' positions (JSON), written in the transaction of the events they lead to.
CHECKPOINTS = sa.Table(
    "kstore_checkpoints",
    metadata,
    sa.Column("key", sa.String, primary_key=True),
    sa.Column("position", sa.String, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=False),
)

# Projections: no keys or indexes, so that Arrow inserts run at DuckDB's bulk speed.
ASSIGNMENTS = sa.Table(
    "kstore_assignments",
    metadata,
    *_stream_columns(),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("generation", sa.Integer, nullable=False),
    sa.Column("member", sa.String, nullable=False),
    sa.Column("topic", sa.String, nullable=False),
    sa.Column("partition", sa.Integer, nullable=False),
)

OWNERSHIP = sa.Table(
    "kstore_ownership",
    metadata,
    *_stream_columns(),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("generation", sa.Integer, nullable=True),
    sa.Column("at", sa.DateTime, nullable=False),
    sa.Column("topic", sa.String, nullable=False),
    sa.Column("partition", sa.Integer, nullable=False),
    sa.Column("previous_owner", sa.String, nullable=True),
    sa.Column("owner", sa.String, nullable=False),
    sa.Column("cause", sa.String, nullable=False),
)


def _analytics_key() -> list[sa.Column[object]]:
    return [*_stream_columns(), sa.Column("version", sa.Integer, nullable=False)]


# Analytics projections (kstore.store.analytics_rows; migrations 0003 and 0005).
def _counts(*names: str) -> list[sa.Column[object]]:
    return [sa.Column(name, sa.Integer, nullable=False) for name in names]


REBALANCE_STATS = sa.Table(
    "kstore_rebalance_stats",
    metadata,
    *_analytics_key(),
    sa.Column("generation", sa.Integer, nullable=False),
    sa.Column("at", sa.DateTime, nullable=False),
    sa.Column("members", sa.Integer, nullable=False),
    sa.Column("imbalance", sa.Integer, nullable=True),
    sa.Column("excess", sa.Integer, nullable=True),
)

TOPIC_STATS = sa.Table(
    "kstore_topic_stats",
    metadata,
    *_analytics_key(),
    sa.Column("topic", sa.String, nullable=False),
    *_counts("assigned", "moved", "new", "revoked", "unassigned", "retainable", "kept"),
    *_counts("double_assigned", "subscribers"),
    sa.Column("imbalance", sa.Integer, nullable=True),
)

MEMBERS_AT = sa.Table(
    "kstore_members_at",
    metadata,
    *_analytics_key(),
    sa.Column("member", sa.String, nullable=False),
    sa.Column("topic", sa.String, nullable=True),
)

TOPICS_AT = sa.Table(
    "kstore_topics_at",
    metadata,
    *_analytics_key(),
    sa.Column("topic", sa.String, nullable=False),
    sa.Column("partitions", sa.Integer, nullable=False),
)

DOUBLE_ASSIGNMENTS = sa.Table(
    "kstore_double_assignments",
    metadata,
    *_analytics_key(),
    sa.Column("topic", sa.String, nullable=False),
    sa.Column("partition", sa.Integer, nullable=False),
    sa.Column("member", sa.String, nullable=False),
)

REVOCATIONS = sa.Table(
    "kstore_revocations",
    metadata,
    *_analytics_key(),
    sa.Column("member", sa.String, nullable=False),
    sa.Column("topic", sa.String, nullable=False),
    sa.Column("partition", sa.Integer, nullable=False),
)

PROJECTIONS = (
    STREAMS,
    ASSIGNMENTS,
    OWNERSHIP,
    REBALANCE_STATS,
    TOPIC_STATS,
    MEMBERS_AT,
    TOPICS_AT,
    DOUBLE_ASSIGNMENTS,
    REVOCATIONS,
)
"""Tables derived from the log (``rebuild`` refills them; snapshots are cleared too)."""
