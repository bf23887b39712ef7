"""The store contract on the DuckDB store (a real file; racers are separate handles)."""

from __future__ import annotations

from kstore.store import testing
from kstore.store.interface import EventStore
from kstore.store.log import Store


class TestDuckDBStore(testing.EventStoreContract):
    def create_store(self) -> EventStore:
        store = Store(self.tmp / "kstore.duckdb")
        store.init()
        return store

    def open_again(self, store: EventStore) -> EventStore:
        assert isinstance(store, Store)
        return Store(store.path)
