"""The members at each AssignmentCompleted as spans, as the assignments are (0007).

``kstore_members_at`` held one row per (AssignmentCompleted, member of the group at it,
topic it subscribes to): 500 members of 10 topics made 5,000 rows a rebalance, the
same ones again and again, more rows than a sticky replay's assignment spans.
``kstore_member_spans`` keeps one row per unbroken run of a stream's
AssignmentCompleted events at which a member subscribes to a topic (``topic`` NULL: to
none), ``from_version`` to ``to_version`` (NULL: still so). ``kstore_members_at``
becomes a view with the same columns and rows. ``kstore init`` rebuilds the projections
after the upgrade, which fills the spans; a downgrade stores the view's rows in the
table again.

Revision ID: 0008_member_spans
Revises: 0007_assignment_spans
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_member_spans"
down_revision = "0007_assignment_spans"
branch_labels = None
depends_on = None

_STREAM = "cluster, group_id, timeline"
_SAME = "{0}.cluster = {1}.cluster AND {0}.group_id = {1}.group_id AND {0}.timeline = {1}.timeline"

VIEW = f"""
CREATE VIEW kstore_members_at AS
WITH decisions AS (  -- each AssignmentCompleted of a stream, numbered in stream order
    SELECT {_STREAM}, version,
           row_number() OVER (PARTITION BY {_STREAM} ORDER BY version) AS n,
           count(*) OVER (PARTITION BY {_STREAM}) AS total
    FROM kstore_rebalance_stats
),
held AS (  -- each span as the numbers of the decisions it covers: [first, stop)
    SELECT s.cluster, s.group_id, s.timeline, s.member, s.topic,
           f.n AS first, coalesce(t.n, f.total + 1) AS stop
    FROM kstore_member_spans s
    JOIN decisions f ON {_SAME.format("f", "s")} AND f.version = s.from_version
    LEFT JOIN decisions t ON {_SAME.format("t", "s")} AND t.version = s.to_version
),
covered AS (SELECT {_STREAM}, member, topic, unnest(range(first, stop)) AS n FROM held)
SELECT d.cluster, d.group_id, d.timeline, d.version, c.member, c.topic
FROM covered c JOIN decisions d ON {_SAME.format("d", "c")} AND d.n = c.n
"""
"""The view of this migration (a later migration that changes it writes it again)."""


def _stream() -> list[sa.Column[object]]:
    return [
        sa.Column("cluster", sa.String, nullable=False),
        sa.Column("group_id", sa.String, nullable=False),
        sa.Column("timeline", sa.String, nullable=False),
    ]


def upgrade() -> None:
    op.drop_table("kstore_members_at")
    op.create_table(
        "kstore_member_spans",
        *_stream(),
        sa.Column("member", sa.String, nullable=False),
        sa.Column("topic", sa.String, nullable=True),
        sa.Column("from_version", sa.Integer, nullable=False),
        sa.Column("to_version", sa.Integer, nullable=True),
    )
    op.execute(VIEW)


def downgrade() -> None:
    op.create_table(
        "kstore_members_at_rows",
        *_stream(),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("member", sa.String, nullable=False),
        sa.Column("topic", sa.String, nullable=True),
    )
    op.execute(
        "INSERT INTO kstore_members_at_rows SELECT * FROM kstore_members_at "
        f"ORDER BY {_STREAM}, version, member, topic"
    )
    op.execute("DROP VIEW kstore_members_at")
    op.drop_table("kstore_member_spans")
    op.rename_table("kstore_members_at_rows", "kstore_members_at")
