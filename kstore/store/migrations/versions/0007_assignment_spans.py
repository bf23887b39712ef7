"""Assignments as spans: who held which partition from which AssignmentCompleted to which.

``kstore_assignments`` held one row per (AssignmentCompleted, member, partition): a
sticky group of 10,000 partitions stored 10,000 rows a rebalance though few partitions
moved, and loading them was most of a replay's store time. ``kstore_assignment_spans``
keeps one row per unbroken run of AssignmentCompleted events of a stream that list a
member with a partition: from ``from_version`` (the first that lists it) to
``to_version`` (the first after it that does not; NULL: still listed). ``listing``
tells apart the copies of a member's partition listed more than once in one assignment
(0: the first). ``kstore_assignments`` becomes a view with the same columns and rows,
each AssignmentCompleted's ``generation`` read from ``kstore_rebalance_stats`` (one row
per AssignmentCompleted). ``kstore init`` rebuilds the projections after the upgrade,
which fills the spans; a downgrade stores the view's rows in the table again.

Revision ID: 0007_assignment_spans
Revises: 0006_log_without_indexes
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_assignment_spans"
down_revision = "0006_log_without_indexes"
branch_labels = None
depends_on = None

_STREAM = "cluster, group_id, timeline"

VIEW = f"""
CREATE VIEW kstore_assignments AS
WITH decisions AS (  -- each AssignmentCompleted of a stream, numbered in stream order
    SELECT {_STREAM}, version, generation,
           row_number() OVER (PARTITION BY {_STREAM} ORDER BY version) AS n,
           count(*) OVER (PARTITION BY {_STREAM}) AS total
    FROM kstore_rebalance_stats
),
held AS (  -- each span as the numbers of the decisions it covers: [first, stop)
    SELECT s.cluster, s.group_id, s.timeline, s.member, s.topic, s."partition",
           f.n AS first, coalesce(t.n, f.total + 1) AS stop
    FROM kstore_assignment_spans s
    JOIN decisions f ON f.cluster = s.cluster AND f.group_id = s.group_id
        AND f.timeline = s.timeline AND f.version = s.from_version
    LEFT JOIN decisions t ON t.cluster = s.cluster AND t.group_id = s.group_id
        AND t.timeline = s.timeline AND t.version = s.to_version
),
covered AS (
    SELECT {_STREAM}, member, topic, "partition", unnest(range(first, stop)) AS n FROM held
)
SELECT d.cluster, d.group_id, d.timeline, d.version, d.generation,
       c.member, c.topic, c."partition"
FROM covered c
JOIN decisions d ON d.cluster = c.cluster AND d.group_id = c.group_id
    AND d.timeline = c.timeline AND d.n = c.n
"""
"""The view of migration 0007 (a later migration that changes it writes it again)."""


def _stream() -> list[sa.Column[object]]:
    return [
        sa.Column("cluster", sa.String, nullable=False),
        sa.Column("group_id", sa.String, nullable=False),
        sa.Column("timeline", sa.String, nullable=False),
    ]


def _assignments(name: str) -> None:
    op.create_table(
        name,
        *_stream(),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("member", sa.String, nullable=False),
        sa.Column("topic", sa.String, nullable=False),
        sa.Column("partition", sa.Integer, nullable=False),
    )


def upgrade() -> None:
    op.drop_table("kstore_assignments")
    op.create_table(
        "kstore_assignment_spans",
        *_stream(),
        sa.Column("member", sa.String, nullable=False),
        sa.Column("topic", sa.String, nullable=False),
        sa.Column("partition", sa.Integer, nullable=False),
        sa.Column("listing", sa.Integer, nullable=False),
        sa.Column("from_version", sa.Integer, nullable=False),
        sa.Column("to_version", sa.Integer, nullable=True),
    )
    op.execute(VIEW)


def downgrade() -> None:
    _assignments("kstore_assignment_rows")
    op.execute(
        "INSERT INTO kstore_assignment_rows SELECT * FROM kstore_assignments "
        f'ORDER BY {_STREAM}, version, member, topic, "partition"'
    )
    op.execute("DROP VIEW kstore_assignments")
    op.drop_table("kstore_assignment_spans")
    op.rename_table("kstore_assignment_rows", "kstore_assignments")
