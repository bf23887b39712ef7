"""Persistence: the event log behind the ``EventStore`` interface, and what is derived from it.

``kstore.store`` is the only package that imports DuckDB, SQLAlchemy and alembic; the
rest of kstore speaks the model (``kstore.model``), reaches a log through the
``EventStore`` interface (``interface``: the DuckDB ``Store`` and the ``MemoryStore``
implement it; ``testing`` is the contract both pass) and writes through the ``Writer``.
"""

from __future__ import annotations

from kstore.store.interface import (
    AppendResult,
    CheckpointWrite,
    ConcurrencyError,
    EventStore,
    QueryResult,
    StoredEvent,
    StreamInfo,
)
from kstore.store.log import SchemaError, Store
from kstore.store.memory import MemoryStore
from kstore.store.writer import Writer

__all__ = [
    "AppendResult",
    "CheckpointWrite",
    "ConcurrencyError",
    "EventStore",
    "MemoryStore",
    "QueryResult",
    "SchemaError",
    "Store",
    "StoredEvent",
    "StreamInfo",
    "Writer",
]
