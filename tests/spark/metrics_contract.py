"""One suite for every engine that computes docs/spec/metrics.md (eventsourcing-style).

A subclass says how its engine turns events into ``metrics`` rows (``engine_metrics``);
the tests here run unchanged against each: a hand-worked history with every number
written down, generated odd histories and a generated fleet, both against the tests'
one oracle (``tests/analytics/oracle.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks._fleet import fleet
from kstore.model import (
    AssignmentCompleted,
    AssignmentNotTakenUp,
    Event,
    EventData,
    MemberJoined,
    MemberLeft,
    MemberReplaced,
    RebalanceStarted,
    SubscriptionChanged,
    TopicChanged,
)
from kstore.spark._metrics import METRIC_COLUMNS
from tests.analytics.oracle import metrics as oracle_metrics
from tests.store.events_gen import streams

__all__ = ["MetricsContract", "comparable"]

T0 = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)


def comparable(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Rows as tuples in the query's column order, times as naive UTC, sorted by stream."""
    out = []
    for row in rows:
        values = dict(row)
        at = values.get("at")
        if isinstance(at, datetime) and at.tzinfo is not None:
            values["at"] = at.astimezone(UTC).replace(tzinfo=None)
        out.append(tuple(values.get(name) for name in METRIC_COLUMNS))
    return sorted(out, key=lambda r: (r[0], r[1], r[2], r[3]))


def _hand_history() -> list[Event]:
    steps: list[tuple[float, EventData]] = [
        (0, TopicChanged(topic="t", partitions=4)),
        (1, MemberJoined(member_id="a", topics=["t"])),
        (2, MemberJoined(member_id="b", topics=["t"])),
        (3, RebalanceStarted(generation=1, reason="join")),
        (
            4.5,
            AssignmentCompleted(
                generation=1, strategy="x", assignment={"a": [("t", 0), ("t", 1)], "b": [("t", 2)]}
            ),
        ),
        (6, MemberJoined(member_id="c", topics=["t"])),
        (7, MemberReplaced(old_member_id="a", new_member_id="a2", instance_id="i")),
        (8, RebalanceStarted(generation=2, reason="join")),
        (
            10.25,
            AssignmentCompleted(
                generation=2,
                strategy="x",
                assignment={"a2": [("t", 0)], "b": [("t", 1), ("t", 2)], "c": [("t", 3), ("t", 2)]},
            ),
        ),
        (11, MemberLeft(member_id="b", reason="leave")),
        (12, SubscriptionChanged(member_id="c", topics=["u"])),
        (
            13,
            AssignmentCompleted(
                generation=3,
                strategy="x",
                assignment={"a2": [("t", 0), ("t", 1), ("t", 2), ("t", 3)]},
            ),
        ),
    ]
    return [
        Event(event_id=f"h{i}", group="hand", at=T0 + timedelta(seconds=s), data=d)
        for i, (s, d) in enumerate(steps)
    ]


# Worked out by hand from metrics.md (see the comments of each row).
_HAND = [
    # gen 1: 3 new partitions, t3 left over; loads a=2 b=1; 1.5 s after its start.
    dict(
        version=5,
        generation=1,
        members=2,
        assigned=3,
        moved=0,
        new=3,
        revoked=0,
        unassigned=1,
        retainable=0,
        kept=0,
        stickiness=None,
        imbalance=1,
        excess=0,
        double_assigned=0,
        duration_ms=1500,
    ),
    # gen 2: a reads as a2; t2 doubled (left out); t0 kept, t1 moved a2->b, t3 new;
    # a2 gives up t1 (revoked); loads 1, 2, 2.
    dict(
        version=9,
        generation=2,
        members=3,
        assigned=4,
        moved=1,
        new=1,
        revoked=1,
        unassigned=0,
        retainable=2,
        kept=1,
        stickiness=0.5,
        imbalance=1,
        excess=0,
        double_assigned=1,
        duration_ms=2250,
    ),
    # gen 3: b left, c subscribes to a topic that does not exist (not counted in loads);
    # t2's prev looks past gen 2 (b); only t0's prev is a subscribed member; b's t1, t2
    # and c's t3 and t2 are revoked (4 (member, partition) pairs: t2, double-assigned
    # in gen 2 and given to neither b nor c, counts twice); no RebalanceStarted of gen 3.
    dict(
        version=12,
        generation=3,
        members=2,
        assigned=4,
        moved=3,
        new=0,
        revoked=4,
        unassigned=0,
        retainable=1,
        kept=1,
        stickiness=1.0,
        imbalance=0,
        excess=0,
        double_assigned=0,
        duration_ms=None,
    ),
]


