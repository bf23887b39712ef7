"""The writer: batches at expected versions, resume, checkpoints, folds, ids."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Collection, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from kstore.model import AssignmentCompleted, MemberJoined, StreamId, TopicChanged, event_id, fold
from kstore.model.events import content_digest
from kstore.model.fold import GroupState
from kstore.store._lock import store_lock
from kstore.store.interface import CheckpointWrite, ConcurrencyError, EventStore
from kstore.store.log import Store
from kstore.store.memory import MemoryStore
from kstore.store.testing import T0, G, H, history
from kstore.store.writer import Writer, stamp
from tests.processes import alive, children
from tests.store._stores import initialised_store


class CountingStore(MemoryStore):
    """A memory store that counts the folds it is asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.folds = 0

    def state(self, stream: StreamId, **at: Any) -> GroupState:
        self.folds += 1
        return super().state(stream, **at)


@pytest.fixture(params=["memory", "duckdb"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EventStore]:
    if request.param == "memory":
        yield MemoryStore()
    else:
        yield initialised_store(tmp_path / "kstore.duckdb")


def test_batches_go_in_at_the_versions_expected(store: EventStore) -> None:
    events = history(G, 4)  # 11 events
    writer = Writer(store, batch_events=4)
    writer.add(events[:3])
    assert store.version(G) == 0
    writer.add(events[3:6])
    assert store.version(G) == 6  # a full batch went in
    writer.add(events[6:9])
    # Another writer appends to the stream meanwhile: the queued batch must not follow it.
    other = history(G, 1, prefix="other")[:1]
    store.append(other)
    with pytest.raises(ConcurrencyError):
        writer.add(events[9:])
    assert [s.event for s in store.events()] == [*events[:6], *other]
    assert writer.stored_count == 6


def test_big_assignments_flush_early(store: EventStore) -> None:
    events = history(G, 3)
    writer = Writer(store, batch_entries=8)
    writer.add(events[:5])  # one assignment: 4 entries
    assert store.version(G) == 0
    writer.add(events[5:7])  # 8 entries
    assert store.version(G) == 7
    writer.add(events[7:])
    writer.flush()
    assert store.version(G) == len(events)


def test_a_new_writer_resumes_from_what_is_stored(store: EventStore) -> None:
    events = history(G, 3)
    first = Writer(store)
    first.add(events[:4])
    first.flush()
    second = Writer(store)
    assert list(second.stored(G)) == events[:4]
    assert list(second.stored(H)) == []
    second.add(events[4:])
    second.flush()
    assert [s.event for s in store.events()] == events
    # The first writer's view is stale: its next batch is refused, not interleaved.
    first.add(history(G, 1, prefix="late")[:1])
    with pytest.raises(ConcurrencyError):
        first.flush()
    first.forget(G)
    first.add(history(G, 1, prefix="late")[:1])
    first.flush()
    assert store.version(G) == len(events) + 1


def test_events_stored_already_move_the_version_all_the_same(store: EventStore) -> None:
    events = history(G, 2)
    one, two = Writer(store), Writer(store)
    assert two.version(G) == 0
    one.add(events[:3])
    one.flush()
    # A second recorder of the same facts stores nothing new and goes on where they end.
    two.add(events[:3])
    result = two.flush()
    assert (result.stored, result.already) == (0, 3)
    two.add(events[3:])
    two.flush()
    assert [s.event for s in store.events()] == events


def test_checkpoints_go_with_their_batch(store: EventStore) -> None:
    events = history(H, 2)
    writer = Writer(store, checkpoint="offsets/x")
    assert writer.saved is None
    rival = Writer(store, checkpoint="offsets/x")
    writer.add(events[:3])
    writer.flush({"positions": {0: 3}})
    assert store.checkpoint("offsets/x") == {"positions": {"0": 3}}
    writer.flush({"positions": {0: 4}})  # nothing new: the position moves all the same
    assert Writer(store, checkpoint="offsets/x").saved == {"positions": {"0": 4}}
    rival.add(events[3:])
    with pytest.raises(ConcurrencyError):
        rival.flush({"positions": {0: 9}})
    assert store.version(H) == 3
    assert store.checkpoint("offsets/x") == {"positions": {"0": 4}}


def test_the_writer_keeps_the_fold_while_nobody_moves_the_stream() -> None:
    store = CountingStore()
    events = history(G, 3)
    store.append(events[:4])
    writer = Writer(store)
    assert writer.state(G) == fold(events[:4])
    assert store.folds == 1
    writer.add(events[4:6])
    writer.flush()
    assert writer.state(G) == fold(events[:6])
    assert store.folds == 1  # advanced by the writer, not folded again by the store
    store.append(events[6:])
    assert writer.state(G) == fold(events)
    assert store.folds == 2
    assert Writer(store).state(H) == GroupState()


def test_a_producers_fold_is_taken_as_it_is() -> None:
    store = CountingStore()
    events = history(G, 2)
    mine = fold(events)
    writer = Writer(store)
    writer.add(events, fold=mine)
    writer.flush()
    assert writer.state(G) is mine
    assert store.folds == 0


def test_stamp_uses_the_one_recipe() -> None:
    data = TopicChanged(topic="t", partitions=3)
    event = stamp(G, T0, data, "poll", "default/g/0/0")
    assert event.event_id == event_id("poll", "default/g/0/0")
    assert (event.stream, event.at, event.data) == (G, T0, data)
    named = stamp(G, T0, data, "poll", "default/g/0/0", content=True)
    assert named.event_id == event_id("poll", f"default/g/0/0/{content_digest(data)}")
    other = TopicChanged(topic="t", partitions=4)
    assert stamp(G, T0, other, "poll", "default/g/0/0", content=True).event_id != named.event_id
    joined = MemberJoined(member_id="a", topics=["t"])
    later = stamp(G, T0 + timedelta(seconds=1), joined, "x", trusted=True)
    assert later.event_id == event_id("x")
    assert isinstance(
        stamp(G, T0, AssignmentCompleted(generation=1, strategy="range", assignment={}), 1).data,
        AssignmentCompleted,
    )


def test_producers_write_the_same_through_either_store(tmp_path: Path) -> None:
    from kstore.analytics.replay import replay
    from kstore.simulate import generate, run_scenario

    scenario = generate("steady-churn", members=6, steps=40, seed=3, protocol="cooperative")
    disk = Store(tmp_path / "kstore.duckdb")
    disk.init()
    memory = MemoryStore()
    logs = []
    for store in (disk, memory):
        run_scenario(scenario, store=store, timeline="sim/x", seed=3, stop_after=50)
        run_scenario(scenario, store=store, timeline="sim/x", seed=3)
        replay(store, group=scenario.group_id, strategy="sticky", source="sim/x")
        logs.append([(s.position, s.version, s.event.to_dict()) for s in store.events()])
    assert logs[0] == logs[1]
    assert len(logs[0]) > 100


def test_a_writer_with_a_checkpoint_or_no_batch_size_flushes_only_when_told(
    store: EventStore,
) -> None:
    events = history(G, 4)
    for writer in (
        Writer(store, checkpoint="k", batch_events=2, batch_entries=1),
        Writer(store, batch_events=None, batch_entries=None),
    ):
        writer.add(events)
        assert store.version(G) == 0
    writer.flush()
    assert store.version(G) == len(events)


def test_only_known_versions_are_expected(store: EventStore) -> None:
    g, h = history(G, 2), history(H, 2)
    store.append(g[:2])
    writer = Writer(store)
    writer.add(g[2:4])
    writer.flush()  # G was not resumed: appended after whatever is there
    assert store.version(G) == 4
    store.append(h[:1])
    writer.add([*g[4:], *h[1:]])
    with pytest.raises(ConcurrencyError):  # G is known now; it moved
        store.append(history(G, 1, prefix="x")[:1])
        writer.flush()
    assert store.version(H) == 1


def test_a_poller_folds_through_its_writer_not_the_store_each_poll() -> None:
    from kstore.record.poller import Poller
    from tests.record.test_poller import AT, FakeAdmin, described, group

    store = CountingStore()
    one = group(described("a", ["t"], [("t", 0), ("t", 1)]))
    two = group(described("a", ["t"], [("t", 0)]), described("b", ["t"], [("t", 1)]))
    poller = Poller(store, FakeAdmin([[one], [one], [two]], {"t": 2}), groups=["g"])
    assert [poller.poll_once(AT) for _ in range(3)] == [4, 0, 3]
    assert store.folds == 0
    # Another poller moves the stream: the first folds it from the store once, then goes on.
    three = group(described("b", ["t"], [("t", 0), ("t", 1)]))
    assert Poller(store, FakeAdmin([[three]], {"t": 2}), groups=["g"]).poll_once(AT) > 0
    folds = store.folds
    poller.admin = FakeAdmin([[three], [three], [one]], {"t": 2})
    assert [poller.poll_once(AT) for _ in range(3)][:2] == [0, 0]
    assert store.folds == folds + 1
    assert store.state(StreamId("default", "g", "recorded")).assignment == {
        "a": (("t", 0), ("t", 1))
    }


def test_the_writer_and_the_memory_store_import_no_database() -> None:
    import subprocess
    import sys

    code = (
        "import sys, kstore.store.writer, kstore.store.memory, kstore.store.interface;"
        "print(sorted(m for m in ('duckdb', 'sqlalchemy', 'alembic') if m in sys.modules))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"


def test_the_memory_stores_tables_follow_its_log_and_checkpoints() -> None:
    store = MemoryStore()
    store.append(history(G, 1))
    assert store.query("SELECT count(*) FROM kstore_events").rows == [(5,)]
    store.append(history(H, 1), checkpoint=CheckpointWrite("k", {"at": 1}))
    assert store.query("SELECT count(*) FROM kstore_events").rows == [(10,)]
    assert store.query("SELECT key, position FROM kstore_checkpoints").rows == [("k", '{"at": 1}')]


def test_a_stale_writer_recording_the_same_facts_later_gets_a_version_conflict(
    store: EventStore,
) -> None:
    from kstore.model.events import EventError

    early, late = Writer(store), Writer(store)
    assert early.state(G) == late.state(G) == GroupState()
    data = TopicChanged(topic="t", partitions=2)
    early.write([stamp(G, T0, data, "poll", "default/g/0/0", content=True)])
    # The same fact seen a second later: the same id, another time.
    seen_later = stamp(G, T0 + timedelta(seconds=1), data, "poll", "default/g/0/0", content=True)
    with pytest.raises(ConcurrencyError):
        late.write([seen_later])
    late.forget(G)
    late.state(G)
    with pytest.raises(EventError):  # not stale: the event itself is at fault
        late.write([seen_later])
    assert store.version(G) == 1


def test_two_pollers_racing_store_each_change_once(store: EventStore) -> None:
    from kstore.record.poller import Poller
    from tests.record.test_poller import AT, FakeAdmin, described, group

    one = group(described("a", ["t"], [("t", 0), ("t", 1)]))
    first = Poller(store, FakeAdmin([[one]], {"t": 2}), groups=["g"])

    class Racing(FakeAdmin):
        """The second poller's broker: the first poller stores the same change (a second
        earlier) after the second read the stream and before it appends."""

        raced = False

        def partition_counts(self, topics: Collection[str]) -> dict[str, int]:
            if not self.raced:
                self.raced = True
                first.poll_once(AT)
            return super().partition_counts(topics)

    second = Poller(store, Racing([[one], [one]], {"t": 2}), groups=["g"])
    assert second.poll_once(AT + timedelta(seconds=1)) == 0  # moved on: waits a poll
    assert second.poll_once(AT + timedelta(seconds=2)) == 0  # nothing new to it
    stored = [s.event for s in store.events()]
    assert len(stored) == first.stored == 4
    assert {e.at for e in stored} == {AT}


def test_a_batch_appended_apart_goes_in_as_a_flush_would(tmp_path: Path) -> None:
    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    events = history(G, 4)  # 11 events
    writer = Writer(store, batch_events=None, apart=True)
    writer.add(events[:6])
    writer.flush_apart()
    assert writer.appending or store.version(G) == 6  # handed over, the writer goes on
    writer.add(events[6:9])
    writer.flush_apart()  # waits for the first batch, hands the second over
    writer.wait()
    assert not writer.appending
    assert store.version(G) == 9 and writer.stored_count == 9
    # The versions the copies stored are the writer's own: the next batch expects them.
    other = history(G, 1, prefix="other")[:1]
    store.append(other)
    writer.add(events[9:])
    writer.flush_apart()
    with pytest.raises(ConcurrencyError):  # the copy's error, raised where it is waited for
        writer.wait()
    assert [s.event for s in store.events()] == [*events[:9], *other]
    assert writer.stored_count == 9


def test_a_copy_appending_apart_dies_with_its_producer(tmp_path: Path) -> None:
    # A producer SIGKILLed while its copy appends: the copy ends too (nothing of its
    # batch stored), so a resumed run finds the store as the last whole batch left it.
    # The test holds the store's lock, so the copy is still waiting to append.
    script = (
        "import sys, time\n"
        "from kstore.store.log import Store\n"
        "from kstore.store.testing import G, history\n"
        "from kstore.store.writer import Writer\n"
        "writer = Writer(Store(sys.argv[1]), batch_events=None, apart=True)\n"
        "writer.add(history(G, 4))\n"
        "writer.flush_apart()\n"
        "print('handed over', flush=True)\n"
        "time.sleep(60)\n"
    )
    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    with store_lock(store.path, exclusive=True):
        proc = subprocess.Popen(
            [sys.executable, "-c", script, str(store.path)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "KSTORE_LOCK_TIMEOUT": "600"},  # the copy would wait long
        )
        assert proc.stdout is not None and proc.stdout.readline() == "handed over\n"
        copies = children(proc.pid)
        assert len(copies) == 1
        proc.kill()
        proc.wait(timeout=30)
        deadline = time.monotonic() + 20
        while children(proc.pid) or any(alive(pid) for pid in copies):
            assert time.monotonic() < deadline, "the copy outlived its producer"
            time.sleep(0.02)
    assert store.version(G) == 0
