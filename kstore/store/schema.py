"""The store's tables as SQLAlchemy metadata, and the schema revisions this code knows.

The alembic migrations in ``kstore/store/migrations/versions`` own the schema; this
metadata is what the newest migration produces (``alembic check`` compares the two) and
what the store's queries are written against. Its tables and columns come from the one
catalogue of the read model (``kstore.store.catalogue``); only the keys are added here.
``REVISIONS`` (kept in the catalogue, so that the store checks a file's revision without
importing SQLAlchemy) lists the migration ids oldest first, so a command can tell an
older store (upgrade with ``kstore init``) from a newer one (refused) without loading
alembic.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from kstore.store.catalogue import DERIVED, HEAD, REVISIONS, TABLES, Kind

__all__ = [
    "ASSIGNMENT_SPANS",
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


metadata = sa.MetaData()

_SA_TYPES: dict[Kind, type[sa.types.TypeEngine[Any]]] = {
    "int16": sa.SmallInteger,
    "int32": sa.Integer,
    "int64": sa.BigInteger,
    "string": sa.String,
    "timestamp": sa.DateTime,
}


def _table(name: str, *constraints: sa.Constraint, **column_args: dict[str, Any]) -> sa.Table:
    """The catalogue's table ``name`` with its keys (``column_args``: per column)."""
    columns = [
        sa.Column(
            col.name, _SA_TYPES[col.kind], nullable=col.nullable, **column_args.get(col.name, {})
        )
        for col in TABLES[name]
    ]
    return sa.Table(name, metadata, *columns, *constraints)


_STREAM_KEY = ("cluster", "group_id", "timeline")

# No keys (migration 0006): positions, versions and ids are given out and checked by
# the store under its write lock (one writer at a time); DuckDB rewrote an index of the
# log whole at each append's checkpoint.
EVENTS = _table("kstore_events")
# ``at`` is UTC; the offset the event was written with (``at_offset_s``) is kept so it
# reads back as written.
STREAMS = _table("kstore_streams", sa.PrimaryKeyConstraint(*_STREAM_KEY))
SNAPSHOTS = _table("kstore_snapshots", sa.PrimaryKeyConstraint(*_STREAM_KEY, "version"))
# Recorders' positions (JSON), written in the transaction of the events they lead to.
CHECKPOINTS = _table("kstore_checkpoints", key={"primary_key": True})

# Projections: no keys or indexes, so that Arrow inserts run at DuckDB's bulk speed.
# Who held which partition from which AssignmentCompleted to which (migration 0007);
# the view ``kstore_assignments`` lists them per AssignmentCompleted.
ASSIGNMENT_SPANS = _table("kstore_assignment_spans")
OWNERSHIP = _table("kstore_ownership")
# Analytics projections (kstore.store.analytics_rows; migrations 0003 and 0005).
REBALANCE_STATS = _table("kstore_rebalance_stats")
TOPIC_STATS = _table("kstore_topic_stats")
# The members at each AssignmentCompleted as spans (migration 0008_member_spans); the
# view ``kstore_members_at`` lists them per AssignmentCompleted.
MEMBER_SPANS = _table("kstore_member_spans")
TOPICS_AT = _table("kstore_topics_at")
DOUBLE_ASSIGNMENTS = _table("kstore_double_assignments")
REVOCATIONS = _table("kstore_revocations")

PROJECTIONS = tuple(metadata.tables[name] for name in DERIVED)
"""Tables derived from the log (``rebuild`` refills them; snapshots are cleared too)."""
