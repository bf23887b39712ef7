"""The store's contract: what any log behind ``kstore.store`` must do.

Written as a contract class (as the ``eventsourcing`` library tests its recorders):
``StoreContract`` states the behaviour against a ``store`` fixture, and each backend
runs it by subclassing. DuckDB is the one backend today.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kstore.model import (
    AssignmentCompleted,
    Event,
    MemberJoined,
    MemberReplaced,
    RebalanceStarted,
    StreamId,
    TopicChanged,
    fold,
)
from kstore.store import log
from kstore.store.log import SNAPSHOT_EVERY, ConcurrencyError, Store, _utc
from tests.store.events_gen import T0, make_event, streams

G = StreamId("default", "g", "recorded")


def projection_rows(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """Every projection table's rows, sorted (the store must be closed by the caller)."""
    connection = duckdb.connect(str(store.path), read_only=True)
    try:
        tables = ["kstore_streams", "kstore_assignments", "kstore_ownership"]
        return {t: sorted(connection.sql(f"SELECT * FROM {t}").fetchall()) for t in tables}
    finally:
        connection.close()


def completed(generation: int, assignment: dict[str, list[tuple[str, int]]], **kw: Any) -> Event:
    data = AssignmentCompleted(generation=generation, strategy="range", assignment=assignment)
    return make_event(data, generation, **kw)


