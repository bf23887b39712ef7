"""A fleet of generated consumer groups: plausible, seeded histories for the Spark pipeline.

Each group gets topics, members that join, leave, come back under a new id (static
membership) or change their subscription, and ``rebalances`` rebalances
(``RebalanceStarted`` + ``AssignmentCompleted``) whose recorded assignment is a plain
round robin with some partitions left where they were, plus now and then an odd fact (a
partition given to two members). Cheap to make: a million events in seconds.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from kstore.model.events import (
    AssignmentCompleted,
    Event,
    EventData,
    MemberJoined,
    MemberLeft,
    MemberReplaced,
    RebalanceStarted,
    SubscriptionChanged,
    TopicChanged,
)

__all__ = ["T0", "fleet", "group_events"]

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def group_events(
    name: str, rebalances: int, seed: int, cluster: str = "default"
) -> Iterator[Event]:
    """One group's recorded history."""
    rng = random.Random(f"{seed}/{cluster}/{name}")
    at = T0 + timedelta(seconds=rng.randrange(3600))

    def event(data: EventData) -> Event:
        nonlocal at
        at += timedelta(milliseconds=rng.randrange(1, 90_000))
        return Event(cluster=cluster, group=name, at=at, data=data)

    topics = {f"t{i}": rng.randint(1, 12) for i in range(rng.randint(1, 3))}
    for topic, count in topics.items():
        yield event(TopicChanged(topic=topic, partitions=count))
    members: dict[str, list[str]] = {}
    serial = 0

    def join() -> Iterator[Event]:
        nonlocal serial
        serial += 1
        member = f"{name}-c{serial}"
        wanted = sorted(rng.sample(sorted(topics), rng.randint(1, len(topics))))
        members[member] = wanted
        yield event(MemberJoined(member_id=member, topics=wanted, instance_id=f"i{serial}"))

    for _ in range(rng.randint(1, 4)):
        yield from join()
    owners: dict[tuple[str, int], str] = {}
    for generation in range(1, rebalances + 1):
        roll = rng.random()
        if roll < 0.3 or not members:
            yield from join()
        elif roll < 0.5 and len(members) > 1:
            gone = rng.choice(sorted(members))
            del members[gone]
            yield event(MemberLeft(member_id=gone, reason="session-timeout"))
        elif roll < 0.6:
            old = rng.choice(sorted(members))
            serial += 1
            new = f"{name}-c{serial}"
            members[new] = members.pop(old)
            owners = {tp: new if m == old else m for tp, m in owners.items()}
            yield event(MemberReplaced(old_member_id=old, new_member_id=new, instance_id="s"))
        elif roll < 0.7:
            member = rng.choice(sorted(members))
            members[member] = sorted(rng.sample(sorted(topics), rng.randint(1, len(topics))))
            yield event(SubscriptionChanged(member_id=member, topics=members[member]))
        elif roll < 0.75:
            topic = rng.choice(sorted(topics))
            topics[topic] += rng.randint(1, 3)
            yield event(TopicChanged(topic=topic, partitions=topics[topic]))
        yield event(RebalanceStarted(generation=generation, reason="member change"))
        owners = _assign(rng, topics, members, owners)
        assignment: dict[str, list[tuple[str, int]]] = {m: [] for m in members}
        for tp, member in sorted(owners.items()):
            assignment[member].append(tp)
        if rng.random() < 0.05 and len(assignment) > 1 and owners:
            # An odd recorded fact: one partition reported by two members.
            tp = rng.choice(sorted(owners))
            other = rng.choice(sorted(m for m in assignment if m != owners[tp]))
            assignment[other].append(tp)
        yield event(
            AssignmentCompleted(generation=generation, strategy="range", assignment=assignment)
        )


def _assign(
    rng: random.Random,
    topics: dict[str, int],
    members: dict[str, list[str]],
    owners: dict[tuple[str, int], str],
) -> dict[tuple[str, int], str]:
    """Most partitions stay with a subscribed owner; the others go round the subscribers."""
    result: dict[tuple[str, int], str] = {}
    for topic, count in sorted(topics.items()):
        takers = sorted(m for m, wanted in members.items() if topic in wanted)
        if not takers:
            continue
        for partition in range(count):
            tp = (topic, partition)
            owner = owners.get(tp)
            if owner not in takers or rng.random() < 0.2:
                owner = takers[(partition + rng.randrange(len(takers))) % len(takers)]
            result[tp] = owner
    return result


def fleet(groups: int, rebalances: int, seed: int = 7) -> Iterator[Event]:
    """``groups`` groups over two clusters, one after the other."""
    for index in range(groups):
        cluster = "eu" if index % 2 else "us"
        yield from group_events(f"g{index:05d}", rebalances, seed, cluster)
