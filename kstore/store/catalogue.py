"""The read model's catalogue: every table of the store, its columns in order, their kinds.

One list from which the rest is derived: the SQLAlchemy metadata (``schema``, which
``alembic check`` compares with the migrations), the column lists the projections fill
and the log reads (``columns``), the Arrow types of bulk inserts (``ARROW_TYPES``) and
the Parquet/Spark schemas of ``kstore.spark`` (``arrow_schema``). The migrations stay
explicit: a new column goes here and into a new migration.

No SQLAlchemy or DuckDB here, so Spark's executors can read it cheaply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pyarrow as pa

__all__ = [
    "ANALYTICS",
    "ARROW_TYPES",
    "DERIVED",
    "HEAD",
    "REVISIONS",
    "TABLES",
    "VIEWS",
    "Col",
    "Kind",
    "arrow_schema",
    "columns",
]

REVISIONS: tuple[str, ...] = (
    "0001_log",
    "0002_projections",
    "0003_analytics",
    "0004_checkpoints",
    "0005_rebalance_stats",
    "0006_log_without_indexes",
    "0007_assignment_spans",
    "0008_member_spans",
    "0009_log_data_zstd",
)
"""The migrations' revision ids, oldest first (``kstore/store/migrations/versions``)."""
HEAD = REVISIONS[-1]

Kind = Literal["int16", "int32", "int64", "string", "timestamp"]

_ARROW: dict[Kind, pa.DataType] = {
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "string": pa.string(),
    "timestamp": pa.timestamp("us"),  # naive UTC, as the store keeps times
}


@dataclass(frozen=True, slots=True)
class Col:
    name: str
    kind: Kind
    nullable: bool = False

    @property
    def arrow(self) -> pa.DataType:
        return _ARROW[self.kind]


def _ints(*names: str, nullable: bool = False) -> tuple[Col, ...]:
    return tuple(Col(name, "int32", nullable) for name in names)


_STREAM = (Col("cluster", "string"), Col("group_id", "string"), Col("timeline", "string"))
_KEY = (*_STREAM, Col("version", "int32"))

TABLES: dict[str, tuple[Col, ...]] = {
    # The log.
    "kstore_events": (
        Col("position", "int64"),
        Col("event_id", "string"),
        *_KEY,
        Col("type", "string"),
        Col("at", "timestamp"),
        Col("at_offset_s", "int32"),
        Col("schema_version", "int16"),
        Col("data", "string"),
    ),
    "kstore_snapshots": (*_KEY, Col("state", "string")),
    "kstore_checkpoints": (
        Col("key", "string"),
        Col("position", "string"),
        Col("updated_at", "timestamp"),
    ),
    # Projections.
    "kstore_streams": (
        *_KEY,
        Col("first_at", "timestamp"),
        Col("last_at", "timestamp"),
        Col("generation", "int32", nullable=True),
        Col("last_position", "int64"),
    ),
    "kstore_assignment_spans": (
        *_STREAM,
        Col("member", "string"),
        Col("topic", "string"),
        Col("partition", "int32"),
        Col("listing", "int32"),
        Col("from_version", "int32"),
        Col("to_version", "int32", nullable=True),
    ),
    "kstore_ownership": (
        *_KEY,
        Col("generation", "int32", nullable=True),
        Col("at", "timestamp"),
        Col("topic", "string"),
        Col("partition", "int32"),
        Col("previous_owner", "string", nullable=True),
        Col("owner", "string"),
        Col("cause", "string"),
    ),
    # Analytics projections (kstore.store.analytics_rows).
    "kstore_rebalance_stats": (
        *_KEY,
        Col("generation", "int32"),
        Col("at", "timestamp"),
        Col("members", "int32"),
        *_ints("imbalance", "excess", nullable=True),
    ),
    "kstore_topic_stats": (
        *_KEY,
        Col("topic", "string"),
        *_ints("assigned", "moved", "new", "revoked", "unassigned", "retainable", "kept"),
        *_ints("double_assigned", "subscribers"),
        Col("imbalance", "int32", nullable=True),
    ),
    "kstore_member_spans": (
        *_STREAM,
        Col("member", "string"),
        Col("topic", "string", nullable=True),
        Col("from_version", "int32"),
        Col("to_version", "int32", nullable=True),
    ),
    "kstore_topics_at": (*_KEY, Col("topic", "string"), Col("partitions", "int32")),
    "kstore_double_assignments": (
        *_KEY,
        Col("topic", "string"),
        Col("partition", "int32"),
        Col("member", "string"),
    ),
    "kstore_revocations": (
        *_KEY,
        Col("member", "string"),
        Col("topic", "string"),
        Col("partition", "int32"),
    ),
}


VIEWS: dict[str, tuple[Col, ...]] = {
    # One row per (AssignmentCompleted, member, partition), as the spans say
    # (migration 0007_assignment_spans).
    "kstore_assignments": (
        *_KEY,
        Col("generation", "int32"),
        Col("member", "string"),
        Col("topic", "string"),
        Col("partition", "int32"),
    ),
    # One row per (AssignmentCompleted, member at it, topic it subscribes to), as the
    # spans say (migration 0008_member_spans).
    "kstore_members_at": (*_KEY, Col("member", "string"), Col("topic", "string", nullable=True)),
}
"""The views over the tables, their columns in order and their kinds."""


ANALYTICS: tuple[str, ...] = (
    "kstore_rebalance_stats",
    "kstore_topic_stats",
    "kstore_member_spans",
    "kstore_topics_at",
    "kstore_double_assignments",
    "kstore_revocations",
)
"""The analytics projections (``kstore.store.analytics_rows`` fills them)."""
DERIVED: tuple[str, ...] = (
    "kstore_streams",
    "kstore_assignment_spans",
    "kstore_ownership",
    *ANALYTICS,
)
"""The tables derived from the log (``rebuild`` refills them)."""


def _cols(name: str) -> tuple[Col, ...]:
    found = TABLES.get(name)
    return found if found is not None else VIEWS[name]


def columns(table: str) -> tuple[str, ...]:
    """The table's (or view's) column names, in its order."""
    return tuple(col.name for col in _cols(table))


def arrow_schema(table: str) -> pa.Schema:
    """The table's (or view's) Arrow schema (the form of its bulk inserts and of its
    Parquet export)."""
    return pa.schema([pa.field(col.name, col.arrow) for col in _cols(table)])


def _by_name() -> dict[str, pa.DataType]:
    found: dict[str, pa.DataType] = {}
    for table, cols in TABLES.items():
        if table == "kstore_checkpoints":  # written row by row (its position is JSON text)
            continue
        for col in cols:
            if found.setdefault(col.name, col.arrow) != col.arrow:
                raise TypeError(f"{table}.{col.name}: one name, two kinds")
    return found


ARROW_TYPES: dict[str, pa.DataType] = _by_name()
"""Column name -> Arrow type: a name means the same kind in every table filled from Arrow."""
