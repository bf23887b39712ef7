"""What librdkafka's client-side assignors share (librdkafka 2.16.0).

- Strings compare as C does (``strcmp`` / ``rd_kafkap_str_cmp``): by their UTF-8 bytes.
- Members are ordered by ``rd_kafka_group_member_cmp``: by ``group.instance.id`` when
  *both* members have one, else by member id. Mixed static and dynamic members make
  that order non-transitive, so the result depends on the sort that runs: glibc's
  ``qsort`` (a top-down merge sort, stable, left half ``n // 2``), reproduced here.
- Rack awareness (KIP-881) is used when some member has a non-empty rack, some member
  rack is a replica rack of some partition, and not every partition has replicas on
  every replica rack seen (``rd_kafka_use_rack_aware_assignment``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from kstore.assignors._contract import AssignmentRequest, MemberSubscription, TopicPartition

__all__ = [
    "c_key",
    "eligible_topics",
    "merge_sort",
    "partition_racks",
    "sorted_members",
    "tp_key",
    "use_rack_aware",
]

T = TypeVar("T")


def c_key(s: str) -> bytes:
    """The sort key of a string compared with ``strcmp``."""
    return s.encode()


def tp_key(tp: TopicPartition) -> tuple[bytes, int]:
    """``rd_kafka_topic_partition_cmp``: topic, then partition."""
    return tp[0].encode(), tp[1]


def merge_sort(items: Sequence[T], cmp: Callable[[T, T], int]) -> list[T]:
    """glibc's ``qsort`` (``msort``): split at ``n // 2``, merge taking the left on ties."""
    n = len(items)
    if n <= 1:
        return list(items)
    left = merge_sort(items[: n // 2], cmp)
    right = merge_sort(items[n // 2 :], cmp)
    merged: list[T] = []
    i = j = 0
    while i < len(left) and j < len(right):
        if cmp(left[i], right[j]) <= 0:
            merged.append(left[i])
            i += 1
        else:
            merged.append(right[j])
            j += 1
    merged.extend(left[i:])
    merged.extend(right[j:])
    return merged


def _cmp(a: bytes, b: bytes) -> int:
    return (a > b) - (a < b)


def sorted_members(ids: Sequence[str], members: dict[str, MemberSubscription]) -> list[str]:
    """``ids`` sorted by ``rd_kafka_group_member_cmp`` as glibc's qsort sorts them."""
    static = [members[m].instance_id is not None for m in ids]
    if all(static):
        return sorted(ids, key=lambda m: c_key(members[m].instance_id or ""))
    if not any(static):
        return sorted(ids, key=c_key)

    def cmp(a: str, b: str) -> int:
        ia, ib = members[a].instance_id, members[b].instance_id
        if ia is not None and ib is not None:
            return _cmp(c_key(ia), c_key(ib))
        return _cmp(c_key(a), c_key(b))

    return merge_sort(ids, cmp)


def eligible_topics(request: AssignmentRequest) -> dict[str, list[str]]:
    """Topic -> its subscribers in request order, for every existing subscribed topic,
    in the order of the request's ``topics`` (librdkafka's metadata order)."""
    subscribers: dict[str, list[str]] = {topic: [] for topic in request.topics}
    for member, sub in request.members.items():
        for topic in dict.fromkeys(sub.topics):
            found = subscribers.get(topic)
            if found is not None:
                found.append(member)
    return {topic: found for topic, found in subscribers.items() if found}


def partition_racks(request: AssignmentRequest, topic: str) -> list[frozenset[str]]:
    """The replica racks of each partition of ``topic`` (none where the request gives none)."""
    given = (request.partition_racks or {}).get(topic, [])
    count = request.topics[topic]
    return [frozenset(racks) for racks in given[:count]] + [frozenset()] * (count - len(given))


def use_rack_aware(
    member_racks: Iterable[str | None], racks: Iterable[Sequence[frozenset[str]]]
) -> bool:
    """``rd_kafka_use_rack_aware_assignment`` over the given members' racks and the
    given topics' partition racks."""
    consumer = {rack for rack in member_racks if rack}
    if not consumer:
        return False
    per_partition = [r for topic in racks for r in topic]
    every = frozenset().union(*per_partition)
    if not every or consumer.isdisjoint(every):
        return False
    return any(len(r) != len(every) for r in per_partition)