class StoreContract:
    def test_append_assigns_versions_and_positions(self, store: Store) -> None:
        a = [make_event(TopicChanged(topic="t", partitions=2), i) for i in range(3)]
        b = [make_event(TopicChanged(topic="t", partitions=2), i, group="h") for i in range(2)]
        assert store.append([a[0], b[0], a[1]]).stored == 3
        assert store.append([b[1], a[2]]).stored == 2
        got = list(store.events())
        assert [s.position for s in got] == [1, 2, 3, 4, 5]
        assert [(s.event.group, s.version) for s in got] == [
            ("g", 1),
            ("h", 1),
            ("g", 2),
            ("h", 2),
            ("g", 3),
        ]
        assert [s.event for s in got] == [a[0], b[0], a[1], b[1], a[2]]

    def test_append_is_idempotent_on_event_id(self, store: Store) -> None:
        batch = [make_event(TopicChanged(topic="t", partitions=i + 1), i) for i in range(4)]
        assert store.append(batch[:2]).stored == 2
        result = store.append(batch + batch[:1])
        assert (result.stored, result.already) == (2, 2)
        assert store.append(batch).already == 4
        assert [s.event.event_id for s in store.events()] == [e.event_id for e in batch]

    def test_expected_version(self, store: Store) -> None:
        store.append([make_event(TopicChanged(topic="t", partitions=1))], expected_version=0)
        with pytest.raises(ConcurrencyError, match="version 1, not 0"):
            store.append([make_event(TopicChanged(topic="t", partitions=2))], expected_version=0)
        assert len(list(store.events())) == 1
        store.append([make_event(TopicChanged(topic="t", partitions=3))], expected_version={G: 1})
        assert [s.version for s in store.events()] == [1, 2]

    def test_a_failed_batch_stores_nothing(self, store: Store) -> None:
        store.append([make_event(TopicChanged(topic="t", partitions=1))])
        other = make_event(TopicChanged(topic="x", partitions=1), group="other")
        late = make_event(TopicChanged(topic="t", partitions=2))
        with pytest.raises(ConcurrencyError):
            store.append([other, late], expected_version={G: 0})
        assert len(list(store.events())) == 1
        assert [i.stream for i in store.streams()] == [G]

    def test_reading_filters(self, store: Store) -> None:
        events = [make_event(TopicChanged(topic="t", partitions=1), i) for i in range(5)]
        events += [make_event(TopicChanged(topic="t", partitions=1), 9, timeline="sim")]
        store.append(events)
        assert len(list(store.events(group="g"))) == 6
        assert len(list(store.events(timeline="sim"))) == 1
        assert len(list(store.events(cluster="nope"))) == 0
        window = store.events(since=T0 + timedelta(seconds=1), until=T0 + timedelta(seconds=3))
        assert [s.version for s in window] == [2, 3, 4]
        assert [s.version for s in store.events(timeline="recorded", from_version=4)] == [4, 5]

    def test_decisions_read_without_assignments_keep_their_other_fields(self, store: Store) -> None:
        """``assignments=False`` gives each of an ``AssignmentCompleted``'s other fields as
        stored, and those it does not have stay unset."""
        decided = AssignmentCompleted(
            generation=3,
            strategy="cooperative-sticky",
            assignment={"a": [("t", 0)], "b}": [("t", 1)]},
            leader="a",
            protocol="cooperative",
            client="java 4.0.0",
            source="recorded",
            source_version=7,
        )
        bare = AssignmentCompleted(generation=4, strategy="range", assignment={"a": [("t", 1)]})
        store.append([make_event(decided, 1, timeline="r"), make_event(bare, 2, timeline="r")])
        read = [s.event.data for s in store.events(timeline="r", assignments=False)]
        assert read == [d.model_copy(update={"assignment": {}}) for d in (decided, bare)]
        assert [d.model_dump(exclude_unset=True) for d in read] == [
            d.model_dump(exclude_unset=True) | {"assignment": {}} for d in (decided, bare)
        ]

    def test_decisions_read_without_assignments_whatever_their_names(self, store: Store) -> None:
        """The other fields are cut out of the decision's text without parsing it: member,
        topic and field values that look like the assignment's start or end, empty lists,
        an empty assignment, text beyond the few thousand characters looked at, none of
        it moves the cut."""
        tricky = ['"]},"leader":"x', "]},", "]}}", "{},", "assignment", ',"assignment":{', '\\"]}']
        decisions = [
            AssignmentCompleted(
                generation=1,
                strategy='s]},"leader":"',
                assignment={name: [("t", i)] for i, name in enumerate(tricky)},
                leader=']},"protocol":"eager"}',
                protocol="cooperative",
                client="{}}",
                source=',"source_version":5}',
                source_version=7,
            ),
            AssignmentCompleted(generation=2, strategy="range", assignment={}),
            AssignmentCompleted(generation=3, strategy="range", assignment={}, leader="a"),
            AssignmentCompleted(generation=4, strategy="x", assignment={"a": [], "]}": []}),
            AssignmentCompleted(generation=5, strategy="x", assignment={"]},": []}, leader="]}"),
            AssignmentCompleted(
                generation=6, strategy="é", assignment={"ü": [("t", 0)]}, leader="ü"
            ),
            AssignmentCompleted(
                generation=6, strategy="é", assignment={"ü": [("t", 0)]}, client="ß" * 5000
            ),
            AssignmentCompleted(
                generation=7, strategy="x", assignment={"a": [("t", 0)]}, client="c" * 5000
            ),
        ]
        store.append([make_event(d, i, timeline="r") for i, d in enumerate(decisions)])
        read = [s.event.data for s in store.events(timeline="r", assignments=False)]
        assert read == [d.model_copy(update={"assignment": {}}) for d in decisions]
        assert [d.model_dump(exclude_unset=True) for d in read] == [
            d.model_dump(exclude_unset=True) | {"assignment": {}} for d in decisions
        ]
        # Cut out of the text but the last two (their ends beyond the characters looked
        # at), which are parsed: the cut was what the assertions above checked.
        with duckdb.connect(str(store.path), read_only=True) as connection:
            cut = connection.execute(
                f"SELECT {log._FIELDS_TEXT} IS NOT NULL FROM kstore_events ORDER BY version"
            ).fetchall()
        assert [c for (c,) in cut] == [True] * 6 + [False] * 2

    def test_streams(self, store: Store) -> None:
        store.append([completed(3, {"a": [("t", 0)]}), completed(4, {"a": [("t", 0)]})])
        store.append([make_event(TopicChanged(topic="t", partitions=1), -5)])
        (info,) = store.streams()
        assert info.stream == G and info.events == 3 and info.generation == 4
        assert info.first_at == T0 - timedelta(seconds=5)
        assert info.last_at == T0 + timedelta(seconds=4)

    def test_state_at_version_generation_time(self, store: Store) -> None:
        events = [
            make_event(TopicChanged(topic="t", partitions=2), 0),
            make_event(MemberJoined(member_id="a", topics=["t"]), 1),
            make_event(RebalanceStarted(generation=1, reason="join"), 2),
            completed(3, {"a": [("t", 0), ("t", 1)]}),
            make_event(MemberJoined(member_id="b", topics=["t"]), 4),
            completed(5, {"a": [("t", 0)], "b": [("t", 1)]}),
        ]
        store.append(events)
        assert store.state(G) == fold(events)
        assert store.state(G, at_version=2) == fold(events[:2])
        assert store.state(G, at_version=99) == fold(events)
        assert store.state(G, at_generation=3) == fold(events[:4])
        assert store.state(G, at=T0 + timedelta(seconds=4.5)) == fold(events[:5])
        assert store.state(G, at=T0 - timedelta(seconds=1)).version == 0
        request = store.state(G, at_version=5).to_request("sticky")
        assert request.members["a"].owned == [("t", 0), ("t", 1)]
        assert request.members["a"].generation == 3

    def test_projections(self, store: Store) -> None:
        store.append(
            [
                completed(1, {"a": [("t", 0), ("t", 1)], "b": [("t", 2)]}),
                completed(2, {"a": [("t", 0)], "b": [("t", 1), ("t", 2)], "c": [("t", 0)]}),
                make_event(MemberReplaced(old_member_id="b", new_member_id="b2", instance_id="i")),
                completed(3, {"a": [("t", 1)], "b2": [("t", 2)]}),
            ]
        )
        rows = projection_rows(store)
        assert len(rows["kstore_assignments"]) == 3 + 4 + 2
        changes = [(r[3], r[6], r[7], r[8], r[9], r[10]) for r in rows["kstore_ownership"]]
        assert sorted(changes) == sorted(
            [
                (1, "t", 0, None, "a", "AssignmentCompleted"),
                (1, "t", 1, None, "a", "AssignmentCompleted"),
                (1, "t", 2, None, "b", "AssignmentCompleted"),
                # generation 2: t-0 is double-assigned (a and c): no change for it
                (2, "t", 1, "a", "b", "AssignmentCompleted"),
                (3, "t", 1, "b", "b2", "MemberReplaced"),
                (3, "t", 2, "b", "b2", "MemberReplaced"),
                (4, "t", 1, "b2", "a", "AssignmentCompleted"),
            ]
        )

    @settings(
        max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        first=streams(max_size=30),
        second=streams(max_size=30, timeline="sim"),
        cuts=st.lists(st.integers(1, 60), max_size=4),
    )
    def test_rebuild_equals_incremental_and_snapshots_change_no_answer(
        self, store: Store, first: list[Event], second: list[Event], cuts: list[int]
    ) -> None:
        store.rebuild()  # the fixture's store is shared by the examples: start empty
        start = len(list(store.events()))
        events = [e for pair in zip(first, second, strict=False) for e in pair]
        events += first[len(second) :] + second[len(first) :]
        bounds = sorted({0, len(events), *(c for c in cuts if c < len(events))})
        for lo, hi in itertools.pairwise(bounds):
            store.append(events[lo:hi])
        assert len(list(store.events())) == start + len(events)
        incremental = projection_rows(store)
        stream = first[0].stream if first else None
        answers = (
            [store.state(stream, at_version=v) for v in range(0, len(first) + 1, 7)]
            if stream
            else []
        )
        store.rebuild()
        assert projection_rows(store) == incremental
        store.delete_snapshots()
        if stream:
            assert [store.state(stream, at_version=v) for v in range(0, len(first) + 1, 7)] == (
                answers
            )
            assert [
                store.state(stream, at_version=v, snapshots=False)
                for v in range(0, len(first) + 1, 7)
            ] == answers

    def test_snapshots_are_used_and_are_only_a_cache(self, store: Store) -> None:
        events = [
            completed(g, {"a": [("t", g % 3)], "b": [("t", 3 + g % 2)]})
            for g in range(1, 2 * SNAPSHOT_EVERY + 40)
        ]
        for lo in range(0, len(events), 37):
            store.append(events[lo : lo + 37])
        connection = duckdb.connect(str(store.path), read_only=True)
        snapshots = connection.sql("SELECT count(*) FROM kstore_snapshots").fetchall()[0][0]
        connection.close()
        assert snapshots >= 2
        expected = [fold(events[:v]) for v in (1, SNAPSHOT_EVERY + 3, len(events))]
        got = [store.state(G, at_version=v) for v in (1, SNAPSHOT_EVERY + 3, len(events))]
        assert got == expected
        before = projection_rows(store)
        store.delete_snapshots()
        assert [store.state(G, at_version=v) for v in (1, SNAPSHOT_EVERY + 3)] == expected[:2]
        # the writer rebuilds its head from the log when snapshots are gone
        fresh = Store(store.path)
        fresh.append([completed(999, {"a": [("t", 4)]})])
        store.rebuild()
        after = projection_rows(store)
        assert len(after["kstore_assignments"]) == len(before["kstore_assignments"]) + 1


class TestDuckDBStore(StoreContract):
    pass


@given(
    at=st.datetimes(
        min_value=datetime(1970, 1, 2),
        max_value=datetime(9999, 12, 30),
        timezones=st.sampled_from(
            [
                UTC,
                timezone(timedelta(hours=5, minutes=30)),
                timezone(-timedelta(hours=11)),
                ZoneInfo("Europe/Paris"),
                ZoneInfo("America/St_Johns"),
            ]
        ),
    )
)
def test_times_are_kept_as_utc_and_their_offset(at: datetime) -> None:
    offset = at.utcoffset()
    assert offset is not None
    assert _utc(at) == (at.astimezone(UTC).replace(tzinfo=None), int(offset.total_seconds()))
