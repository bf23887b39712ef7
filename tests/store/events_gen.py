"""Hypothesis strategies and helpers that make streams of well-formed events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

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
    TopicDeleted,
)

__all__ = ["T0", "event_data", "make_event", "streams"]

T0 = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)

_members = st.sampled_from(["a", "b", "c", "d"])
_topics = st.sampled_from(["t1", "t2", "t3"])


def make_event(data: EventData, seconds: float = 0, **envelope: Any) -> Event:
    return Event(at=T0 + timedelta(seconds=seconds), data=data, **({"group": "g"} | envelope))


_assignment = st.dictionaries(
    _members, st.lists(st.tuples(_topics, st.integers(0, 5)), max_size=4), max_size=4
)

event_data: st.SearchStrategy[EventData] = st.one_of(
    st.builds(
        TopicChanged,
        topic=_topics,
        partitions=st.integers(1, 6),
        racks=st.none() | st.just([["r1"]]),
    ),
    st.builds(TopicDeleted, topic=_topics),
    st.builds(
        MemberJoined,
        member_id=_members,
        topics=st.lists(_topics, max_size=3),
        rack=st.none() | st.sampled_from(["r1", "r2"]),
        instance_id=st.none() | st.just("static"),
    ),
    st.builds(MemberLeft, member_id=_members, reason=st.just("leave")),
    st.builds(
        MemberReplaced, old_member_id=_members, new_member_id=_members, instance_id=st.just("i")
    ),
    st.builds(SubscriptionChanged, member_id=_members, topics=st.lists(_topics, max_size=3)),
    st.builds(RebalanceStarted, generation=st.integers(0, 50), reason=st.just("r")),
    st.builds(
        AssignmentCompleted,
        generation=st.integers(0, 50),
        strategy=st.just("range"),
        assignment=_assignment,
        leader=st.none() | _members,
    ),
    st.builds(
        AssignmentNotTakenUp,
        generation=st.integers(0, 50),
        member_id=_members,
        reason=st.none() | st.just("r"),
    ),
)


@st.composite
def streams(draw: st.DrawFn, max_size: int = 25, **envelope: Any) -> list[Event]:
    """A stream's events, ``at`` one second apart."""
    datas = draw(st.lists(event_data, max_size=max_size))
    latest = None
    for i, data in enumerate(datas):  # most not-taken-up facts of the latest decision
        if isinstance(data, AssignmentCompleted):
            latest = data.generation
        elif isinstance(data, AssignmentNotTakenUp) and latest is not None and draw(st.booleans()):
            datas[i] = data.model_copy(update={"generation": latest})
    return [make_event(d, i, **envelope) for i, d in enumerate(datas)]
