"""A contract request seen the way Kafka's coordinator hands a group to ``UniformAssignor``.

Topics become integer ids ``0..T-1`` in ``String`` order of their names; id ``k`` stands
for the ``Uuid(0, k + 1)`` of the oracle's mapping, whose ``hashCode`` is ``k + 1``.
Members become integer indexes in ``GroupSpec.memberIds()`` order, i.e. the iteration
order of a ``HashMap<String, …>`` filled in request order. A partition is a single
integer, its *slot*: the topic's offset plus the partition number, so slots follow
(topic id, partition) order and a member's partitions are a plain list of ints.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from kstore._java import hash_order, string_order_key, uuid_hash
from kstore.assignors._claims import Claims, settle_claims
from kstore.assignors._contract import (
    AssignmentRequest,
    AssignmentResult,
    TopicPartition,
    partition_pairs,
)

__all__ = ["TopicPartitions", "UniformGroup", "build_group", "to_result", "topic_hash"]

TopicPartitions = dict[int, list[int]]
"""Topic id -> partition numbers."""

_NO_GENERATION = -1


def topic_hash(topic: int) -> int:
    """``hashCode`` of the ``Uuid`` that stands for topic id ``topic``."""
    return uuid_hash(0, topic + 1)


@dataclass(frozen=True, slots=True)
class UniformGroup:
    """What ``GroupSpec`` and ``SubscribedTopicDescriber`` tell the assignor."""

    topic_names: list[str]
    """Name of each topic id."""
    topic_ids: dict[str, int]
    """Topic id of each name."""
    partition_counts: list[int]
    """Partition count of each topic id."""
    offsets: list[int]
    """Slot of partition 0 of each topic id."""
    member_ids: list[str]
    """Member ids in ``memberIds()`` iteration order; a member's index is its position."""
    member_topics: list[list[str]]
    """Per member: subscribed topic names as the request lists them (missing ones too)."""
    owned: list[list[int]]
    """Per member: slots of its current assignment, ascending.

    Only existing partitions, and only those left after settling claims by generation.
    """
    claimed: set[int]
    """Slots some member owns (``GroupSpec.isPartitionAssigned``)."""
    homogeneous: bool
    """``SubscriptionType.HOMOGENEOUS``: every member lists the same topic names."""

    def subscribed(self, member: int) -> list[int]:
        """Topic ids the member subscribes to that exist, in the request's order."""
        ids = self.topic_ids
        return [ids[name] for name in self.member_topics[member] if name in ids]

    def by_topic(self, slots: list[int]) -> TopicPartitions:
        """Ascending ``slots`` grouped as topic id -> partition numbers (topics ascending)."""
        offsets = self.offsets
        grouped: TopicPartitions = {}
        end = -1
        parts: list[int] = []
        base = 0
        for slot in slots:
            if slot >= end:
                topic = bisect_right(offsets, slot) - 1
                base = offsets[topic]
                end = base + self.partition_counts[topic]
                parts = grouped[topic] = []
            parts.append(slot - base)
        return grouped


def _is_homogeneous(request: AssignmentRequest) -> bool:
    # ModernGroup.subscriptionType counts names, including topics that do not exist.
    subscriptions = [sub.topics for sub in request.members.values()]
    first = subscriptions[0]
    first_set = set(first)
    return all(s == first or set(s) == first_set for s in subscriptions)


def build_group(request: AssignmentRequest) -> UniformGroup:
    """Map a normalised request onto the assignor's view of the group."""
    names = sorted(request.topics, key=string_order_key)
    counts = [request.topics[name] for name in names]
    offsets = [0] * len(names)
    for k in range(1, len(names)):
        offsets[k] = offsets[k - 1] + counts[k - 1]
    offset_of = dict(zip(names, offsets, strict=True))

    member_ids = hash_order(list(request.members))
    specs = [request.members[m] for m in member_ids]
    owned = [sorted([offset_of[t] + p for t, p in spec.owned]) for spec in specs]

    claimed: set[int] = set()
    for slots in owned:
        claimed.update(slots)
    if len(claimed) < sum(map(len, owned)):
        generations = [_NO_GENERATION if s.generation is None else s.generation for s in specs]
        kept, _ties = settle_claims(Claims.from_lists(owned), generations)
        owned = kept.by_member()
        claimed = set().union(*owned)

    return UniformGroup(
        topic_names=names,
        topic_ids={name: k for k, name in enumerate(names)},
        partition_counts=counts,
        offsets=offsets,
        member_ids=member_ids,
        member_topics=[spec.topics for spec in specs],
        owned=owned,
        claimed=claimed,
        homogeneous=bool(specs) and _is_homogeneous(request),
    )


def to_result(
    group: UniformGroup, request: AssignmentRequest, assignment: list[list[int]]
) -> AssignmentResult:
    """The contract's result from each member's slots: every member in request order,
    each list sorted by topic name, then partition."""
    names = group.topic_names
    table = partition_pairs(tuple(names), tuple(group.partition_counts))
    # Slots follow Java String order of names; Python's order differs only for some
    # characters beyond U+FFFF.
    python_order = names == sorted(names)
    result: dict[str, list[TopicPartition]] = {}
    for member_id, slots in zip(group.member_ids, assignment, strict=True):
        tps = list(map(table.__getitem__, sorted(slots)))
        if not python_order:
            tps.sort()
        result[member_id] = tps
    ordered = {member_id: result[member_id] for member_id in request.members}
    return AssignmentResult.model_construct(assignment=ordered, warnings=[])