def _history(group: str, datas: list[EventData]) -> list[Event]:
    """``datas`` as the events of one stream, a second apart."""
    return [
        Event(event_id=f"{group}-{i}", group=group, at=T0 + timedelta(seconds=i), data=d)
        for i, d in enumerate(datas)
    ]


def _not_taken_up_history() -> list[Event]:
    t0, t1 = ("t", 0), ("t", 1)
    datas: list[EventData] = [
        TopicChanged(topic="t", partitions=2),
        MemberJoined(member_id="a", topics=["t"]),
        MemberJoined(member_id="b", topics=["t"]),
        AssignmentCompleted(generation=1, strategy="x", assignment={"a": [t0, t1], "b": []}),
        AssignmentCompleted(generation=2, strategy="x", assignment={"a": [t0], "b": [t1]}),
        AssignmentNotTakenUp(generation=2, member_id="a"),
        AssignmentCompleted(generation=3, strategy="x", assignment={"a": [t0], "b": [t1]}),
        AssignmentNotTakenUp(generation=9, member_id="b"),  # odd: another generation
        AssignmentNotTakenUp(generation=3, member_id="z"),  # odd: a member neither names
        MemberJoined(member_id="c", topics=["t"]),
        AssignmentCompleted(generation=4, strategy="x", assignment={"a": [], "b": [t1], "c": [t0]}),
        AssignmentNotTakenUp(generation=4, member_id="c"),
        AssignmentCompleted(generation=5, strategy="x", assignment={"a": [t0], "b": [t1], "c": []}),
    ]
    return _history("ntu", datas)


def _counts(
    version: int,
    generation: int,
    members: int,
    moved: int,
    new: int,
    revoked: int,
    retainable: int,
    kept: int,
    imbalance: int,
    excess: int,
) -> dict[str, Any]:
    return dict(
        version=version,
        generation=generation,
        members=members,
        assigned=2,
        moved=moved,
        new=new,
        revoked=revoked,
        unassigned=0,
        retainable=retainable,
        kept=kept,
        stickiness=kept / retainable if retainable else None,
        imbalance=imbalance,
        excess=excess,
        double_assigned=0,
        duration_ms=None,
    )


# Worked out by hand from metrics.md: a member that did not take a decision up holds its
# share of the one before (none where that did not name it) and is the prev of it.
_NOT_TAKEN_UP = [
    _counts(4, 1, 2, moved=0, new=2, revoked=0, retainable=0, kept=0, imbalance=2, excess=1),
    # t1 moved a->b and revoked from a; t0 kept.
    _counts(5, 2, 2, moved=1, new=0, revoked=1, retainable=2, kept=1, imbalance=0, excess=0),
    # a did not take gen 2 up: it holds t0, t1 again and is their prev; gen 3 gives t1 to
    # b: moved and revoked from a (b's own (b, t1) from gen 2 is kept). The odd facts
    # after change nothing.
    _counts(7, 3, 2, moved=1, new=0, revoked=1, retainable=2, kept=1, imbalance=0, excess=0),
    # t0 moved a->c, revoked from a.
    _counts(11, 4, 3, moved=1, new=0, revoked=1, retainable=2, kept=1, imbalance=1, excess=0),
    # c did not take gen 4 up and held nothing before: nothing of c's is revoked; t0's
    # prev is still c (as gen 4 wrote it), so t0 moved c->a.
    _counts(13, 5, 3, moved=1, new=0, revoked=0, retainable=2, kept=1, imbalance=1, excess=0),
]


