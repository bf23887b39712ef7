"""The store contract on the in-memory store."""

from __future__ import annotations

from kstore.store import testing
from kstore.store.interface import EventStore
from kstore.store.memory import MemoryStore


class TestMemoryStore(testing.EventStoreContract):
    def create_store(self) -> EventStore:
        return MemoryStore()
