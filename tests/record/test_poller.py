"""The poller's diff, on DescribeGroups answers built per Kafka's response schema."""

from __future__ import annotations

import threading
from collections.abc import Collection, Sequence
from datetime import UTC, datetime

import pytest
from kafka.errors import KafkaConnectionError

from kstore._errors import UsageError
from kstore.model import Event, GroupState, fold
from kstore.record._failures import FirstAnswer, GaveUp
from kstore.record.offsets_codec import Assignment, Subscription, TopicPartitions
from kstore.record.poller import (
    INFERRED_REASON,
    DescribedGroup,
    DescribedMember,
    Poller,
    diff,
    visibility_key,
)
from kstore.store.log import Store
from tests.record import kafka_encode as enc

AT = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)


def described(
    member_id: str,
    topics: Sequence[str],
    partitions: Sequence[tuple[str, int]],
    instance_id: str | None = None,
) -> DescribedMember:
    """A member as DescribeGroups carries it: subscription and assignment as bytes."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    metadata = enc.subscription(Subscription(3, tuple(topics), None, (), -1, "rack-a"))
    assignment = enc.assignment(
        Assignment(0, tuple(TopicPartitions(t, tuple(p)) for t, p in by_topic.items()), None)
    )
    return DescribedMember.from_response(
        "g", member_id, "client", "/127.0.0.1", instance_id, metadata, assignment
    )


def group(
    *members: DescribedMember, state: str = "Stable", protocol: str = "range"
) -> DescribedGroup:
    return DescribedGroup("g", state, "consumer", protocol, tuple(members))


def apply(state: GroupState, events: list[Event]) -> GroupState:
    return fold(events, state)


def kinds(events: list[Event]) -> list[str]:
    return [event.type for event in events]


def test_a_first_poll_records_topics_members_and_an_inferred_generation() -> None:
    view = group(described("a", ["t"], [("t", 0), ("t", 1)]), described("b", ["t"], [("t", 2)]))
    events = diff(view, GroupState(), {"t": 3}, AT, "prod")
    assert kinds(events) == [
        "TopicChanged",
        "MemberJoined",
        "MemberJoined",
        "RebalanceStarted",
        "AssignmentCompleted",
    ]
    assert events[1].data.to_dict() == {
        "member_id": "a",
        "topics": ["t"],
        "client_id": "client",
        "host": "/127.0.0.1",
        "rack": "rack-a",
        "protocols": ["range"],
    }
    started, completed = events[3].data.to_dict(), events[4].data.to_dict()
    assert started["generation"] == completed["generation"] == 1
    assert started["reason"].startswith(INFERRED_REASON)
    assert completed["assignment"] == {"a": [["t", 0], ["t", 1]], "b": [["t", 2]]}
    assert completed["strategy"] == "range" and completed["protocol"] == "eager"
    state = fold(events)
    assert state.topics == {"t": 3} and state.generation == 1


def test_an_unchanged_group_gives_nothing() -> None:
    view = group(described("a", ["t"], [("t", 0), ("t", 1)]))
    state = fold(diff(view, GroupState(), {"t": 2}, AT))
    assert diff(view, state, {"t": 2}, AT) == []


def test_a_changed_assignment_is_a_new_inferred_generation() -> None:
    one = group(described("a", ["t"], [("t", 0), ("t", 1)]))
    state = fold(diff(one, GroupState(), {"t": 2}, AT))
    two = group(described("a", ["t"], [("t", 0)]), described("b", ["t"], [("t", 1)]))
    events = diff(two, state, {"t": 2}, AT)
    assert kinds(events) == ["MemberJoined", "RebalanceStarted", "AssignmentCompleted"]
    assert "member set changed" in events[1].data.to_dict()["reason"]
    after = apply(state, events)
    assert after.generation == 2
    assert after.assignment == {"a": (("t", 0),), "b": (("t", 1),)}


def test_a_rebalance_in_progress_records_members_but_no_assignment() -> None:
    one = group(described("a", ["t"], [("t", 0)]))
    state = fold(diff(one, GroupState(), {"t": 1}, AT))
    moving = group(described("a", ["t", "u"], []), state="PreparingRebalance")
    events = diff(moving, state, {"t": 1, "u": 2}, AT)
    assert kinds(events) == ["TopicChanged", "SubscriptionChanged"]


def test_members_that_vanish_left_and_an_empty_group_has_no_one() -> None:
    two = group(described("a", ["t"], [("t", 0)]), described("b", ["t"], [("t", 1)]))
    state = fold(diff(two, GroupState(), {"t": 2}, AT))
    events = diff(group(state="Empty"), state, {"t": 2}, AT)
    assert kinds(events) == ["MemberLeft", "MemberLeft"]
    assert {e.data.to_dict()["member_id"] for e in events} == {"a", "b"}


def test_a_static_member_back_with_its_partitions_is_a_replacement() -> None:
    one = group(described("a", ["t"], [("t", 0)]), described("s1", ["t"], [("t", 1)], "inst"))
    state = fold(diff(one, GroupState(), {"t": 2}, AT))
    back = group(described("a", ["t"], [("t", 0)]), described("s2", ["t"], [("t", 1)], "inst"))
    events = diff(back, state, {"t": 2}, AT)
    assert kinds(events) == ["MemberReplaced"]
    after = apply(state, events)
    assert after.assignment == {"a": (("t", 0),), "s2": (("t", 1),)}


def test_partition_count_changes_and_deleted_topics() -> None:
    one = group(described("a", ["t"], [("t", 0)]))
    state = fold(diff(one, GroupState(), {"t": 1}, AT))
    grown = diff(one, state, {"t": 4}, AT)
    assert [e.data.to_dict() for e in grown] == [{"topic": "t", "partitions": 4}]
    gone = diff(group(state="Empty"), apply(state, grown), {}, AT)
    assert kinds(gone) == ["TopicDeleted", "MemberLeft"]


def test_ids_are_deterministic_and_differ_between_versions() -> None:
    view = group(described("a", ["t"], [("t", 0)]))
    first = diff(view, GroupState(), {"t": 1}, AT)
    assert [e.event_id for e in first] == [
        e.event_id for e in diff(view, GroupState(), {"t": 1}, AT)
    ]
    assert len({e.event_id for e in first}) == len(first)


def test_undecodable_member_bytes_are_left_out() -> None:
    member = DescribedMember.from_response("g", "a", "c", "h", None, b"\xff", b"\x00")
    assert member.subscription is None and member.assignment is None


def test_a_known_generation_is_used_as_is() -> None:
    view = group(described("a", ["t"], [("t", 0)]))
    events = diff(view, GroupState(), {"t": 1}, AT, generation=7)
    assert events[-1].data.to_dict()["generation"] == 7
    assert INFERRED_REASON not in events[-2].data.to_dict()["reason"]
    assert diff(view, fold(events), {"t": 1}, AT, generation=7) == []


class FakeAdmin:
    def __init__(self, answers: list[list[DescribedGroup]], counts: dict[str, int]) -> None:
        self.answers = answers
        self.counts = counts

    def group_ids(self) -> list[str]:
        return [g.group_id for g in self.answers[0]]

    def describe(self, group_ids: list[str]) -> list[DescribedGroup]:
        return [g for g in self.answers.pop(0) if g.group_id in group_ids]

    def partition_counts(self, topics: Collection[str]) -> dict[str, int]:
        return {t: c for t, c in self.counts.items() if t in topics}

    def close(self) -> None:
        pass


def test_polls_append_only_the_differences(store: Store) -> None:
    one = group(described("a", ["t"], [("t", 0), ("t", 1)]))
    two = group(described("a", ["t"], [("t", 0)]), described("b", ["t"], [("t", 1)]))
    admin = FakeAdmin([[one], [one], [two]], {"t": 2})
    poller = Poller(store, admin, cluster="prod", groups=None)
    assert [poller.poll_once(AT) for _ in range(3)] == [4, 0, 3]
    state = fold(s.event for s in store.events())
    assert state.generation == 2
    assert state.assignment == {"a": (("t", 0),), "b": (("t", 1),)}
    # A second poller seeing the same as the first adds nothing.
    again = Poller(store, FakeAdmin([[two]], {"t": 2}), cluster="prod", groups=["g"])
    assert again.poll_once(AT) == 0


def test_a_poll_stamps_its_events_to_the_millisecond(store: Store) -> None:
    """Kafka's times are milliseconds, and so is every time kstore prints; the poller's
    own clock gave ``...20.582028Z`` (user trial)."""
    one = group(described("a", ["t"], [("t", 0), ("t", 1)]))
    poller = Poller(store, FakeAdmin([[one]] * 20, {"t": 2}), cluster="prod", groups=None)
    assert poller.poll_once() == 4  # at: the poller's own clock
    stamps = [s.event.at for s in store.events()]
    assert stamps and all(at.microsecond % 1000 == 0 for at in stamps)


class DownAdmin(FakeAdmin):
    """A broker that answers ``answers`` polls, then stays down."""

    def describe(self, group_ids: list[str]) -> list[DescribedGroup]:
        if not self.answers:
            raise KafkaConnectionError()
        return super().describe(group_ids)


def test_a_broker_that_stays_down_is_given_up_after_max_retries(store: Store) -> None:
    one = group(described("a", ["t"], [("t", 0), ("t", 1)]))
    poller = Poller(store, DownAdmin([[one]], {"t": 2}), cluster="prod", groups=["g"])
    with pytest.raises(GaveUp, match=r"poll: gave up after 3 retries \(--max-retries 3\)"):
        poller.run(0.001, threading.Event(), polls=4, max_retries=3, backoff=(0.001, 0.01))
    assert poller.stored == 4  # the first poll's events are stored all the same
    assert (poller.polls, poller.retries) == (1, 3)


def test_a_failed_poll_is_retried_and_counted(store: Store) -> None:
    one = group(described("a", ["t"], [("t", 0), ("t", 1)]))

    class Flaky(FakeAdmin):
        calls = 0

        def describe(self, group_ids: list[str]) -> list[DescribedGroup]:
            self.calls += 1
            if self.calls == 1:
                raise KafkaConnectionError()
            return super().describe(group_ids)

    admin = Flaky([[one], [one]], {"t": 2})
    poller = Poller(store, admin, groups=["g"])
    assert poller.run(0.001, threading.Event(), polls=2, backoff=(0.001, 0.01)) == 4
    assert (admin.calls, poller.polls, poller.retries) == (3, 2, 1)


class HangingAdmin(FakeAdmin):
    """A broker address nobody answers on: each call hangs (a client's connect timeout)."""

    def describe(self, group_ids: list[str]) -> list[DescribedGroup]:
        threading.Event().wait(30)
        raise KafkaConnectionError()


def test_a_first_poll_that_reaches_no_broker_gives_up_within_its_bound(store: Store) -> None:
    """Unlimited retries, yet a broker never reached is given up on after ``first_within``
    seconds, also while a call hangs (``kstore record poll -b 127.0.0.1:1`` took ~9
    minutes of retries with the default --max-retries 10)."""
    import time

    for admin in (DownAdmin([], {}), HangingAdmin([], {})):
        poller = Poller(store, admin, cluster="prod", groups=["g"])
        started = time.monotonic()
        with pytest.raises(GaveUp, match=r"poll: no broker answered within 0\.5 s \(bound\)"):
            poller.run(0.001, threading.Event(), max_retries=-1, first=FirstAnswer(0.5, "bound"))
        assert time.monotonic() - started < 1.5
        assert poller.polls == 0


def test_once_answered_a_later_outage_keeps_retrying_past_the_first_bound(store: Store) -> None:
    one = group(described("a", ["t"], [("t", 0), ("t", 1)]))
    poller = Poller(store, DownAdmin([[one]], {"t": 2}), cluster="prod", groups=["g"])
    with pytest.raises(GaveUp, match=r"poll: gave up after 6 retries \(--max-retries 6\)"):
        first = FirstAnswer(0.1, "bound", (0.01, 0.01))
        poller.run(0.001, threading.Event(), max_retries=6, backoff=(0.05, 0.05), first=first)
    assert (poller.polls, poller.retries) == (1, 6)  # 6 x 0.05 s: past the 0.1 s bound


def membership_only(*member_ids: str) -> DescribedGroup:
    """What Tansu answers: members with ids only, no protocol, no assignment bytes."""
    members = tuple(
        DescribedMember.from_response("g", m, "", "", None, b"", b"") for m in member_ids
    )
    return DescribedGroup("g", "Stable", "consumer", "", members)


def test_a_broker_that_does_not_describe_assignments_gives_membership_only() -> None:
    two = membership_only("a", "b")
    assert not two.assignments_described
    events = diff(two, GroupState(), {}, AT)
    assert kinds(events) == ["MemberJoined", "MemberJoined"]  # no invented generation
    state = fold(events)
    assert diff(two, state, {}, AT) == []  # polled again: nothing
    gone = diff(membership_only("a"), state, {}, AT)
    assert [e.data.to_dict() for e in gone] == [{"member_id": "b", "reason": "other"}]
    # A group that is rebalancing, or empty, shows no assignment either: not the same.
    assert DescribedGroup("g", "PreparingRebalance", "consumer", "", ()).assignments_described


def test_a_member_described_without_its_subscription_changes_no_subscription() -> None:
    """A user trial: the poller beside the confluent-kafka merge of the same group on
    Tansu (members described without their metadata bytes). Once the merge had stored
    the members' subscription (``orders``), each poll appended ``SubscriptionChanged``
    to ``topics: []`` for every member: a subscription the poller was never told."""
    merged = fold(diff(group(described("a", ["orders"], [("orders", 0)])), GroupState(), {}, AT))
    assert list(merged.members["a"].topics) == ["orders"]
    assert diff(membership_only("a"), merged, {}, AT) == []
    # A subscription described is diffed as before.
    moved = diff(group(described("a", ["other"], [("orders", 0)])), merged, {}, AT)
    assert [e.data.to_dict() for e in moved if e.type == "SubscriptionChanged"] == [
        {"member_id": "a", "topics": ["other"]}
    ]


def test_all_groups_of_a_broker_that_lists_none_is_said_once(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """A user trial: ``record poll --all-groups`` on Tansu (whose ListGroups lists no
    group, though one had two members) said nothing past its start line for 35 polls."""
    admin = FakeAdmin([[]], {})
    poller = Poller(store, admin, groups=None)
    with caplog.at_level("WARNING", "kstore.record"):
        assert [poller.poll_once(AT) for _ in range(3)] == [0, 0, 0]
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and said[0].startswith("the broker lists no consumer group"), said
    assert "--group G asks for one by name" in said[0]
    admin.answers = [[membership_only("a")]]
    assert poller.poll_once(AT) == 1  # a group listed later is recorded


def test_the_poller_says_once_and_marks_what_it_sees(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    answers = [[membership_only("a")], [membership_only("a", "b")], [membership_only("b")]]
    poller = Poller(store, FakeAdmin(answers, {}), groups=["g"])
    with caplog.at_level("WARNING", "kstore.record"):
        assert [poller.poll_once(AT) for _ in range(3)] == [1, 1, 1]
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "recording membership only" in said[0]
    assert {s.event.type for s in store.events()} == {"MemberJoined", "MemberLeft"}
    assert store.checkpoint(visibility_key("default", "g")) == {
        "sees": "membership",
        "why": "the broker describes its members but not their assignments (empty "
        "protocol, no assignment bytes)",
    }


def test_a_group_it_may_not_describe_is_said_once_or_refused_when_asked_for(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    denied = DescribedGroup("g", "", "", "", (), error="GroupAuthorizationFailedError")
    everyone = Poller(store, FakeAdmin([[denied], [denied]], {}), groups=None)
    with caplog.at_level("WARNING", "kstore.record"):
        assert everyone.poll_once(AT) + everyone.poll_once(AT) == 0
    assert [r.getMessage() for r in caplog.records] == [
        "group g: not authorized to describe it (needs Describe on the group); not recorded"
    ]
    asked = Poller(store, FakeAdmin([[denied]], {}), groups=["g"])
    with pytest.raises(UsageError, match=r"^authorization: no Describe on group g \("):
        asked.run(0.01, threading.Event(), polls=1)