def _replaced_not_taken_up_history() -> list[Event]:
    t0, t1 = ("t", 0), ("t", 1)
    datas: list[EventData] = [
        TopicChanged(topic="t", partitions=2),
        MemberJoined(member_id="a", topics=["t"]),
        MemberJoined(member_id="b", topics=["t"]),
        AssignmentCompleted(generation=1, strategy="x", assignment={"a": [t0, t1], "b": []}),
        AssignmentCompleted(generation=2, strategy="x", assignment={"a": [t0], "b": [t1]}),
        MemberReplaced(old_member_id="a", new_member_id="a2", instance_id="i"),
        AssignmentNotTakenUp(generation=2, member_id="a2"),
        AssignmentCompleted(generation=3, strategy="x", assignment={"a2": [t0], "b": [t1]}),
    ]
    return _history("rntu", datas)


# a is replaced by a2 after generation 2, and a2 does not take generation 2 up: it holds
# what a held in generation 1 (t0, t1) and is their prev.
_REPLACED_NOT_TAKEN_UP = [
    *_NOT_TAKEN_UP[:2],
    # t1 moved a2->b and revoked from a2; t0 kept.
    _counts(8, 3, 2, moved=1, new=0, revoked=1, retainable=2, kept=1, imbalance=0, excess=0),
]


def _twice_not_taken_up_history() -> list[Event]:
    t0, t1 = ("t", 0), ("t", 1)
    datas: list[EventData] = [
        TopicChanged(topic="t", partitions=2),
        MemberJoined(member_id="a", topics=["t"]),
        AssignmentCompleted(generation=1, strategy="x", assignment={"a": [t0, t1]}),
        MemberJoined(member_id="c", topics=["t"]),
        AssignmentCompleted(generation=2, strategy="x", assignment={"a": [t0], "c": [t1]}),
        AssignmentNotTakenUp(generation=2, member_id="c"),
        AssignmentCompleted(generation=3, strategy="x", assignment={"a": [t0], "c": [t1]}),
        AssignmentNotTakenUp(generation=3, member_id="c"),
        AssignmentCompleted(generation=4, strategy="x", assignment={"a": [t0, t1], "c": []}),
    ]
    return _history("twice", datas)


# c takes up neither generation 2 nor 3: it holds what it held before 2 (nothing) both
# times, not what 2 wrote for it, so generation 4 revokes nothing of c's.
_TWICE_NOT_TAKEN_UP = [
    _counts(3, 1, 1, moved=0, new=2, revoked=0, retainable=0, kept=0, imbalance=0, excess=0),
    # t1 moved a->c, revoked from a.
    _counts(5, 2, 2, moved=1, new=0, revoked=1, retainable=2, kept=1, imbalance=0, excess=0),
    # t1's prev is c, as generation 2 wrote it; c held nothing to revoke.
    _counts(7, 3, 2, moved=0, new=0, revoked=0, retainable=2, kept=2, imbalance=0, excess=0),
    _counts(9, 4, 2, moved=1, new=0, revoked=0, retainable=2, kept=1, imbalance=2, excess=1),
]


def _double_then_not_taken_up_history() -> list[Event]:
    t0, t1 = ("t", 0), ("t", 1)
    datas: list[EventData] = [
        TopicChanged(topic="t", partitions=2),
        MemberJoined(member_id="a", topics=["t"]),
        MemberJoined(member_id="b", topics=["t"]),
        AssignmentCompleted(generation=1, strategy="x", assignment={"a": [t0], "b": [t0, t1]}),
        AssignmentCompleted(generation=2, strategy="x", assignment={"a": [], "b": [t1]}),
        AssignmentNotTakenUp(generation=2, member_id="a"),
        AssignmentCompleted(generation=3, strategy="x", assignment={"a": [t0], "b": [t1]}),
    ]
    return _history("double", datas)


