"""A contract request seen the way Kafka's coordinator hands a group to ``UniformAssignor``.

Topics become integer ids ``0..T-1`` in ``String`` order of their names; id ``k`` stands
for the ``Uuid(0, k + 1)`` of the oracle's mapping, whose ``hashCode`` is ``k + 1``.
Members become integer indexes in ``GroupSpec.memberIds()`` order, i.e. the iteration
order of a ``HashMap<String, …>`` filled in request order.
"""

from __future__ import annotations

from dataclasses import dataclass

from kstore._java import hash_order, string_order_key, uuid_hash
from kstore.assignors._contract import AssignmentRequest, AssignmentResult, TopicPartition

__all__ = ["TopicPartitions", "UniformGroup", "build_group", "to_result", "topic_hash"]

TopicPartitions = dict[int, list[int]]
"""Topic id -> partition numbers (a member's assignment)."""

_NO_GENERATION = -1


def topic_hash(topic: int) -> int:
    """``hashCode`` of the ``Uuid`` that stands for topic id ``topic``."""
    return uuid_hash(0, topic + 1)


@dataclass(frozen=True, slots=True)
class UniformGroup:
    """What ``GroupSpec`` and ``SubscribedTopicDescriber`` tell the assignor."""

    topic_names: list[str]
    """Name of each topic id."""
    partition_counts: list[int]
    """Partition count of each topic id."""
    member_ids: list[str]
    """Member ids in ``memberIds()`` iteration order; a member's index is its position."""
    subscriptions: list[list[int]]
    """Per member: subscribed topic ids that exist, in the request's order."""
    owned: list[TopicPartitions]
    """Per member: current assignment, partitions ascending, topics in first-owned order.

    Only existing partitions, and only those left after settling claims by generation.
    """
    homogeneous: bool
    """``SubscriptionType.HOMOGENEOUS``: every member lists the same topic names."""


def _is_homogeneous(request: AssignmentRequest) -> bool:
    # ModernGroup.subscriptionType counts names, including topics that do not exist.
    subscriptions = [frozenset(sub.topics) for sub in request.members.values()]
    return all(s == subscriptions[0] for s in subscriptions)


def build_group(request: AssignmentRequest) -> UniformGroup:
    """Map a normalised request onto the assignor's view of the group."""
    names = sorted(request.topics, key=string_order_key)
    topic_ids = {name: k for k, name in enumerate(names)}
    counts = [request.topics[name] for name in names]
    offsets = [0] * len(names)
    for k in range(1, len(names)):
        offsets[k] = offsets[k - 1] + counts[k - 1]

    member_ids = hash_order(list(request.members))
    specs = [request.members[m] for m in member_ids]

    # A partition claimed by several members stays with the strictly highest generation
    # and is dropped from every claimant on a tie (the contract's rule).
    claimant = [-1] * (offsets[-1] + counts[-1] if names else 0)
    contested: dict[tuple[int, int], list[int]] = {}
    owned: list[TopicPartitions] = []
    for index, spec in enumerate(specs):
        mine: TopicPartitions = {}
        for topic, partition in spec.owned:
            topic_id = topic_ids[topic]
            slot = offsets[topic_id] + partition
            previous = claimant[slot]
            if previous == -1:
                claimant[slot] = index
            else:
                contested.setdefault((topic_id, partition), [previous]).append(index)
            parts = mine.get(topic_id)
            if parts is None:
                mine[topic_id] = [partition]
            else:
                parts.append(partition)
        owned.append(mine)
    if contested:
        generations = [_NO_GENERATION if s.generation is None else s.generation for s in specs]
        _settle_claims(contested, generations, owned)
    for mine in owned:
        for parts in mine.values():
            parts.sort()
        for topic_id in [t for t, parts in mine.items() if not parts]:
            del mine[topic_id]

    subscriptions = [[topic_ids[t] for t in spec.topics if t in topic_ids] for spec in specs]
    return UniformGroup(
        topic_names=names,
        partition_counts=counts,
        member_ids=member_ids,
        subscriptions=subscriptions,
        owned=owned,
        homogeneous=_is_homogeneous(request),
    )


def _settle_claims(
    contested: dict[tuple[int, int], list[int]],
    generations: list[int],
    owned: list[TopicPartitions],
) -> None:
    for (topic_id, partition), claimants in contested.items():
        top = max(generations[m] for m in claimants)
        winners = [m for m in claimants if generations[m] == top]
        keeper = winners[0] if len(winners) == 1 else -1
        for member in claimants:
            if member != keeper:
                owned[member][topic_id].remove(partition)


def to_result(
    group: UniformGroup, request: AssignmentRequest, assignment: list[TopicPartitions]
) -> AssignmentResult:
    """The contract's result: every member in request order, lists sorted by topic, partition."""
    names = group.topic_names
    by_name = sorted(range(len(names)), key=names.__getitem__)
    rank = [0] * len(names)
    for position, topic_id in enumerate(by_name):
        rank[topic_id] = position
    result: dict[str, list[TopicPartition]] = {}
    for member_id, mine in zip(group.member_ids, assignment, strict=True):
        tps: list[TopicPartition] = []
        for topic_id in sorted(mine, key=rank.__getitem__):
            name = names[topic_id]
            tps.extend([(name, p) for p in sorted(mine[topic_id])])
        result[member_id] = tps
    ordered = {member_id: result[member_id] for member_id in request.members}
    return AssignmentResult.model_construct(assignment=ordered, warnings=[])
