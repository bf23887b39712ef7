"""The store contract on the DuckDB store (a real file; racers are separate handles),
and its expected-version race again with real processes."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from kstore.store import testing
from kstore.store.interface import EventStore
from kstore.store.log import Store
from tests.store._stores import initialised_store

ROOT = Path(__file__).resolve().parents[2]

_RACER = """
import sys, time
from kstore.model.events import MemberJoined
from kstore.store.interface import ConcurrencyError
from kstore.store.log import Store
from kstore.store.testing import G, history
path, index, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
mine = history(G, 0, prefix="race-" + index)[1].model_copy(
    update={"data": MemberJoined(member_id="m" + index, topics=["t"])}
)
store = Store(path)
time.sleep(max(0.0, start - time.time()))
try:
    store.append([mine], expected_version=3)
    print("won")
except ConcurrencyError:
    print("lost")
"""


class TestDuckDBStore(testing.EventStoreContract):
    def create_store(self) -> EventStore:
        store = initialised_store(self.tmp / "kstore.duckdb")
        return store

    def open_again(self, store: EventStore) -> EventStore:
        assert isinstance(store, Store)
        return Store(store.path)

    def test_processes_racing_on_an_expected_version_have_one_winner(self) -> None:
        self.store.append(testing.history()[:3])
        path = str(self.tmp / "kstore.duckdb")
        start = time.time() + 3.0  # every racer imported and waiting by then
        racers = [
            subprocess.Popen(
                [sys.executable, "-c", _RACER, path, str(i), str(start)],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                text=True,
            )
            for i in range(4)
        ]
        outcome = sorted(p.communicate(timeout=120)[0].strip() for p in racers)
        self.assertEqual(outcome, ["lost", "lost", "lost", "won"])
        self.assertEqual(self.store.version(testing.G), 4)
