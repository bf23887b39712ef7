"""Properties of the KIP-848 ``uniform`` assignor (exactness is in test_oracle.py).

What Kafka's own tests assert of ``UniformAssignor``: every partition of a subscribed
topic goes to exactly one of its subscribers; with identical subscriptions the loads
differ by at most one and members keep what they can; with different subscriptions no
member that holds a partition of a topic is more than one partition heavier than any
other subscriber of that topic. Plus the contract's rule for contested partitions,
stability and independence from how the request is written.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kstore._java import string_order_key, table_capacity, uuid_hash
from kstore.assignors import AssignmentRequest, assign, validate_request
from kstore.assignors._uniform_homogeneous import _partition_order
from kstore.assignors.uniform import UNIFORM

Request = dict[str, Any]

TOPIC_NAMES = ["a", "b", "orders", "t1", "t10", "t2", "x.y", "Z"]
GHOSTS = ["ghost", "gone"]

SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def requests(draw: Callable[..., Any], homogeneous: bool | None = None) -> Request:
    """Random uniform requests: owned partitions may overlap, be stale or not exist."""
    names = draw(st.lists(st.sampled_from(TOPIC_NAMES), min_size=1, max_size=6, unique=True))
    topics = {name: draw(st.integers(1, 24)) for name in names}
    member_ids = draw(
        st.lists(st.from_regex(r"[a-z]{1,3}-?[0-9]{0,3}", fullmatch=True), min_size=1, max_size=9)
    )
    member_ids = list(dict.fromkeys(member_ids))
    same = draw(st.booleans()) if homogeneous is None else homogeneous
    pool = names + GHOSTS
    shared = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=len(pool), unique=True))
    members: dict[str, Any] = {}
    for member in member_ids:
        subscription = (
            list(shared)
            if same
            else draw(st.lists(st.sampled_from(pool), max_size=len(pool), unique=True))
        )
        owned = draw(
            st.lists(
                st.tuples(st.sampled_from(pool), st.integers(0, 26)),
                max_size=20,
                unique=True,
            )
        )
        spec: dict[str, Any] = {"topics": subscription, "owned": [list(tp) for tp in owned]}
        generation = draw(st.none() | st.integers(0, 3))
        if generation is not None:
            spec["generation"] = generation
        members[member] = spec
    if same and draw(st.booleans()):
        # Same set, written in another order: still homogeneous.
        first = member_ids[0]
        members[first]["topics"] = list(reversed(members[first]["topics"]))
    return {"strategy": "uniform", "topics": topics, "members": members}


def run(raw: Request) -> dict[str, list[tuple[str, int]]]:
    return assign(validate_request(raw)).assignment


def settled_owned(request: AssignmentRequest) -> dict[str, set[tuple[str, int]]]:
    """Each member's existing owned partitions after the contract's generation rule."""
    claims: dict[tuple[str, int], list[str]] = {}
    for member, spec in request.members.items():
        for tp in set(spec.owned):
            if tp[0] in request.topics and tp[1] < request.topics[tp[0]]:
                claims.setdefault(tp, []).append(member)

    def generation(member: str) -> int:
        g = request.members[member].generation
        return -1 if g is None else g

    kept: dict[str, set[tuple[str, int]]] = {m: set() for m in request.members}
    for tp, claimants in claims.items():
        top = max(map(generation, claimants))
        winners = [m for m in claimants if generation(m) == top]
        if len(winners) == 1:
            kept[winners[0]].add(tp)
    return kept


def is_homogeneous(raw: Request) -> bool:
    return len({frozenset(spec["topics"]) for spec in raw["members"].values()}) == 1


@SETTINGS
@given(requests())
def test_every_subscribed_partition_goes_to_exactly_one_subscriber(raw: Request) -> None:
    result = run(raw)
    assert list(result) == list(raw["members"])
    owner: dict[tuple[str, int], str] = {}
    for member, tps in result.items():
        assert tps == sorted(tps)
        subscribed = set(raw["members"][member]["topics"])
        for topic, partition in tps:
            assert topic in subscribed
            assert 0 <= partition < raw["topics"][topic]
            assert (topic, partition) not in owner
            owner[(topic, partition)] = member
    wanted = {
        (topic, p)
        for topic, count in raw["topics"].items()
        if any(topic in spec["topics"] for spec in raw["members"].values())
        for p in range(count)
    }
    assert set(owner) == wanted


@SETTINGS
@given(requests(homogeneous=True))
def test_identical_subscriptions_balance_within_one(raw: Request) -> None:
    loads = [len(tps) for tps in run(raw).values()]
    assert max(loads) - min(loads) <= 1


@SETTINGS
@given(requests(homogeneous=True))
def test_identical_subscriptions_keep_what_fits(raw: Request) -> None:
    """A member keeps min(its valid owned partitions, its new size) of what it owned."""
    request = validate_request(raw)
    result = run(raw)
    owned = settled_owned(request)
    for member, tps in result.items():
        subscribed = set(request.members[member].topics)
        valid = {tp for tp in owned[member] if tp[0] in subscribed}
        assert len(valid & set(tps)) == min(len(valid), len(tps))


@SETTINGS
@given(requests(homogeneous=False))
def test_no_holder_is_two_heavier_than_a_fellow_subscriber(raw: Request) -> None:
    result = run(raw)
    loads = {member: len(tps) for member, tps in result.items()}
    for member, tps in result.items():
        for topic in {t for t, _ in tps}:
            for other, spec in raw["members"].items():
                if topic in spec["topics"]:
                    assert loads[member] - loads[other] <= 1, (member, other, topic)


@SETTINGS
@given(requests())
def test_contested_partitions_follow_the_generation_rule(raw: Request) -> None:
    """Answering the request equals answering it with the contest already settled."""
    request = validate_request(raw)
    owned = settled_owned(request)
    settled = {
        **raw,
        "members": {
            member: {**spec, "owned": [[t, p] for t, p in spec["owned"] if (t, p) in owned[member]]}
            for member, spec in raw["members"].items()
        },
    }
    assert run(raw) == run(settled)


@SETTINGS
@given(requests())
def test_a_settled_group_stays_put(raw: Request) -> None:
    first = run(raw)
    again = {
        **raw,
        "members": {
            member: {**spec, "owned": [list(tp) for tp in first[member]], "generation": 5}
            for member, spec in raw["members"].items()
        },
    }
    assert run(again) == first


@SETTINGS
@given(requests(), st.randoms(use_true_random=False))
def test_answer_does_not_depend_on_how_the_request_is_written(
    raw: Request, rnd: random.Random
) -> None:
    """Owned lists are sets and topics a map to Kafka; only member order may matter."""
    topics = list(raw["topics"].items())
    rnd.shuffle(topics)
    members: dict[str, Any] = {}
    for member, spec in raw["members"].items():
        owned = list(spec["owned"])
        rnd.shuffle(owned)
        members[member] = {**spec, "owned": owned + owned[:1]}  # a duplicate too
    rewritten = {**raw, "topics": dict(topics), "members": members}
    first = run(raw)
    assert run(rewritten) == first
    assert run(raw) == first


def test_extra_missing_topic_makes_the_group_heterogeneous() -> None:
    """Subscription type counts names, missing topics included (ModernGroup)."""
    base: Request = {
        "strategy": "uniform",
        "topics": {"t": 4, "u": 3},
        "members": {
            "a": {"topics": ["t", "u"], "owned": [["t", 0], ["t", 1], ["t", 2], ["t", 3]]},
            "b": {"topics": ["t", "u"], "owned": [["u", 0], ["u", 1], ["u", 2]]},
            "c": {"topics": ["t", "u"]},
        },
    }
    # Homogeneous: quotas 3/2/2 in member order (a, b, c); a and b give up what is over.
    assert run(base) == {
        "a": [("t", 0), ("t", 1), ("t", 2)],
        "b": [("u", 0), ("u", 1)],
        "c": [("t", 3), ("u", 2)],
    }
    ghost = {**base, "members": {**base["members"], "c": {"topics": ["t", "u", "ghost"]}}}
    # Heterogeneous: topic t (more partitions per subscriber) is balanced first: a gives
    # its highest partitions to c until a and c are level; u is then within one.
    assert run(ghost) == {
        "a": [("t", 0), ("t", 1)],
        "b": [("u", 0), ("u", 1), ("u", 2)],
        "c": [("t", 2), ("t", 3)],
    }


def test_no_members_and_no_existing_topics() -> None:
    empty = validate_request({"strategy": "uniform", "topics": {"t": 2}, "members": {}})
    assert UNIFORM.assign(empty).assignment == {}
    ghosts = run(
        {
            "strategy": "uniform",
            "topics": {"t": 2},
            "members": {"a": {"topics": ["ghost"]}, "b": {"topics": []}},
        }
    )
    assert ghosts == {"a": [], "b": []}


def test_java_facts_the_homogeneous_builder_relies_on() -> None:
    """Values printed by OpenJDK 17 for the same inputs."""
    evens = list(range(0, 24, 2))
    # new HashSet<>(list) sizes its table for the whole list (32 buckets here) ...
    assert _partition_order(evens) == evens
    # ... unlike a set grown by add() (16 buckets): 0, 16, 2, 18, 4, 20, 6, 22, 8, ...
    assert table_capacity(len(evens)) == 16
    assert _partition_order([5, 17]) == [17, 5]
    # Uuid.fromString("T1-A4s3VTwiI5CTbEp6POw").hashCode()
    assert uuid_hash(5719431763388092168, -8582694466532503749) == 418407434
    # String.compareTo compares UTF-16 code units: U+1F600 sorts before U+FFFF.
    assert sorted(["\uffff", "\U0001f600", "a"], key=string_order_key) == [
        "a",
        "\U0001f600",
        "\uffff",
    ]


def test_answers_on_the_same_topics_list_the_same_pair_objects() -> None:
    # A simulated consumer group compares each member's target with the last it took up
    # at every epoch bump, and its run keeps every answer's pairs in its events: the
    # pairs are made once for the topics (``partition_pairs``), not for each answer.
    first = validate_request(
        {"strategy": "uniform", "topics": {"t": 6, "u": 2}, "members": {"a": {"topics": ["t"]}}}
    )
    second = validate_request(
        {
            "strategy": "uniform",
            "topics": {"t": 6, "u": 2},
            "members": {"a": {"topics": ["t", "u"]}, "b": {"topics": ["t", "u"]}},
        }
    )
    before = {tp: tp for tps in assign(first).assignment.values() for tp in tps}
    after = [tp for tps in assign(second).assignment.values() for tp in tps]
    assert sorted(after) == [("t", p) for p in range(6)] + [("u", 0), ("u", 1)]
    assert all(before[tp] is tp for tp in after if tp in before)
    assert len([tp for tp in after if tp in before]) == 6
