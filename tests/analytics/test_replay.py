"""Replays: every decision is the strategy's answer on the replay's own state."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from benchmarks._fleet import group_events
from kstore._errors import UsageError
from kstore.analytics.replay import replay
from kstore.assignors import assign
from kstore.store import (
    AssignmentCompleted,
    Event,
    EventData,
    MemberJoined,
    MemberLeft,
    RebalanceStarted,
    StreamId,
    TopicChanged,
)
from kstore.store.log import Store

T0 = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)


def _history() -> list[Event]:
    datas: list[EventData] = [TopicChanged(topic="t", partitions=12)]
    members: list[str] = []
    for generation, (kind, member) in enumerate(
        [("join", "a"), ("join", "b"), ("join", "c"), ("leave", "b"), ("join", "d")], start=1
    ):
        if kind == "join":
            datas.append(MemberJoined(member_id=member, topics=["t"]))
            members.append(member)
        else:
            datas.append(MemberLeft(member_id=member, reason="leave"))
            members.remove(member)
        datas.append(RebalanceStarted(generation=generation, reason=f"{kind} {member}"))
        # what was recorded does not matter to a replay: a lopsided assignment
        datas.append(
            AssignmentCompleted(
                generation=generation,
                strategy="range",
                assignment={members[0]: [("t", p) for p in range(12)]},
            )
        )
    return [Event(group="g", at=T0 + timedelta(seconds=i), data=d) for i, d in enumerate(datas)]


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky", "roundrobin", "optimal"])
def test_each_decision_uses_the_replays_own_previous_assignment(
    store: Store, strategy: str
) -> None:
    source = _history()
    store.append(source)
    done = replay(store, group="g", strategy=strategy)
    stream = StreamId("default", "g", f"replay/{strategy}")
    assert done.stream == stream
    events = [s.event for s in store.events(group="g", timeline=stream.timeline)]
    assert len(events) == done.events
    decisions = [e for e in events if isinstance(e.data, AssignmentCompleted)]
    assert len(decisions) == done.rebalances == 5 + done.follow_ups
    for version, event in enumerate(events, start=1):
        if not isinstance(event.data, AssignmentCompleted):
            continue
        before = store.state(stream, at_version=version - 1)
        expected = assign(before.to_request(strategy)).assignment
        assert event.data.assignment == expected
        assert event.data.strategy == strategy
    copied = [
        e.data for e in events if not isinstance(e.data, AssignmentCompleted | RebalanceStarted)
    ]
    assert copied == [
        e.data for e in source if not isinstance(e.data, AssignmentCompleted | RebalanceStarted)
    ]
    assert [e.at for e in events if isinstance(e.data, MemberJoined)] == [
        e.at for e in source if isinstance(e.data, MemberJoined)
    ]
    generations = [e.data.generation for e in decisions if isinstance(e.data, AssignmentCompleted)]
    assert generations == list(range(1, len(decisions) + 1))
    if strategy == "cooperative-sticky":
        assert done.follow_ups > 0
    else:
        assert done.follow_ups == 0


def test_a_replay_never_overwrites_a_timeline(store: Store) -> None:
    store.append(_history())
    replay(store, group="g", strategy="range", timeline="mine")
    with pytest.raises(UsageError, match="exists already"):
        replay(store, group="g", strategy="range", timeline="mine")
    with pytest.raises(UsageError, match="no stream"):
        replay(store, group="nope", strategy="range")


def test_a_replay_reports_the_assignors_warnings(store: Store) -> None:
    """The fleet's group g00815 leads sticky to a request Kafka never returns from
    (quirk 4 in docs/assignors/sticky.md): the replay finishes and says where."""
    store.append(list(group_events("g00815", 50, seed=7, cluster="eu")))
    done = replay(store, group="g00815", cluster="eu", strategy="sticky")
    assert done.rebalances == 50
    assert len(done.warnings) == 1
    assert done.warnings[0].startswith("generation ")
    assert "never returns" in done.warnings[0]
