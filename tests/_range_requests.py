"""Hypothesis requests and checks shared by the range / roundrobin / server-range tests."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import strategies as st

from kstore.assignors import AssignmentRequest, assign, validate_request

__all__ = ["check_valid", "permuted", "requests", "run", "without"]

_TOPIC_NAMES = ["a", "b", "orders", "t0", "t1", "t10", "x.y"]
_RACKS = ["r0", "r1", "r2"]


@st.composite
def requests(
    draw: st.DrawFn,
    strategy: str,
    *,
    racks: bool = True,
    same_subscription: bool = False,
    unique_instances: bool = True,
    copartitioned: bool = False,
) -> AssignmentRequest:
    """A contract request: a few topics, up to 9 members, optional racks and owners.

    ``copartitioned``: every topic has the same partition count, every member
    subscribes to all of them and partitions have racks.
    """
    names = draw(
        st.lists(st.sampled_from(_TOPIC_NAMES), min_size=1 + copartitioned, max_size=5, unique=True)
    )
    # Equal partition counts and equal subscriptions are frequent, so that range's
    # co-partitioned topics come up often.
    usual_count = draw(st.integers(1, 12))
    counts = [usual_count] if copartitioned else [usual_count, draw(st.integers(1, 12))]
    topics = {name: draw(st.sampled_from(counts)) for name in names}
    # Missing topics may be subscribed to as well: Kafka ignores them.
    choices = [*names, "missing"]
    subscription = names if copartitioned else draw(st.lists(st.sampled_from(choices), unique=True))
    same_subscription = same_subscription or copartitioned or draw(st.booleans())
    member_count = draw(st.integers(1, 9))
    instance_pool = [f"i{n}" for n in range(member_count if unique_instances else 2)]
    members: dict[str, dict[str, object]] = {}
    for number in range(member_count):
        member: dict[str, object] = {
            "topics": subscription
            if same_subscription
            else draw(st.lists(st.sampled_from(choices), unique=True))
        }
        if draw(st.booleans()):
            instance = (
                instance_pool[number] if unique_instances else draw(st.sampled_from(instance_pool))
            )
            member["instance_id"] = instance
        if racks and draw(st.booleans()):
            member["rack"] = draw(st.sampled_from(_RACKS))
        owned = draw(st.lists(st.tuples(st.sampled_from(choices), st.integers(0, 12)), max_size=4))
        if owned:
            member["owned"] = [list(tp) for tp in owned]
            member["generation"] = draw(st.integers(0, 3))
        members[
            draw(st.text("abcmz0123", min_size=1, max_size=4).filter(lambda m: m not in members))
        ] = member
    raw: dict[str, object] = {"strategy": strategy, "topics": topics, "members": members}
    if racks and (copartitioned or draw(st.booleans())):
        raw["partition_racks"] = {
            name: [
                draw(st.lists(st.sampled_from(_RACKS), unique=True, max_size=3))
                for _ in range(draw(st.integers(0, count)))
            ]
            for name, count in topics.items()
        }
    return validate_request(raw)


def run(request: AssignmentRequest) -> dict[str, list[tuple[str, int]]]:
    return assign(request).assignment


def check_valid(request: AssignmentRequest, result: dict[str, list[tuple[str, int]]]) -> None:
    """Every partition of a subscribed, existing topic goes to one subscriber; nothing else."""
    assert list(result) == list(request.members)
    expected = {
        (topic, p)
        for sub in request.members.values()
        for topic in sub.topics
        if topic in request.topics
        for p in range(request.topics[topic])
    }
    handed_out = Counter(tp for tps in result.values() for tp in tps)
    assert set(handed_out) == expected
    assert all(n == 1 for n in handed_out.values())
    for member, tps in result.items():
        assert tps == sorted(tps)
        assert {topic for topic, _ in tps} <= set(request.members[member].topics)


def permuted(request: AssignmentRequest, seed: int) -> AssignmentRequest:
    """The same request with its members listed in another order."""
    items = list(request.members.items())
    random.Random(seed).shuffle(items)
    return request.model_copy(update={"members": dict(items)})


def without(request: AssignmentRequest, *fields: str) -> AssignmentRequest:
    """The request with the members' ``fields`` reset to their defaults."""
    defaults: dict[str, object] = {
        "owned": [],
        "generation": None,
        "rack": None,
        "instance_id": None,
    }
    members = {
        m: sub.model_copy(update={f: defaults[f] for f in fields})
        for m, sub in request.members.items()
    }
    return request.model_copy(update={"members": members})
