"""The contract every ``EventStore`` keeps, as a test case to subclass.

As ``eventsourcing`` ships ``AggregateRecorderTestCase``, kstore ships this suite: a
store implementation passes it by subclassing ``EventStoreContract`` in a test module
and saying how to make an empty store::

    from kstore.store import testing

    class TestMyStore(testing.EventStoreContract):
        def create_store(self) -> EventStore:
            return MyStore(self.tmp / "store")

(Import the module, not the class, so the test runner does not collect the base itself.)
``contenders`` gives the handles that race in the concurrency test: by default several
stores made by ``open_again`` on the same log, used from threads at once.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import unittest
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kstore._errors import KstoreError, UsageError
from kstore.model.events import (
    AssignmentCompleted,
    Event,
    EventData,
    MemberJoined,
    RebalanceStarted,
    StreamId,
    TopicChanged,
)
from kstore.model.fold import GroupState, fold
from kstore.store.interface import CheckpointWrite, ConcurrencyError, EventStore

if TYPE_CHECKING:
    from kstore.store.log import Store
    from kstore.store.memory import MemoryStore

    def _both_implement_it(disk: Store, memory: MemoryStore) -> list[EventStore]:
        return [disk, memory]  # mypy checks both against the protocol


__all__ = ["EventStoreContract"]

T0 = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
G = StreamId("default", "g", "recorded")
H = StreamId("default", "h", "recorded")


def _event(stream: StreamId, data: EventData, seconds: float, event_id: str) -> Event:
    return Event(
        event_id=event_id,
        cluster=stream.cluster,
        group=stream.group,
        timeline=stream.timeline,
        at=T0 + timedelta(seconds=seconds),
        data=data,
    )


def history(stream: StreamId = G, generations: int = 3, prefix: str = "") -> list[Event]:
    """A small well-formed stream: a topic, two members, ``generations`` rebalances."""
    name = prefix or f"{stream.group}-{stream.timeline}"
    datas: list[EventData] = [
        TopicChanged(topic="t", partitions=4),
        MemberJoined(member_id="a", topics=["t"]),
        MemberJoined(member_id="b", topics=["t"]),
    ]
    for generation in range(1, generations + 1):
        first, second = ("a", "b") if generation % 2 else ("b", "a")
        datas.append(RebalanceStarted(generation=generation, reason="join"))
        datas.append(
            AssignmentCompleted(
                generation=generation,
                strategy="range",
                assignment={first: [("t", 0), ("t", 1)], second: [("t", 2), ("t", 3)]},
            )
        )
    return [_event(stream, data, i, f"{name}-{i}") for i, data in enumerate(datas)]


class EventStoreContract(unittest.TestCase):
    """The rules of ``kstore.store.interface``, checked on ``create_store()``."""

    tmp: Path

    def create_store(self) -> EventStore:
        raise NotImplementedError

    def open_again(self, store: EventStore) -> EventStore:
        """Another handle on ``store``'s log (the same object where there is no other)."""
        return store

    def contenders(self, store: EventStore, count: int) -> list[EventStore]:
        return [self.open_again(store) for _ in range(count)]

    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="kstore-contract-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.store = self.create_store()

    def ids(self, **filters: Any) -> list[str]:
        return [s.event.event_id for s in self.store.events(**filters)]

    # --- appending ------------------------------------------------------------------------

    def test_append_numbers_versions_and_positions(self) -> None:
        g, h = history(G), history(H, 1)
        mixed = [g[0], h[0], g[1], h[1], *g[2:], *h[2:]]
        result = self.store.append(mixed)
        self.assertEqual((result.stored, result.already), (len(mixed), 0))
        self.assertEqual(dict(result.versions), {G: len(g), H: len(h)})
        stored = list(self.store.events())
        self.assertEqual([s.position for s in stored], list(range(1, len(mixed) + 1)))
        self.assertEqual([s.event for s in stored], mixed)
        self.assertEqual([s.version for s in stored if s.event.stream == G], list(range(1, 10)))
        self.assertEqual((self.store.version(G), self.store.version(H)), (len(g), len(h)))
        self.assertEqual(self.store.version(StreamId("default", "none", "recorded")), 0)

    def test_the_same_ids_are_stored_once(self) -> None:
        events = history()
        self.assertEqual(self.store.append(events[:4]).stored, 4)
        again = self.store.append(events)
        self.assertEqual((again.stored, again.already), (len(events) - 4, 4))
        twice = self.store.append([events[0], events[0]])
        self.assertEqual((twice.stored, twice.already), (0, 1))
        self.assertEqual(twice.versions, {})
        self.assertEqual(self.ids(), [e.event_id for e in events])
        inside = history(H, 1)
        self.assertEqual(self.store.append([inside[0], inside[0], inside[1]]).stored, 2)
        self.assertEqual(self.store.version(H), 2)

    def test_an_append_already_stored_needs_no_expected_version(self) -> None:
        events = history()
        self.store.append(events[:3], expected_version=0)
        # A retry whose answer was lost: nothing new, so no version to check.
        self.assertEqual(self.store.append(events[:3], expected_version=0).already, 3)
        result = self.store.append(events[:5], expected_version=3)
        self.assertEqual((result.stored, result.already), (2, 3))

    def test_an_expected_version_elsewhere_stores_nothing(self) -> None:
        events = history()
        self.store.append(events[:3], expected_version=0)
        for expected in (0, 2, 4):
            with self.assertRaises(ConcurrencyError):
                self.store.append(events[3:], expected_version=expected)
        with self.assertRaises(ConcurrencyError):
            self.store.append(events[3:], expected_version={G: 1})
        self.assertEqual(self.store.version(G), 3)
        self.store.append(events[3:], expected_version={G: 3})
        self.assertEqual(self.store.version(G), len(events))

    def test_a_batch_is_stored_whole_or_not_at_all(self) -> None:
        g, h = history(G), history(H)
        self.store.append(h[:2])
        with self.assertRaises(ConcurrencyError):
            self.store.append([*g, *h[2:]], expected_version={G: 0, H: 1})
        self.assertEqual(self.ids(), [e.event_id for e in h[:2]])
        with self.assertRaises(UsageError):
            self.store.append([*g, *h[2:]], expected_version=0)
        self.assertEqual(self.store.version(G), 0)
        key = "k"
        self.store.append((), checkpoint=CheckpointWrite(key, {"at": 1}))
        with self.assertRaises(ConcurrencyError):
            self.store.append(g, checkpoint=CheckpointWrite(key, {"at": 2}, expected={"at": 0}))
        self.assertEqual((self.store.version(G), self.store.checkpoint(key)), (0, {"at": 1}))
        self.assertEqual([s.stream for s in self.store.streams()], [H])

    def test_expected_version_races_have_one_winner(self) -> None:
        events = history()
        self.store.append(events[:3])
        racers = 6
        stores = self.contenders(self.store, racers)
        start = threading.Barrier(racers)
        outcome: list[str] = []

        def race(index: int) -> None:
            mine = _event(G, MemberJoined(member_id=f"m{index}", topics=["t"]), 9, f"race-{index}")
            start.wait()
            try:
                stores[index].append([mine], expected_version=3)
                outcome.append("won")
            except ConcurrencyError:
                outcome.append("lost")

        threads = [threading.Thread(target=race, args=(i,)) for i in range(racers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(sorted(outcome), ["lost"] * (racers - 1) + ["won"])
        self.assertEqual(self.store.version(G), 4)
        self.assertEqual(len(list(self.store.events())), 4)

    def test_times_read_back_as_written(self) -> None:
        zone = timezone(timedelta(hours=2))
        event = _event(G, TopicChanged(topic="t", partitions=1), 0, "zoned")
        event = event.model_copy(update={"at": T0.astimezone(zone)})
        self.store.append([event])
        (stored,) = self.store.events()
        self.assertEqual(stored.event.at.utcoffset(), timedelta(hours=2))
        self.assertEqual(stored.event, event)

    # --- reading --------------------------------------------------------------------------

    def test_pages_and_filters(self) -> None:
        g, h = history(G), history(H, 1)
        self.store.append([*g[:4], *h, *g[4:]])
        everything = list(self.store.events())
        pages = []
        after = 0
        while page := self.store.page(after, 4):
            self.assertLessEqual(len(page), 4)
            pages.extend(page)
            after = page[-1].position
        self.assertEqual(pages, everything)
        self.assertEqual(self.store.page(len(everything), 4), [])
        self.assertEqual(self.ids(group="h"), [e.event_id for e in h])
        self.assertEqual(self.ids(group="g", from_version=8), [e.event_id for e in g[7:]])
        window = {"since": T0 + timedelta(seconds=2), "until": T0 + timedelta(seconds=3)}
        self.assertEqual(self.ids(group="g", **window), [g[2].event_id, g[3].event_id])
        self.assertEqual(self.ids(timeline="other"), [])
        light = [s.event for s in self.store.events(group="g", assignments=False)]
        for full, read in zip(g, light, strict=True):
            if isinstance(full.data, AssignmentCompleted):
                self.assertEqual(read.data, full.data.model_copy(update={"assignment": {}}))
            else:
                self.assertEqual(read, full)

    def test_state_is_the_fold(self) -> None:
        events = history(G, 4)
        self.store.append(events)
        self.assertEqual(self.store.state(G), fold(events))
        self.assertEqual(self.store.state(G, snapshots=False), fold(events))
        self.assertEqual(self.store.state(G, at_version=5), fold(events[:5]))
        self.assertEqual(self.store.state(G, at_version=99), fold(events))
        self.assertEqual(self.store.state(G, at_version=0), GroupState())
        self.assertEqual(self.store.state(G, at_generation=2), fold(events[:7]))
        self.assertEqual(self.store.state(G, at=T0 + timedelta(seconds=4.5)), fold(events[:5]))
        self.assertEqual(self.store.state(G, at=T0 - timedelta(seconds=1)), GroupState())
        with self.assertRaises(UsageError):  # bad input: exit 2
            self.store.state(G, at_generation=9)
        with self.assertRaises(KstoreError):
            self.store.state(H)
        with self.assertRaises(UsageError):
            self.store.state(G, at_version=1, at_generation=1)

    def test_a_state_follows_appends_from_other_handles(self) -> None:
        events = history(G, 4)
        other = self.open_again(self.store)
        self.store.append(events[:5])
        self.assertEqual(other.state(G), fold(events[:5]))
        other.append(events[5:], expected_version=5)
        self.assertEqual(self.store.state(G), fold(events))
        self.store.append(history(G, 1, prefix="again")[:1], expected_version=len(events))

    def test_streams(self) -> None:
        g, h = history(G, 2), history(H, 3)
        self.store.append([*h, *g])
        infos = self.store.streams()
        self.assertEqual([i.stream for i in infos], [G, H])
        self.assertEqual([(i.events, i.generation) for i in infos], [(len(g), 2), (len(h), 3)])
        self.assertEqual(infos[0].first_at, T0)
        self.assertEqual(infos[0].last_at, T0 + timedelta(seconds=len(g) - 1))

    def test_checkpoints_are_compare_and_set(self) -> None:
        key = "offsets/default/__consumer_offsets"
        self.assertIsNone(self.store.checkpoint(key))
        first = {"positions": {7: 3}}
        self.store.append(history()[:2], checkpoint=CheckpointWrite(key, first))
        self.assertEqual(self.store.checkpoint(key), {"positions": {"7": 3}})
        second = {"positions": {7: 5}}
        # Nothing new to store: the checkpoint moves all the same.
        self.store.append(history()[:2], checkpoint=CheckpointWrite(key, second, expected=first))
        self.assertEqual(self.store.checkpoint(key), {"positions": {"7": 5}})
        with self.assertRaises(ConcurrencyError):
            self.store.append(history()[2:], checkpoint=CheckpointWrite(key, first, expected=first))
        self.assertEqual(self.store.version(G), 2)
        self.assertIsNone(self.store.checkpoint("another"))

    def test_query_reads_the_tables(self) -> None:
        self.store.append([*history(G, 2), *history(H, 1)])
        result = self.store.query(
            "SELECT group_id, count(*) AS n FROM kstore_events GROUP BY group_id ORDER BY 1"
        )
        self.assertEqual(result.columns, ["group_id", "n"])
        self.assertEqual(result.rows, [("g", 7), ("h", 5)])
        self.store.append(history(G, 3)[7:])
        rows = self.store.query(
            "SELECT version, member, count(*) FROM kstore_assignments WHERE group_id = ? "
            "GROUP BY ALL ORDER BY ALL",
            ["g"],
        ).rows
        self.assertEqual(
            rows,
            [(5, "a", 2), (5, "b", 2), (7, "a", 2), (7, "b", 2), (9, "a", 2), (9, "b", 2)],
        )
        with self.assertRaises(KstoreError):
            self.store.query("DELETE FROM kstore_events")
        with self.assertRaises(KstoreError):
            self.store.query("SELECT * FROM no_such_table")
        self.assertEqual(self.store.version(G), 9)
