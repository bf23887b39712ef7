"""Persistence: the event log in DuckDB and the projections kept beside it.

``kstore.store`` is the only package that imports DuckDB, SQLAlchemy and alembic; the
rest of kstore speaks the model (``kstore.model``) and reaches the log through ``Store``.
"""

from __future__ import annotations

from kstore.store.log import (
    AppendResult,
    CheckpointWrite,
    ConcurrencyError,
    SchemaError,
    Store,
    StoredEvent,
    StreamInfo,
)

__all__ = [
    "AppendResult",
    "CheckpointWrite",
    "ConcurrencyError",
    "SchemaError",
    "Store",
    "StoredEvent",
    "StreamInfo",
]
