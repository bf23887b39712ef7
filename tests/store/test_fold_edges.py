"""The fold's edge cases of membership (docs/store.md, "Membership edge cases")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kstore.model import (
    AssignmentCompleted,
    Event,
    EventData,
    GroupState,
    MemberJoined,
    MemberReplaced,
    SubscriptionChanged,
    TopicChanged,
    fold,
)
from kstore.store.projections import Projector, StreamHead

T0 = datetime(2026, 11, 24, tzinfo=UTC)


def events(*datas: EventData) -> list[Event]:
    return [Event(group="g", at=T0 + timedelta(seconds=i), data=d) for i, d in enumerate(datas)]


def start() -> list[EventData]:
    return [
        TopicChanged(topic="t", partitions=4),
        TopicChanged(topic="u", partitions=2),
        MemberJoined(member_id="a", topics=["t"]),
        MemberJoined(member_id="b", topics=["t", "u"]),
        MemberJoined(member_id="c", topics=["u"]),
        AssignmentCompleted(
            generation=1,
            strategy="x",
            leader="a",
            assignment={"a": [("t", 0), ("t", 1)], "b": [("t", 2), ("u", 0)], "c": [("u", 1)]},
        ),
    ]


def test_replacing_an_id_by_itself_changes_nothing_but_the_instance_id() -> None:
    before = fold(events(*start()))
    after = fold(
        events(*start(), MemberReplaced(old_member_id="b", new_member_id="b", instance_id="i"))
    )
    assert list(after.members) == ["a", "b", "c"]
    assert after.members["b"].topics == ("t", "u") and after.members["b"].instance_id == "i"
    assert after.assignment == before.assignment and after.leader == "a"
    assert (
        after.to_request("range").members["b"].owned
        == before.to_request("range").members["b"].owned
    )


def test_replacing_by_a_member_merges_the_partitions() -> None:
    state = fold(
        events(*start(), MemberReplaced(old_member_id="a", new_member_id="b", instance_id="i"))
    )
    # b takes a's place and record (subscription); c is untouched
    assert list(state.members) == ["b", "c"]
    assert state.members["b"].topics == ("t",) and state.members["b"].instance_id == "i"
    assert state.assignment == {
        "b": (("t", 0), ("t", 1), ("t", 2), ("u", 0)),
        "c": (("u", 1),),
    }
    assert state.leader == "b"
    request = state.to_request("range")
    assert request.members["b"].owned == [("t", 0), ("t", 1), ("t", 2), ("u", 0)]


def test_the_ownership_projection_follows_a_merge_and_ignores_a_self_replacement() -> None:
    head, projector = StreamHead(), Projector()
    stream = events(
        *start(),
        MemberReplaced(old_member_id="c", new_member_id="c", instance_id="i"),
        MemberReplaced(old_member_id="a", new_member_id="b", instance_id="i"),
    )
    for event in stream:
        projector.feed(head, event, event.at.replace(tzinfo=None))
    ownership = projector.arrow("kstore_ownership").to_pylist()
    replaced = [
        ((row["topic"], row["partition"]), row["previous_owner"], row["owner"])
        for row in ownership
        if row["cause"] == "MemberReplaced"
    ]
    assert replaced == [(("t", 0), "a", "b"), (("t", 1), "a", "b")]
    assert head.last_owner == {
        ("t", 0): "b",
        ("t", 1): "b",
        ("t", 2): "b",
        ("u", 0): "b",
        ("u", 1): "c",
    }


def test_a_non_members_subscription_change_makes_no_member() -> None:
    state = fold(
        events(
            *start(),
            SubscriptionChanged(member_id="z", topics=["t"]),
            SubscriptionChanged(member_id="c", topics=["t"]),
        )
    )
    assert list(state.members) == ["a", "b", "c"] and state.members["c"].topics == ("t",)
    assert "z" not in state.to_request("range").members
    # joining later: the join's own subscription counts, not the earlier change
    joined = fold(events(MemberJoined(member_id="z", topics=["u"])), start=state)
    assert joined.members["z"].topics == ("u",)
    assert isinstance(joined, GroupState) and joined.version == state.version + 1