# Generation 1 gives t0 to a and b (no prev(t0) from it); a does not take generation 2 up,
# so it holds t0 again and is its prev: generation 3 keeps t0 with a, nothing new.
_DOUBLE_THEN_NOT_TAKEN_UP = [
    {
        **_counts(4, 1, 2, moved=0, new=1, revoked=0, retainable=0, kept=0, imbalance=1, excess=0),
        "double_assigned": 1,
    },
    # t0 given to nobody: revoked from a and from b; t1 kept.
    {
        **_counts(5, 2, 2, moved=0, new=0, revoked=2, retainable=1, kept=1, imbalance=1, excess=0),
        "assigned": 1,
        "unassigned": 1,
    },
    _counts(7, 3, 2, moved=0, new=0, revoked=0, retainable=2, kept=2, imbalance=0, excess=0),
]


_NOT_TAKEN_UP_BY_HAND: dict[str, tuple[Callable[[], list[Event]], list[dict[str, Any]]]] = {
    "plain": (_not_taken_up_history, _NOT_TAKEN_UP),
    "member-replaced": (_replaced_not_taken_up_history, _REPLACED_NOT_TAKEN_UP),
    "twice": (_twice_not_taken_up_history, _TWICE_NOT_TAKEN_UP),
    "double-assigned": (_double_then_not_taken_up_history, _DOUBLE_THEN_NOT_TAKEN_UP),
}


def _renamed(batch: list[list[Event]]) -> list[Event]:
    """Streams drawn separately, made distinct groups (and ids) of one log."""
    return [
        event.model_copy(update={"group": f"g{i}", "event_id": f"g{i}-{event.event_id}"})
        for i, stream in enumerate(batch)
        for event in stream
    ]


class MetricsContract:
    """The checks every metrics engine must pass."""

    def engine_metrics(self, events: list[Event]) -> list[dict[str, Any]]:
        raise NotImplementedError

    def check(self, events: list[Event]) -> None:
        got = self.engine_metrics(events)
        assert got, "no rows"
        assert list(got[0]) == list(METRIC_COLUMNS)
        assert comparable(got) == comparable(oracle_metrics(events))

    def test_hand_worked_history(self) -> None:
        events = _hand_history()
        rows = sorted(self.engine_metrics(events), key=lambda r: r["version"])
        assert [{k: r[k] for k in _HAND[0]} for r in rows] == _HAND
        assert {(r["cluster"], r["group"], r["timeline"]) for r in rows} == {
            ("default", "hand", "recorded")
        }

    @pytest.mark.parametrize("case", sorted(_NOT_TAKEN_UP_BY_HAND))
    def test_not_taken_up_histories(self, case: str) -> None:
        history, expected = _NOT_TAKEN_UP_BY_HAND[case]
        events = history()
        rows = sorted(self.engine_metrics(events), key=lambda r: r["version"])
        assert [{k: r[k] for k in expected[0]} for r in rows] == expected
        self.check(events)

    odd_examples = 3
    """How many generated odd histories the engine is given: as many as its start-up
    per history allows (a subclass says)."""

    def test_generated_odd_histories(self) -> None:
        @settings(
            max_examples=self.odd_examples,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(st.lists(streams(max_size=20), min_size=1, max_size=8))
        def histories(batch: list[list[Event]]) -> None:
            events = _renamed(batch)
            if any(isinstance(e.data, AssignmentCompleted) for e in events):
                self.check(events)

        histories()

    def test_generated_fleet(self) -> None:
        self.check(list(fleet(5, 20, seed=3)))
