"""The fold: GroupState from events, and the next assignor request from it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kstore.assignors import AssignmentRequest
from kstore.model import (
    AssignmentCompleted,
    Event,
    EventData,
    GroupState,
    Member,
    MemberJoined,
    MemberLeft,
    MemberReplaced,
    RebalanceStarted,
    SubscriptionChanged,
    TopicChanged,
    TopicDeleted,
    fold,
)
from tests.store.events_gen import make_event, streams


def history() -> list[Event]:
    datas = [
        TopicChanged(topic="orders", partitions=3, racks=[["r1"], ["r2"], ["r1", "r2"]]),
        TopicChanged(topic="payments", partitions=2),
        MemberJoined(member_id="a", topics=["orders"], rack="r1"),
        MemberJoined(member_id="b", topics=["orders", "payments"], instance_id="static-b"),
        RebalanceStarted(generation=1, reason="join"),
        AssignmentCompleted(
            generation=1,
            strategy="range",
            leader="b",
            assignment={"a": [("orders", 0), ("orders", 1)], "b": [("orders", 2), ("payments", 0)]},
        ),
        MemberReplaced(old_member_id="b", new_member_id="b2", instance_id="static-b"),
        MemberJoined(member_id="c", topics=["payments"]),
        RebalanceStarted(generation=2, reason="c joined"),
    ]
    return [make_event(d, i) for i, d in enumerate(datas)]


def test_fold_of_a_history() -> None:
    state = fold(history())
    assert state.version == 9
    assert list(state.members) == ["a", "b2", "c"]
    assert state.members["b2"].instance_id == "static-b"
    assert state.members["b2"].topics == ("orders", "payments")
    assert state.topics == {"orders": 3, "payments": 2}
    assert state.generation == 1 and state.strategy == "range" and state.leader == "b2"
    assert state.assignment == {
        "a": (("orders", 0), ("orders", 1)),
        "b2": (("orders", 2), ("payments", 0)),
    }
    assert state.rebalance is not None and state.rebalance.generation == 2


def test_to_request_carries_owned_and_generation() -> None:
    request = fold(history()).to_request("sticky")
    assert isinstance(request, AssignmentRequest)
    assert request.strategy == "sticky"
    assert list(request.members) == ["a", "b2", "c"]
    assert request.members["a"].owned == [("orders", 0), ("orders", 1)]
    assert request.members["a"].generation == 1 and request.members["a"].rack == "r1"
    assert request.members["b2"].owned == [("orders", 2), ("payments", 0)]
    assert request.members["b2"].instance_id == "static-b"
    assert request.members["c"].owned == [] and request.members["c"].generation is None
    assert request.partition_racks == {"orders": [["r1"], ["r2"], ["r1", "r2"]]}
    assert request.topics == {"orders": 3, "payments": 2}


def test_later_events_change_state() -> None:
    more = [
        SubscriptionChanged(member_id="a", topics=["payments"]),
        MemberLeft(member_id="c", reason="session-timeout"),
        TopicDeleted(topic="orders"),
        AssignmentCompleted(generation=2, strategy="range", assignment={"a": [("payments", 1)]}),
    ]
    state = fold([make_event(d, 100 + i) for i, d in enumerate(more)], start=fold(history()))
    assert state.version == 13
    assert state.members["a"].topics == ("payments",) and state.members["a"].rack == "r1"
    assert "c" not in state.members and "orders" not in state.topics
    assert state.topic_racks == {}
    assert state.rebalance is None and state.generation == 2
    request = state.to_request("range")
    assert request.members["b2"].owned == [] and request.members["b2"].generation is None


def test_fold_does_not_change_its_start() -> None:
    start = fold(history())
    before = start.to_dict()
    fold([make_event(MemberLeft(member_id="a", reason="leave"))], start=start)
    assert start.to_dict() == before


def test_a_stream_must_not_mix() -> None:
    with pytest.raises(ValueError, match="not"):
        fold([make_event(TopicDeleted(topic="t")), make_event(TopicDeleted(topic="t"), group="h")])


@settings(max_examples=80, deadline=None)
@given(events=streams(), cut=st.integers(0, 25))
def test_fold_is_incremental_and_serialisable(events: list[Event], cut: int) -> None:
    whole = fold(events)
    head = fold(events[:cut])
    resumed = fold(events[cut:], start=GroupState.from_dict(head.to_dict()))
    assert resumed == whole
    assert GroupState.from_dict(whole.to_dict()) == whole
    assert whole.version == len(events)
    request = whole.to_request("range")
    assert list(request.members) == list(whole.members)


@settings(max_examples=80, deadline=None)
@given(events=streams())
def test_each_request_is_a_fresh_folds(events: list[Event]) -> None:
    """Requests made as the fold goes (``requesting`` kept up to date by each event)
    equal those of a fold made from nothing at the same event."""
    state = GroupState()
    for event in events:
        state.apply(event)
        fresh = GroupState.from_dict(state.to_dict()).to_request("sticky")
        assert state.to_request("sticky") == fresh


@settings(max_examples=80, deadline=None)
@given(events=streams(), first=st.integers(0, 25))
def test_each_request_without_owned_is_a_fresh_folds(events: list[Event], first: int) -> None:
    """``to_request(owned=False)`` made as the fold goes (``bare``, made at the event
    ``first`` and kept up to date from there) is a fresh fold's request with every member's
    ``owned`` empty and ``generation`` None; the one with them is unchanged beside it."""
    state = GroupState()
    for number, event in enumerate(events):
        state.apply(event)
        if number < first:
            continue
        fresh = GroupState.from_dict(state.to_dict()).to_request("range")
        bare = {
            m: s.model_copy(update={"owned": [], "generation": None})
            for m, s in fresh.members.items()
        }
        assert state.to_request("range", owned=False) == fresh.model_copy(update={"members": bare})
        if number % 2:
            assert state.to_request("range") == fresh


@settings(max_examples=200, deadline=None)
@given(events=streams(), first=st.integers(0, 5))
def test_topic_lists_kept_as_the_fold_goes_are_a_fresh_folds(
    events: list[Event], first: int
) -> None:
    """``topic_lists`` made at the event ``first`` and kept up to date from there (joins,
    a join of a member id already known, leaves, subscription changes, replacements)
    names the distinct topic lists of the members at every event, as a fresh fold does."""
    state = GroupState()
    for number, event in enumerate(events):
        state.apply(event)
        if number < first:
            continue
        members = GroupState.from_dict(state.to_dict()).members.values()
        assert sorted(state.topic_lists()) == sorted({m.topics for m in members})


def test_topic_lists_follow_joins_leaves_and_subscription_changes() -> None:
    state = GroupState()
    steps: list[tuple[EventData, list[tuple[str, ...]]]] = [
        (MemberJoined(member_id="a", topics=["t1"]), [("t1",)]),
        (MemberJoined(member_id="b", topics=["t1", "t2"]), [("t1",), ("t1", "t2")]),
        (MemberJoined(member_id="c", topics=["t1"]), [("t1",), ("t1", "t2")]),
        (MemberJoined(member_id="b", topics=["t3"]), [("t1",), ("t3",)]),  # b again
        (SubscriptionChanged(member_id="a", topics=["t2"]), [("t1",), ("t2",), ("t3",)]),
        (MemberLeft(member_id="c", reason="leave"), [("t2",), ("t3",)]),
        (MemberReplaced(old_member_id="a", new_member_id="d", instance_id="i"), [("t2",), ("t3",)]),
        (MemberLeft(member_id="d", reason="leave"), [("t3",)]),
    ]
    for number, (data, lists) in enumerate(steps):
        state.apply(make_event(data, number))
        assert sorted(state.topic_lists()) == lists, data


def test_the_fold_keeps_the_request_up_to_date() -> None:
    # After the first request, events change the members' subscriptions where they are:
    # a decision sets each one's owned partitions and generation, a changed record makes
    # that member's anew, a member that leaves is dropped; a request copies the map.
    state = fold(history())
    first = state.to_request("range")
    decision = AssignmentCompleted(
        generation=2,
        strategy="range",
        assignment={"a": [("orders", 0), ("orders", 1)], "b2": [("orders", 2)], "c": []},
    )
    state.apply(make_event(RebalanceStarted(generation=2, reason="join")))
    state.apply(make_event(decision))
    second = state.to_request("range")
    assert second.members is not first.members
    assert second.members["a"] is first.members["a"]
    assert second.members["a"].generation == 2
    assert second.members["b2"] is first.members["b2"]  # set in place
    assert second.members["b2"].owned == [("orders", 2)]
    assert second.members["c"].owned == [] and second.members["c"].generation == 2
    state.apply(make_event(SubscriptionChanged(member_id="c", topics=["orders"])))
    state.apply(make_event(MemberLeft(member_id="a", reason="leave")))
    third = state.to_request("range")
    assert list(third.members) == ["b2", "c"]
    assert third.members["c"] is not second.members["c"]
    assert third.members["c"].topics == ["orders"] and third.members["c"].generation == 2
    assert third == GroupState.from_dict(state.to_dict()).to_request("range")


def test_members_compare_and_hash_by_value() -> None:
    # Not frozen (its __init__ is a join's hot path), still a value: equal records hash
    # alike, as the projections and snapshots compare them.
    one = Member(("t",), None, "c-1", None, "r1", ("range",), 45_000, 300_000)
    two = Member(("t",), None, "c-1", None, "r1", ("range",), 45_000, 300_000)
    assert one == two
    assert hash(one) == hash(two)
    assert len({one, two, Member(("t",))}) == 2
    assert Member.from_dict(one.to_dict()) == one
