"""A producer's fold handed to the store: each event folded once, the same store either way."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kstore.model import Event, GroupState, fold
from kstore.store.catalogue import DERIVED
from kstore.store.interface import ConcurrencyError
from kstore.store.log import Store
from kstore.store.memory import MemoryStore
from kstore.store.testing import G, history
from kstore.store.writer import Writer
from tests.store._stores import fresh_store
from tests.store.events_gen import streams

_TABLES = ("kstore_events", "kstore_streams", "kstore_snapshots", *DERIVED)


def _contents(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    with duckdb.connect(str(store.path), read_only=True) as connection:
        return {
            t: sorted(connection.sql(f"SELECT * FROM {t}").fetchall(), key=repr) for t in _TABLES
        }


@pytest.fixture
def applies(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Event]]:
    """Every event any fold applies, in the order applied."""
    seen: list[Event] = []
    apply = GroupState.apply

    def counted(self: GroupState, event: Event) -> None:
        seen.append(event)
        apply(self, event)

    monkeypatch.setattr(GroupState, "apply", counted)
    yield seen


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(events=streams(max_size=40), cuts=st.lists(st.integers(1, 40), max_size=4))
def test_a_producers_fold_is_the_only_fold_and_stores_the_same(
    tmp_path: Path, applies: list[Event], events: list[Event], cuts: list[int]
) -> None:
    plain, handed = fresh_store(tmp_path / "plain.duckdb"), fresh_store(tmp_path / "handed.duckdb")
    bounds = sorted({0, len(events), *(c for c in cuts if c < len(events))})
    writer = Writer(handed, batch_events=None)
    producer = writer.fold()  # a producer's fold, as the writer hands it out
    for lo, hi in itertools.pairwise(bounds):
        plain.append(events[lo:hi])
        applies.clear()
        for event in events[lo:hi]:
            producer.apply(event)
        writer.add(events[lo:hi], fold=producer)
        writer.flush()
        # The producer's applies only: neither the writer nor the store folded again.
        assert [e.event_id for e in applies] == [e.event_id for e in events[lo:hi]]
    assert _contents(handed) == _contents(plain)
    if events:
        assert handed.state(G) == plain.state(G) == producer


def test_the_plain_append_still_folds(tmp_path: Path, applies: list[Event]) -> None:
    events = history(G, 3)
    store = fresh_store(tmp_path / "k.duckdb")
    store.append(events)
    assert len(applies) == len(events)
    assert store.state(G).generation == 3


def test_a_fold_that_does_not_fit_is_folded_by_the_store(tmp_path: Path) -> None:
    """Records missing (a producer that switched them on late) or a fold at another
    version: the store folds the events itself, and stores what it would have."""
    events = history(G, 4)
    plain, handed = fresh_store(tmp_path / "plain.duckdb"), fresh_store(tmp_path / "handed.duckdb")
    plain.append(events)
    late = GroupState()
    for event in events[:6]:
        late.apply(event)
    writer = Writer(handed)
    writer.add(events[:6], fold=late)  # no records of these: switched on now
    writer.flush()
    ahead = late.copy()
    for event in events[6:]:
        late.apply(event)
        ahead.apply(event)
    ahead.apply(events[-1].model_copy(update={"event_id": "one more"}))
    writer.add(events[6:], fold=ahead)  # one event past what is appended
    writer.flush()
    assert _contents(handed) == _contents(plain)


def test_a_recorders_fold_is_advanced_once_by_its_writer(
    tmp_path: Path, applies: list[Event]
) -> None:
    """The writer's own fold (a recorder's ``state``) is the only fold of its events, in
    either store; after a failed append it is read from the store again."""
    events = history(G, 3)
    for store in (MemoryStore(), fresh_store(tmp_path / "k.duckdb")):
        writer = Writer(store)
        assert writer.state(G) == GroupState()
        applies.clear()
        writer.add(events[:6])
        writer.flush()
        assert len(applies) == 6
        store.append(events[6:8])  # another writer moves the stream
        writer.add(events[8:])
        with pytest.raises(ConcurrencyError):
            writer.flush()
        assert writer.state(G) == store.state(G) == fold(events[:8])


def test_simulate_and_replay_fold_each_of_their_events_once(
    tmp_path: Path, applies: list[Event]
) -> None:
    """Their first batch too (the writer used to switch the record on at its first add,
    after the simulation or replay had folded that batch's events, so the store folded
    them again)."""
    from kstore.analytics.replay import replay
    from kstore.simulate.generate import generate
    from kstore.simulate.runner import run_scenario

    store = fresh_store(tmp_path / "k.duckdb")
    scenario = generate("steady-churn", members=6, steps=30, seed=3)
    run_scenario(scenario, store=store, timeline="sim/x")
    sim = [s.event for s in store.events() if s.event.stream.timeline == "sim/x"]
    assert sorted(e.event_id for e in applies) == sorted(e.event_id for e in sim)
    applies.clear()
    replay(
        store, group=scenario.group_id, cluster=scenario.cluster, strategy="sticky", source="sim/x"
    )
    mine = [e.event_id for e in applies if e.stream.timeline == "replay/sticky"]
    stored = [s.event.event_id for s in store.events(timeline="replay/sticky")]
    assert mine and sorted(mine) == sorted(stored)
