"""Recorders' checkpoints: stored in the transaction of their events, compare-and-set."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from kstore.model import Event, TopicChanged
from kstore.store.log import CheckpointWrite, ConcurrencyError, Store
from kstore.store.schema import HEAD, REVISIONS
from tests.store.events_gen import make_event
from tests.store.test_schema import tables

ROOT = Path(__file__).resolve().parents[2]
KEY = "offsets/prod/__consumer_offsets"


def topic_events(start: int, count: int) -> list[Event]:
    return [
        make_event(TopicChanged(topic="t", partitions=i + 1), i, event_id=f"e{i}")
        for i in range(start, start + count)
    ]


def event_ids(store: Store) -> list[str]:
    return [s.event.event_id for s in store.events()]


def test_no_checkpoint_reads_none(store: Store) -> None:
    assert store.checkpoint(KEY) is None


def test_events_and_checkpoint_are_stored_together(store: Store) -> None:
    first = {"positions": {7: 3}, "builder": {"g": [1, 2]}}
    result = store.append(topic_events(0, 3), checkpoint=CheckpointWrite(KEY, first))
    assert result.stored == 3
    assert store.checkpoint(KEY) == {"positions": {"7": 3}, "builder": {"g": [1, 2]}}
    # The next write names what it read (int keys and str keys are the same JSON).
    second = {"positions": {7: 5}, "builder": {}}
    store.append(topic_events(3, 2), checkpoint=CheckpointWrite(KEY, second, expected=first))
    assert store.checkpoint(KEY) == {"positions": {"7": 5}, "builder": {}}
    assert event_ids(store) == [f"e{i}" for i in range(5)]
    assert store.checkpoint("another/key") is None


def test_a_batch_with_nothing_new_still_moves_the_checkpoint(store: Store) -> None:
    store.append(topic_events(0, 2))
    result = store.append(topic_events(0, 2), checkpoint=CheckpointWrite(KEY, 2))
    assert (result.stored, result.already) == (0, 2)
    assert store.checkpoint(KEY) == 2
    assert store.append([], checkpoint=CheckpointWrite(KEY, 3, expected=2)).stored == 0
    assert store.checkpoint(KEY) == 3


@pytest.mark.parametrize("expected", [None, 1, {"positions": {}}])
def test_a_moved_checkpoint_refuses_the_whole_append(store: Store, expected: object) -> None:
    store.append([], checkpoint=CheckpointWrite(KEY, 2))
    with pytest.raises(ConcurrencyError, match="moved by another writer"):
        store.append(topic_events(0, 2), checkpoint=CheckpointWrite(KEY, 9, expected=expected))
    assert store.checkpoint(KEY) == 2
    assert event_ids(store) == []


def test_a_failure_inside_the_append_keeps_neither(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.append(topic_events(0, 1), checkpoint=CheckpointWrite(KEY, 1))
    real = Store._store_heads

    def crash(self: Store, *args: Any) -> None:
        real(self, *args)
        raise RuntimeError("killed after the rows were written")

    monkeypatch.setattr(Store, "_store_heads", crash)
    with pytest.raises(RuntimeError, match="killed"):
        store.append(topic_events(1, 2), checkpoint=CheckpointWrite(KEY, 3, expected=1))
    monkeypatch.undo()
    assert store.checkpoint(KEY) == 1
    assert event_ids(store) == ["e0"]


def test_rebuild_keeps_checkpoints(store: Store) -> None:
    store.append(topic_events(0, 2), checkpoint=CheckpointWrite(KEY, {"at": 2}))
    store.rebuild()
    assert store.checkpoint(KEY) == {"at": 2}


def test_the_migration_upgrades_and_downgrades(store: Store) -> None:
    assert REVISIONS[REVISIONS.index("0004_checkpoints") - 1] == "0003_analytics"
    assert "kstore_checkpoints" in tables(store.path)
    store.append(topic_events(0, 2), checkpoint=CheckpointWrite(KEY, {"at": 2}))
    store.migrate("0003_analytics")
    assert store.revision() == "0003_analytics"
    assert "kstore_checkpoints" not in tables(store.path)
    assert "kstore_events" in tables(store.path)
    assert store.init() == ("0003_analytics", HEAD)
    assert store.checkpoint(KEY) is None  # a downgrade forgets positions, not events
    assert event_ids(store) == ["e0", "e1"]
    with duckdb.connect(str(store.path), read_only=True) as connection:
        columns = connection.sql(
            "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
            "WHERE table_name = 'kstore_checkpoints' ORDER BY ordinal_position"
        ).fetchall()
    assert columns == [
        ("key", "VARCHAR", "NO"),
        ("position", "VARCHAR", "NO"),
        ("updated_at", "TIMESTAMP", "NO"),
    ]
    store.append([], checkpoint=CheckpointWrite(KEY, 1))
    assert store.checkpoint(KEY) == 1


_WRITER = """
import sys
from kstore.model import Event, TopicChanged
from kstore.store.log import CheckpointWrite, Store
from tests.store.events_gen import make_event

store = Store(sys.argv[1])
for batch in range(10_000):
    events = [
        make_event(TopicChanged(topic="t", partitions=1), 0, event_id=f"b{batch}-{i}")
        for i in range(200)
    ]
    before = None if batch == 0 else {"batch": batch - 1}
    store.append(events, checkpoint=CheckpointWrite("k", {"batch": batch}, expected=before))
    print(batch, flush=True)
"""


@pytest.mark.slow
def test_sigkill_never_separates_events_from_their_checkpoint(tmp_path: Path) -> None:
    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    process = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(store.path)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    process.stdout.readline()
    time.sleep(0.3)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    batch = store.checkpoint("k")["batch"]
    assert batch >= 0
    assert len(event_ids(store)) == 200 * (batch + 1)
