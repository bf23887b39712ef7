"""``UniformAssignor`` when every member subscribes to the same topics.

Kafka's ``UniformHomogeneousAssignmentBuilder``: members, in ``memberIds()`` order, get a
quota (the first ``total % members`` of them one more than ``total // members``), keep
their current partitions up to it, and give up the rest. The free partitions (those
nobody owned, topic by topic, then the given-up ones in the order they were given up)
are then dealt out, in member order, to fill each member up to its quota.

Orders that decide who keeps what come from Java hash tables: the subscribed topics are
walked in ``HashSet<Uuid>`` order, a member's current topics in ``HashMap<Uuid, …>``
order and a topic's partitions in ``HashSet<Integer>`` order.
"""

from __future__ import annotations

from kstore._java import collection_copy_capacity, hash_order_by, table_capacity
from kstore.assignors._uniform_model import TopicPartitions, UniformGroup, topic_hash

__all__ = ["assign_homogeneous"]

_Run = tuple[int, list[int]]
"""Free partitions of one topic, in the order they are dealt: (topic id, partitions)."""


def _topic_order(topics: list[int], capacity: int) -> list[int]:
    return hash_order_by(topics, [topic_hash(t) for t in topics], capacity)


def _partition_order(partitions: list[int]) -> list[int]:
    """``new HashSet<>(ascending partitions)`` iteration order."""
    capacity = collection_copy_capacity(len(partitions))
    if partitions[-1] < capacity:
        return partitions  # one partition per bucket, buckets ascending
    # Integer.hashCode is the value itself
    return hash_order_by(partitions, partitions, capacity)


def _never_owned(group: UniformGroup, topics: list[int]) -> list[_Run]:
    owned_by_topic: dict[int, set[int]] = {}
    for mine in group.owned:
        for topic_id, parts in mine.items():
            owned_by_topic.setdefault(topic_id, set()).update(parts)
    runs: list[_Run] = []
    for topic_id in topics:
        count = group.partition_counts[topic_id]
        taken = owned_by_topic.get(topic_id)
        free = list(range(count)) if taken is None else sorted(set(range(count)).difference(taken))
        if free:
            runs.append((topic_id, free))
    return runs


def _keep_up_to_quota(
    mine: TopicPartitions, subscribed: set[int], quota: int, revoked: list[_Run]
) -> tuple[TopicPartitions, int]:
    """What a member keeps of ``mine``, and its quota left; appends what it gives up."""
    kept: TopicPartitions = {}
    if sum(len(parts) for t, parts in mine.items() if t in subscribed) <= quota:
        for topic_id, parts in mine.items():
            if topic_id in subscribed:
                kept[topic_id] = list(parts)
                quota -= len(parts)
        return kept, quota
    for topic_id in _topic_order(list(mine), table_capacity(len(mine))):
        if topic_id not in subscribed:
            continue
        parts = mine[topic_id]
        if len(parts) <= quota:
            kept[topic_id] = list(parts)
            quota -= len(parts)
            continue
        ordered = _partition_order(parts)
        if quota:
            kept[topic_id] = ordered[:quota]
        revoked.append((topic_id, ordered[quota:]))
        quota = 0
    return kept, quota


def assign_homogeneous(group: UniformGroup) -> list[TopicPartitions]:
    """Each member's new assignment (indexes as in ``group.member_ids``)."""
    members = len(group.member_ids)
    first = group.subscriptions[0]
    if not first:
        return [{} for _ in range(members)]
    # The builder copies the first member's subscription into a new HashSet<Uuid>.
    topics = _topic_order(first, collection_copy_capacity(len(first)))
    subscribed = set(topics)
    total = sum(group.partition_counts[t] for t in topics)
    base, extra = divmod(total, members)

    runs = _never_owned(group, topics)
    assignment: list[TopicPartitions] = []
    unfilled: list[tuple[int, int]] = []
    for index, mine in enumerate(group.owned):
        quota = base + 1 if index < extra else base
        kept, left = _keep_up_to_quota(mine, subscribed, quota, runs)
        assignment.append(kept)
        if left:
            unfilled.append((index, left))

    # Deal the free runs out in order; quotas add up to the partition count, so they
    # run out together.
    run_index = position = 0
    for index, left in unfilled:
        mine = assignment[index]
        while left:
            topic_id, parts = runs[run_index]
            chunk = parts[position : position + left]
            mine.setdefault(topic_id, []).extend(chunk)
            left -= len(chunk)
            position += len(chunk)
            if position == len(parts):
                run_index += 1
                position = 0
    return assignment
