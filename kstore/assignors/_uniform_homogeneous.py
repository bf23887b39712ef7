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

from itertools import filterfalse

from kstore._java import collection_copy_capacity, hash_order_by, table_capacity
from kstore.assignors._uniform_model import UniformGroup, topic_hash

__all__ = ["assign_homogeneous"]


def _topic_order(topics: list[int], capacity: int) -> list[int]:
    return hash_order_by(topics, [topic_hash(t) for t in topics], capacity)


def _partition_order(partitions: list[int]) -> list[int]:
    """``new HashSet<>(ascending partitions)`` iteration order."""
    capacity = collection_copy_capacity(len(partitions))
    if partitions[-1] < min(capacity, 1 << 16):
        return partitions  # spread(p) == p and one partition per bucket: ascending
    # Integer.hashCode is the value itself
    return hash_order_by(partitions, partitions, capacity)


def _never_owned(group: UniformGroup, topics: list[int]) -> list[list[int]]:
    """Slots nobody owns, topic by topic in ``topics`` order, ascending within a topic."""
    claimed = group.claimed
    runs = []
    for topic in topics:
        start = group.offsets[topic]
        free = range(start, start + group.partition_counts[topic])
        runs.append(list(filterfalse(claimed.__contains__, free)) if claimed else list(free))
    return runs


def _keep_up_to_quota(
    group: UniformGroup,
    slots: list[int],
    subscribed: set[int],
    quota: int,
    revoked: list[list[int]],
) -> tuple[list[int], int]:
    """What a member keeps of ``slots`` and its quota left; appends what it gives up."""
    mine = group.by_topic(slots)
    offsets = group.offsets
    kept: list[int] = []
    if sum(len(parts) for t, parts in mine.items() if t in subscribed) > quota:
        # Walk the member's HashMap<Uuid, HashSet<Integer>> (topics inserted ascending).
        topics = _topic_order(list(mine), table_capacity(len(mine)))
    else:
        topics = list(mine)
    for topic in topics:
        if topic not in subscribed:
            continue
        parts = mine[topic]
        base = offsets[topic]
        if len(parts) <= quota:
            kept.extend([base + p for p in parts])
            quota -= len(parts)
            continue
        ordered = [base + p for p in _partition_order(parts)]
        kept.extend(ordered[:quota])
        revoked.append(ordered[quota:])
        quota = 0
    return kept, quota


def assign_homogeneous(group: UniformGroup) -> list[list[int]]:
    """Each member's new slots (indexes as in ``group.member_ids``)."""
    members = len(group.member_ids)
    first = group.subscribed(0)
    if not first:
        return [[] for _ in range(members)]
    # The builder copies the first member's subscription into a new HashSet<Uuid>.
    topics = _topic_order(first, collection_copy_capacity(len(first)))
    subscribed = set(topics)
    every_topic = len(subscribed) == len(group.topic_names)
    total = sum(group.partition_counts[t] for t in topics)
    base, extra = divmod(total, members)

    runs = _never_owned(group, topics)
    assignment: list[list[int]] = []
    unfilled: list[tuple[int, int]] = []
    for index, slots in enumerate(group.owned):
        quota = base + 1 if index < extra else base
        if every_topic and len(slots) <= quota:
            kept, left = list(slots), quota - len(slots)
        else:
            kept, left = _keep_up_to_quota(group, slots, subscribed, quota, runs)
        assignment.append(kept)
        if left:
            unfilled.append((index, left))

    # Deal the free runs out in order; quotas add up to the partition count, so they
    # run out together.
    run_index = position = 0
    for index, left in unfilled:
        mine = assignment[index]
        while left:
            run = runs[run_index]
            chunk = run[position : position + left]
            mine.extend(chunk)
            left -= len(chunk)
            position += len(chunk)
            if position == len(run):
                run_index += 1
                position = 0
    return assignment
