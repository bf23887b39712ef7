"""Persistence: the event log behind the ``EventStore`` interface, and what is derived from it.

``kstore.store`` is the only package that imports DuckDB, SQLAlchemy and alembic; the
rest of kstore speaks the model (``kstore.model``), reaches a log through the
``EventStore`` interface (``interface``: the DuckDB ``Store`` and the ``MemoryStore``
implement it; ``testing`` is the contract both pass) and writes through the ``Writer``.
Names are loaded on first use, so that the interface, the memory store and the writer
come without DuckDB.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kstore._lazy import lazy

if TYPE_CHECKING:
    from kstore.store.interface import (
        AppendResult,
        CheckpointWrite,
        ConcurrencyError,
        EventStore,
        Folded,
        QueryResult,
        StoredEvent,
        StreamInfo,
    )
    from kstore.store.log import SchemaError, Store
    from kstore.store.memory import MemoryStore
    from kstore.store.writer import Writer

_MODULES = {
    "AppendResult": "interface",
    "CheckpointWrite": "interface",
    "ConcurrencyError": "interface",
    "EventStore": "interface",
    "Folded": "interface",
    "QueryResult": "interface",
    "StoredEvent": "interface",
    "StreamInfo": "interface",
    "SchemaError": "log",
    "Store": "log",
    "MemoryStore": "memory",
    "Writer": "writer",
}

__all__ = [
    "AppendResult",
    "CheckpointWrite",
    "ConcurrencyError",
    "EventStore",
    "Folded",
    "MemoryStore",
    "QueryResult",
    "SchemaError",
    "Store",
    "StoredEvent",
    "StreamInfo",
    "Writer",
]


__getattr__ = lazy(__name__, {name: f"kstore.store.{module}" for name, module in _MODULES.items()})
